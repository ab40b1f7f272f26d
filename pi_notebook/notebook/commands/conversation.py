"""The ``%pi`` subcommands: ``model``, ``thinking``, ``status``, ``history``, ``reset``,
``tools``, ``steer``, ``mcp``, ``help``, the session ones (``sessions.py``) and the resource
ones (``resources.py``).

Each takes ``(state, name, rest)``: the shell's ``NotebookState`` (its ``config`` is the loaded
``PiMagics``), the conversation named with ``--name`` (``None``: the default) and the rest of
the line. ``PiMagics.pi_line`` loads this module on the first ``%pi``.
"""

from __future__ import annotations

import difflib
import os
from fnmatch import fnmatchcase
from typing import Any

from IPython.core.error import UsageError

from ...ai.levels import THINKING_LEVELS
from ...ai.redact import redact_urls
from ...runtime import AgentSession
from ..config import DEFAULT_NAME, MODEL_ENV, PiConfig, options_help
from ..defaults import Effective
from ..host.compat import can_await
from ..options import model_option
from ..result import sum_usage
from ..run.approval import RunMode, explain_policy, run_mode
from ..run.requests import silent_server_bound
from ..sessions.conversations import use_model
from ..state import NotebookState
from ..tools.notebook_tools import is_notebook_tool, mcp_tool_patterns, parse_tools_spec
from ..tools.references import single_line
from ..view.reduce import content_to_text
from .approvals import approvals_command, grants_status
from .export import export_cmd
from .mcp import mcp_command
from .resources import HELP as RESOURCES_HELP
from .resources import RESOURCE_SUBCOMMANDS
from .sessions import HELP as SESSIONS_HELP
from .sessions import SESSION_SUBCOMMANDS, session_line, turn_offset
from .show import show_cmd
from .undo import undo_command
from .usage import usage_command

HELP = f"""\
%%pi [options]            ask the agent; the cell body is the prompt
{options_help()}
  $`expr` in the prompt attaches a bounded summary of a kernel value.

%pi [--name NAME] SUBCOMMAND
  model [provider:id] [--save]  show or set the conversation's model; --save also makes it
                          the default model in Pi's settings.json (here and in the Pi CLI)
  thinking [LEVEL]        show or set the thinking level
  status                  conversation, model, message count, usage, controls, approvals
  usage                   tokens and cost per run, per conversation and per session file
  history [N]             the last N messages (default 20)
  reset                   clear the conversation
  tools [SPEC]            show or set the default --tools
  steer TEXT              queue a steering message for the running (or next) run
  show [N]                the frozen output of the Nth recorded run from the last (default 1);
                          during a run (a reloaded page), the run's live view at once
  export [N] [--py FILE]  the code run N (1: the first; default the last) ran, as cells
                          marked "# from %%pi run N": inserted below (alone in its cell, with
                          the bridge), written to FILE, or printed; denied and failed calls skipped
  mcp add NAME -- CMD...  start an MCP server (stdio); its tools join every %%pi run
  mcp add NAME URL [--header NAME=ENVVAR ...]   an MCP server over Streamable HTTP
  mcp list | remove NAME  show the MCP servers (state, tools, reason) / stop one
  extension load MODULE_OR_PATH   load a Pi extension (def setup(pi)); list: what is loaded
  NAME [ARGS]             a command an extension registered (pi.register_command)
  undo                    take back what the last run changed in the notebook (alone in a cell)
  fix [N]                 a run that fixes the last failing cell (or cell [N]): it proposes an
                          edit_cell diff to apply, then reruns the cell (template /fix)
  explain [N]             why the last failing cell (or cell [N]) failed; read-only tools only
                          (template /explain). Both: the buttons under a failed cell's error
  approvals [clear]       the conversation's "Allow for this conversation" grants; clear: forget them
  help                    this text
"""
HELP += f"\n%pi [--name NAME] SUBCOMMAND, for recorded conversations (Pi session files)\n{SESSIONS_HELP}"
HELP += f"\n%pi SUBCOMMAND, for Pi's AGENTS.md, skills (/skill:name) and templates (/name)\n{RESOURCES_HELP}"




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


def run_command(state: NotebookState, line: str) -> None:
    """Run the ``%pi`` line ``line``; an unknown subcommand is a ``UsageError``."""
    name, command, rest = split_subcommand(line)
    handler = SUBCOMMANDS.get(command)
    if handler is None:
        from .extensions import extension_command

        if extension_command(state, name, command, rest):
            return
        close = difflib.get_close_matches(command, list(SUBCOMMANDS), n=1, cutoff=0.6)
        hint = f"did you mean %pi {close[0]}? " if close else ""
        raise UsageError(f"unknown %pi subcommand {command!r}; {hint}try %pi help (or %pi extension list)")
    handler(state, name, rest)


