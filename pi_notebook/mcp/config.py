"""How an MCP server is described: ``ServerConfig`` and the ``mcpServers`` JSON config file.

A server is either a command (stdio: ``command`` + ``args`` + ``env`` + ``cwd``) or a URL
(Streamable HTTP, with optional ``headers``). Secrets never come from the text of a cell:
header and environment values may only name environment variables, as ``${VAR}`` inside a
value (``"Bearer ${GITHUB_TOKEN}"``) or through ``headers_from_env`` (``{"Authorization":
"MY_TOKEN_VAR"}``, the whole value taken from the variable). The variables are read when the
server is added (an unset one raises there, by name), and their values are never shown in
listings, logs or error messages.

Approval: every MCP tool asks before it runs unless configured otherwise, per server
(``"approve": "auto"``) or per tool (``"approve": {"read_file": "auto", "*": "ask"}``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

from ..ai.redact import redact_url

__all__ = [
    "DEFAULT_APPROVAL",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "ApprovalPolicy",
    "ServerConfig",
    "load_config",
    "parse_config",
]

ApprovalPolicy: TypeAlias = Literal["ask", "auto", "deny"]
APPROVAL_POLICIES: tuple[ApprovalPolicy, ...] = ("ask", "auto", "deny")
DEFAULT_APPROVAL: ApprovalPolicy = "ask"
DEFAULT_CALL_TIMEOUT = 120.0
"""Seconds one tool call may take before it fails (a server can hang; the model must not)."""
DEFAULT_CONNECT_TIMEOUT = 60.0
"""Seconds to start a server and list its tools (``npx`` may download a package first)."""

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    """One MCP server. Exactly one of ``command`` (stdio) and ``url`` (Streamable HTTP)."""

    name: str
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    headers_from_env: Mapping[str, str] = field(default_factory=dict)
    approve: ApprovalPolicy | Mapping[str, ApprovalPolicy] = DEFAULT_APPROVAL
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise ValueError("An MCP server needs a non-empty name.")
        if bool(self.command) == bool(self.url):
            raise ValueError(
                f"MCP server {self.name!r}: give either a command (stdio) or a url (Streamable HTTP)."
            )
        for policy in self._policies():
            if policy not in APPROVAL_POLICIES:
                raise ValueError(
                    f"MCP server {self.name!r}: approval {policy!r} is not one of ask, auto, deny."
                )
        if self.call_timeout <= 0 or self.connect_timeout <= 0:
            raise ValueError(f"MCP server {self.name!r}: timeouts must be positive numbers of seconds.")

    def _policies(self) -> list[str]:
        if isinstance(self.approve, str):
            return [self.approve]
        return list(self.approve.values())

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command else "http"

    def approval_for(self, tool_name: str) -> ApprovalPolicy:
        """The policy of one tool (its original MCP name): the tool's entry, else ``"*"``,
        else the server-wide value, else ``ask``."""
        if isinstance(self.approve, str):
            return self.approve
        return self.approve.get(tool_name, self.approve.get("*", DEFAULT_APPROVAL))

    def resolved_env(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """``env`` with ``${VAR}`` references filled from the environment."""
        return {key: expand(value, f"env {key}", self.name, environ) for key, value in self.env.items()}

    def resolved_headers(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """``headers`` with ``${VAR}`` filled, then ``headers_from_env`` read from the environment."""
        source = os.environ if environ is None else environ
        out = {key: expand(value, f"header {key}", self.name, environ) for key, value in self.headers.items()}
        for header, variable in self.headers_from_env.items():
            if variable not in source:
                raise ValueError(_missing(self.name, f"header {header}", variable))
            out[header] = source[variable]
        return out

    def describe(self) -> str:
        """The target without any secret: the command line, or the URL and header names."""
        if self.command:
            return shlex.join(self.command)
        names = sorted({*self.headers, *self.headers_from_env})
        return redact_url(self.url or "") + (f" (headers: {', '.join(names)})" if names else "")


def _missing(server: str, what: str, variable: str) -> str:
    return (
        f"MCP server {server!r}: {what} needs the environment variable {variable}, which is not set. "
        f"Set it (os.environ[{variable!r}] = ...) before connecting."
    )


def expand(value: str, what: str, server: str, environ: Mapping[str, str] | None = None) -> str:
    """Replace every ``${VAR}`` in ``value`` with the variable's value; unset is an error."""
    source = os.environ if environ is None else environ

    def replace(match: re.Match[str]) -> str:
        variable = match.group(1)
        if variable not in source:
            raise ValueError(_missing(server, what, variable))
        return source[variable]

    return _ENV_REFERENCE.sub(replace, value)


# --- the config file -----------------------------------------------------------------------------


def _strings(value: Any, what: str, server: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"MCP server {server!r}: {what} must map names to strings.")
    return dict(value)


def _approval(value: Any, server: str) -> ApprovalPolicy | dict[str, ApprovalPolicy]:
    if value is None:
        return DEFAULT_APPROVAL
    if isinstance(value, str):
        return cast(ApprovalPolicy, value)
    return cast(dict[str, ApprovalPolicy], _strings(value, "approve", server))


def server_from_dict(name: str, entry: Mapping[str, Any]) -> ServerConfig:
    """One ``mcpServers`` entry: ``{"command", "args", "env", "cwd"}`` or ``{"url", "headers"}``,
    plus ``approve``, ``timeout`` (per call) and ``connectTimeout``, all optional."""
    if not isinstance(entry, Mapping):
        raise ValueError(f"MCP server {name!r}: the entry must be a JSON object.")
    command = entry.get("command")
    args = entry.get("args") or []
    if command is not None and not isinstance(command, str):
        raise ValueError(f"MCP server {name!r}: command must be a string (put arguments in args).")
    if not isinstance(args, Sequence) or isinstance(args, str) or not all(isinstance(a, str) for a in args):
        raise ValueError(f"MCP server {name!r}: args must be a list of strings.")
    options: dict[str, Any] = {}
    if "timeout" in entry:
        options["call_timeout"] = float(entry["timeout"])
    if "connectTimeout" in entry:
        options["connect_timeout"] = float(entry["connectTimeout"])
    return ServerConfig(
        name=name,
        command=(command, *args) if command else (),
        env=_strings(entry.get("env"), "env", name),
        cwd=entry.get("cwd"),
        url=entry.get("url"),
        headers=_strings(entry.get("headers"), "headers", name),
        headers_from_env=_strings(entry.get("headersFromEnv"), "headersFromEnv", name),
        approve=_approval(entry.get("approve"), name),
        **options,
    )


def parse_config(data: Mapping[str, Any]) -> list[ServerConfig]:
    """Every server of a ``{"mcpServers": {name: entry}}`` document, in file order."""
    servers = data.get("mcpServers") if isinstance(data, Mapping) else None
    if not isinstance(servers, Mapping):
        raise ValueError('An MCP config file is a JSON object with an "mcpServers" object in it.')
    return [server_from_dict(name, entry) for name, entry in servers.items()]


def load_config(path: str | os.PathLike[str]) -> list[ServerConfig]:
    """Read a JSON config file in the usual ``mcpServers`` shape."""
    file = Path(path).expanduser()
    try:
        data = json.loads(file.read_text("utf-8"))
    except FileNotFoundError:
        raise ValueError(f"MCP config file {str(file)!r} does not exist.") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"MCP config file {str(file)!r} is not valid JSON: {exc}") from None
    return parse_config(data)
