"""``PiMagics``: the configurable defaults of the ``%%pi`` options (``PiConfig``), the fallback
``%%pi`` cell magic and the ``%pi`` line magic.

The interactive ``%%pi`` path does not go through IPython's magic machinery: the input
transformer (``extension.py``) rewrites the cell into ``await run_pi(line, body)``. The cell
magic registered here is the non-interactive fallback (autoawait off, ``run_cell_magic`` from
code). Both parse the same options (``options.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from IPython.core import magic as _magic
from IPython.core.error import UsageError
from IPython.core.magic import Magics, magics_class, no_var_expand

from ..agent import Agent
from ..ai.models import THINKING_LEVELS
from ..ai.types import ThinkingLevel
from .approval import RunMode
from .kernel_compat import can_await
from .mcp_magic import mcp_command
from .options import DEFAULT_NAME, MODEL_ENV, PARSER, PiConfig, model_option
from .references import truncate
from .result import sum_usage
from .run_retry import RetrySettings, silent_server_bound
from .runner import run_pi_sync
from .sessions_magics import HELP as SESSIONS_HELP
from .sessions_magics import SESSION_SUBCOMMANDS, session_line, turn_offset
from .state import NotebookState, has_model, state_for
from .tools import is_notebook_tool, parse_tools_spec
from .view import content_to_text

_F = TypeVar("_F", bound=Callable[..., Any])


def _decorator(factory: Any, *args: Any, **kwargs: Any) -> Callable[[_F], _F]:
    """IPython's magic decorators are untyped; they return the function they decorate."""
    return cast("Callable[[_F], _F]", factory(*args, **kwargs))


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
  --temperature T         sampling temperature (0 to 2), e.g. 0 for reproducible answers
  --seed N                sampling seed (OpenAI-compatible chat completions only)
  --timeout S             seconds a model request may go without an answer (default 300; 0: none)
  --[no-]raise-on-error   raise after a run that ended in an error (default: headless runs)
  --resume                continue this notebook's latest recorded conversation first
  --replay                show the recorded answer of this prompt; no model is called
  $`expr` in the prompt attaches a bounded summary of a kernel value.

%pi [--name NAME] SUBCOMMAND
  model [provider:id]     show or set the conversation's model
  thinking [LEVEL]        show or set the thinking level
  status                  conversation, model, message count, usage, controls, approvals
  history [N]             the last N messages (default 20)
  reset                   clear the conversation
  tools [SPEC]            show or set the default --tools
  steer TEXT              queue a steering message for the running (or next) run
  mcp add NAME -- CMD...  start an MCP server (stdio); its tools join every %%pi run
  mcp add NAME URL [--header NAME=ENVVAR ...]   an MCP server over Streamable HTTP
  mcp list | remove NAME  show the MCP servers (state, tools, reason) / stop one
  help                    this text