def conversation(state: NotebookState, name: str | None) -> AgentSession:
    """The session of conversation ``name``, a bad default model reported as a ``UsageError``."""
    try:
        return state.conversations.session(name)
    except ValueError as exc:
        raise UsageError(f"default model (c.PiMagics.model / {MODEL_ENV}): {exc}") from None


# --- subcommands ---------------------------------------------------------------------------------


def _model_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    words = rest.split()
    save = "--save" in words
    spec = " ".join(w for w in words if w != "--save")
    session = conversation(state, name)
    if spec:
        use_model(session, model_option(spec))
    model = session.model
    print(f"{model.provider}:{model.id}" if model is not None else "no model set")
    if save:
        if model is None:
            raise UsageError("model --save needs a model: %pi model provider:id --save")
        print(_save_default(state, model.provider, model.id))


def _save_default(state: NotebookState, provider: str, model_id: str) -> str:
    """Write the default model into Pi's ``settings.json``; the line that says where and what
    still comes before it in this notebook."""
    from ...runtime.settings_file import SettingsWriteError, save_default_model

    try:
        path = save_default_model(provider, model_id)
    except SettingsWriteError as exc:
        raise UsageError(f"model --save: {exc}") from None
    line = f"saved as the default model in {path} (new conversations here and the Pi CLI start with it)"
    chosen = state.defaults()
    if not chosen.model_from_pi and chosen.model:
        line += f"; {chosen.model_source} ({chosen.model}) still comes first in this notebook"
    return line


def _thinking_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    session = conversation(state, name)
    if rest:
        if rest not in THINKING_LEVELS:
            raise UsageError(f"thinking must be one of {', '.join(THINKING_LEVELS)}, not {rest!r}")
        session.set_thinking_level(rest)
    print(session.thinking_level)


def _status_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    session = conversation(state, name)
    model = session.model
    usage = sum_usage([m for m in session.messages if getattr(m, "role", None) == "assistant"])
    # What the next %%pi cell of this client would do: awaited when the transformer can await.
    mode = run_mode(state.shell, awaited=can_await(state.shell), text=state.config.text)
    headless = mode.headless
    lines = [
        f"conversation: {name or DEFAULT_NAME} (of {', '.join(state.names())})",
        f"model: {model.provider}:{model.id}" if model is not None else "model: none",
        f"thinking: {session.thinking_level}",
        f"defaults: {defaults_line(state)}",
        f"messages: {len(session.messages)}; running: {'yes' if session.is_streaming else 'no'}",
        f"tokens: {usage.input} in, {usage.output} out, {usage.cache_read} cache read, "
        f"{usage.cache_write} cache write; cost: ${usage.cost.total:.4f}",
        f"tools: {state.config.tools}",
        f"timeout: {timeout_line(state.config, state.defaults())}",
        f"loop guard: {loop_guard_line(state.config.loop_guard)}",
        f"approve: {explain_policy(state.config.approve or None, mode)}",  # type: ignore[arg-type]
        *_approvals_lines(state),
        *grants_status(state, name),
        f"controls: {controls_line(mode)}",
        f"headless: {'yes' if headless.headless else 'no'} ({headless.reason})",
        f"session: {session_line(state.sessions, session)}",
    ]
    print("\n".join(lines))


def defaults_line(state: NotebookState) -> str:
    """Where a new conversation's model comes from, and what Pi's ``settings.json`` gave."""
    chosen = state.defaults()
    model = f"{chosen.model} (from {chosen.model_source})" if chosen.model else "none"
    pi = chosen.pi
    if pi.missing:
        told = f"none ({_short(pi.path)} does not exist)"
    else:
        told = "; ".join(pi.problems) if pi.problems else f"read {_short(pi.path)}"
    return f"model {model}, thinking {chosen.thinking}; Pi's settings: {told}"


def _short(path: str) -> str:
    """``path`` under ``$PI_CODING_AGENT_DIR`` or ``~`` as such (the same on every machine)."""
    agent_dir = os.environ.get("PI_CODING_AGENT_DIR")
    for root, shown in ((agent_dir, "$PI_CODING_AGENT_DIR"), (os.path.expanduser("~"), "~")):
        if root and path.startswith(root.rstrip(os.sep) + os.sep):
            return shown + path[len(root.rstrip(os.sep)):]
    return path


