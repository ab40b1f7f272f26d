"""A kernel interrupt cancels the task awaiting ``agent.prompt(...)``: the run is aborted, its
event sequence is completed, and only then ``CancelledError`` propagates."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from agent_helpers import ECHO_SCHEMA, seen

from pi_notebook.agent import Agent, AgentEvent, AgentTool, AgentToolResult
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
