"""``%pi mcp``: add, list and remove the kernel's MCP servers (``NotebookState.mcp``).

    %pi mcp add NAME [--approve POLICY] [--timeout S] -- COMMAND ARGS...   (stdio)
    %pi mcp add NAME URL [--header NAME=ENVVAR ...] [--approve POLICY] [--timeout S]
    %pi mcp list
    %pi mcp remove NAME

``add`` waits until the server is ready and lists its tools. Header values come only from
environment variables (``--header Authorization=GITHUB_AUTH`` sends the value of
``$GITHUB_AUTH``), so a notebook never holds a secret in its text. Bad arguments raise a
one-line ``UsageError``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..config import POLICIES
from ..run.approval import tool_policy
from ..state import NotebookState

if TYPE_CHECKING:
    from ...mcp import McpServer

MCP_HELP = """\
%pi mcp add NAME [--approve ask|auto|deny] [--timeout S] -- COMMAND ARGS...   stdio server
%pi mcp add NAME URL [--header NAME=ENVVAR ...] [--approve P] [--timeout S]   Streamable HTTP
%pi mcp list              servers, state, tools (with their approval policy), reason
%pi mcp remove NAME       stop a server
Header values are read from the named environment variables, never written in the cell."""

_ADD_USAGE = "usage: %pi mcp add NAME -- COMMAND ARGS... or %pi mcp add NAME URL [--header NAME=ENVVAR]"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def mcp_command(state: NotebookState, rest: str) -> None:
    """Run ``%pi mcp <rest>``."""
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise UsageError(f"cannot parse %pi mcp arguments: {exc}") from None
    command = words[0] if words else "help"
    handler = _COMMANDS.get(command)
    if handler is None:
        raise UsageError(f"unknown %pi mcp subcommand {command!r}; use add, list or remove")
    handler(state, words[1:])


def _manager(state: NotebookState) -> Any:
    try:
        state.load_mcp_config()
        return state.mcp
    except (ValueError, RuntimeError) as exc:
        raise UsageError(str(exc)) from None


# --- add -----------------------------------------------------------------------------------------


def parse_add(args: Sequence[str]) -> dict[str, Any]:
    """``make_config`` keywords from the words after ``add``; ``UsageError`` when malformed."""
    if not args or args[0].startswith("-"):
        raise UsageError(_ADD_USAGE)
    name, rest = args[0], list(args[1:])
    command: list[str] | None = None
    if "--" in rest:
        split = rest.index("--")
        rest, command = rest[:split], rest[split + 1 :]
        if not command:
            raise UsageError("%pi mcp add: nothing after --; give the server's command and arguments")
    options: dict[str, Any] = {"name": name, "command": command}
    headers: dict[str, str] = {}
    positional: list[str] = []
    words = iter(rest)
    for word in words:
        if word in ("--header", "--approve", "--timeout"):
            value = next(words, None)
            if value is None:
                raise UsageError(f"%pi mcp add: {word} needs a value")
            _option(options, headers, word, value)
        elif word.startswith("-"):
            raise UsageError(f"%pi mcp add: unknown option {word!r}; {_ADD_USAGE}")
        else:
            positional.append(word)
    _target(options, positional, headers)
    return options


def _option(options: dict[str, Any], headers: dict[str, str], word: str, value: str) -> None:
    if word == "--approve":
        if value not in POLICIES:
            raise UsageError(f"%pi mcp add: --approve must be one of ask, auto, deny, not {value!r}")
        options["approve"] = value
    elif word == "--timeout":
        try:
            options["timeout"] = float(value)
        except ValueError:
            raise UsageError(f"%pi mcp add: --timeout takes seconds, not {value!r}") from None
    else:
        header, sep, variable = value.partition("=")
        if not sep or not header or not _ENV_NAME.match(variable):
            raise UsageError(
                f"%pi mcp add: --header takes NAME=ENVVAR (the value is read from the environment "
                f"variable ENVVAR, never written in the cell), not {value!r}"
            )
        headers[header] = variable


def _target(options: dict[str, Any], positional: list[str], headers: dict[str, str]) -> None:
    if options["command"] is not None:
        if positional:
            raise UsageError(f"%pi mcp add: unexpected {positional[0]!r} before --; {_ADD_USAGE}")
        if headers:
            raise UsageError("%pi mcp add: --header is for URL servers, not commands")
        return
    if len(positional) != 1:
        raise UsageError(_ADD_USAGE)
    url = positional[0]
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"%pi mcp add: {url!r} is not an http(s) URL; a command goes after --")
    options["url"], options["headers_from_env"] = url, headers


def _add(state: NotebookState, args: list[str]) -> None:
    options = parse_add(args)
    manager = _manager(state)
    from ...mcp import McpConnectError, make_config

    try:
        server: McpServer = manager.add(make_config(**options))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        server.wait()
    except McpConnectError as exc:
        first = str(exc).splitlines()[0]
        raise UsageError(f"{first} (%pi mcp list shows it; %pi mcp remove {server.name} drops it)") from None
    tools = ", ".join(_tool_label(state, tool) for tool in server.tools) or "no tools"
    print(f"{server.name}: ready, {len(server.tools)} tool{'' if len(server.tools) == 1 else 's'}: {tools}")


def _tool_label(state: NotebookState, tool: Any) -> str:
    decision = tool_policy(tool.name, tool, state.approvals(), "ask")
    return f"{tool.name} [{decision.policy if decision is not None else 'auto'}]"


# --- list, remove --------------------------------------------------------------------------------


def _list(state: NotebookState, args: list[str]) -> None:
    if args:
        raise UsageError("%pi mcp list takes no arguments")
    manager = _manager(state) if state.config.mcp_config or state.has_mcp else None
    names: list[str] = manager.names() if manager is not None else []
    if manager is None or not names:
        print("no MCP servers; add one with %pi mcp add NAME -- COMMAND ARGS...")
        return
    for name in names:
        server = manager.get(name)
        print(server.status().line())
        if server.tools:
            print("  " + ", ".join(_tool_label(state, tool) for tool in server.tools))
        if server.state == "dead":
            for line in server.stderr_tail(5):
                print(f"  stderr: {line}")


def _remove(state: NotebookState, args: list[str]) -> None:
    if len(args) != 1:
        raise UsageError("usage: %pi mcp remove NAME")
    if not state.has_mcp or args[0] not in state.mcp:
        known = ", ".join(state.mcp.names()) if state.has_mcp else ""
        raise UsageError(f"no MCP server named {args[0]!r} (servers: {known or 'none'})")
    state.mcp.remove(args[0])
    print(f"MCP server {args[0]!r} removed")


def _help(state: NotebookState, args: list[str]) -> None:
    print(MCP_HELP)


_COMMANDS: dict[str, Callable[[NotebookState, list[str]], None]] = {
    "add": _add,
    "list": _list,
    "remove": _remove,
    "help": _help,
}
