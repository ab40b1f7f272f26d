"""Pi's ``packages/agent/test/agent.test.ts`` (20 tests), one test per Pi test.

Python note: ``prompt()`` only starts once the event loop runs it, so where Pi calls
``prompt()`` without awaiting and then inspects the agent, these tests start it as a task and
yield once (``await asyncio.sleep(0)``).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from agent_helpers import (
    Deferred,
    assistant,
    done_stream,
    scripted,
    signal_stream,
    tool_call,
    types_of,
    user_text,
)

from pi_notebook.agent import Agent, AgentEvent, AgentTool, AgentToolResult, set_default_stream_fn
from pi_notebook.ai.abort import AbortSignal
from pi_notebook.ai.models import get_model
from pi_notebook.ai.types import Model, TextContent, UserMessage, now_ms

EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def unused_stream_fn(*args: Any) -> Any:
    raise AssertionError("Unexpected stream call")


def catalogue_model(provider: str, model_id: str) -> Model:
    """The catalogue entry when the catalogue has it, else an equivalent model (identity is what
    these tests check)."""
    try:
        return get_model(provider, model_id)
    except KeyError:
        return Model(id=model_id, name=model_id, api="openai-responses", provider=provider)


def text_message(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=now_ms())


async def test_uses_the_configured_default_when_a_legacy_caller_omits_stream_fn() -> None:
    calls = 0

    def default(model: Any, context: Any, options: Any) -> Any:
        nonlocal calls
        calls += 1
        return done_stream(assistant("fallback"))

    set_default_stream_fn(default)
    agent = Agent()
    await agent.prompt("Hello")
    assert calls == 1
    assert agent.state.messages[-1].content[0].text == "fallback"


def test_should_create_an_agent_instance_with_default_state() -> None:
    agent = Agent(stream_fn=unused_stream_fn)
    state = agent.state
    assert state is agent.state
    assert state.system_prompt == ""
    assert state.model.id == "unknown"
    assert state.model.provider == "unknown"
    assert state.model.context_window == 0
    assert state.thinking_level == "off"
    assert state.tools == []
    assert state.messages == []
    assert state.is_streaming is False
    assert state.streaming_message is None
    assert state.pending_tool_calls == set()
    assert state.error_message is None


def test_should_create_an_agent_instance_with_custom_initial_state() -> None:
    custom_model = catalogue_model("openai", "gpt-4o-mini")
    agent = Agent(
        stream_fn=unused_stream_fn,
        initial_state={
            "system_prompt": "You are a helpful assistant.",
            "model": custom_model,
            "thinking_level": "low",
        },
    )
    assert agent.state.system_prompt == "You are a helpful assistant."
    assert agent.state.model is custom_model
    assert agent.state.thinking_level == "low"


def test_should_subscribe_to_events() -> None:
    agent = Agent(stream_fn=unused_stream_fn)
    count = 0

    def listener(event: AgentEvent, signal: AbortSignal) -> None:
        nonlocal count
        count += 1

    unsubscribe = agent.subscribe(listener)
    assert count == 0
    agent.state.system_prompt = "Test prompt"
    assert count == 0
    assert agent.state.system_prompt == "Test prompt"
    unsubscribe()
    agent.state.system_prompt = "Another prompt"
    assert count == 0


async def test_emits_full_lifecycle_events_for_thrown_run_failures() -> None:
    def exploding(*args: Any) -> Any:
        raise RuntimeError("provider exploded")

    agent = Agent(stream_fn=exploding)
    events: list[str] = []
    agent.subscribe(lambda event, signal: events.append(event.type))
    await agent.prompt("hello")
    assert events == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    last = agent.state.messages[-1]
    assert last.role == "assistant"
    assert last.stop_reason == "error"
    assert last.error_message == "provider exploded"
    assert agent.state.error_message == "provider exploded"


async def test_should_await_async_subscribers_before_prompt_resolves() -> None:
    barrier = Deferred()
    agent = Agent(stream_fn=lambda *a: done_stream(assistant("ok")))
    finished = False

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        nonlocal finished
        if event.type == "agent_end":
            await barrier.wait()
            finished = True

    agent.subscribe(listener)
    prompt = asyncio.ensure_future(agent.prompt("hello"))
    await asyncio.sleep(0.01)
    assert not prompt.done()
    assert finished is False
    assert agent.state.is_streaming is True
    barrier.resolve()
    await prompt
    assert finished is True
    assert agent.state.is_streaming is False


async def test_wait_for_idle_should_wait_for_async_subscribers() -> None:
    barrier = Deferred()
    agent = Agent(stream_fn=lambda *a: done_stream(assistant("ok")))

    async def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "message_end" and event.message.role == "assistant":
            await barrier.wait()

    agent.subscribe(listener)
    prompt = asyncio.ensure_future(agent.prompt("hello"))
    await asyncio.sleep(0)
    idle = asyncio.ensure_future(agent.wait_for_idle())
    await asyncio.sleep(0.01)
    assert not idle.done()
    assert agent.state.is_streaming is True
    barrier.resolve()
    await asyncio.gather(prompt, idle)
    assert agent.state.is_streaming is False


async def test_should_pass_the_active_abort_signal_to_subscribers() -> None:
    received: list[AbortSignal] = []
    agent = Agent(stream_fn=lambda model, context, options: signal_stream(options))
    agent.subscribe(lambda event, signal: received.append(signal) if event.type == "agent_start" else None)
    prompt = asyncio.ensure_future(agent.prompt("hello"))
    await asyncio.sleep(0.01)
    assert len(received) == 1
    assert received[0].aborted is False
    agent.abort()
    await prompt
    assert received[0].aborted is True


async def test_should_ignore_tool_updates_after_the_tool_execution_settles() -> None:
    stored: list[Any] = []
    events: list[AgentEvent] = []

    async def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        stored.append(on_update)
        on_update(AgentToolResult(content=[TextContent(text="running")], details={"status": "running"}))
        return AgentToolResult(content=[TextContent(text="ok")], details={"status": "done"}, terminate=True)

    tool = AgentTool(
        name="delayed_tool",
        label="Delayed Tool",
        description="Captures progress callbacks",
        parameters=EMPTY_SCHEMA,
        execute=execute,
    )
    stream_fn, _ = scripted(assistant([tool_call("call-1", "delayed_tool", {})], "toolUse"))
    agent = Agent(initial_state={"tools": [tool]}, stream_fn=stream_fn)
    agent.subscribe(lambda event, signal: events.append(event))
    await agent.prompt("run tool")
    count = len(events)
    stored[0](AgentToolResult(content=[TextContent(text="late")], details={"status": "late"}))
    await asyncio.sleep(0)
    assert types_of(events).count("tool_execution_update") == 1
    assert len(events) == count


async def test_should_ignore_a_settled_parallel_tool_update_while_another_tool_is_still_running() -> None:
    slow_started, settled_ended, release_slow = Deferred(), Deferred(), Deferred()
    stored: list[Any] = []
    events: list[AgentEvent] = []

    async def settled(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        stored.append(on_update)
        return AgentToolResult(content=[TextContent(text="done")], details={"status": "done"}, terminate=True)

    async def slow(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        slow_started.resolve()
        await release_slow.wait()
        return AgentToolResult(content=[TextContent(text="done")], details={"status": "done"}, terminate=True)

    tools = [
        AgentTool(
            name="settled_tool",
            label="Settled Tool",
            description="x",
            parameters=EMPTY_SCHEMA,
            execute=settled,
        ),
        AgentTool(
            name="slow_tool", label="Slow Tool", description="x", parameters=EMPTY_SCHEMA, execute=slow
        ),
    ]
    stream_fn, _ = scripted(
        assistant([tool_call("call-1", "settled_tool", {}), tool_call("call-2", "slow_tool", {})], "toolUse")
    )
    agent = Agent(initial_state={"tools": tools}, stream_fn=stream_fn)

    def listener(event: AgentEvent, signal: AbortSignal) -> None:
        events.append(event)
        if event.type == "tool_execution_end" and event.tool_call_id == "call-1":
            settled_ended.resolve()

    agent.subscribe(listener)
    prompt = asyncio.ensure_future(agent.prompt("run tools"))
    await slow_started.wait()
    await settled_ended.wait()
    count = len(events)
    stored[0](AgentToolResult(content=[TextContent(text="late")], details={"status": "late"}))
    await asyncio.sleep(0)
    assert len(events) == count
    release_slow.resolve()
    await prompt
    assert types_of(events).count("tool_execution_update") == 0


def test_should_update_state_with_mutators() -> None:
    agent = Agent(stream_fn=unused_stream_fn)
    agent.state.system_prompt = "Custom prompt"
    assert agent.state.system_prompt == "Custom prompt"
    new_model = catalogue_model("google", "gemini-2.5-flash")
    agent.state.model = new_model
    assert agent.state.model is new_model
    agent.state.thinking_level = "high"
    assert agent.state.thinking_level == "high"
    tools = [
        AgentTool(name="test", description="test tool", parameters=EMPTY_SCHEMA, execute=unused_stream_fn)
    ]
    agent.state.tools = tools
    assert agent.state.tools == tools
    assert agent.state.tools is not tools
    messages: list[Any] = [UserMessage(content="Hello", timestamp=now_ms())]
    agent.state.messages = messages
    assert agent.state.messages == messages
    assert agent.state.messages is not messages
    new_message = assistant("Hi")
    agent.state.messages.append(new_message)
    assert len(agent.state.messages) == 2
    assert agent.state.messages[1] is new_message
    agent.state.messages = []
    assert agent.state.messages == []


def test_should_support_steering_message_queue() -> None:
    agent = Agent(stream_fn=unused_stream_fn)
    message = UserMessage(content="Steering message", timestamp=now_ms())
    agent.steer(message)
    assert message not in agent.state.messages
    assert agent.has_queued_messages()


def test_should_support_follow_up_message_queue() -> None:
    agent = Agent(stream_fn=unused_stream_fn)
    message = UserMessage(content="Follow-up message", timestamp=now_ms())
    agent.follow_up(message)
    assert message not in agent.state.messages
    assert agent.has_queued_messages()


def test_should_handle_abort_controller() -> None:
    agent = Agent(stream_fn=unused_stream_fn)
    agent.abort()
    assert agent.signal is None


async def test_should_throw_when_prompt_called_while_streaming() -> None:
    agent = Agent(stream_fn=lambda model, context, options: signal_stream(options))
    first = asyncio.ensure_future(agent.prompt("First message"))
    await asyncio.sleep(0.01)
    assert agent.state.is_streaming is True
    with pytest.raises(RuntimeError) as raised:
        await agent.prompt("Second message")
    assert str(raised.value) == (
        "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, "
        "or wait for completion."
    )
    agent.abort()
    await first


def test_error_messages_name_methods_that_exist() -> None:
    """Pi's texts name its camelCase methods; ours must name methods a Python user can call."""
    from pi_notebook.agent import agent as agent_module

    texts = [agent_module.PROMPT_BUSY, agent_module.CONTINUE_BUSY]
    named = {name for text in texts for name in re.findall(r"(\w+)\(\)", text)}
    assert named == {"steer", "follow_up"}
    assert all(callable(getattr(Agent, name, None)) for name in named)


