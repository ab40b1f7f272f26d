"""``PiMagics``: the ``%%pi`` options, their traitlets defaults, the fallback ``%%pi`` cell magic
and the ``%pi`` line magic.

The interactive ``%%pi`` path does not go through IPython's magic machinery: the input
transformer (``extension.py``) rewrites the cell into ``await run_pi(line, body)``. The cell
magic registered here is the non-interactive fallback (autoawait off, ``run_cell_magic`` from
code). Both parse the same options with :func:`parse_options`.

Defaults come from traitlets config (``c.PiMagics.model = "anthropic:claude-sonnet-4-5"`` in
``ipython_config.py``, or ``%config PiMagics.model = ...``); the model falls back to the
``PI_NOTEBOOK_MODEL`` environment variable. Bad options raise a one-line ``UsageError``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from IPython.core import magic as _magic
from IPython.core import magic_arguments as _magic_arguments
from IPython.core.error import UsageError
from IPython.core.magic import Magics, magics_class, no_var_expand
from traitlets import Bool, CaselessStrEnum, Int, Unicode, validate

from ..ai.models import THINKING_LEVELS
from . import conversations
from .approval import POLICIES, Policy
from .conversations import DEFAULT_SYSTEM_PROMPT, MODEL_ENV, Defaults
from .tools import is_notebook_tool, parse_tools_spec

if TYPE_CHECKING:
    from ..agent import Agent
    from ..ai.types import Model

_F = TypeVar("_F", bound=Callable[..., Any])


def _decorator(factory: Any, *args: Any, **kwargs: Any) -> Callable[[_F], _F]:
    """IPython's magic decorators are untyped; they return the function they decorate."""
    return cast("Callable[[_F], _F]", factory(*args, **kwargs))


_instances: weakref.WeakKeyDictionary[Any, PiMagics] = weakref.WeakKeyDictionary()

HELP = """\
%%pi [options]            ask the agent; the cell body is the prompt
  --model provider:id     model (default: c.PiMagics.model or $PI_NOTEBOOK_MODEL)
  --thinking LEVEL        off|minimal|low|medium|high|xhigh|max
  --system TEXT           system prompt of this conversation
  --tools SPEC            all|none|read|write|comma list of tool names
  --approve POLICY        ask|auto|deny for run_code, insert_cell, set_variable
  --new                   start a fresh conversation
  --name NAME             use (or create) the conversation NAME
  --text                  plain-text output, no widgets
  --max-turns N           stop after N model turns
  $`expr` in the prompt attaches a bounded summary of a kernel value.

%pi [--name NAME] SUBCOMMAND
  model [provider:id]     show or set the conversation's model
  thinking [LEVEL]        show or set the thinking level
  status                  conversation, model, message count, usage, controls
  history [N]             the last N messages (default 20)
  reset                   clear the conversation
  tools [SPEC]            show or set the default --tools
  steer TEXT              queue a steering message for the running (or next) run
  help                    this text
"""


