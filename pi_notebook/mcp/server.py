"""One MCP server connection: its long-lived task on the background loop, state and tools.

States: ``connecting`` (starting, handshake, listing tools), ``ready``, ``dead`` (with a
one-line reason: the process exited, it stopped answering, it wrote garbage on stdout, ...),
and ``closed`` (removed by the user). A dead server stays dead; every call to one of its
tools fails at once with the reason, so the model can work without it.

The session is entered and left by one task (anyio requires it): ``_lifetime`` connects,
lists the tools, then waits until it is told to stop or the connection ends. Calls run as
separate tasks on the same loop and go through the session concurrently.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import mcp_types
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from pydantic import ValidationError

from ..ai.redact import redact, url_secrets
from .config import ServerConfig
from .runtime import BackgroundLoop
from .tools import McpTool, McpToolError, build_tool
from .transport import StderrTail, open_transport, watched

__all__ = ["McpConnectError", "McpServer", "ServerState", "ServerStatus"]

# The SDK logs transport faults (a garbage line, a closed pipe) at ERROR; with no logging set
# up, Python would print them in the cell's output. The state and reason say it instead, and
# a user who configures logging still gets the records.
logging.getLogger("mcp").addHandler(logging.NullHandler())

ServerState: TypeAlias = Literal["connecting", "ready", "dead", "closed"]
CLIENT_INFO = mcp_types.Implementation(name="pi-notebook", version="0.1.0")
PING_TIMEOUT = 5.0
"""Seconds a server gets to answer a follow-up request after a call timed out, before it
counts as hung."""
STDERR_SETTLE = 1.0
"""Seconds to wait for a dead process's last stderr lines before reporting them."""
CLOSE_TIMEOUT = 12.0
MAX_REASON = 300


class McpConnectError(RuntimeError):
    """A server could not be started or reached; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """What ``McpManager.list()`` shows for one server (no secret: headers by name only)."""

    name: str
    state: ServerState
    reason: str | None
    transport: Literal["stdio", "http"]
    target: str
    tools: tuple[str, ...]
    stderr_tail: tuple[str, ...]

    def line(self) -> str:
        """One line for the user: name, state, and the tool count or the reason."""
        head = f"{self.name} [{self.state}] {self.transport} {self.target}"
        if self.state == "ready":
            return f"{head}: {len(self.tools)} tool{'' if len(self.tools) == 1 else 's'}"
        return f"{head}: {self.reason}" if self.reason else head


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_REASON else flat[: MAX_REASON - 1] + "…"


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside the SDK's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe_failure(exc: BaseException, config: ServerConfig) -> str:
    exc = _leaf(exc)
    if isinstance(exc, FileNotFoundError | PermissionError) and config.command:
        return f"could not start {config.command[0]!r}: {exc.strerror or exc}"
    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        return "the connection closed during the handshake (did the command start an MCP server?)"
    text = str(exc) or type(exc).__name__
    plain = isinstance(exc, MCPError | ValueError | OSError)  # their messages stand on their own
    # an HTTP error may quote the server's URL, with a token in its query or userinfo
    text = redact(text, url_secrets(config.url))
    return _one_line(text if plain else f"{type(exc).__name__}: {text}")


def _offending_line(error: Exception) -> str:
    """What the server wrote, from the SDK's parse error (the text, cut to 80 characters)."""
    if isinstance(error, ValidationError) and (errors := error.errors(include_url=False)):
        value = errors[0].get("input")
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return repr(text[:80])
    return _one_line(str(error).splitlines()[0] if str(error) else type(error).__name__)


