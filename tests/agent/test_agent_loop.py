"""Pi's ``packages/agent/test/agent-loop.test.ts`` (21 tests), one test per Pi test."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agent_helpers import (
    ECHO_SCHEMA,
    CustomMessage,
    Notification,
    assistant,
    create_model,
    done_stream,
    echo_tool,
    identity_converter,
    message_text,
    scripted,
    tool_call,
    types_of,
    user,
)

from pi_notebook.agent import (
    AfterToolCallResult,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentLoopTurnUpdate,
    AgentTool,
    AgentToolResult,
    agent_loop,
    agent_loop_continue,
    set_default_stream_fn,
)
from pi_notebook.ai.types import Cost, TextContent, Usage, UserMessage


async def collect(stream: Any) -> list[AgentEvent]:
    return [event async for event in stream]


def config(**extra: Any) -> AgentLoopConfig:
    return AgentLoopConfig(**{"model": create_model(), "convert_to_llm": identity_converter, **extra})


def tool_then_text(*calls: Any, reason: str = "toolUse") -> tuple[Any, list[Any]]:
    return scripted(assistant(list(calls), reason), assistant("done"))


# --- default stream function compatibility ----------------------------------------------------


async def test_uses_the_configured_default_when_a_legacy_caller_omits_stream_fn() -> None:
    calls = 0

    def default(model: Any, context: Any, options: Any) -> Any:
        nonlocal calls
        calls += 1
        return done_stream(assistant("fallback"))

    set_default_stream_fn(default)
    stream = agent_loop([user("Hello")], AgentContext(system_prompt="", messages=[], tools=[]), config())
    messages = await stream.result()
    assert calls == 1
    assert [m.role for m in messages] == ["user", "assistant"]


# --- agentLoop with AgentMessage ------------------------------------------------------------------


async def test_should_emit_events_with_agent_message_types() -> None:
    stream_fn, _ = scripted(assistant("Hi there!"))
    context = AgentContext(system_prompt="You are helpful.", messages=[], tools=[])
    stream = agent_loop([user("Hello")], context, config(), None, stream_fn)
    events = await collect(stream)
    messages = await stream.result()
    assert [m.role for m in messages] == ["user", "assistant"]
    # Pi asserts membership; the full order is A.1 without updates.
    assert types_of(events) == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]


async def test_should_handle_custom_message_types_via_convert_to_llm() -> None:
    converted: list[Any] = []

    def convert(messages: list[Any]) -> list[Any]:
        converted[:] = [m for m in messages if m.role != "notification"]
        return converted

    context = AgentContext(
        system_prompt="You are helpful.", messages=[Notification(text="This is a notification")]
    )
    stream_fn, _ = scripted(assistant("Response"))
    await collect(agent_loop([user("Hello")], context, config(convert_to_llm=convert), None, stream_fn))
    assert len(converted) == 1
    assert converted[0].role == "user"


async def test_should_apply_transform_context_before_convert_to_llm() -> None:
    context = AgentContext(
        system_prompt="You are helpful.",
        messages=[
            user("old message 1"),
            assistant("old response 1"),
            user("old message 2"),
            assistant("old response 2"),
        ],
    )
    transformed: list[Any] = []
    converted: list[Any] = []

    async def transform(messages: list[Any], signal: Any) -> list[Any]:
        transformed[:] = messages[-2:]
        return transformed

    def convert(messages: list[Any]) -> list[Any]:
        converted[:] = identity_converter(messages)
        return converted

    stream_fn, calls = scripted(assistant("Response"))
    cfg = config(transform_context=transform, convert_to_llm=convert)
    await collect(agent_loop([user("new message")], context, cfg, None, stream_fn))
    assert len(transformed) == 2
    assert len(converted) == 2
    assert [m.role for m in calls[0][1].messages] == ["assistant", "user"]


async def test_should_handle_tool_calls_and_results() -> None:
    executed: list[Any] = []
    tool_usage = Usage(
        input=1,
        output=2,
        cache_read=3,
        cache_write=4,
        total_tokens=10,
        cost=Cost(input=0.1, output=0.2, cache_read=0.3, cache_write=0.4, total=1),
    )
    patched_usage = Usage(
        input=5,
        output=6,
        cache_read=7,
        cache_write=8,
        total_tokens=26,
        cost=Cost(input=0.5, output=0.6, cache_read=0.7, cache_write=0.8, total=2.6),
    )
    observed: list[Any] = []

    async def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        executed.append(params["value"])
        return AgentToolResult(
            content=[TextContent(text=f"echoed: {params['value']}")],
            details={"value": params["value"]},
            usage=tool_usage,
        )

    async def after(ctx: Any, signal: Any) -> AfterToolCallResult:
        observed.append(ctx.result.usage)
        return AfterToolCallResult(usage=patched_usage)

    tool = echo_tool(execute=execute)
    stream_fn, _ = tool_then_text(tool_call("tool-1", "echo", {"value": "hello"}))
    context = AgentContext(system_prompt="", messages=[], tools=[tool])
    stream = agent_loop([user("echo something")], context, config(after_tool_call=after), None, stream_fn)
    events = await collect(stream)
    assert executed == ["hello"]
    starts = [e for e in events if e.type == "tool_execution_start"]
    ends = [e for e in events if e.type == "tool_execution_end"]
    assert len(starts) == 1
    assert len(ends) == 1
    assert ends[0].is_error is False
    assert observed == [tool_usage]
    tool_result = next(m for m in await stream.result() if m.role == "toolResult")
    assert tool_result.usage == patched_usage


async def test_should_not_execute_tool_calls_from_a_length_truncated_assistant_message() -> None:
    executed: list[Any] = []
    stream_fn, calls = tool_then_text(tool_call("tool-1", "echo", {"value": "hel"}), reason="length")
    context = AgentContext(system_prompt="", messages=[], tools=[echo_tool(executed)])
    stream = agent_loop([user("echo something")], context, config(), None, stream_fn)
    events = await collect(stream)
    assert executed == []
    end = next(e for e in events if e.type == "tool_execution_end")
    assert end.is_error is True
    assert "output token limit" in message_text(end.result)
    assert len(calls) == 2
    assert (await stream.result())[-1].role == "assistant"


async def test_should_execute_mutated_before_tool_call_args_without_revalidation() -> None:
    executed: list[Any] = []

    async def before(ctx: Any, signal: Any) -> None:
        ctx.args["value"] = 123

    stream_fn, _ = tool_then_text(tool_call("tool-1", "echo", {"value": "hello"}))
    context = AgentContext(system_prompt="", messages=[], tools=[echo_tool(executed)])
    await collect(
        agent_loop([user("echo something")], context, config(before_tool_call=before), None, stream_fn)
    )
    assert executed == [123]


async def test_should_prepare_tool_arguments_for_validation() -> None:
    edit_schema = {
        "type": "object",
        "properties": {
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                    "required": ["oldText", "newText"],
                },
            }
        },
        "required": ["edits"],
    }
    executed: list[Any] = []

    def prepare(args: Any) -> Any:
        if (
            not isinstance(args, dict)
            or not isinstance(args.get("oldText"), str)
            or not isinstance(args.get("newText"), str)
        ):
            return args
        return {"edits": [*args.get("edits", []), {"oldText": args["oldText"], "newText": args["newText"]}]}

    async def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        executed.append(params["edits"])
        return AgentToolResult(
            content=[TextContent(text=f"edited {len(params['edits'])}")],
            details={"count": len(params["edits"])},
        )

    tool = AgentTool(
        name="edit",
        label="Edit",
        description="Edit tool",
        parameters=edit_schema,
        prepare_arguments=prepare,
        execute=execute,
    )
    original = tool_call("tool-1", "edit", {"oldText": "before", "newText": "after"})
    stream_fn, _ = tool_then_text(original)
    context = AgentContext(system_prompt="", messages=[], tools=[tool])
    await collect(agent_loop([user("edit something")], context, config(), None, stream_fn))
    assert executed == [[{"oldText": "before", "newText": "after"}]]
    assert original.arguments == {"oldText": "before", "newText": "after"}  # the message keeps the original


def _gated_echo(name: str, gate: asyncio.Event, log: list[str], **extra: Any) -> AgentTool:
    """``first`` waits for ``gate``; ``second`` records whether it ran before ``first`` finished."""

    async def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        log.append(f"start:{params['value']}")
        if params["value"] in ("first", "a"):
            await gate.wait()
        log.append(f"end:{params['value']}")
        return AgentToolResult(content=[TextContent(text=f"{name}: {params['value']}")], details={})

    return AgentTool(
        name=name, label=name, description=f"{name} tool", parameters=ECHO_SCHEMA, execute=execute, **extra
    )


def _release_later(gate: asyncio.Event, delay: float = 0.02) -> None:
    asyncio.get_running_loop().call_later(delay, gate.set)


def _two_calls(name_a: str, value_a: str, name_b: str, value_b: str, gate: asyncio.Event) -> Any:
    first = assistant(
        [tool_call("tool-1", name_a, {"value": value_a}), tool_call("tool-2", name_b, {"value": value_b})],
        "toolUse",
    )

    def first_turn() -> Any:
        _release_later(gate)
        return first

    return scripted(first_turn, assistant("done"))[0]


async def test_should_emit_tool_execution_end_in_completion_order_but_persist_results_in_source_order() -> (
    None
):
    """Pi: should emit tool_execution_end in completion order but persist tool results in source order."""
    gate, log = asyncio.Event(), list[str]()
    context = AgentContext(system_prompt="", messages=[], tools=[_gated_echo("echo", gate, log)])
    stream_fn = _two_calls("echo", "first", "echo", "second", gate)
    events = await collect(
        agent_loop([user("echo both")], context, config(tool_execution="parallel"), None, stream_fn)
    )
    assert log.index("end:second") < log.index("end:first")  # second ran while first was blocked
    assert [e.tool_call_id for e in events if e.type == "tool_execution_end"] == ["tool-2", "tool-1"]
    tool_result_ids = [
        e.message.tool_call_id for e in events if e.type == "message_end" and e.message.role == "toolResult"
    ]
    assert tool_result_ids == ["tool-1", "tool-2"]
    turn_ids = [r.tool_call_id for e in events if e.type == "turn_end" for r in e.tool_results]
    assert turn_ids == ["tool-1", "tool-2"]


async def test_should_inject_queued_messages_after_all_tool_calls_complete() -> None:
    executed: list[Any] = []
    interrupt = user("interrupt")
    delivered = False

    async def steering() -> list[Any]:
        nonlocal delivered
        if len(executed) >= 1 and not delivered:
            delivered = True
            return [interrupt]
        return []

    stream_fn, calls = tool_then_text(
        tool_call("tool-1", "echo", {"value": "first"}), tool_call("tool-2", "echo", {"value": "second"})
    )
    context = AgentContext(system_prompt="", messages=[], tools=[echo_tool(executed)])
    cfg = config(tool_execution="sequential", get_steering_messages=steering)
    events = await collect(agent_loop([user("start")], context, cfg, None, stream_fn))
    assert executed == ["first", "second"]
    ends = [e for e in events if e.type == "tool_execution_end"]
    assert [e.is_error for e in ends] == [False, False]
    sequence = []
    for e in events:
        if e.type == "message_start" and e.message.role == "toolResult":
            sequence.append(f"tool:{e.message.tool_call_id}")
        elif e.type == "message_start" and e.message.role == "user":
            sequence.append(e.message.content)
    assert "interrupt" in sequence
    assert sequence.index("tool:tool-1") < sequence.index("interrupt")
    assert sequence.index("tool:tool-2") < sequence.index("interrupt")
    assert any(m.role == "user" and m.content == "interrupt" for m in calls[1][1].messages)


async def test_should_force_sequential_execution_when_a_tool_is_sequential_even_with_parallel_config() -> (
    None
):
    """Pi: should force sequential execution when a tool has executionMode=sequential even with default
    parallel config."""
    gate, log = asyncio.Event(), list[str]()
    context = AgentContext(
        system_prompt="", messages=[], tools=[_gated_echo("slow", gate, log, execution_mode="sequential")]
    )
    stream_fn = _two_calls("slow", "first", "slow", "second", gate)
    events = await collect(agent_loop([user("run both")], context, config(), None, stream_fn))
    assert log == ["start:first", "end:first", "start:second", "end:second"]
    assert [
        e.message.tool_call_id for e in events if e.type == "message_end" and e.message.role == "toolResult"
    ] == [
        "tool-1",
        "tool-2",
    ]


async def test_should_force_sequential_execution_when_one_of_multiple_tools_is_sequential() -> None:
    """Pi: should force sequential execution when one of multiple tools has executionMode=sequential."""
    gate, log = asyncio.Event(), list[str]()
    tools = [_gated_echo("slow", gate, log, execution_mode="sequential"), _gated_echo("fast", gate, log)]
    context = AgentContext(system_prompt="", messages=[], tools=tools)
    stream_fn = _two_calls("slow", "a", "fast", "b", gate)
    await collect(agent_loop([user("run both")], context, config(), None, stream_fn))
    assert log[0] == "start:a"
    assert log.index("end:a") < log.index("start:b")


async def test_should_allow_parallel_execution_when_all_tools_have_execution_mode_parallel() -> None:
    gate, log = asyncio.Event(), list[str]()
    context = AgentContext(
        system_prompt="", messages=[], tools=[_gated_echo("echo", gate, log, execution_mode="parallel")]
    )
    stream_fn = _two_calls("echo", "first", "echo", "second", gate)
    await collect(agent_loop([user("echo both")], context, config(), None, stream_fn))
    assert log.index("start:second") < log.index("end:first")


async def test_should_use_prepare_next_turn_snapshot_before_continuing() -> None:
    prepared = False

    async def prepare(turn: Any) -> AgentLoopTurnUpdate | None:
        nonlocal prepared
        if prepared:
            return None
        prepared = True
        snapshot = AgentContext(
            system_prompt="second prompt", messages=list(turn.context.messages), tools=turn.context.tools
        )
        return AgentLoopTurnUpdate(context=snapshot)

    stream_fn, calls = tool_then_text(tool_call("tool-1", "echo", {"value": "hello"}))
    context = AgentContext(system_prompt="first prompt", messages=[], tools=[echo_tool()])
    await collect(
        agent_loop([user("echo something")], context, config(prepare_next_turn=prepare), None, stream_fn)
    )
    assert len(calls) == 2
    assert calls[0][1].system_prompt == "first prompt"
    assert calls[1][1].system_prompt == "second prompt"


async def test_should_stop_after_the_current_turn_when_should_stop_after_turn_returns_true() -> None:
    executed: list[Any] = []
    polls = {"steering": 0, "follow_up": 0}
    seen: dict[str, Any] = {}

    async def steering() -> list[Any]:
        polls["steering"] += 1
        return []

    async def follow_ups() -> list[Any]:
        polls["follow_up"] += 1
        return [user("follow up should stay queued")]

    async def should_stop(turn: Any) -> bool:
        assert turn.message.role == "assistant"
        seen["tool_results"] = [r.tool_call_id for r in turn.tool_results]
        seen["roles"] = [m.role for m in turn.context.messages]
        return True

    stream_fn, calls = tool_then_text(tool_call("tool-1", "echo", {"value": "hello"}))
    context = AgentContext(system_prompt="", messages=[], tools=[echo_tool(executed)])
    cfg = config(
        get_steering_messages=steering, get_follow_up_messages=follow_ups, should_stop_after_turn=should_stop
    )
    stream = agent_loop([user("echo something")], context, cfg, None, stream_fn)
    events = await collect(stream)
    messages = await stream.result()
    assert len(calls) == 1
    assert executed == ["hello"]
    assert polls == {"steering": 1, "follow_up": 0}
    assert seen == {"tool_results": ["tool-1"], "roles": ["user", "assistant", "toolResult"]}
    assert [m.role for m in messages] == ["user", "assistant", "toolResult"]
    assert types_of(events) == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]


def _terminating_echo(predicate: Any) -> AgentTool:
    async def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult(
            content=[TextContent(text=f"echoed: {params['value']}")],
            details={},
            terminate=predicate(params["value"]),
        )

    return echo_tool(execute=execute)


async def test_should_stop_after_a_tool_batch_when_every_tool_result_sets_terminate_true() -> None:
    stream_fn, calls = scripted(assistant([tool_call("tool-1", "echo", {"value": "hello"})], "toolUse"))
    context = AgentContext(system_prompt="", messages=[], tools=[_terminating_echo(lambda v: True)])
    stream = agent_loop([user("echo something")], context, config(), None, stream_fn)
    events = await collect(stream)
    assert len(calls) == 1
    assert [m.role for m in await stream.result()] == ["user", "assistant", "toolResult"]
    assert types_of(events).count("turn_end") == 1


async def test_should_continue_after_parallel_tool_calls_when_not_all_tool_results_terminate() -> None:
    stream_fn, calls = tool_then_text(
        tool_call("tool-1", "echo", {"value": "first"}), tool_call("tool-2", "echo", {"value": "second"})
    )
    context = AgentContext(system_prompt="", messages=[], tools=[_terminating_echo(lambda v: v == "first")])
    stream = agent_loop([user("echo both")], context, config(tool_execution="parallel"), None, stream_fn)
    await collect(stream)
    assert len(calls) == 2
    assert [m.role for m in await stream.result()] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]


async def test_should_allow_after_tool_call_to_mark_a_tool_batch_as_terminating() -> None:
    async def after(ctx: Any, signal: Any) -> AfterToolCallResult:
        return AfterToolCallResult(terminate=True)

    stream_fn, calls = scripted(assistant([tool_call("tool-1", "echo", {"value": "hello"})], "toolUse"))
    context = AgentContext(system_prompt="", messages=[], tools=[echo_tool()])
    await collect(
        agent_loop([user("echo something")], context, config(after_tool_call=after), None, stream_fn)
    )
    assert len(calls) == 1


# --- agentLoopContinue with AgentMessage ----------------------------------------------------------


def test_agent_loop_continue_should_throw_when_context_has_no_messages() -> None:
    def unexpected(*args: Any) -> Any:
        raise AssertionError("Unexpected stream call")

    context = AgentContext(system_prompt="You are helpful.", messages=[], tools=[])
    with pytest.raises(ValueError, match=r"^Cannot continue: no messages in context$"):
        agent_loop_continue(context, config(), None, unexpected)


def test_agent_loop_continue_throws_from_an_assistant_tail() -> None:
    """Pi's second synchronous error (``agentLoop`` without a stream function), which the Pi
    suite checks only via ``Agent``."""
    context = AgentContext(system_prompt="", messages=[user("hi"), assistant("hello")])
    with pytest.raises(ValueError, match=r"^Cannot continue from message role: assistant$"):
        agent_loop_continue(context, config())


async def test_agent_loop_continue_should_continue_without_emitting_user_message_events() -> None:
    """Pi: agentLoopContinue › should continue from existing context without emitting user message events."""
    stream_fn, _ = scripted(assistant("Response"))
    context = AgentContext(system_prompt="You are helpful.", messages=[user("Hello")], tools=[])
    stream = agent_loop_continue(context, config(), None, stream_fn)
    events = await collect(stream)
    messages = await stream.result()
    assert [m.role for m in messages] == ["assistant"]
    ends = [e for e in events if e.type == "message_end"]
    assert len(ends) == 1
    assert ends[0].message.role == "assistant"


async def test_agent_loop_continue_should_allow_custom_message_types_as_last_message() -> None:
    def convert(messages: list[Any]) -> list[Any]:
        out = [
            UserMessage(content=m.text, timestamp=m.timestamp) if m.role == "custom" else m for m in messages
        ]
        return identity_converter(out)

    stream_fn, calls = scripted(assistant("Response to custom message"))
    context = AgentContext(
        system_prompt="You are helpful.", messages=[CustomMessage(text="Hook content")], tools=[]
    )
    stream = agent_loop_continue(context, config(convert_to_llm=convert), None, stream_fn)
    await collect(stream)
    assert [m.role for m in await stream.result()] == ["assistant"]
    assert calls[0][1].messages[0].content == "Hook content"
