"""The five deliberate fixes (deviations 1-5 of docs/design.md), one test (or more) per fix."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agent_helpers import (
    ECHO_SCHEMA,
    assistant,
    create_model,
    identity_converter,
    label,
    message_text,
    scripted,
    seen,
    tool_call,
    user,
)

from pi_notebook.agent import (
    Agent,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentLoopTurnUpdate,
    AgentTool,
    AgentToolResult,
    agent_loop,
)
from pi_notebook.ai.abort import AbortController, AbortSignal
from pi_notebook.ai.entry import stream_simple
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_tool_call
from pi_notebook.ai.registry import ApiProvider, register_api_provider, unregister_api_providers
from pi_notebook.ai.types import Model, TextContent


def config(**extra: Any) -> AgentLoopConfig:
    return AgentLoopConfig(**{"model": create_model(), "convert_to_llm": identity_converter, **extra})


async def drain(stream: Any) -> tuple[list[AgentEvent], list[Any]]:
    events = [event async for event in stream]
    return events, await asyncio.wait_for(stream.result(), 1)


def ok_tool(name: str = "echo", delay: float = 0.0, on_start: Any = None) -> AgentTool:
    async def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        if on_start is not None:
            on_start()
        await asyncio.sleep(delay)  # ignores the abort signal on purpose
        return AgentToolResult(content=[TextContent(text=f"did {params['value']}")], details={})

    return AgentTool(name=name, description=name, parameters=ECHO_SCHEMA, execute=execute)


# --- fix 1 (deviation 1 of docs/design.md): agent_loop always ends its stream -------------------------------


async def test_fix1_a_crashing_stream_function_still_ends_the_loop_stream() -> None:
    """Pi's ``agentLoop`` never ends its stream when the run rejects; ours ends it with a failure
    turn whose ``agent_end`` carries the run's messages plus the failure message."""

    def exploding(*args: Any) -> Any:
        raise RuntimeError("provider exploded")

    stream = agent_loop([user("hi")], AgentContext(messages=[]), config(), None, exploding)
    events, messages = await drain(stream)
    assert [label(e) for e in events] == [
        "agent_start",
        "turn_start",
        "message_start(user hi)",
        "message_end(user hi)",
        "message_start(assistant:error)",
        "message_end(assistant:error)",
        "turn_end(tr=)",
        "agent_end",
    ]
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[-1].error_message == "provider exploded"
    assert messages[-1].content == [TextContent(text="")]
    assert events[-1].messages == messages  # type: ignore[union-attr]


async def test_fix1_a_crash_after_turn_end_opens_a_turn_so_starts_and_ends_pair() -> None:
    async def prepare(turn: Any) -> AgentLoopTurnUpdate:
        raise ValueError("prepare failed")

    stream_fn, _ = scripted(assistant("first"))
    signal = AbortController().signal
    stream = agent_loop(
        [user("hi")], AgentContext(messages=[]), config(prepare_next_turn=prepare), signal, stream_fn
    )
    events, messages = await drain(stream)
    assert [label(e) for e in events] == [
        "agent_start",
        "turn_start",
        "message_start(user hi)",
        "message_end(user hi)",
        "message_start(assistant:stop)",
        "message_end(assistant:stop)",
        "turn_end(tr=)",
        "turn_start",
        "message_start(assistant:error)",
        "message_end(assistant:error)",
        "turn_end(tr=)",
        "agent_end",
    ]
    assert [m.role for m in messages] == ["user", "assistant", "assistant"]
    assert messages[-1].error_message == "prepare failed"


async def test_fix1_a_crash_of_an_aborted_run_is_reported_as_aborted() -> None:
    controller = AbortController()

    def convert(messages: list[Any]) -> list[Any]:
        controller.abort()
        raise RuntimeError("gone")

    stream = agent_loop(
        [user("hi")], AgentContext(messages=[]), config(convert_to_llm=convert), controller.signal
    )
    _, messages = await drain(stream)
    assert messages[-1].stop_reason == "aborted"
    assert messages[-1].error_message == "gone"


async def test_fix1_agent_closes_an_open_tool_execution_when_a_listener_crashes(
    faux: FauxRegistration,
) -> None:
    faux.set_responses(
        [faux_assistant_message([faux_tool_call("echo", {"value": "x"}, id="a")], stop_reason="toolUse")]
    )
    agent = Agent(stream_fn=stream_simple, initial_state={"model": faux.get_model(), "tools": [ok_tool()]})
    events: list[AgentEvent] = []

    def listener(event: AgentEvent, signal: AbortSignal) -> None:
        events.append(event)
        if event.type == "tool_execution_start":
            raise RuntimeError("listener boom")

    agent.subscribe(listener)
    await agent.prompt("go")
    labels = [label(e) for e in events if e.type != "message_update"]
    assert labels[-8:] == [
        "tool_execution_start(a)",
        "tool_execution_end(a,err)",
        "message_start(toolResult a)",  # the call still gets its (error) result
        "message_end(toolResult a)",
        "message_start(assistant:error)",
        "message_end(assistant:error)",
        "turn_end(tr=)",
        "agent_end",
    ]
    assert events[-7].result.content[0].text == "listener boom"  # type: ignore[union-attr]
    assert events[-5].message.content[0].text == "listener boom"  # type: ignore[union-attr]
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert agent.state.error_message == "listener boom"
    assert agent.state.pending_tool_calls == frozenset()


# --- fix 2 (deviation 2 of docs/design.md): the signal is checked between turns -----------------------------