class McpServer:
    """A connection to one server (made by ``McpManager.add``)."""

    def __init__(
        self,
        config: ServerConfig,
        runtime: BackgroundLoop,
        namer: Callable[[McpServer, str], str],
        on_change: Callable[[McpServer], None] | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self.runtime = runtime
        # read now, in the caller's thread: an unset variable raises here, naming it
        self._env = config.resolved_env()
        self._headers = config.resolved_headers()
        self.state: ServerState = "connecting"
        self.tools: list[McpTool] = []
        self._namer = namer
        self._on_change = on_change
        self._reason: str | None = None
        self._client: Client | None = None
        self._stderr = StderrTail() if config.transport == "stdio" else None
        self._stop = asyncio.Event()  # used on the background loop only
        self._settled_async = asyncio.Event()  # likewise
        self._settled = threading.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self._future: concurrent.futures.Future[None] = runtime.submit(self._lifetime())

    # --- what the user sees ------------------------------------------------------------------

    @property
    def reason(self) -> str | None:
        """Why the server is dead, in one line, ending with its last stderr line if any."""
        if self._reason is None:
            return None
        last = self.stderr_tail(1)
        return _one_line(f"{self._reason} (stderr: {last[0]})") if last else self._reason

    def is_dead(self) -> bool:
        return self.state == "dead"

    def stderr_tail(self, lines: int = 20) -> list[str]:
        return self._stderr.tail(lines) if self._stderr is not None else []

    def status(self) -> ServerStatus:
        return ServerStatus(
            name=self.name,
            state=self.state,
            reason=self.reason,
            transport=self.config.transport,
            target=self.config.describe(),
            tools=tuple(tool.name for tool in self.tools),
            stderr_tail=tuple(self.stderr_tail()),
        )

    def wait(self, timeout: float | None = None) -> McpServer:
        """Block until the server is ready; raise :class:`McpConnectError` if it is not."""
        limit = self.config.connect_timeout + 5 if timeout is None else timeout
        self._settled.wait(limit)
        return self._check_ready()

    async def ready(self) -> McpServer:
        """Await (from any loop) until the server is ready; raise if it is not."""
        await self.runtime.run(self._settled_async.wait())
        return self._check_ready()

    def _check_ready(self) -> McpServer:
        if self.state == "ready":
            return self
        if self.state == "connecting":
            raise McpConnectError(f"MCP server '{self.name}' is still connecting.")
        raise McpConnectError(self.unavailable())

    def unavailable(self) -> str:
        """The error text for a call to a server that is not ready."""
        what = "still connecting" if self.state == "connecting" else self.state
        text = f"MCP server '{self.name}' is {what}"
        text += f": {self._reason.rstrip('.')}." if self._reason else "."
        tail = self.stderr_tail(5)
        if tail:
            text += " Last stderr lines:\n" + "\n".join(tail)
        if self.state in ("dead", "closed"):
            text += "\nIts tools cannot be used until the server is added again."
        return text

    # --- the lifetime task ---------------------------------------------------------------------

    async def _lifetime(self) -> None:
        self._task = asyncio.current_task()
        watchdog = asyncio.get_running_loop().call_later(self.config.connect_timeout, self._connect_timed_out)
        try:
            await self._serve()
        except asyncio.CancelledError:
            if not (self._closing or self.state == "dead"):
                raise
        except Exception as exc:
            self._die(describe_failure(exc, self.config))
        finally:
            watchdog.cancel()
            self._client = None
            if self._stderr is not None:
                self._stderr.close_writer()
            if self.state != "dead":
                self._set_state("closed")
            self._mark_settled()

    async def _serve(self) -> None:
        opened = open_transport(self.config, self._stderr, self._env, self._headers)
        transport = watched(opened, self._on_end, self._on_garbage)
        try:
            client = Client(transport, client_info=CLIENT_INFO)
            async with client:
                if self._stderr is not None:
                    self._stderr.close_writer()
                listed = await self._list_tools(client)
                self.tools = [build_tool(self, tool, self._namer(self, tool.name)) for tool in listed]
                self._client = client
                self._set_state("ready")
                self._mark_settled()
                await self._stop.wait()
        finally:
            if self._stderr is not None:
                self._stderr.close_writer()

    @staticmethod
    async def _list_tools(client: Client) -> list[mcp_types.Tool]:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(100):  # a server whose pages never end cannot hang the connection
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    def _set_state(self, state: ServerState) -> None:
        self.state = state
        if self._on_change is not None:
            try:
                self._on_change(self)
            except Exception:  # a listener's bug must not break the connection
                logging.getLogger(__name__).exception("MCP state listener failed")

    def _mark_settled(self) -> None:
        self._settled.set()
        self._settled_async.set()

    def _die(self, reason: str) -> None:
        """Mark the server dead (first reason wins) and end its connection."""
        if self._closing or self.state in ("dead", "closed"):
            return
        self._reason = reason
        self._set_state("dead")
        self._client = None
        self._stop.set()
        self._mark_settled()

    def _connect_timed_out(self) -> None:
        if self.state == "connecting" and self._task is not None:
            self._die(f"it did not finish starting within {self.config.connect_timeout:g} s")
            self._task.cancel()

    def _on_end(self) -> None:
        if self.config.transport == "stdio":
            self._die("the server process exited")
        else:
            self._die("the connection to the server closed")

    def _on_garbage(self, error: Exception) -> None:
        self._die(
            "it wrote something that is not JSON-RPC on stdout (servers must log to stderr): "
            + _offending_line(error)
        )

    # --- calls (run on the background loop) ----------------------------------------------------

    async def call(
        self, tool: str, arguments: dict[str, Any], progress: ProgressFnT | None
    ) -> mcp_types.CallToolResult:
        client = self._client
        if self.state != "ready" or client is None:
            await self._settle_stderr()
            raise McpToolError(self.unavailable())
        timeout = self.config.call_timeout
        try:
            return await client.call_tool(
                tool, arguments, read_timeout_seconds=timeout, progress_callback=progress
            )
        except MCPError as exc:
            raise await self._call_failure(tool, exc) from None
        except McpToolError:
            raise
        except Exception as exc:
            if self.is_dead():
                await self._settle_stderr()
                raise McpToolError(self.unavailable()) from None
            raise McpToolError(
                f"MCP tool {tool} on server '{self.name}' failed: {describe_failure(exc, self.config)}"
            ) from None

    async def _call_failure(self, tool: str, exc: MCPError) -> McpToolError:
        timeout = self.config.call_timeout
        if exc.code == REQUEST_TIMEOUT:
            if await self._responsive():
                return McpToolError(
                    f"MCP tool {tool} on server '{self.name}' did not finish within {timeout:g} s and was "
                    "cancelled. Try a smaller request, or give the server a longer timeout."
                )
            self._die(f"it stopped answering (a call to {tool} ran past {timeout:g} s, then a check failed)")
        elif exc.code == CONNECTION_CLOSED or self.is_dead():
            self._die(f"the connection closed during a call to {tool}")
        else:
            return McpToolError(f"MCP server '{self.name}' rejected the call to {tool}: {exc.message}")
        await self._settle_stderr()
        return McpToolError(self.unavailable())

    async def _responsive(self) -> bool:
        client = self._client
        if client is None:
            return False
        try:
            # A cheap request every protocol version has (ping is gone from the newest one).
            await asyncio.wait_for(
                client.list_tools(cache_mode="refresh"), min(PING_TIMEOUT, self.config.call_timeout)
            )
        except (TimeoutError, MCPError):
            return False
        return True

    async def _settle_stderr(self) -> None:
        """Give a dying process's last stderr lines a moment to arrive."""
        if self._stderr is None:
            return
        for _ in range(int(STDERR_SETTLE / 0.02)):
            if self._stderr.done.is_set():
                return
            await asyncio.sleep(0.02)

    # --- closing -------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """End the connection (the stdio process is stopped); runs on the background loop."""
        self._closing = True
        task = self._task
        if task is None or task.done():
            return
        if self.state == "connecting":
            task.cancel()
        else:
            self._stop.set()
        await asyncio.wait([task], timeout=CLOSE_TIMEOUT)