async def test_should_throw_when_continue_called_while_streaming() -> None:
    agent = Agent(stream_fn=lambda model, context, options: signal_stream(options))
    first = asyncio.ensure_future(agent.prompt("First message"))
    await asyncio.sleep(0.01)
    assert agent.state.is_streaming is True
    with pytest.raises(
        RuntimeError, match=r"^Agent is already processing\. Wait for completion before continuing\.$"
    ):
        await agent.continue_()
    agent.abort()
    await first


async def test_continue_should_process_queued_follow_up_messages_after_an_assistant_turn() -> None:
    agent = Agent(stream_fn=lambda *a: done_stream(assistant("Processed")))
    agent.state.messages = [
        UserMessage(content=[TextContent(text="Initial")], timestamp=now_ms() - 10),
        assistant("Initial response"),
    ]
    agent.follow_up(text_message("Queued follow-up"))
    await agent.continue_()
    assert any(m.role == "user" and user_text(m) == "Queued follow-up" for m in agent.state.messages)
    assert agent.state.messages[-1].role == "assistant"


async def test_continue_should_keep_one_at_a_time_steering_semantics_from_assistant_tail() -> None:
    count = 0

    def stream_fn(*args: Any) -> Any:
        nonlocal count
        count += 1
        return done_stream(assistant(f"Processed {count}"))

    agent = Agent(stream_fn=stream_fn)
    agent.state.messages = [
        UserMessage(content=[TextContent(text="Initial")], timestamp=now_ms() - 10),
        assistant("Initial response"),
    ]
    agent.steer(text_message("Steering 1"))
    agent.steer(text_message("Steering 2"))
    await agent.continue_()
    assert [m.role for m in agent.state.messages[-4:]] == ["user", "assistant", "user", "assistant"]
    assert count == 2


async def test_keeps_legacy_prepare_next_turn_signal_callback_behavior() -> None:
    async def noop(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text="ok")], details={})

    tool = AgentTool(
        name="noop", label="Noop", description="Noop tool", parameters=EMPTY_SCHEMA, execute=noop
    )
    seen: list[Any] = []

    async def prepare(signal: Any) -> None:
        seen.append(signal)

    stream_fn, calls = scripted(assistant([tool_call("tool-1", "noop", {})], "toolUse"), assistant("done"))
    agent = Agent(initial_state={"tools": [tool]}, prepare_next_turn=prepare, stream_fn=stream_fn)
    await agent.prompt("start")
    assert len(calls) == 2
    assert seen
    assert all(isinstance(signal, AbortSignal) for signal in seen)


async def test_forwards_session_id_to_stream_function_options() -> None:
    stream_fn, calls = scripted(assistant("ok"))
    agent = Agent(session_id="session-abc", stream_fn=stream_fn)
    await agent.prompt("hello")
    assert calls[-1][2].session_id == "session-abc"
    agent.session_id = "session-def"
    assert agent.session_id == "session-def"
    await agent.prompt("hello again")
    assert calls[-1][2].session_id == "session-def"