def loop_guard_line(limit: int) -> str:
    """What ``c.PiMagics.loop_guard`` does to a ``%%pi`` run now."""
    if limit <= 0:
        return "off (c.PiMagics.loop_guard = 0)"
    return (
        f"asks before identical tool call {limit} in a row runs; denied, the run stops "
        "(c.PiMagics.loop_guard; 0: off)"
    )


def timeout_line(config: PiConfig, chosen: Effective) -> str:
    """The request timeout a ``%%pi`` cell gets and what it adds up to with the retries
    (``chosen``: the settings in force, a trusted project's included, as a cell gets them)."""
    bound = silent_server_bound(config.timeout, chosen.retries, chosen.retry_base_delay)
    if bound is None:
        return "none (a server that never answers is waited on until Stop or an interrupt)"
    attempts = chosen.retries + 1
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
    text = single_line(content_to_text(body), 200)
    blocks = body if isinstance(body, list) else []
    calls = [b.name for b in blocks if getattr(b, "type", None) == "toolCall"]
    parts = [text] if text else []
    if calls:
        parts.append(f"[calls: {', '.join(calls)}]")
    stop = getattr(message, "stop_reason", None) if role == "assistant" else None
    if stop not in (None, "stop", "toolUse"):
        error = getattr(message, "error_message", None)
        # a message read back from an older session file may hold a URL with a key in it
        ending = f"{stop}: {single_line(redact_urls(error), 300)}" if error else stop
        parts.append(f"[{ending}]")
    return f"{label}: {' '.join(parts)}".rstrip()


def _history_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    try:
        count = int(rest) if rest else 20
    except ValueError:
        raise UsageError(f"history takes a number, not {rest!r}") from None
    session = conversation(state, name)
    messages = session.messages
    if not messages:
        print("(empty conversation)")
        return
    # User turns are numbered as %pi branch counts them (turns compacted away included).
    turn = turn_offset(session)
    numbered = []
    for message in messages:
        if getattr(message, "role", None) == "user":
            turn += 1
            numbered.append(f"#{turn} {history_line(message)}")
        else:
            numbered.append(history_line(message))
    for line in numbered[-count:]:
        print(line)


def _reset_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    conversation(state, name)  # a bad default model is a UsageError here, as for any subcommand
    state.conversations.reset(name)
    print(f"conversation {name or DEFAULT_NAME!r} cleared")


def _tools_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    if rest:
        try:
            state.config.tools = rest
        except Exception as exc:
            raise UsageError(str(exc)) from None
    enabled = parse_tools_spec(state.config.tools, state.mcp_tool_names())
    tools = conversation(state, name).state.tools
    extra = [t.name for t in tools if not is_notebook_tool(t)]
    print(f"notebook tools: {', '.join(enabled) or 'none'}")
    if extra:
        print(f"other tools on the agent: {', '.join(extra)}")
    if state.has_mcp and (mcp := [t.name for t in state.mcp.tools()]):
        print(f"MCP tools: {', '.join(mcp)}")
        if patterns := mcp_tool_patterns(state.config.tools):
            chosen = [n for n in mcp if any(fnmatchcase(n, p) for p in patterns)]
            print(f"MCP tools a run gets ({', '.join(patterns)}): {', '.join(chosen) or 'none match'}")
        elif state.config.tools.strip() == "none":
            print("MCP tools a run gets: none (the default spec is none)")


def _steer_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    if not rest:
        raise UsageError("steer needs the message text")
    session = conversation(state, name)
    session.queue(rest, "steer")  # /skill:name and /template expand as Pi expands them
    print("steering message queued" + ("" if session.is_streaming else " for the next run"))


def _mcp_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    mcp_command(state, rest)


def _extension_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    from .extensions import extension_subcommand

    extension_subcommand(state, name, rest)


def _help_with_error(kind: str) -> Any:
    def command(state: NotebookState, name: str | None, rest: str) -> None:
        from ..run.error_help import help_command  # the run machinery loads with the command

        help_command(kind)(state, name, rest)

    return command


def _help_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    print(HELP)


SUBCOMMANDS = {
    "model": _model_cmd,
    "thinking": _thinking_cmd,
    "status": _status_cmd,
    "history": _history_cmd,
    "reset": _reset_cmd,
    "tools": _tools_cmd,
    "steer": _steer_cmd,
    "usage": usage_command,
    "mcp": _mcp_cmd,
    "extension": _extension_cmd,
    "help": _help_cmd,
    "show": show_cmd,
    "export": export_cmd,
    "undo": undo_command,
    "approvals": approvals_command,
    "fix": _help_with_error("fix"),
    "explain": _help_with_error("explain"),
    **SESSION_SUBCOMMANDS,
    **RESOURCE_SUBCOMMANDS,
}