@magics_class
class PiMagics(Magics):
    """``%%pi`` / ``%pi``. Traits tagged ``config=True`` are the defaults of every option."""

    model = Unicode(help="Default model as provider:id (falls back to $PI_NOTEBOOK_MODEL).").tag(config=True)
    thinking = CaselessStrEnum(
        list(THINKING_LEVELS), default_value="off", help="Default thinking level."
    ).tag(config=True)
    system = Unicode(DEFAULT_SYSTEM_PROMPT, help="System prompt of new conversations.").tag(config=True)
    tools = Unicode("all", help="Default --tools spec: all|none|read|write|comma list.").tag(config=True)
    approve = Unicode(
        "", help="Default approval policy ask|auto|deny; empty: ask interactive, deny headless."
    ).tag(config=True)
    max_turns = Int(0, help="Default --max-turns (0: no limit).").tag(config=True)
    text = Bool(False, help="Plain-text output by default (no widgets).").tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        if shell is not None:
            _instances[shell] = self

    @validate("approve")
    def _check_approve(self, proposal: Any) -> str:
        value = str(proposal["value"]).strip().lower()
        if value and value not in POLICIES:
            raise ValueError(f"PiMagics.approve must be one of ask, auto, deny or empty, not {value!r}")
        return value

    @validate("tools")
    def _check_tools(self, proposal: Any) -> str:
        parse_tools_spec(str(proposal["value"]))
        return str(proposal["value"])

    def defaults(self) -> Defaults:
        """Settings of a new conversation; the model falls back to ``$PI_NOTEBOOK_MODEL``."""
        model = self.model.strip() or os.environ.get(MODEL_ENV, "").strip()
        return Defaults(model=model, thinking=self.thinking, system=self.system)

    # --- %%pi (fallback) ----------------------------------------------------------------------

    @_decorator(_magic_arguments.magic_arguments)
    @_decorator(_magic_arguments.argument, "--model", help="provider:id")
    @_decorator(_magic_arguments.argument, "--thinking", choices=list(THINKING_LEVELS), help="thinking level")
    @_decorator(_magic_arguments.argument, "--system", help="system prompt of this conversation")
    @_decorator(_magic_arguments.argument, "--tools", help="all|none|read|write|comma list of tool names")
    @_decorator(
        _magic_arguments.argument,
        "--approve",
        choices=list(POLICIES),
        help="approval policy for state-changing tools",
    )
    @_decorator(_magic_arguments.argument, "--new", action="store_true", help="start a fresh conversation")
    @_decorator(_magic_arguments.argument, "--name", help="conversation name")
    @_decorator(
        _magic_arguments.argument, "--text", action="store_true", help="plain-text output, no widgets"
    )
    @_decorator(
        _magic_arguments.argument, "--max-turns", type=int, dest="max_turns", help="stop after N model turns"
    )
    @no_var_expand
    @_decorator(_magic.cell_magic, "pi")
    def pi_cell(self, line: str, cell: str) -> None:
        """Run a prompt through the agent (non-interactive fallback; see ``%pi help``)."""
        from .runner import run_pi_sync

        run_pi_sync(line, cell, shell=self.shell)

    # --- %pi ----------------------------------------------------------------------------------

    @no_var_expand
    @_decorator(_magic.line_magic, "pi")
    def pi_line(self, line: str) -> None:
        """``%pi [--name NAME] SUBCOMMAND [ARGS]``; ``%pi help`` lists them."""
        name, command, rest = split_subcommand(line)
        handler = _SUBCOMMANDS.get(command)
        if handler is None:
            raise UsageError(f"unknown %pi subcommand {command!r}; try %pi help")
        handler(self, name, rest)


# --- option parsing -----------------------------------------------------------------------------


class RunOptions:
    """Validated options of one ``%%pi`` cell, defaults already applied."""

    def __init__(self, ns: argparse.Namespace, magics: PiMagics) -> None:
        self.model: Model | None = _model_option(ns.model) if ns.model else None
        self.thinking: str | None = ns.thinking
        self.system: str | None = ns.system
        spec = ns.tools if ns.tools is not None else magics.tools
        try:
            self.tools: list[str] = parse_tools_spec(spec)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        approve = ns.approve or magics.approve or None
        self.approve: Policy | None = cast("Policy | None", approve)
        self.new: bool = ns.new
        self.name: str = ns.name or conversations.DEFAULT_NAME
        self.text: bool = ns.text or magics.text
        max_turns = ns.max_turns if ns.max_turns is not None else (magics.max_turns or None)
        if max_turns is not None and max_turns < 1:
            raise UsageError(f"--max-turns must be a positive integer, got {max_turns}")
        self.max_turns: int | None = max_turns


def parse_options(line: str, magics: PiMagics) -> RunOptions:
    """Parse the ``%%pi`` line; raises ``UsageError`` (one line) on any bad option."""
    try:
        argv = shlex.split(line)  # POSIX quoting: --system "Be brief." gives the text without quotes
    except ValueError as exc:
        raise UsageError(f"cannot parse %%pi options: {exc}") from None
    ns = getattr(PiMagics.pi_cell, "parser").parse_args(argv)  # MagicArgumentParser raises UsageError
    return RunOptions(ns, magics)


def _model_option(spec: str) -> Model:
    try:
        return conversations.resolve_model(spec)
    except ValueError as exc:
        raise UsageError(f"--model: {exc}") from None


def magics_for(shell: Any) -> PiMagics:
    """The ``PiMagics`` of ``shell`` (created, unregistered, when the extension is not loaded)."""
    found = _instances.get(shell)
    return found if found is not None else PiMagics(shell=shell)


def split_subcommand(line: str) -> tuple[str | None, str, str]:
    words = line.strip().split(None, 1)
    name = None
    if words and words[0] == "--name":
        rest = words[1].split(None, 1) if len(words) > 1 else []
        if not rest:
            raise UsageError("--name needs a value")
        name = rest[0]
        words = rest[1].strip().split(None, 1) if len(rest) > 1 else []
    command = words[0] if words else "help"
    return name, command, words[1].strip() if len(words) > 1 else ""


