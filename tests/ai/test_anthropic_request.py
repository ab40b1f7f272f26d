"""The ``anthropic-messages`` request body (system and cache_control placement, tool-result
grouping, replayed history, compat flags) and ``stream_simple``'s thinking mapping, checked on
what the real loopback server received."""

from __future__ import annotations

from typing import Any

from ai.anthropic_fixtures import (
    KEY,
    client,
    http_client,  # noqa: F401 (its autouse fixture: a client per test)
    make_model,
    message_end,
    message_start,
    opts,
    text_block,
)
from ai.stream_helpers import collect as run
from ai.stream_helpers import ctx
from ai.stream_helpers import kinds as types
from loopback import LoopbackServer

from pi_notebook.ai import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_notebook.ai.options import SimpleStreamOptions
from pi_notebook.ai.providers.anthropic_messages import AnthropicOptions, stream, stream_simple

# --- request body ------------------------------------------------------------------------


def replay_history(model: Model) -> Context:
    """User, a same-model assistant turn with thinking and two tool calls, two tool results."""
    assistant = AssistantMessage(
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason="toolUse",
        usage=Usage(),
        content=[
            ThinkingContent(thinking="signed thought", thinking_signature="SIG"),
            ThinkingContent(thinking="unsigned thought", thinking_signature=""),
            ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="OPAQUE", redacted=True),
            TextContent(text="Two reads."),
            TextContent(text="   "),
            ToolCall(id="toolu_1", name="read", arguments={"path": "a"}),
            ToolCall(id="toolu_2", name="read", arguments={"path": "b.png"}),
        ],
    )
    return Context(
        system_prompt="You are terse.",
        messages=[
            UserMessage(content="read a and b"),
            assistant,
            ToolResultMessage(
                tool_call_id="toolu_1",
                tool_name="read",
                content=[TextContent(text="line 1"), TextContent(text="line 2")],
            ),
            ToolResultMessage(
                tool_call_id="toolu_2",
                tool_name="read",
                is_error=False,
                content=[ImageContent(data="iVBORw0KGgo=", mime_type="image/png")],
            ),
        ],
        tools=[
            Tool(
                name="read",
                description="Read a file.",
                parameters={
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                    "additionalProperties": False,
                },
            ),
            Tool(name="ls", description="List.", parameters={"type": "object", "properties": {}}),
        ],
    )


async def test_request_body_shape(loopback: LoopbackServer) -> None:
    loopback.queue_sse([message_start(), *text_block(0, "ok"), *message_end()])
    model = make_model(loopback)
    _, msg = await run(
        stream(
            model, replay_history(model), AnthropicOptions(api_key=KEY, http_client=client(), temperature=0.3)
        )
    )
    assert msg.stop_reason == "stop"
    body = loopback.requests[0].json
    ephemeral = {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "You are terse.", "cache_control": ephemeral}]
    assert body["temperature"] == 0.3
    assert body["messages"] == [
        {"role": "user", "content": "read a and b"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "signed thought", "signature": "SIG"},
                {"type": "text", "text": "unsigned thought"},
                {"type": "redacted_thinking", "data": "OPAQUE"},
                {"type": "text", "text": "Two reads."},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "b.png"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": "line 1\nline 2",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "is_error": False,
                    "cache_control": ephemeral,
                    "content": [
                        {"type": "text", "text": "(see attached image)"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                        },
                    ],
                },
            ],
        },
    ]
    assert body["tools"] == [
        {
            "name": "read",
            "description": "Read a file.",
            "eager_input_streaming": True,
            "input_schema": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
        {
            "name": "ls",
            "description": "List.",
            "eager_input_streaming": True,
            "input_schema": {"type": "object", "properties": {}, "required": []},
            "cache_control": ephemeral,
        },
    ]
    assert "anthropic-beta" in loopback.requests[0].headers
    assert "fine-grained" not in loopback.requests[0].headers["anthropic-beta"]


async def test_string_user_message_gets_cache_control_and_long_retention(loopback: LoopbackServer) -> None:
    loopback.queue_sse([message_start(), *text_block(0, "ok"), *message_end()])
    options = opts(cache_retention="long", session_id="sess-1")
    await run(
        stream(make_model(loopback, compat={"sendSessionAffinityHeaders": True}), ctx("hello"), options)
    )
    request = loopback.requests[0]
    assert request.json["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hello", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
            ],
        },
    ]
    assert request.headers["x-session-affinity"] == "sess-1"


