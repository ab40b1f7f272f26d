"""``McpManager``: the MCP servers of one process (the notebook holds one per kernel).

``add`` starts a server and returns at once (state ``connecting``); ``connect`` does the same
and waits until it is ready. ``list`` shows every server with its state, reason and tools,
``tools`` gives the agent tools of the ready ones, ``remove`` and ``close_all`` stop servers
(their processes too). Every manager closes its servers at interpreter exit.

Sync methods block only the calling thread (the background loop does the work); the ``a``
variants are awaitable from any event loop without blocking it.
"""

from __future__ import annotations

import builtins
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .config import DEFAULT_APPROVAL, ApprovalPolicy, ServerConfig, load_config, parse_config
from .runtime import BackgroundLoop, background_loop, on_exit, remove_exit_hook
from .server import CLOSE_TIMEOUT, McpServer, ServerStatus
from .tools import McpTool, agent_tool_name

__all__ = ["McpManager", "default_manager"]


class McpManager:
    def __init__(self, runtime: BackgroundLoop | None = None) -> None:
        self.runtime = runtime or background_loop()
        self._servers: dict[str, McpServer] = {}
        self._lock = threading.Lock()
        self._listeners: builtins.list[Callable[[ServerStatus], None]] = []
        on_exit(self.aclose_all)

    def subscribe(self, listener: Callable[[ServerStatus], None]) -> Callable[[], None]:
        """Call ``listener(status)`` whenever a server becomes ready, dead or closed (on the
        background loop's thread: hand the work to your own loop). Returns an unsubscriber."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _changed(self, server: McpServer) -> None:
        status = server.status()
        for listener in list(self._listeners):
            listener(status)

    # --- adding ----------------------------------------------------------------------------------

    def add(self, config: ServerConfig | None = None, /, **options: Any) -> McpServer:
        """Start a server (a ``ServerConfig``, or its fields as keywords) without waiting.
        A server of the same name is replaced (the old one is closed first). An environment
        variable the config names but that is not set raises ``ValueError`` here."""
        config = config or make_config(**options)
        old = self._servers.get(config.name)
        if old is not None:
            self.remove(config.name)
        with self._lock:
            server = McpServer(config, self.runtime, self._name_tool, self._changed)
            self._servers[config.name] = server
        return server

    def connect(self, config: ServerConfig | None = None, /, **options: Any) -> McpServer:
        """``add`` and block until ready; raise ``McpConnectError`` with the reason if not."""
        return self.add(config, **options).wait()

    async def aconnect(self, config: ServerConfig | None = None, /, **options: Any) -> McpServer:
        """``add`` and await until ready, without blocking the caller's loop."""
        config = config or make_config(**options)
        if config.name in self._servers:
            await self.aremove(config.name)
        return await self.add(config).ready()

    def add_config(
        self, source: str | os.PathLike[str] | Mapping[str, Any], names: Iterable[str] | None = None
    ) -> builtins.list[McpServer]:
        """Start every server of a config file (a path) or an already parsed ``mcpServers``
        document, or only those in ``names``; returns at once."""
        configs = parse_config(source) if isinstance(source, Mapping) else load_config(source)
        wanted = set(names) if names is not None else None
        if wanted is not None and (unknown := wanted - {c.name for c in configs}):
            raise ValueError(f"No MCP server named {', '.join(sorted(unknown))} in the config.")
        chosen = [c for c in configs if wanted is None or c.name in wanted]
        for config in chosen:  # every variable checked before any server starts
            config.resolved_env()
            config.resolved_headers()
        return [self.add(c) for c in chosen]

    def _name_tool(self, server: McpServer, tool: str) -> str:
        """A name unique among the tools of the other servers (see ``agent_tool_name``)."""
        taken = {t.name for other in list(self._servers.values()) if other is not server for t in other.tools}
        name = agent_tool_name(server.name, tool)
        return agent_tool_name(server.name, tool, force_hash=True) if name in taken else name

    # --- looking -----------------------------------------------------------------------------------

    def get(self, name: str) -> McpServer:
        try:
            return self._servers[name]
        except KeyError:
            known = ", ".join(self._servers) or "none"
            raise KeyError(f"No MCP server named {name!r} (servers: {known}).") from None

    def __contains__(self, name: object) -> bool:
        return name in self._servers

    def names(self) -> builtins.list[str]:
        return list(self._servers)

    def list(self) -> list[ServerStatus]:
        return [server.status() for server in list(self._servers.values())]

    def tools(self, servers: Sequence[str] | None = None) -> builtins.list[McpTool]:
        """The agent tools of every ready server (or of the named ones)."""
        chosen = [self.get(n) for n in servers] if servers is not None else list(self._servers.values())
        return [tool for server in chosen if server.state == "ready" for tool in server.tools]

    # --- removing ------------------------------------------------------------------------------

    def remove(self, name: str) -> None:
        """Close one server and forget it (blocks this thread until its process is gone)."""
        server = self._pop(name)
        self.runtime.run_sync(server.aclose(), timeout=CLOSE_TIMEOUT + 3)

    async def aremove(self, name: str) -> None:
        await self.runtime.run(self._pop(name).aclose())

    def _pop(self, name: str) -> McpServer:
        with self._lock:
            server = self.get(name)
            del self._servers[name]
        return server

    def close_all(self) -> None:
        """Close every server (blocks this thread until their processes are gone)."""
        self.runtime.run_sync(self.aclose_all(), timeout=CLOSE_TIMEOUT + 3)

    async def aclose_all(self) -> None:
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            await self.runtime.run(server.aclose())

    def shutdown(self) -> None:
        """``close_all`` and drop the exit hook (for a manager that is thrown away)."""
        self.close_all()
        remove_exit_hook(self.aclose_all)


def make_config(
    name: str,
    command: Sequence[str] | str | None = None,
    *,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    headers: Mapping[str, str] | None = None,
    headers_from_env: Mapping[str, str] | None = None,
    approve: ApprovalPolicy | Mapping[str, ApprovalPolicy] = DEFAULT_APPROVAL,
    timeout: float | None = None,
    connect_timeout: float | None = None,
) -> ServerConfig:
    """A ``ServerConfig`` from keywords; ``command`` is a list (a string is one program)."""
    options: dict[str, Any] = {}
    if timeout is not None:
        options["call_timeout"] = timeout
    if connect_timeout is not None:
        options["connect_timeout"] = connect_timeout
    return ServerConfig(
        name=name,
        command=(command,) if isinstance(command, str) else tuple(command or ()),
        url=url,
        env=dict(env or {}),
        cwd=cwd,
        headers=dict(headers or {}),
        headers_from_env=dict(headers_from_env or {}),
        approve=approve if isinstance(approve, str) else dict(approve),
        **options,
    )


_default: McpManager | None = None
_default_lock = threading.Lock()


def default_manager() -> McpManager:
    """The process's manager (created on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = McpManager()
        return _default
