"""Behaviour beyond Pi's own tests: the Python conveniences and the parts of Pi's loop and Agent the Pi
suite does not pin (options forwarding, listeners, queues, turn updates, update draining)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from agent_helpers import (
    ECHO_SCHEMA,
    assistant,
    create_model,
    done_stream,
    echo_tool,
    identity_converter,
    scripted,
    tool_call,
    user,
    user_text,
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
    get_default_stream_fn,
    run_agent_loop,
    set_default_stream_fn,
)
from pi_notebook.ai.abort import AbortSignal
from pi_notebook.ai.entry import stream_simple
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message
from pi_notebook.ai.types import ImageContent, Model, TextContent, UserMessage


def test_the_default_stream_function_is_stream_simple_until_replaced() -> None:
    assert get_default_stream_fn() is stream_simple

    def custom(*args: Any) -> Any:
        raise AssertionError

    set_default_stream_fn(custom)
    assert get_default_stream_fn() is custom
    assert Agent().stream_fn is custom
    set_default_stream_fn(None)
    assert get_default_stream_fn() is stream_simple


def test_initial_state_rejects_unknown_keys_and_copies_lists() -> None:
    tools = [echo_tool()]
    agent = Agent(stream_fn=stream_simple, initial_state={"tools": tools, "messages": []})
    assert agent.state.tools == tools
    assert agent.state.tools is not tools
    with pytest.raises(TypeError, match="systemPrompt"):
        Agent(stream_fn=stream_simple, initial_state={"systemPrompt": "x"})


def test_runtime_state_is_read_only() -> None:
    state = Agent(stream_fn=stream_simple).state
    for name in ("is_streaming", "streaming_message", "pending_tool_calls", "error_message"):
        with pytest.raises(AttributeError):
            setattr(state, name, None)


async def test_prompt_accepts_text_with_images_a_message_or_a_list() -> None:
    stream_fn, calls = scripted(assistant("ok"))
    agent = Agent(stream_fn=stream_fn)
    image = ImageContent(data="AAAA", mime_type="image/png")
    await agent.prompt("look", images=[image])
    first = agent.state.messages[0]
    assert first.content == [TextContent(text="look"), image]
    await agent.prompt(UserMessage(content="single"))
    await agent.prompt([UserMessage(content="one"), UserMessage(content="two")])
    users = [user_text(m) for m in agent.state.messages if m.role == "user"]
    assert users == ["look", "single", "one", "two"]
    assert len(calls) == 3


async def test_steer_and_follow_up_accept_strings_and_queues_can_be_cleared() -> None:
    agent = Agent(stream_fn=stream_simple)
    agent.steer("a")
    agent.follow_up("b")
    assert agent.has_queued_messages()
    agent.clear_steering_queue()
    assert agent.has_queued_messages()
    agent.clear_follow_up_queue()
    assert not agent.has_queued_messages()
    agent.steer("c")
    agent.follow_up("d")
    agent.clear_all_queues()
    assert not agent.has_queued_messages()
    agent.steering_mode = "all"
    agent.follow_up_mode = "all"
    assert (agent.steering_mode, agent.follow_up_mode) == ("all", "all")


async def test_options_and_state_reach_the_stream_function() -> None:
    stream_fn, calls = scripted(assistant("ok"))

    def on_payload(payload: dict[str, Any], model: Model) -> None:
        return None

    def on_response(response: dict[str, Any], model: Model) -> None:
        return None

    agent = Agent(
        stream_fn=stream_fn,
        initial_state={"model": create_model(), "thinking_level": "low", "system_prompt": "sys"},
        get_api_key=lambda provider: f"key-for-{provider}",
        thinking_budgets={"low": 10},
        max_retry_delay_ms=5,
        on_payload=on_payload,
        on_response=on_response,
    )
    await agent.prompt("hi")
    model, context, options = calls[0]
    assert model.id == "mock"
    assert context.system_prompt == "sys"
    assert (options.reasoning, options.transport, options.thinking_budgets) == ("low", "auto", {"low": 10})
    assert options.max_retry_delay_ms == 5
    assert options.api_key == "key-for-openai"
    assert options.on_payload is on_payload
    assert options.on_response is on_response
    assert isinstance(options.signal, AbortSignal)
    agent.state.thinking_level = "off"
    await agent.prompt("again")
    assert calls[1][2].reasoning is None


async def test_should_stop_after_turn_option_limits_the_run() -> None:
    turns: list[int] = []

    def stop_after_two(turn: Any) -> bool:
        turns.append(len(turn.tool_results))
        return len(turns) >= 2

    stream_fn, calls = scripted(assistant([tool_call("t", "echo", {"value": "x"})], "toolUse"))
    agent = Agent(
        stream_fn=stream_fn, initial_state={"tools": [echo_tool()]}, should_stop_after_turn=stop_after_two
    )
    await agent.prompt("loop forever")
    assert len(calls) == 2
    assert turns == [1, 1]
    assert [m.role for m in agent.state.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
    ]


async def test_subscribe_is_a_set_and_unsubscribe_applies_mid_run() -> None:
    agent = Agent(stream_fn=lambda *a: done_stream(assistant("ok")))
    seen: list[str] = []
    unsubscribe: Any = None

    def once_per_event(event: AgentEvent, signal: AbortSignal) -> None:
        seen.append(event.type)
        if event.type == "turn_start":
            unsubscribe()

    unsubscribe = agent.subscribe(once_per_event)
    agent.subscribe(once_per_event)  # the same listener again is still one listener
    await agent.prompt("hi")
    assert seen == ["agent_start", "turn_start"]


async def test_listeners_see_the_reduced_state_and_run_in_order() -> None:
    agent = Agent(stream_fn=lambda *a: done_stream(assistant("ok")))
    order: list[str] = []

    async def first(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "message_end":
            assert event.message is agent.state.messages[-1]  # already appended
            await asyncio.sleep(0.001)
            order.append(f"first:{event.message.role}")

    def second(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "message_end":
            order.append(f"second:{event.message.role}")

    agent.subscribe(first)
    agent.subscribe(second)
    await agent.prompt("hi")
    assert order == ["first:user", "second:user", "first:assistant", "second:assistant"]


async def test_async_update_listeners_finish_before_tool_execution_end() -> None:
    async def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        on_update(AgentToolResult(content=[TextContent(text="1")]))
        on_update(AgentToolResult(content=[TextContent(text="2")]))
        return AgentToolResult(content=[TextContent(text="done")], details={})

    tool = AgentTool(name="echo", description="", parameters=ECHO_SCHEMA, execute=execute)
    stream_fn, _ = scripted(assistant([tool_call("t", "echo", {"value": "x"})], "toolUse"), assistant("ok"))
    log: list[str] = []

    async def emit(event: AgentEvent) -> None:
        if event.type == "tool_execution_update":
            await asyncio.sleep(0.01)
            log.append(f"update {event.partial_result.content[0].model_dump()['text']}")
        elif event.type == "tool_execution_end":
            log.append("end")

    config = AgentLoopConfig(model=create_model(), convert_to_llm=identity_converter)
    await run_agent_loop([user("go")], AgentContext(tools=[tool]), config, emit, None, stream_fn)
    assert log == ["update 1", "update 2", "end"]


async def test_prepare_next_turn_may_switch_model_and_thinking_level() -> None:
    other = Model(id="other", api="openai-responses", provider="openai")
    updates = iter(
        [AgentLoopTurnUpdate(model=other, thinking_level="high"), AgentLoopTurnUpdate(thinking_level="off")]
    )
    stream_fn, calls = scripted(
        assistant([tool_call("t1", "echo", {"value": "x"})], "toolUse"),
        assistant([tool_call("t2", "echo", {"value": "y"})], "toolUse"),
        assistant("done"),
    )
    config = AgentLoopConfig(
        model=create_model(),
        convert_to_llm=identity_converter,
        reasoning="low",
        prepare_next_turn=lambda turn: next(updates, None),
    )
    stream = agent_loop([user("go")], AgentContext(tools=[echo_tool()]), config, None, stream_fn)
    await stream.result()
    assert [(c[0].id, c[2].reasoning) for c in calls] == [("mock", "low"), ("other", "high"), ("other", None)]


async def test_hook_results_may_be_mappings() -> None:
    stream_fn, _ = scripted(assistant([tool_call("t", "echo", {"value": "x"})], "toolUse"), assistant("ok"))
    config = AgentLoopConfig(
        model=create_model(),
        convert_to_llm=identity_converter,
        before_tool_call=lambda ctx, signal: {"block": True, "reason": "not today"},
    )
    messages = await agent_loop(
        [user("go")], AgentContext(tools=[echo_tool()]), config, None, stream_fn
    ).result()
    result = next(m for m in messages if m.role == "toolResult")
    assert result.is_error
    assert result.content == [TextContent(text="not today")]


async def test_after_tool_call_can_clear_the_error_flag_and_replace_content() -> None:
    async def failing(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        raise RuntimeError("nope")

    seen: list[Any] = []

    def after(ctx: Any, signal: Any) -> dict[str, Any]:
        seen.append((ctx.is_error, ctx.result.content[0].model_dump()["text"]))
        return {"is_error": False, "content": [TextContent(text="recovered")]}

    tool = AgentTool(name="echo", description="", parameters=ECHO_SCHEMA, execute=failing)
    stream_fn, _ = scripted(assistant([tool_call("t", "echo", {"value": "x"})], "toolUse"), assistant("ok"))
    config = AgentLoopConfig(model=create_model(), convert_to_llm=identity_converter, after_tool_call=after)
    messages = await agent_loop([user("go")], AgentContext(tools=[tool]), config, None, stream_fn).result()
    result = next(m for m in messages if m.role == "toolResult")
    assert seen == [(True, "nope")]
    assert (result.is_error, result.content, result.details) == (False, [TextContent(text="recovered")], {})


async def test_agent_loop_can_be_created_outside_a_running_loop() -> None:
    stream_fn, _ = scripted(assistant("ok"))
    config = AgentLoopConfig(model=create_model(), convert_to_llm=identity_converter)
    stream = await asyncio.to_thread(agent_loop, [user("go")], AgentContext(), config, None, stream_fn)
    events = [event.type async for event in stream]
    assert events[-1] == "agent_end"


async def test_stream_fn_may_return_an_awaitable_of_a_stream() -> None:
    async def stream_fn(model: Any, context: Any, options: Any) -> Any:
        await asyncio.sleep(0)
        return done_stream(assistant("from a coroutine"))

    agent = Agent(stream_fn=stream_fn)
    await agent.prompt("hi")
    assert agent.state.messages[-1].content == [TextContent(text="from a coroutine")]


async def test_a_sync_execute_runs_in_a_worker_thread_and_may_report_progress() -> None:
    seen: list[Any] = []

    def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        seen.append(threading.current_thread())
        on_update(AgentToolResult(content=[TextContent(text="halfway")]))
        return AgentToolResult(content=[TextContent(text=f"sync {params['value']}")], details={})

    tool = AgentTool(name="echo", description="", parameters=ECHO_SCHEMA, execute=execute)
    stream_fn, _ = scripted(assistant([tool_call("t", "echo", {"value": "x"})], "toolUse"), assistant("ok"))
    agent = Agent(stream_fn=stream_fn, initial_state={"tools": [tool]})
    kinds: list[str] = []
    agent.subscribe(lambda event, signal: kinds.append(event.type))
    await agent.prompt("go")
    assert seen[0] is not threading.current_thread()
    assert [k for k in kinds if k.startswith("tool_execution")] == [
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
    ]
    result = next(m for m in agent.state.messages if m.role == "toolResult")
    assert result.content == [TextContent(text="sync x")]


async def test_a_listener_that_raises_on_the_failure_turn_too_rejects_prompt(faux: FauxRegistration) -> None:
    """Pi: when the failure path itself throws, ``prompt()`` rejects. The exception reaches the
    caller instead of being left on the run's task ("Task exception was never retrieved")."""
    faux.set_responses([faux_assistant_message("Fine.")])
    agent = Agent(initial_state={"model": faux.get_model()})

    def boom(event: Any, signal: Any) -> None:
        if event.type == "turn_end":
            raise RuntimeError("listener boom")

    agent.subscribe(boom)
    with pytest.raises(RuntimeError, match="listener boom"):
        await agent.prompt("hi")
    assert agent.state.is_streaming is False
    assert agent.state.error_message == "listener boom"