async def test_no_cache_markers_with_retention_none(loopback: LoopbackServer) -> None:
    loopback.queue_sse([message_start(), *text_block(0, "ok"), *message_end()])
    await run(stream(make_model(loopback), ctx("hello", system_prompt="S"), opts(cache_retention="none")))
    body = loopback.requests[0].json
    assert body["messages"] == [{"role": "user", "content": "hello"}]
    assert body["system"] == [{"type": "text", "text": "S"}]


async def test_foreign_tool_call_ids_are_normalized(loopback: LoopbackServer) -> None:
    loopback.queue_sse([message_start(), *text_block(0, "ok"), *message_end()])
    foreign_id = "call|abc/def+" + "x" * 80
    other = AssistantMessage(
        api="openai-responses",
        provider="openai",
        model="gpt-x",
        stop_reason="toolUse",
        content=[ToolCall(id=foreign_id, name="read", arguments={})],
    )
    context = Context(
        messages=[
            UserMessage(content="go"),
            other,
            ToolResultMessage(tool_call_id=foreign_id, tool_name="read", content=[TextContent(text="done")]),
        ]
    )
    await run(stream(make_model(loopback), context, opts()))
    messages = loopback.requests[0].json["messages"]
    new_id = messages[1]["content"][0]["id"]
    assert new_id == ("call_abc_def_" + "x" * 80)[:64]
    assert messages[2]["content"][0]["tool_use_id"] == new_id


async def test_unpaired_surrogates_are_removed(loopback: LoopbackServer) -> None:
    loopback.queue_sse([message_start(), *text_block(0, "ok"), *message_end()])
    _, msg = await run(stream(make_model(loopback), ctx("bad \ud83d here"), opts()))
    assert msg.stop_reason == "stop"
    assert loopback.requests[0].json["messages"][0]["content"][0]["text"] == "bad  here"


async def test_allow_empty_signature_compat(loopback: LoopbackServer) -> None:
    loopback.queue_sse([message_start(), *text_block(0, "ok"), *message_end()])
    model = make_model(loopback, compat={"allowEmptySignature": True})
    prior = AssistantMessage(
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=Usage(),
        content=[ThinkingContent(thinking="hmm"), TextContent(text="hi")],
    )
    context = Context(messages=[UserMessage(content="a"), prior, UserMessage(content="b")])
    await run(stream(model, context, opts()))
    assert loopback.requests[0].json["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "hmm",
        "signature": "",
    }


async def test_eager_tool_input_unsupported_uses_the_beta(loopback: LoopbackServer) -> None:
    loopback.queue_sse([message_start(), *text_block(0, "ok"), *message_end()])
    model = make_model(loopback, compat={"supportsEagerToolInputStreaming": False})
    await run(stream(model, ctx(tools=[Tool(name="t", description="d")]), opts()))
    request = loopback.requests[0]
    assert "eager_input_streaming" not in request.json["tools"][0]
    assert request.headers["anthropic-beta"] == (
        "fine-grained-tool-streaming-2025-05-14,interleaved-thinking-2025-05-14"
    )


async def test_tool_choice_metadata_and_payload_hooks(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [message_start(), *text_block(0, "ok"), *message_end()], headers={"x-request-id": "r1"}
    )
    seen: list[Any] = []

    def on_payload(payload: dict[str, Any], model: Model) -> dict[str, Any]:
        return {**payload, "top_k": 5}

    options = AnthropicOptions(
        api_key=KEY,
        http_client=client(),
        tool_choice={"type": "tool", "name": "t"},
        metadata={"user_id": "u-1"},
        on_payload=on_payload,
        on_response=lambda r, m: seen.append(r),
    )
    await run(stream(make_model(loopback), ctx(tools=[Tool(name="t", description="d")]), options))
    body = loopback.requests[0].json
    assert body["tool_choice"] == {"type": "tool", "name": "t"}
    assert body["metadata"] == {"user_id": "u-1"}
    assert body["top_k"] == 5
    assert seen[0]["status"] == 200
    assert seen[0]["headers"]["x-request-id"] == "r1"