async def test_fix2_no_llm_call_after_an_abort_during_tools() -> None:
    """Pi asks the stream function for another (aborted) turn after an abort during tools."""
    controller = AbortController()
    stream_fn, calls = scripted(
        assistant([tool_call("t1", "echo", {"value": "x"})], "toolUse"), assistant("no")
    )
    polls = {"steering": 0, "follow_up": 0}

    def steering() -> list[Any]:
        polls["steering"] += 1
        return []

    def follow_ups() -> list[Any]:
        polls["follow_up"] += 1
        return [user("later")]

    cfg = config(get_steering_messages=steering, get_follow_up_messages=follow_ups)
    # the abort lands while the tool runs, whatever the machine's load
    context = AgentContext(messages=[], tools=[ok_tool(delay=0.02, on_start=controller.abort)])
    events, messages = await drain(agent_loop([user("go")], context, cfg, controller.signal, stream_fn))
    assert len(calls) == 1
    assert [e.type for e in events[-3:]] == ["message_end", "turn_end", "agent_end"]
    assert [m.role for m in messages] == ["user", "assistant", "toolResult"]
    assert message_text(messages[-1]) == "did x"  # the tool ignored the signal and finished
    assert polls == {"steering": 1, "follow_up": 0}  # queued messages stay queued


async def test_fix2_agent_keeps_queued_messages_and_reports_the_abort(faux: FauxRegistration) -> None:
    faux.set_responses(
        [faux_assistant_message([faux_tool_call("echo", {"value": "x"}, id="a")], stop_reason="toolUse")]
    )
    agent = Agent(
        stream_fn=stream_simple, initial_state={"model": faux.get_model(), "tools": [ok_tool(delay=0.02)]}
    )

    def on_start(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "tool_execution_start":
            agent.steer("please stop")
            agent.abort()

    agent.subscribe(on_start)
    await agent.prompt("go")
    assert faux.state.call_count == 1
    assert agent.has_queued_messages()
    assert agent.state.error_message == "Request was aborted"
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult"]


# --- fix 3 (deviation 3 of docs/design.md): aborted results for tool calls an abort kept from running -------


@pytest.mark.parametrize("mode", ["parallel", "sequential"])
async def test_fix3_every_tool_call_gets_a_result_after_an_abort_in_preparation(mode: str) -> None:
    """An abort inside ``before_tool_call`` of the first call: Pi stops preparing and leaves the
    other calls without events or results; every call now gets an ``Operation aborted`` result."""
    controller = AbortController()

    def before(ctx: Any, signal: Any) -> None:
        controller.abort()

    calls = [tool_call(f"t{i}", "echo", {"value": str(i)}) for i in range(3)]
    stream_fn, requests = scripted(assistant(calls, "toolUse"))
    cfg = config(before_tool_call=before, tool_execution=mode)
    context = AgentContext(messages=[], tools=[ok_tool()])
    events, messages = await drain(agent_loop([user("go")], context, cfg, controller.signal, stream_fn))
    results = [m for m in messages if m.role == "toolResult"]
    assert [r.tool_call_id for r in results] == ["t0", "t1", "t2"]
    assert all(r.is_error and message_text(r) == "Operation aborted" for r in results)
    starts = [e.tool_call_id for e in events if e.type == "tool_execution_start"]
    ends = [e.tool_call_id for e in events if e.type == "tool_execution_end"]
    assert starts == ends == ["t0", "t1", "t2"]
    assert len(requests) == 1
    assert events[-1].type == "agent_end"


# --- fix 4 (deviation 4 of docs/design.md): missing API key is an error turn, not an exception --------------


async def test_fix4_a_missing_api_key_becomes_an_error_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def must_not_run(*args: Any) -> Any:
        raise AssertionError("the provider must not be called without a key")

    register_api_provider(
        ApiProvider(api="test-needs-key", stream=must_not_run, stream_simple=must_not_run), "agent-fix4"
    )
    try:
        model = Model(id="m", api="test-needs-key", provider="openai", base_url="https://example.invalid")
        agent = Agent(stream_fn=stream_simple, initial_state={"model": model})
        await agent.prompt("hi")
    finally:
        unregister_api_providers("agent-fix4")
    last = agent.state.messages[-1]
    assert last.stop_reason == "error"
    assert "OPENAI_API_KEY" in (last.error_message or "")
    assert agent.state.error_message == last.error_message


# --- fix 5 (deviation 5 of docs/design.md): reset() aborts the active run -----------------------------------


async def test_fix5_reset_aborts_the_active_run(faux: FauxRegistration) -> None:
    long_text = " ".join(f"word{i}" for i in range(400))
    faux.set_responses([faux_assistant_message(long_text), faux_assistant_message("fresh start")])
    agent = Agent(stream_fn=stream_simple, initial_state={"model": faux.get_model()})
    events: list[AgentEvent] = []
    agent.subscribe(lambda event, signal: events.append(event))
    agent.follow_up("queued")
    streaming = seen(agent, "message_update")
    prompt = asyncio.ensure_future(agent.prompt("go"))
    await streaming.wait()
    run_signal = agent.signal
    agent.reset()
    assert run_signal is not None
    assert run_signal.aborted
    assert agent.state.messages == []
    assert not agent.has_queued_messages()
    assert agent.state.is_streaming is True  # until the aborted run has closed its events
    await prompt
    assert agent.state.is_streaming is False
    assert agent.state.messages == []  # the aborted ending did not leak into the cleared state
    assert agent.state.error_message is None
    assert events[-1].type == "agent_end"
    assert getattr(events[-2], "message").stop_reason == "aborted"
    await agent.prompt("again")
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]
    assert message_text(agent.state.messages[-1]) == "fresh start"
