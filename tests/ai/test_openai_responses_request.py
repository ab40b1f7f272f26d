"""The ``openai-responses`` request body, asserted on what a real server on 127.0.0.1 received:
input items for every message kind, replay ids, tools, caching, reasoning parameters.

Ports Pi's openai-responses message-id, foreign-toolcall-id and empty-tool-result tests.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from loopback import LoopbackServer, sse

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
from pi_notebook.ai.providers.openai_responses import stream, stream_simple
from pi_notebook.ai.providers.openai_responses_request import short_hash

KEY = "sk-test"
PNG = "iVBORw0KGgo="


def make_model(server: LoopbackServer, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "gpt-5-mini",
        "api": "openai-responses",
        "provider": "openai",
        "base_url": server.url,
        "reasoning": True,
        "input": ["text", "image"],
        "context_window": 400_000,
        "max_tokens": 128_000,
    }
    fields.update(overrides)
    return Model(**fields)


def assistant(
    content: list[Any],
    provider: str = "openai",
    model: str = "gpt-5-mini",
    api: str = "openai-responses",
    stop_reason: str = "toolUse",
) -> AssistantMessage:
    return AssistantMessage(
        content=content, api=api, provider=provider, model=model, usage=Usage(), stop_reason=stop_reason
    )


def result(call_id: str, *content: Any, is_error: bool = False) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name="read", content=list(content), is_error=is_error)


async def send(
    server: LoopbackServer, model: Model, context: Context, simple: bool = False, **options: Any
) -> dict[str, Any]:
    """Run one request against a server that answers "ok"; return the JSON body it received."""
    server.queue_sse(
        [
            sse(
                {"type": "response.completed", "response": {"id": "r", "status": "completed"}},
                event="response.completed",
            )
        ]
    )
    fn = stream_simple if simple else stream
    s = fn(model, context, {"api_key": KEY, **options})
    final = await asyncio.wait_for(s.result(), 5)
    assert final.stop_reason == "stop", final.error_message
    body: dict[str, Any] = server.requests[-1].json
    return body


REASONING_ITEM = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "plan"}],
    "encrypted_content": "gAAA==",
}


def same_model_history() -> Context:
    """User text+image, a gpt-5-mini turn (signed and unsigned thinking, two texts, two calls),
    a text and an image tool result, a closing user message."""
    return Context(
        system_prompt="sys",
        messages=[
            UserMessage(content=[TextContent(text="look"), ImageContent(data=PNG, mime_type="image/png")]),
            assistant(
                [
                    ThinkingContent(thinking="plan", thinking_signature=json.dumps(REASONING_ITEM)),
                    ThinkingContent(thinking="unsigned thoughts are not replayed"),
                    TextContent(
                        text="Let me check.", text_signature='{"v":1,"id":"msg_a","phase":"commentary"}'
                    ),
                    ToolCall(id="call_1|fc_1", name="read", arguments={"path": "a.txt"}),
                    ToolCall(id="call_2|fc_2", name="read", arguments={"path": "b.png"}),
                    TextContent(text="Reading."),
                ]
            ),
            result("call_1|fc_1", TextContent(text="file a"), TextContent(text="line 2")),
            result("call_2|fc_2", TextContent(text="image:"), ImageContent(data=PNG, mime_type="image/png")),
            UserMessage(content="thanks"),
        ],
    )


async def test_replay_of_a_same_model_turn(loopback: LoopbackServer) -> None:
    reasoning = REASONING_ITEM
    body = await send(loopback, make_model(loopback), same_model_history())
    assert body["input"] == [
        {"role": "developer", "content": "sys"},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "detail": "auto", "image_url": f"data:image/png;base64,{PNG}"},
            ],
        },
        reasoning,
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Let me check.", "annotations": []}],
            "status": "completed",
            "id": "msg_a",
            "phase": "commentary",
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "read",
            "arguments": '{"path":"a.txt"}',
        },
        {
            "type": "function_call",
            "id": "fc_2",
            "call_id": "call_2",
            "name": "read",
            "arguments": '{"path":"b.png"}',
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Reading.", "annotations": []}],
            "status": "completed",
            "id": "msg_pi_1_1",
        },  # second text block of message 1
        {"type": "function_call_output", "call_id": "call_1", "output": "file a\nline 2"},
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": [
                {"type": "input_text", "text": "image:"},
                {"type": "input_image", "detail": "auto", "image_url": f"data:image/png;base64,{PNG}"},
            ],
        },
        {"role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
    ]


async def test_legacy_and_long_text_signatures(loopback: LoopbackServer) -> None:
    long_id = "msg_" + "x" * 70
    history = Context(
        messages=[
            UserMessage(content="hi"),
            assistant(
                [
                    TextContent(text="a", text_signature="msg_legacy"),
                    TextContent(text="b", text_signature=long_id),
                ],
                stop_reason="stop",
            ),
        ]
    )
    body = await send(loopback, make_model(loopback), history)
    assert [item["id"] for item in body["input"][1:]] == ["msg_legacy", f"msg_{short_hash(long_id)}"]
    assert "phase" not in body["input"][1]


async def test_fallback_message_ids_for_a_foreign_turn(loopback: LoopbackServer) -> None:
    # Pi's openai-responses-message-id test: foreign thinking turns into text, ids stay unique
    foreign = assistant(
        [ThinkingContent(thinking="private reasoning"), TextContent(text="visible answer")],
        provider="anthropic",
        model="claude-opus-4-8",
        api="anthropic-messages",
        stop_reason="stop",
    )
    body = await send(
        loopback, make_model(loopback), Context(messages=[UserMessage(content="hello"), foreign])
    )
    messages = [item for item in body["input"] if item.get("type") == "message"]
    assert [m["id"] for m in messages] == ["msg_pi_1", "msg_pi_1_1"]
    assert [m["content"][0]["text"] for m in messages] == ["private reasoning", "visible answer"]
    assert not any(item.get("type") == "reasoning" for item in body["input"])


async def test_foreign_tool_call_ids_are_hashed(loopback: LoopbackServer) -> None:
    # Pi's openai-responses-foreign-toolcall-id test: a Copilot item id is not a valid fc_ id
    item_part = (
        "I9b95oN1wD/cHXKTw3PpRkL6KkCtzTJhUxMouMWYwHeTo2j3htzfSk7YPx2vifiIM4g3A8XXyOj8q4Bt6SLUG7gqY1E3==" * 3
    )
    raw_id = f"call_4VnzVawQXPB9MgYib7CiQFEY|{item_part}"
    history = Context(
        messages=[
            UserMessage(content="Use the tool."),
            assistant(
                [ToolCall(id=raw_id, name="edit", arguments={"path": "app.css"})],
                provider="github-copilot",
                model="gpt-5.5",
            ),
            result(raw_id, TextContent(text="ok")),
        ]
    )
    body = await send(loopback, make_model(loopback, id="gpt-5.5"), history)
    call = next(item for item in body["input"] if item.get("type") == "function_call")
    output = next(item for item in body["input"] if item.get("type") == "function_call_output")
    assert call["id"] == f"fc_{short_hash(item_part)}"
    assert len(call["id"]) <= 64
    assert call["call_id"] == output["call_id"] == "call_4VnzVawQXPB9MgYib7CiQFEY"


async def test_other_model_of_the_same_provider(loopback: LoopbackServer) -> None:
    reasoning = {"type": "reasoning", "id": "rs_x", "summary": [], "encrypted_content": "e=="}
    history = Context(
        messages=[
            UserMessage(content="go"),
            assistant(
                [
                    ThinkingContent(thinking="older plan", thinking_signature=json.dumps(reasoning)),
                    ToolCall(id="call_9|fc_9", name="read", arguments={}),
                ],
                model="gpt-4.1",
            ),
            result("call_9|fc_9", TextContent(text="")),
        ]
    )
    body = await send(loopback, make_model(loopback), history)
    items = body["input"]
    # another model's reasoning item cannot be replayed: its text goes back as plain text,
    # and its fc_ item id (paired with that reasoning) is left out
    assert items[1]["type"] == "message"
    assert items[1]["content"][0]["text"] == "older plan"
    assert items[2] == {"type": "function_call", "call_id": "call_9", "name": "read", "arguments": "{}"}
    assert items[3] == {"type": "function_call_output", "call_id": "call_9", "output": "(no tool output)"}


async def test_tool_result_placeholders(loopback: LoopbackServer) -> None:
    history = Context(
        messages=[
            UserMessage(content="run"),
            assistant(
                [
                    ToolCall(id="call_1|fc_1", name="read", arguments={}),
                    ToolCall(id="call_2|fc_2", name="read", arguments={}),
                ]
            ),
            result("call_1|fc_1"),
            result("call_2|fc_2", ImageContent(data=PNG, mime_type="image/png")),
        ]
    )
    text_only = make_model(loopback, input=["text"])
    body = await send(loopback, text_only, history)
    outputs = [item["output"] for item in body["input"] if item.get("type") == "function_call_output"]
    assert outputs[0] == "(no tool output)"
    assert isinstance(outputs[1], str)
    assert "image" in outputs[1]
    body = await send(loopback, make_model(loopback), history)
    outputs = [item["output"] for item in body["input"] if item.get("type") == "function_call_output"]
    assert outputs[1] == [
        {"type": "input_image", "detail": "auto", "image_url": f"data:image/png;base64,{PNG}"}
    ]


async def test_tools_caching_and_generic_options(loopback: LoopbackServer) -> None:
    tool = Tool(
        name="read",
        description="Read a file",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
    session = "s" * 80
    context = Context(messages=[UserMessage(content="hi")], tools=[tool])
    body = await send(
        loopback,
        make_model(loopback, compat={"supportsStrictMode": True}),  # as the catalogue marks OpenAI's
        context,
        session_id=session,
        cache_retention="long",
        max_tokens=5,
        temperature=0.2,
        tool_choice="required",
        headers={"x-extra": "1"},
    )
    assert body["tools"] == [
        {
            "type": "function",
            "name": "read",
            "description": "Read a file",
            "parameters": tool.parameters,
            "strict": False,
        }
    ]
    assert body["prompt_cache_key"] == "s" * 64
    assert body["prompt_cache_retention"] == "24h"
    assert (body["max_output_tokens"], body["temperature"], body["tool_choice"]) == (16, 0.2, "required")
    headers = loopback.requests[-1].headers
    assert headers["session_id"] == headers["x-client-request-id"] == session
    assert headers["x-extra"] == "1"

    # a model whose compat does not claim strict mode: no strict flag; retention none: no cache key
    other = make_model(loopback, provider="azure-like")
    body = await send(loopback, other, context, session_id="abc", cache_retention="none")
    assert "strict" not in body["tools"][0]
    assert "prompt_cache_key" not in body
    assert "prompt_cache_retention" not in body
    assert "session_id" not in loopback.requests[-1].headers


async def test_payload_and_response_hooks(loopback: LoopbackServer) -> None:
    seen: list[Any] = []

    def on_payload(payload: dict[str, Any], model: Model) -> dict[str, Any]:
        seen.append(model.id)
        return {**payload, "metadata": {"trace": "t1"}}

    async def on_response(response: dict[str, Any], model: Model) -> None:
        seen.append(response["status"])

    body = await send(
        loopback,
        make_model(loopback),
        Context(messages=[UserMessage(content="x")]),
        on_payload=on_payload,
        on_response=on_response,
    )
    assert body["metadata"] == {"trace": "t1"}
    assert seen == ["gpt-5-mini", 200]


async def test_system_role_and_surrogates(loopback: LoopbackServer) -> None:
    context = Context(system_prompt="sys", messages=[UserMessage(content="a\ud800b")])
    body = await send(loopback, make_model(loopback, reasoning=False), context)
    assert body["input"][0] == {"role": "system", "content": "sys"}
    assert "reasoning" not in body
    text = body["input"][1]["content"][0]["text"]
    assert text.startswith("a")
    assert text.endswith("b")
    assert "\ud800" not in text
    body = await send(loopback, make_model(loopback, compat={"supportsDeveloperRole": False}), context)
    assert body["input"][0]["role"] == "system"


async def test_simple_reasoning_levels(loopback: LoopbackServer) -> None:
    context = Context(messages=[UserMessage(content="x")])
    mapped = make_model(loopback, thinking_level_map={"minimal": "low", "xhigh": "xhigh"})
    body = await send(loopback, mapped, context, simple=True, reasoning="minimal")
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    body = await send(loopback, mapped, context, simple=True, reasoning="max")  # clamps down to xhigh
    assert body["reasoning"]["effort"] == "xhigh"
    body = await send(
        loopback, make_model(loopback), context, simple=True, reasoning="xhigh"
    )  # up/down to high
    assert body["reasoning"]["effort"] == "high"
    body = await send(loopback, make_model(loopback, thinking_level_map={"off": None}), context, simple=True)
    assert "reasoning" not in body
    assert "include" not in body
    body = await send(
        loopback, make_model(loopback, thinking_level_map={"off": "minimal"}), context, simple=True
    )
    assert body["reasoning"] == {"effort": "minimal"}
    body = await send(loopback, make_model(loopback, reasoning=False), context, simple=True, reasoning="high")
    assert "reasoning" not in body
    body = await send(
        loopback, make_model(loopback), context, reasoning_effort="low", reasoning_summary="detailed"
    )
    assert body["reasoning"] == {"effort": "low", "summary": "detailed"}


async def test_simple_clamps_max_tokens_to_the_context_window(loopback: LoopbackServer) -> None:
    small = make_model(loopback, context_window=10_000, max_tokens=8_000)
    body = await send(loopback, small, Context(messages=[UserMessage(content="x" * 4000)]), simple=True)
    assert body["max_output_tokens"] == 10_000 - 1000 - 4096  # window - estimate - safety margin
