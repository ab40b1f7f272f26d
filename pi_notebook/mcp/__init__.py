"""``pi_notebook.mcp``: Model Context Protocol servers as agent tools.

Built on the official ``mcp`` SDK (``pip install 'pi-notebook[mcp]'``). Servers run over
stdio (a command) or Streamable HTTP (a URL) on one background event loop that outlives
cells; their tools become ``McpTool`` agent tools named ``SERVER__TOOL``. Imports
``pi_notebook.ai`` and ``pi_notebook.agent`` only, never IPython.

    from pi_notebook import mcp
    server = mcp.connect("files", command=["npx", "-y", "@modelcontextprotocol/server-filesystem", "."])
    agent.state.tools += mcp.default_manager().tools()
"""

from __future__ import annotations

from typing import Any

from .config import ApprovalPolicy, ServerConfig, load_config, parse_config
from .manager import McpManager, default_manager, make_config
from .runtime import BackgroundLoop, background_loop
from .server import McpConnectError, McpServer, ServerState, ServerStatus
from .tools import McpTool, McpToolError, agent_tool_name

__all__ = [
    "ApprovalPolicy",
    "BackgroundLoop",
    "McpConnectError",
    "McpManager",
    "McpServer",
    "McpTool",
    "McpToolError",
    "ServerConfig",
    "ServerState",
    "ServerStatus",
    "aconnect",
    "agent_tool_name",
    "background_loop",
    "connect",
    "default_manager",
    "load_config",
    "make_config",
    "parse_config",
]


def connect(name: str, command: Any = None, **options: Any) -> McpServer:
    """Start a server on the default manager and block until it is ready (see ``make_config``
    for the keywords: ``command``, ``url``, ``env``, ``cwd``, ``headers``, ``headers_from_env``,
    ``approve``, ``timeout``, ``connect_timeout``)."""
    return default_manager().connect(make_config(name, command, **options))


async def aconnect(name: str, command: Any = None, **options: Any) -> McpServer:
    """``connect`` for async code: awaits without blocking the caller's loop."""
    return await default_manager().aconnect(make_config(name, command, **options))