# --- stream_simple: reasoning mapping -----------------------------------------------------


async def simple_body(loopback: LoopbackServer, model: Model, **options: Any) -> dict[str, Any]:
    loopback.queue_sse([message_start(), *text_block(0, "ok"), *message_end()])
    _, msg = await run(
        stream_simple(model, ctx(), SimpleStreamOptions(api_key=KEY, http_client=client(), **options))
    )
    assert msg.stop_reason == "stop"
    body: dict[str, Any] = loopback.requests[-1].json
    return body


async def test_simple_budget_thinking(loopback: LoopbackServer) -> None:
    body = await simple_body(
        loopback, make_model(loopback), reasoning="medium", max_tokens=4000, temperature=0.5
    )
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192, "display": "summarized"}
    assert body["max_tokens"] == 4000 + 8192
    assert "temperature" not in body  # incompatible with thinking
    body = await simple_body(loopback, make_model(loopback, max_tokens=4096), reasoning="high")
    assert body["max_tokens"] == 4096
    assert body["thinking"]["budget_tokens"] == 4096 - 1024


async def test_simple_custom_budgets_and_xhigh_clamp(loopback: LoopbackServer) -> None:
    body = await simple_body(
        loopback, make_model(loopback), reasoning="xhigh", max_tokens=2000, thinking_budgets={"high": 3000}
    )
    assert body["thinking"]["budget_tokens"] == 3000  # xhigh is clamped to the "high" budget
    assert body["max_tokens"] == 5000
    # the budget always leaves 1024 tokens for the answer
    body = await simple_body(loopback, make_model(loopback), reasoning="high", max_tokens=100)
    assert body["max_tokens"] == 100 + 16384
    assert body["thinking"]["budget_tokens"] == 16384 + 100 - 1024


async def test_simple_off_disables_thinking_on_reasoning_models(loopback: LoopbackServer) -> None:
    body = await simple_body(loopback, make_model(loopback), temperature=0.2)
    assert body["thinking"] == {"type": "disabled"}
    assert body["temperature"] == 0.2
    body = await simple_body(loopback, make_model(loopback, thinking_level_map={"off": None}))
    assert "thinking" not in body
    body = await simple_body(loopback, make_model(loopback, reasoning=False), reasoning="high")
    assert "thinking" not in body


async def test_simple_force_adaptive_thinking(loopback: LoopbackServer) -> None:
    model = make_model(loopback, compat={"forceAdaptiveThinking": True})
    body = await simple_body(loopback, model, reasoning="minimal")
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert body["output_config"] == {"effort": "low"}
    assert "anthropic-beta" not in loopback.requests[-1].headers  # interleaving is built in
    mapped = make_model(
        loopback, compat={"forceAdaptiveThinking": True}, thinking_level_map={"xhigh": "xhigh"}
    )
    body = await simple_body(loopback, mapped, reasoning="xhigh")
    assert body["output_config"] == {"effort": "xhigh"}
    body = await simple_body(loopback, model, reasoning="max")
    assert body["output_config"] == {"effort": "high"}


async def test_temperature_compat(loopback: LoopbackServer) -> None:
    body = await simple_body(
        loopback, make_model(loopback, compat={"supportsTemperature": False}), temperature=0.7
    )
    assert "temperature" not in body


async def test_simple_clamps_max_tokens_to_the_context_window(loopback: LoopbackServer) -> None:
    body = await simple_body(loopback, make_model(loopback, context_window=10_000), max_tokens=9_000)
    assert body["max_tokens"] < 10_000 - 4096


async def test_bad_options_never_raise(loopback: LoopbackServer) -> None:
    events, msg = await run(stream(make_model(loopback), ctx(), {"no_such_option": 1}))
    assert types(events) == ["error"]
    assert msg.error_message
    assert "no_such_option" in msg.error_message
    events, msg = await run(stream_simple(make_model(loopback), ctx(), {"no_such_option": 1}))
    assert types(events) == ["error"]
    assert loopback.requests == []
