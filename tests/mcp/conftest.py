"""MCP test fixtures: the real test server (``server_app.py``) over stdio and over Streamable
HTTP on 127.0.0.1, and a manager whose servers are closed after the module.

Starting a server costs a second or more (the SDK's imports), so the servers the tool tests
share are module-scoped; tests that kill or break a server start their own.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from mcp_helpers import STDIO_COMMAND, TOKEN_VALUE, TOKEN_VARIABLE, HttpServer, wait_for_port

from pi_notebook.mcp import McpManager, McpServer


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    server = HttpServer(tmp_path_factory.mktemp("mcp-http") / "stderr.log")
    try:
        wait_for_port(server.port, server.process)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def http_url(http_server: HttpServer) -> str:
    return http_server.url


@pytest.fixture(scope="module")
def manager() -> Iterator[McpManager]:
    made = McpManager()
    try:
        yield made
    finally:
        made.shutdown()


@pytest.fixture(scope="module")
def shared_servers(manager: McpManager, http_url: str) -> dict[str, McpServer]:
    """One ready server per transport, started together (they connect in parallel)."""
    with pytest.MonkeyPatch.context() as patch:  # the variable is read when the server connects
        patch.setenv(TOKEN_VARIABLE, TOKEN_VALUE)
        stdio = manager.add(name="st", command=STDIO_COMMAND, timeout=20)
        http = manager.add(
            name="ht", url=http_url, headers_from_env={"X-Test-Token": TOKEN_VARIABLE}, timeout=20
        )
    return {"stdio": stdio.wait(), "http": http.wait()}


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest, shared_servers: dict[str, McpServer]) -> McpServer:
    return shared_servers[request.param]
