"""A kernel interrupt cancels the task awaiting ``agent.prompt(...)``: the run is aborted, its
event sequence is completed, and only then ``CancelledError`` propagates. A tool that ignores
the abort is cancelled after a grace period, so neither an interrupt nor Stop waits for it."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from agent_helpers import ECHO_SCHEMA, seen

from pi_notebook.agent import Agent, AgentEvent, AgentTool, AgentToolResult, tools
from pi_notebook.ai.entry import stream_simple
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_tool_call
from pi_notebook.ai.types import TextContent


def recording_agent(
    faux: FauxRegistration, tools: list[AgentTool] | None = None
) -> tuple[Agent, list[AgentEvent]]:
    agent = Agent(stream_fn=stream_simple, initial_state={"model": faux.get_model(), "tools": tools or []})
    events: list[AgentEvent] = []
    agent.subscribe(lambda event, signal: events.append(event))
    return agent, events


def assert_complete(events: list[AgentEvent]) -> None:
    kinds = [e.type for e in events]
    assert kinds.count("agent_end") == 1
    assert kinds[-1] == "agent_end"
    assert kinds.count("turn_start") == kinds.count("turn_end")
    assert kinds.count("message_start") == kinds.count("message_end")
    assert kinds.count("tool_execution_start") == kinds.count("tool_execution_end")


async def test_cancel_during_streaming_aborts_the_run_then_raises(faux: FauxRegistration) -> None:
    faux.set_responses([faux_assistant_message(" ".join(["token"] * 500)), faux_assistant_message("next")])
    agent, events = recording_agent(faux)
    started = seen(agent, "message_update")
    task = asyncio.ensure_future(agent.prompt("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_complete(events)
    last = agent.state.messages[-1]
    assert last.role == "assistant"
    assert last.stop_reason == "aborted"
    assert agent.state.is_streaming is False
    assert agent.signal is None
    await agent.prompt("again")  # the agent is usable afterwards
    assert agent.state.messages[-1].stop_reason == "stop"


async def test_cancel_waits_for_a_tool_that_finishes_after_the_abort(faux: FauxRegistration) -> None:
    finished: list[str] = []

    async def slow(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        await asyncio.sleep(0.05)  # does not look at the signal
        finished.append(params["value"])
        return AgentToolResult(content=[TextContent(text="done")], details={})

    faux.set_responses(
        [faux_assistant_message([faux_tool_call("slow", {"value": "x"}, id="a")], stop_reason="toolUse")]
    )
    agent, events = recording_agent(
        faux, [AgentTool(name="slow", description="", parameters=ECHO_SCHEMA, execute=slow)]
    )
    started = seen(agent, "tool_execution_start")
    task = asyncio.ensure_future(agent.prompt("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished == ["x"]
    assert_complete(events)
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult"]
    assert faux.state.call_count == 1  # no further turn after the abort (docs/design.md, deviation 2)
    assert agent.state.error_message == "Request was aborted"


async def test_a_second_cancel_stops_a_run_whose_tool_ignores_the_abort(faux: FauxRegistration) -> None:
    async def stubborn(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        await asyncio.sleep(30)
        raise AssertionError("unreachable")

    faux.set_responses(
        [faux_assistant_message([faux_tool_call("stubborn", {"value": "x"}, id="a")], stop_reason="toolUse")]
    )
    agent, events = recording_agent(
        faux, [AgentTool(name="stubborn", description="", parameters=ECHO_SCHEMA, execute=stubborn)]
    )
    started = seen(agent, "tool_execution_start")
    task = asyncio.ensure_future(agent.prompt("go"))
    await started.wait()
    task.cancel()
    await asyncio.sleep(0.01)
    assert not task.done()  # still waiting for the tool to honour the abort
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - cancelled_at < 5  # not the tool's 30 s
    assert_complete(events)
    tool_end = next(e for e in events if e.type == "tool_execution_end")
    assert getattr(tool_end, "is_error") is True
    assert agent.state.messages[-1].stop_reason == "aborted"
    assert agent.state.is_streaming is False
    assert agent.state.pending_tool_calls == frozenset()


# --- a tool that ignores the abort is cancelled after a grace period (docs/design.md, deviation 21) --


def one_call_agent(faux: FauxRegistration, execute: Any) -> tuple[Agent, list[AgentEvent]]:
    faux.set_responses(
        [faux_assistant_message([faux_tool_call("tool", {"value": "x"}, id="a")], stop_reason="toolUse")]
    )
    tool = AgentTool(name="tool", description="", parameters=ECHO_SCHEMA, execute=execute)
    return recording_agent(faux, [tool])


async def stop_once_running(agent: Agent) -> None:
    """Prompt, and press Stop (``abort()``) once the tool runs."""
    started = seen(agent, "tool_execution_start")
    run = asyncio.ensure_future(agent.prompt("go"))
    await started.wait()
    agent.abort()
    await asyncio.wait_for(run, 10)  # a tool's 30 s would fail here


def tool_result_text(agent: Agent) -> str:
    result = agent.state.messages[-1]
    assert (result.role, result.is_error) == ("toolResult", True)
    return str(result.content[0].text)


async def test_stop_cancels_an_async_tool_that_ignores_the_abort(
    faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tools, "ABORT_GRACE_S", 0.1)
    cancelled: list[bool] = []

    async def stubborn(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)  # the tool can clean up, as on any asyncio cancellation
            raise
        raise AssertionError("unreachable")

    agent, events = one_call_agent(faux, stubborn)
    await stop_once_running(agent)
    assert cancelled == [True]
    expected = "Operation aborted: tool did not stop within 0.1 s of the abort and was cancelled."
    assert tool_result_text(agent) == expected
    assert_complete(events)
    assert agent.state.error_message == "Request was aborted"
    faux.set_responses([faux_assistant_message("next")])
    await agent.prompt("again")  # the transcript (a call with its result) goes on
    assert agent.state.messages[-1].stop_reason == "stop"


async def test_stop_gives_up_on_a_sync_tool_that_ignores_the_abort(
    faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread cannot be stopped: the run ends without it; it finishes in the background."""
    monkeypatch.setattr(tools, "ABORT_GRACE_S", 0.1)
    finished = threading.Event()

    def blocking(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        time.sleep(1.0)
        finished.set()
        return AgentToolResult(content=[TextContent(text="too late")], details={})

    agent, events = one_call_agent(faux, blocking)
    await stop_once_running(agent)
    assert not finished.is_set()
    assert "did not stop within 0.1 s of the abort" in tool_result_text(agent)
    assert_complete(events)
    assert await asyncio.to_thread(finished.wait, 5)  # the thread ran to its end, its result dropped
    assert "too late" not in str(agent.state.messages)


async def test_a_tool_that_honours_the_abort_in_time_keeps_its_own_result(
    faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tools, "ABORT_GRACE_S", 5.0)

    async def polite(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        await signal.wait()
        await asyncio.sleep(0.05)  # some cleanup, well within the grace
        return AgentToolResult(content=[TextContent(text="stopped at row 7")], details={})

    agent, events = one_call_agent(faux, polite)
    await stop_once_running(agent)
    result = agent.state.messages[-1]
    assert (result.role, result.is_error, result.content[0].text) == ("toolResult", False, "stopped at row 7")
    assert_complete(events)