"""
HELP += f"\n%pi [--name NAME] SUBCOMMAND, for recorded conversations (Pi session files)\n{SESSIONS_HELP}"


@magics_class
class PiMagics(Magics, PiConfig):
    """``%%pi`` / ``%pi``. Traits tagged ``config=True`` are the defaults of every option."""

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        if shell is not None:
            state_for(shell).config = self

    @property
    def state(self) -> NotebookState:
        return state_for(self.shell)

    @no_var_expand
    @_decorator(_magic.cell_magic, "pi")
    def pi_cell(self, line: str, cell: str) -> None:
        """Run a prompt through the agent (non-interactive fallback; see ``%pi help``)."""
        run_pi_sync(line, cell, shell=self.shell)

    @no_var_expand
    @_decorator(_magic.line_magic, "pi")
    def pi_line(self, line: str) -> None:
        """``%pi [--name NAME] SUBCOMMAND [ARGS]``; ``%pi help`` lists them."""
        name, command, rest = split_subcommand(line)
        handler = _SUBCOMMANDS.get(command)
        if handler is None:
            raise UsageError(f"unknown %pi subcommand {command!r}; try %pi help")
        handler(self, name, rest)


PiMagics.pi_cell.__doc__ = PARSER.format_help()


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


def conversation(state: NotebookState, name: str | None, *, new: bool = False) -> Agent:
    """The conversation ``name`` with a bad default model reported as a ``UsageError``."""
    try:
        return state.new_conversation(name) if new else state.conversation(name)
    except ValueError as exc:
        raise UsageError(f"default model (c.PiMagics.model / {MODEL_ENV}): {exc}") from None


# --- subcommands ---------------------------------------------------------------------------------


def _model_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    agent = conversation(magics.state, name)
    if rest:
        agent.state.model = model_option(rest)
    model = agent.state.model
    print(f"{model.provider}:{model.id}" if has_model(agent) else "no model set")


def _thinking_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    agent = conversation(magics.state, name)
    if rest:
        if rest not in THINKING_LEVELS:
            raise UsageError(f"thinking must be one of {', '.join(THINKING_LEVELS)}, not {rest!r}")
        agent.state.thinking_level = cast("ThinkingLevel", rest)
    print(agent.state.thinking_level)


def _status_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    state = magics.state
    agent = conversation(state, name)
    model = agent.state.model
    usage = sum_usage([m for m in agent.state.messages if getattr(m, "role", None) == "assistant"])
    # What the next %%pi cell of this client would do: awaited when the transformer can await.
    mode = state.run_mode(awaited=can_await(magics.shell), text=magics.text)
    headless = mode.headless
    lines = [
        f"conversation: {name or DEFAULT_NAME} (of {', '.join(state.names())})",
        f"model: {model.provider}:{model.id}" if has_model(agent) else "model: none",
        f"thinking: {agent.state.thinking_level}",
        f"messages: {len(agent.state.messages)}; running: {'yes' if agent.state.is_streaming else 'no'}",
        f"tokens: {usage.input} in, {usage.output} out; cost: ${usage.cost.total:.4f}",
        f"tools: {magics.tools}",
        f"timeout: {timeout_line(magics)}",
        f"approve: {state.explain_approval(mode)}",
        *_approvals_lines(state),
        f"controls: {controls_line(mode)}",
        f"headless: {'yes' if headless.headless else 'no'} ({headless.reason})",
        f"session: {session_line(state.sessions, name or DEFAULT_NAME)}",
    ]
    print("\n".join(lines))


def timeout_line(config: PiConfig) -> str:
    """The request timeout a ``%%pi`` cell gets and what it adds up to with the retries."""
    bound = silent_server_bound(config.timeout, RetrySettings(config.retries, config.retry_base_delay))
    if bound is None:
        return "none (a server that never answers is waited on until Stop or an interrupt)"
    attempts = config.retries + 1
    return (
        f"{config.timeout:g} s without an answer per request; a server that never answers fails a "
        f"model call after {bound:g} s ({attempts} attempt{'s' if attempts != 1 else ''} and the "
        "retry waits)"
    )


def controls_line(mode: RunMode) -> str:
    """Whether Stop / Approve / steering work for a cell of this client, and why not."""
    if mode.can_ask:
        return "active"
    if mode.headless.headless:
        return "inactive: headless run, nobody can click"
    return (mode.reason or "inactive").replace("Controls inactive: ", "inactive: ", 1)


def _approvals_lines(state: NotebookState) -> list[str]:
    """``%pi status`` lines for the per-tool policies and the MCP servers, when there are any."""
    lines = []
    if approvals := state.approvals():
        lines.append("approvals: " + ", ".join(f"{name}={policy}" for name, policy in approvals.items()))
    if state.has_mcp and (servers := state.mcp.list()):
        ready = sum(1 for s in servers if s.state == "ready")
        lines.append(f"mcp: {len(servers)} server{'' if len(servers) == 1 else 's'}, {ready} ready")
    return lines


def history_line(message: Any) -> str:
    """One message of ``%pi history``: role, flattened text, tool calls, and how a turn that
    did not end normally ended (stop reason and error message)."""
    role = getattr(message, "role", "?")
    label = f"toolResult {getattr(message, 'tool_name', '')}".strip() if role == "toolResult" else role
    # compaction and branch summaries keep their text in ``summary``, not ``content``
    body = getattr(message, "content", None) or getattr(message, "summary", "") or ""
    text = truncate(" ".join(content_to_text(body).split()), 200)
    blocks = body if isinstance(body, list) else []
    calls = [b.name for b in blocks if getattr(b, "type", None) == "toolCall"]
    parts = [text] if text else []
    if calls:
        parts.append(f"[calls: {', '.join(calls)}]")
    stop = getattr(message, "stop_reason", None) if role == "assistant" else None
    if stop not in (None, "stop", "toolUse"):
        error = getattr(message, "error_message", None)
        ending = f"{stop}: {truncate(' '.join(error.split()), 300)}" if error else stop
        parts.append(f"[{ending}]")
    return f"{label}: {' '.join(parts)}".rstrip()


def _history_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    try:
        count = int(rest) if rest else 20
    except ValueError:
        raise UsageError(f"history takes a number, not {rest!r}") from None
    agent = conversation(magics.state, name)
    messages = agent.state.messages
    if not messages:
        print("(empty conversation)")
        return
    # User turns are numbered as %pi branch counts them (turns compacted away included).
    turn = turn_offset(magics.state.sessions, name or DEFAULT_NAME, agent)
    numbered = []
    for message in messages:
        if getattr(message, "role", None) == "user":
            turn += 1
            numbered.append(f"#{turn} {history_line(message)}")
        else:
            numbered.append(history_line(message))
    for line in numbered[-count:]:
        print(line)


def _reset_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    state = magics.state
    conversation(state, name)  # a bad default model is a UsageError here, as for any subcommand
    state.reset_conversation(name)
    print(f"conversation {name or DEFAULT_NAME!r} cleared")


def _tools_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    if rest:
        try:
            magics.tools = rest
        except Exception as exc:
            raise UsageError(str(exc)) from None
    enabled = parse_tools_spec(magics.tools)
    state = magics.state
    tools = conversation(state, name).state.tools
    extra = [t.name for t in tools if not is_notebook_tool(t) and not state.is_mcp_tool(t)]
    print(f"notebook tools: {', '.join(enabled) or 'none'}")
    if extra:
        print(f"other tools on the agent: {', '.join(extra)}")
    if state.has_mcp and (mcp := [t.name for t in state.mcp.tools()]):
        print(f"MCP tools: {', '.join(mcp)}")


def _steer_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    if not rest:
        raise UsageError("steer needs the message text")
    agent = conversation(magics.state, name)
    agent.steer(rest)
    print("steering message queued" + ("" if agent.state.is_streaming else " for the next run"))


def _mcp_cmd(magics: PiMagics, name: str | None, rest: str) -> None:
    mcp_command(magics.state, rest)


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
    "mcp": _mcp_cmd,
    "help": _help_cmd,
    **SESSION_SUBCOMMANDS,
}
