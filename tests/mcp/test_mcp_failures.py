"""Servers that fail: a crash mid-call, a hang past the call timeout, garbage on stdout, a
command that is not a server, a server that never finishes starting, an HTTP server that
goes away; and cleanup: no child process outlives ``remove``, ``close_all`` or the
interpreter (checked by pid)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_helpers import STDIO_COMMAND, HttpServer, pid_of, process_exists, wait_for_port, wait_gone
from test_mcp_tools import results, run_agent, tool

from pi_notebook.ai.faux import FauxRegistration
from pi_notebook.mcp import McpConnectError, McpManager, McpServer

SLEEPER = (
    "import os, sys, time; print(f'server_app pid={os.getpid()}', file=sys.stderr, flush=True); "
    "time.sleep(60)"
)


@pytest.fixture(scope="module")
def broken() -> Iterator[McpManager]:
    """Servers the tests break, started together so they connect in parallel."""
    manager = McpManager()
    for name in ("crashy", "noisy", "killed", "gone1", "gone2"):
        manager.add(name=name, command=STDIO_COMMAND, timeout=20)
    manager.add(name="hung", command=STDIO_COMMAND, timeout=1)
    try:
        yield manager
    finally:
        manager.shutdown()


def ready(manager: McpManager, name: str) -> McpServer:
    return manager.get(name).wait()


async def test_a_crash_mid_call_gives_an_error_result_and_a_dead_server(
    broken: McpManager, faux: FauxRegistration
) -> None:
    server = ready(broken, "crashy")
    pid = pid_of(server)
    agent, _ = await run_agent(faux, broken.tools(["crashy"]), [("crashy__crash", {})])
    (result,) = results(agent)
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error
    assert "MCP server 'crashy' is dead: the server process exited." in text
    assert "crash: exiting with status 3" in text  # the stderr tail
    assert server.state == "dead"
    (status,) = [s for s in broken.list() if s.name == "crashy"]
    assert status.reason == "the server process exited (stderr: crash: exiting with status 3)"
    assert status.line().startswith("crashy [dead] stdio")
    assert wait_gone(pid)
    assert "crashy__crash" not in {t.name for t in broken.tools()}
    started = time.monotonic()
    with pytest.raises(Exception, match="is dead"):
        await tool(server, "echo").execute("c", {"text": "x"}, None, None)
    assert time.monotonic() - started < 2


async def test_a_hung_server_fails_the_call_and_is_stopped(broken: McpManager) -> None:
    server = ready(broken, "hung")
    pid = pid_of(server)
    started = time.monotonic()
    with pytest.raises(Exception, match=r"stopped answering \(a call to hang ran past 1 s"):
        await tool(server, "hang").execute("c", {"seconds": 60}, None, None)
    assert time.monotonic() - started < 5
    assert server.state == "dead"
    assert wait_gone(pid)


async def test_garbage_on_stdout_kills_the_server(broken: McpManager) -> None:
    server = ready(broken, "noisy")
    pid = pid_of(server)
    with pytest.raises(Exception, match="not JSON-RPC on stdout"):
        await tool(server, "garbage").execute("c", {}, None, None)
    assert server.state == "dead"
    assert (server.reason or "").startswith(
        "it wrote something that is not JSON-RPC on stdout (servers must log to stderr): "
        "'this is not json-rpc'"
    )
    assert wait_gone(pid)


def test_a_server_killed_between_calls_shows_dead_without_a_call(broken: McpManager) -> None:
    server = ready(broken, "killed")
    changes: list[str] = []
    unsubscribe = broken.subscribe(lambda status: changes.append(status.line()))
    os.kill(pid_of(server), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while server.state != "dead" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.state == "dead"
    assert (server.reason or "").startswith("the server process exited")
    assert "killed" not in {t.server_name for t in broken.tools()}
    unsubscribe()
    assert changes[0].startswith("killed [dead] stdio")
    assert "the server process exited" in changes[0]


def test_remove_and_close_all_leave_no_process(broken: McpManager) -> None:
    first, second = ready(broken, "gone1"), ready(broken, "gone2")
    changes: list[tuple[str, str]] = []
    unsubscribe = broken.subscribe(lambda status: changes.append((status.name, status.state)))
    first_pid, second_pid = pid_of(first), pid_of(second)
    assert process_exists(first_pid)
    assert process_exists(second_pid)
    broken.remove("gone1")
    assert wait_gone(first_pid, timeout=3)
    assert process_exists(second_pid)
    assert "gone1" not in broken.names()
    broken.close_all()
    assert wait_gone(second_pid, timeout=3)
    assert changes[0] == ("gone1", "closed")
    assert ("gone2", "closed") in changes[1:]
    unsubscribe()
    assert broken.list() == []
    with pytest.raises(KeyError, match="No MCP server named 'gone2'"):
        broken.get("gone2")


def test_no_process_outlives_the_interpreter(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        from pi_notebook import mcp
        from mcp_helpers import pid_of
        server = mcp.connect("left", {STDIO_COMMAND!r})
        print(pid_of(server), flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=str(tmp_path),
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)},
    )
    pid = int(done.stdout.strip())
    assert wait_gone(pid, timeout=3)


def test_a_command_that_does_not_exist() -> None:
    manager = McpManager()
    try:
        with pytest.raises(McpConnectError, match=r"could not start 'no-such-mcp-server-xyz'"):
            manager.connect(name="missing", command=["no-such-mcp-server-xyz"])
        assert manager.get("missing").state == "dead"
    finally:
        manager.shutdown()


def test_a_command_that_exits_at_once_shows_its_stderr() -> None:
    manager = McpManager()
    code = "import sys; print('fatal: no config', file=sys.stderr); sys.exit(2)"
    try:
        with pytest.raises(McpConnectError, match="fatal: no config") as raised:
            manager.connect(name="quitter", command=[sys.executable, "-c", code])
        assert "is dead" in str(raised.value)
    finally:
        manager.shutdown()


def test_a_server_that_never_finishes_starting_is_stopped() -> None:
    manager = McpManager()
    try:
        server = manager.add(name="mute", command=[sys.executable, "-c", SLEEPER], connect_timeout=1.5)
        with pytest.raises(McpConnectError, match=r"did not finish starting within 1\.5 s"):
            server.wait()
        assert wait_gone(pid_of(server))
    finally:
        manager.shutdown()


async def test_an_http_server_that_goes_away(tmp_path: Path) -> None:
    http = HttpServer(tmp_path / "stderr.log")
    manager = McpManager()
    try:
        wait_for_port(http.port, http.process)
        server = await manager.aconnect(name="remote", url=http.url, timeout=10)
        http.stop()
        with pytest.raises(Exception, match="'remote' is dead: the connection closed during a call to echo"):
            await tool(server, "echo").execute("c", {"text": "x"}, None, None)
        assert server.state == "dead"
    finally:
        http.stop()
        manager.shutdown()


def test_sdk_transport_errors_are_not_printed_where_logging_is_not_set_up(tmp_path: Path) -> None:
    """Without logging configured, Python prints ERROR records on stderr (a notebook would show
    them in the cell); the server's state and reason carry the news instead."""
    script = textwrap.dedent(
        f"""
        import asyncio
        from pi_notebook import mcp
        server = mcp.connect("noisy", {STDIO_COMMAND!r})
        garbage = next(t for t in server.tools if t.mcp_name == "garbage")
        try:
            asyncio.run(garbage.execute("c", {{}}, None, None))
        except Exception as exc:
            print(str(exc).splitlines()[0])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True, cwd=tmp_path
    )
    assert "not JSON-RPC on stdout" in done.stdout
    assert done.stderr == ""
