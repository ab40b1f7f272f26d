"""MCP tools through the real agent loop (faux provider), over stdio and Streamable HTTP:
discovery, names and schemas, content and details, ``isError``, progress updates, abort
(the server sees the cancellation), per-call timeouts, and loops that come and go."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import pytest
from mcp_helpers import STDIO_COMMAND, TOKEN_VALUE, TOKEN_VARIABLE, HttpServer

from pi_notebook.agent import Agent, AgentEvent, AgentTool
from pi_notebook.ai.abort import AbortController, AbortSignal
from pi_notebook.ai.entry import stream_simple
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_tool_call
from pi_notebook.ai.types import ImageContent, TextContent, ToolResultMessage
from pi_notebook.mcp import McpManager, McpServer, McpTool


def tool(server: McpServer, name: str) -> McpTool:
    return next(t for t in server.tools if t.mcp_name == name)


async def run_agent(
    faux: FauxRegistration,
    tools: list[AgentTool],
    calls: list[tuple[str, dict[str, Any]]],
    abort_after: float | None = None,
) -> tuple[Agent, list[AgentEvent]]:
    """One prompt: the model calls ``calls`` in one message, then says "done"."""
    blocks = [faux_tool_call(name, args, id=f"call-{i}") for i, (name, args) in enumerate(calls)]
    faux.set_responses(
        [faux_assistant_message(blocks, stop_reason="toolUse"), faux_assistant_message("done")]
    )
    agent = Agent(stream_fn=stream_simple, initial_state={"model": faux.get_model(), "tools": tools})
    events: list[AgentEvent] = []

    def listen(event: AgentEvent, signal: AbortSignal) -> None:
        events.append(event)

    agent.subscribe(listen)
    if abort_after is not None:
        asyncio.get_running_loop().call_later(abort_after, agent.abort)
    await agent.prompt("go")
    return agent, events


def results(agent: Agent) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


def test_discovery_names_schema_and_approval_metadata(server: McpServer) -> None:
    names = {t.name for t in server.tools}
    prefix = server.name
    assert {f"{prefix}__echo", f"{prefix}__image", f"{prefix}__slow", f"{prefix}__fail"} <= names
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for n in names)
    dotted = tool(server, "dotted.name")
    assert re.fullmatch(rf"{prefix}__dotted_name_[0-9a-f]{{8}}", dotted.name)
    long = next(t for t in server.tools if t.mcp_name.startswith("a_tool_whose_name"))
    assert len(long.name) == 64
    echo = tool(server, "echo")
    assert echo.description == "Echo the text back."
    assert echo.parameters["properties"]["text"]["type"] == "string"
    assert echo.parameters["required"] == ["text"]
    assert echo.to_tool().parameters == echo.parameters
    assert (echo.server_name, echo.mcp_name, echo.approval, echo.requires_approval) == (
        prefix,
        "echo",
        "ask",
        True,
    )


async def test_calls_through_the_agent_loop(server: McpServer, faux: FauxRegistration) -> None:
    p = server.name
    calls = [(f"{p}__echo", {"text": "hi"}), (f"{p}__image", {}), (f"{p}__weather", {"city": "Oslo"})]
    agent, _ = await run_agent(faux, list(server.tools), calls)
    echo, image, weather = results(agent)
    assert not echo.is_error
    assert echo.content == [TextContent(text="echo: hi")]
    assert echo.details["server"] == p
    assert echo.details["tool"] == "echo"
    assert echo.details["structuredContent"] == {"result": "echo: hi"}
    assert echo.details["result"]["content"][0]["text"] == "echo: hi"
    assert image.details["result"]["content"][0]["data"] == "<96 base64 characters, in the result's content>"
    assert isinstance(image.content[0], ImageContent)
    assert image.content[0].mime_type == "image/png"
    assert image.content[0].data.startswith("iVBORw0KGgo")
    assert weather.details["structuredContent"] == {"city": "Oslo", "celsius": 21.5}
    assert '"celsius": 21.5' in weather.content[0].text  # type: ignore[union-attr]
    assert agent.state.messages[-1].content[0].text == "done"


async def test_is_error_becomes_an_error_tool_result(server: McpServer, faux: FauxRegistration) -> None:
    agent, events = await run_agent(faux, list(server.tools), [(f"{server.name}__fail", {"message": "boom"})])
    (result,) = results(agent)
    assert result.is_error
    assert "reported an error" in result.content[0].text  # type: ignore[union-attr]
    assert "boom" in result.content[0].text  # type: ignore[union-attr]
    end = next(e for e in events if e.type == "tool_execution_end")
    assert end.is_error  # type: ignore[union-attr]
    assert server.state == "ready"  # a tool error is not a server failure


async def test_progress_becomes_tool_execution_updates(server: McpServer, faux: FauxRegistration) -> None:
    agent, events = await run_agent(faux, list(server.tools), [(f"{server.name}__slow", {"steps": 3})])
    updates = [e for e in events if e.type == "tool_execution_update"]
    texts = [u.partial_result.content[0].text for u in updates]  # type: ignore[union-attr]
    assert texts == ["step 1 of 3 (1/3)", "step 2 of 3 (2/3)", "step 3 of 3 (3/3)"]
    assert updates[0].partial_result.details == {"progress": 1, "total": 3, "message": "step 1 of 3"}  # type: ignore[union-attr]
    order = [e.type for e in events if e.type.startswith("tool_execution")]
    assert order[0] == "tool_execution_start"
    assert order[-1] == "tool_execution_end"
    assert results(agent)[0].content == [TextContent(text="slept 3 steps")]


def cancellations(server: McpServer, http_server: HttpServer) -> int:
    text = "\n".join(server.stderr_tail(200)) if server.config.transport == "stdio" else http_server.stderr()
    return text.count("slow: cancelled")


async def wait_until(predicate: Any, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return False


async def test_abort_cancels_the_call_on_the_server(
    server: McpServer, faux: FauxRegistration, http_server: HttpServer
) -> None:
    before = cancellations(server, http_server)
    started = time.monotonic()
    agent, _ = await run_agent(
        faux, list(server.tools), [(f"{server.name}__slow", {"steps": 100})], abort_after=0.5
    )
    elapsed = time.monotonic() - started
    (result,) = results(agent)
    assert result.is_error
    assert result.content[0].text == "Request was aborted"  # type: ignore[union-attr]
    assert elapsed < 5  # the slow tool would take 10 s
    assert await wait_until(lambda: cancellations(server, http_server) > before)
    assert server.state == "ready"


async def test_cancelling_the_caller_cancels_the_call(server: McpServer, http_server: HttpServer) -> None:
    before = cancellations(server, http_server)
    task = asyncio.ensure_future(tool(server, "slow").execute("c", {"steps": 100}, None, None))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_until(lambda: cancellations(server, http_server) > before)


async def test_an_aborted_signal_never_reaches_the_server(server: McpServer) -> None:
    controller = AbortController()
    controller.abort()
    with pytest.raises(Exception, match="aborted"):
        await tool(server, "echo").execute("c", {"text": "x"}, controller.signal, None)


async def test_the_callers_loop_keeps_running_during_a_call(server: McpServer) -> None:
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    ticker = asyncio.ensure_future(tick())
    result = await tool(server, "slow").execute("c", {"steps": 5}, None, None)
    ticker.cancel()
    assert result.content == [TextContent(text="slept 5 steps")]
    assert ticks >= 20  # 0.5 s of work; a blocked loop would tick once


def test_servers_outlive_the_event_loops_that_call_them(server: McpServer) -> None:
    """Each notebook cell may run on a new task or loop; the connection stays."""
    echo = tool(server, "echo")
    for text in ("one", "two"):
        result = asyncio.run(echo.execute("c", {"text": text}, None, None))  # type: ignore[arg-type]
        assert result.content == [TextContent(text=f"echo: {text}")]


async def test_header_values_come_from_the_environment(shared_servers: dict[str, McpServer]) -> None:
    http = shared_servers["http"]
    result = await tool(http, "header").execute("c", {"name": "X-Test-Token"}, None, None)
    assert result.content == [TextContent(text=TOKEN_VALUE)]
    listed = repr([s.line() for s in [http.status()]]) + repr(http.status())
    assert TOKEN_VALUE not in listed
    assert "X-Test-Token" in http.status().target


async def test_a_call_past_its_timeout_fails_and_the_server_stays(http_url: str) -> None:
    manager = McpManager()
    try:
        server = await manager.aconnect(name="quick", url=http_url, timeout=0.5)
        started = time.monotonic()
        with pytest.raises(Exception, match=r"did not finish within 0\.5 s"):
            await tool(server, "slow").execute("c", {"steps": 100}, None, None)
        assert time.monotonic() - started < 5
        assert server.state == "ready"
        echo = await tool(server, "echo").execute("c", {"text": "still here"}, None, None)
        assert echo.content == [TextContent(text="echo: still here")]
    finally:
        await manager.runtime.run(manager.aclose_all())
        manager.shutdown()


def test_manager_listing(manager: McpManager, shared_servers: dict[str, McpServer]) -> None:
    listed = {s.name: s for s in manager.list()}
    assert listed["st"].state == "ready"
    assert listed["st"].transport == "stdio"
    assert listed["st"].target.endswith("server_app.py stdio")
    assert "st__echo" in listed["st"].tools
    assert listed["ht"].transport == "http"
    assert re.fullmatch(r"st \[ready\] stdio .*: \d+ tools", listed["st"].line())
    assert {t.server_name for t in manager.tools()} == {"st", "ht"}
    assert {t.server_name for t in manager.tools(["ht"])} == {"ht"}
    assert STDIO_COMMAND[-1] == "stdio"


async def test_a_config_document_with_env_headers_and_per_tool_approval(
    http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = McpManager()
    monkeypatch.delenv(TOKEN_VARIABLE, raising=False)
    document = {
        "mcpServers": {
            "cfg": {
                "url": http_url,
                "headers": {"X-Test-Token": "Bearer ${" + TOKEN_VARIABLE + "}"},
                "approve": {"echo": "auto", "fail": "deny"},
            }
        }
    }
    try:
        with pytest.raises(ValueError, match=f"needs the environment variable {TOKEN_VARIABLE}"):
            manager.add_config(document)
        assert manager.list() == []
        monkeypatch.setenv(TOKEN_VARIABLE, TOKEN_VALUE)
        (server,) = manager.add_config(document)
        await server.ready()
        header = await tool(server, "header").execute("c", {"name": "X-Test-Token"}, None, None)
        assert header.content == [TextContent(text=f"Bearer {TOKEN_VALUE}")]
        assert (tool(server, "echo").approval, tool(server, "echo").requires_approval) == ("auto", False)
        assert (tool(server, "fail").approval, tool(server, "fail").requires_approval) == ("deny", True)
        assert tool(server, "slow").approval == "ask"
    finally:
        manager.shutdown()


async def test_tool_names_stay_unique_across_servers(http_url: str) -> None:
    """Server ``h`` has ``x__echo`` and server ``h__x`` has ``echo``: both would be
    ``h__x__echo``; the server that lists its tools second gets a hashed name."""
    manager = McpManager()
    try:
        first = await manager.aconnect(name="h", url=http_url)
        second = await manager.aconnect(name="h__x", url=http_url)
        names = [t.name for t in manager.tools()]
        assert len(names) == len(set(names))
        assert tool(first, "x__echo").name == "h__x__echo"
        assert re.fullmatch(r"h__x__echo_[0-9a-f]{8}", tool(second, "echo").name)
    finally:
        manager.shutdown()


async def test_other_content_blocks_become_text(server: McpServer) -> None:
    result = await tool(server, "mixed").execute("c", {}, None, None)
    assert result.content == [
        TextContent(text="first"),
        TextContent(text="[audio (audio/wav) omitted: the model cannot take audio]"),
        TextContent(text="[resource link: file:///tmp/report.csv (report.csv)]"),
        TextContent(text="[resource memo://note]\na note"),
    ]
    assert result.details["result"]["content"][1]["data"] == "UklGRg=="
    assert result.details["structuredContent"] is None