def conversation(name: str | None, *, new: bool = False) -> Agent:
    """``conversations.current``/``new`` with a bad default model reported as a ``UsageError``."""
    try:
        return conversations.new(name) if new else conversations.current(name)
    except ValueError as exc:
        raise UsageError(f"default model (c.PiMagics.model / {MODEL_ENV}): {exc}") from None


# --- subcommands ---------------------------------------------------------------------------------


def _model_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    agent = conversation(name)
    if rest:
        agent.state.model = _model_option(rest)
    model = agent.state.model
    print(f"{model.provider}:{model.id}" if conversations.has_model(agent) else "no model set")


def _thinking_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    agent = conversation(name)
    if rest:
        if rest not in THINKING_LEVELS:
            raise UsageError(f"thinking must be one of {', '.join(THINKING_LEVELS)}, not {rest!r}")
        agent.state.thinking_level = rest
    print(agent.state.thinking_level)


def _status_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    from .approval import detect_headless
    from .kernel_compat import inactive_controls_reason

    agent = conversation(name)
    model = agent.state.model
    usage = conversation_usage(agent)
    headless = detect_headless(magics.shell)
    lines = [
        f"conversation: {name or conversations.DEFAULT_NAME} (of {', '.join(conversations.names())})",
        f"model: {model.provider}:{model.id}" if conversations.has_model(agent) else "model: none",
        f"thinking: {agent.state.thinking_level}",
        f"messages: {len(agent.state.messages)}; running: {'yes' if agent.state.is_streaming else 'no'}",
        f"tokens: {usage['input']} in, {usage['output']} out; cost: ${usage['cost']:.4f}",
        f"tools: {magics.tools}; approve: {magics.approve or ('deny' if headless.headless else 'ask')}",
        f"controls: {inactive_controls_reason(magics.shell) or 'active'}",
        f"headless: {'yes' if headless.headless else 'no'} ({headless.reason})",
    ]
    print("\n".join(lines))


def _history_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    from .references import truncate
    from .view import content_to_text

    try:
        count = int(rest) if rest else 20
    except ValueError:
        raise UsageError(f"history takes a number, not {rest!r}") from None
    messages = conversation(name).state.messages
    if not messages:
        print("(empty conversation)")
        return
    for message in messages[-count:]:
        role = getattr(message, "role", "?")
        label = f"toolResult {getattr(message, 'tool_name', '')}".strip() if role == "toolResult" else role
        text = content_to_text(getattr(message, "content", ""))
        calls = [b.name for b in getattr(message, "content", []) if getattr(b, "type", None) == "toolCall"]
        extra = f" [calls: {', '.join(calls)}]" if calls else ""
        print(f"{label}: {truncate(' '.join(text.split()), 200)}{extra}")


def _reset_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    conversation(name).reset()
    print(f"conversation {name or conversations.DEFAULT_NAME!r} cleared")


def _tools_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    if rest:
        try:
            magics.tools = rest
        except Exception as exc:
            raise UsageError(str(exc)) from None
    enabled = parse_tools_spec(magics.tools)
    extra = [t.name for t in conversation(name).state.tools if not is_notebook_tool(t)]
    print(f"notebook tools: {', '.join(enabled) or 'none'}")
    if extra:
        print(f"other tools on the agent: {', '.join(extra)}")


def _steer_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    if not rest:
        raise UsageError("steer needs the message text")
    agent = conversation(name)
    agent.steer(rest)
    print("steering message queued" + ("" if agent.state.is_streaming else " for the next run"))


def _help_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    print(HELP)


_SUBCOMMANDS = {
    "model": _model_cmd,
    "thinking": _thinking_cmd,
    "status": _status_cmd,
    "history": _history_cmd,
    "reset": _reset_cmd,
    "tools": _tools_cmd,
    "steer": _steer_cmd,
    "help": _help_cmd,
}


def conversation_usage(agent: Agent) -> dict[str, float]:
    totals = {"input": 0.0, "output": 0.0, "cost": 0.0}
    for message in agent.state.messages:
        usage = getattr(message, "usage", None)
        if getattr(message, "role", None) == "assistant" and usage is not None:
            totals["input"] += usage.input
            totals["output"] += usage.output
            totals["cost"] += usage.cost.total
    return {"input": int(totals["input"]), "output": int(totals["output"]), "cost": totals["cost"]}
