"""The ``anthropic-messages`` provider against a real HTTP server on 127.0.0.1 speaking
Anthropic's SSE wire format (``event: <type>`` + ``data: <json>``), one chunk per event.

Ports Pi's anthropic-sse-parsing, cache-write-1h-cost, empty-thinking-signature,
temperature, force-adaptive-thinking and eager-tool-input tests, plus HTTP errors,
dropped connections, aborts and the request body shape.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from ai.stream_helpers import collect as run
from ai.stream_helpers import ctx
from ai.stream_helpers import kinds as types
from loopback import DROP, Delay, LoopbackServer, json_reply, sse

from pi_notebook.ai import (
    AbortController,
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    ModelCost,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_notebook.ai import stream as entry_stream
from pi_notebook.ai.options import SimpleStreamOptions
from pi_notebook.ai.providers.anthropic_messages import AnthropicOptions, stream, stream_simple

KEY = "fake-anthropic-key-0123456789-not-real"
# One SSL context for every test's client: building one per client costs ~0.2 s.
SSL_CONTEXT = ssl.create_default_context()
CLIENT: httpx.AsyncClient | None = None


@pytest.fixture(autouse=True)
async def http_client() -> AsyncIterator[httpx.AsyncClient]:
    """A client per test (and event loop); ``opts()`` passes it as ``http_client``."""
    global CLIENT
    async with httpx.AsyncClient(verify=SSL_CONTEXT) as client:
        CLIENT = client
        yield client
    CLIENT = None


def opts(**options: Any) -> dict[str, Any]:
    return {"api_key": KEY, "http_client": CLIENT, **options}


# --- wire helpers -----------------------------------------------------------------------


def ev(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields}, event=kind)


def message_start(input_tokens: int = 12, msg_id: str = "msg_01", **usage: Any) -> bytes:
    return ev(
        "message_start",
        message={
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-test",
            "stop_reason": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1, **usage},
        },
    )


def block_start(index: int, block: dict[str, Any]) -> bytes:
    return ev("content_block_start", index=index, content_block=block)


def delta(index: int, **d: Any) -> bytes:
    return ev("content_block_delta", index=index, delta=d)


def block_stop(index: int) -> bytes:
    return ev("content_block_stop", index=index)


def text_block(index: int, *parts: str) -> list[bytes]:
    return [
        block_start(index, {"type": "text", "text": ""}),
        *(delta(index, type="text_delta", text=p) for p in parts),
        block_stop(index),
    ]


def tool_block(index: int, tool_id: str, name: str, *fragments: str) -> list[bytes]:
    return [
        block_start(index, {"type": "tool_use", "id": tool_id, "name": name, "input": {}}),
        *(delta(index, type="input_json_delta", partial_json=f) for f in fragments),
        block_stop(index),
    ]


def message_end(stop_reason: str = "end_turn", usage: dict[str, Any] | None = None, **d: Any) -> list[bytes]:
    fields: dict[str, Any] = {"delta": {"stop_reason": stop_reason, "stop_sequence": None, **d}}
    if usage is not None:
        fields["usage"] = usage
    return [ev("message_delta", **fields), ev("message_stop")]


def make_model(server: LoopbackServer, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "claude-test",
        "name": "Claude Test",
        "api": "anthropic-messages",
        "provider": "anthropic",
        "base_url": server.url,
        "reasoning": True,
        "input": ["text", "image"],
        "cost": ModelCost(input=5, output=25, cache_read=0.5, cache_write=6.25),
        "context_window": 200_000,
        "max_tokens": 32_000,
    }
    fields.update(overrides)
    return Model(**fields)


# --- streaming: text, thinking, tools --------------------------------------------------


async def test_text_stream_events_usage_and_request(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            message_start(12),
            sse({"type": "ping"}, event="ping"),
            *text_block(0, "Hel", "lo"),
            *message_end("end_turn", {"output_tokens": 5}),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert [e.delta for e in events if e.type == "text_delta"] == ["Hel", "lo"]
    assert events[4].content == "Hello"
    assert events[-1].reason == "stop"
    assert events[-1].message is msg
    assert all(e.partial is msg for e in events[:-1])  # one mutable message, as in Pi
    assert [b.model_dump() for b in msg.content] == [{"type": "text", "text": "Hello"}]
    assert (msg.stop_reason, msg.raw_stop_reason, msg.response_id) == ("stop", "end_turn", "msg_01")
    assert (msg.api, msg.provider, msg.model) == ("anthropic-messages", "anthropic", "claude-test")
    assert (msg.usage.input, msg.usage.output, msg.usage.total_tokens) == (12, 5, 17)
    assert msg.usage.cost.total == pytest.approx((12 * 5 + 5 * 25) / 1e6)

    [request] = loopback.requests
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert "authorization" not in request.headers
    body = request.json
    assert body["model"] == "claude-test"
    assert body["stream"] is True
    assert body["max_tokens"] == 32_000
    assert "thinking" not in body  # raw stream(): no thinking option, no thinking field


async def test_thinking_with_signature_then_text(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            message_start(),
            block_start(0, {"type": "thinking", "thinking": ""}),
            delta(0, type="thinking_delta", thinking="Let me "),
            delta(0, type="thinking_delta", thinking="think."),
            delta(0, type="signature_delta", signature="sig-part-1"),
            delta(0, type="signature_delta", signature="/part-2"),
            block_stop(0),
            *text_block(1, "Answer"),
            *message_end("end_turn", {"output_tokens": 30, "output_tokens_details": {"thinking_tokens": 20}}),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "done",
    ]
    assert events[4].content == "Let me think."
    assert [e.content_index for e in events[1:8]] == [0, 0, 0, 0, 1, 1, 1]
    assert [b.model_dump() for b in msg.content] == [
        {"type": "thinking", "thinking": "Let me think.", "thinkingSignature": "sig-part-1/part-2"},
        {"type": "text", "text": "Answer"},
    ]
    assert msg.usage.reasoning == 20


async def test_redacted_thinking(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            message_start(),
            block_start(0, {"type": "redacted_thinking", "data": "ENCRYPTED=="}),
            block_stop(0),
            *text_block(1, "ok"),
            *message_end(),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events) == [
        "start",
        "thinking_start",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "done",
    ]
    assert msg.content[0].model_dump() == {
        "type": "thinking",
        "thinking": "[Reasoning redacted]",
        "thinkingSignature": "ENCRYPTED==",
        "redacted": True,
    }


async def test_tool_call_arguments_grow_across_chunks(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            message_start(),
            block_start(0, {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {}}),
            # pauses let the consumer see each state of the one mutable partial message
            *(
                part
                for fragment in ('{"path": "a', '.txt", "n": 4', "2}")
                for part in (delta(0, type="input_json_delta", partial_json=fragment), Delay(0.02))
            ),
            block_stop(0),
            *message_end("tool_use", {"output_tokens": 9}),
        ]
    )
    s = stream(make_model(loopback), ctx(), opts())
    snapshots: list[dict[str, Any]] = []
    events: list[Any] = []
    async for e in s:
        events.append(e)
        if e.type == "toolcall_delta":
            snapshots.append(dict(e.partial.content[e.content_index].arguments))
    msg = await s.result()
    assert types(events) == [
        "start",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    assert [e.delta for e in events if e.type == "toolcall_delta"] == ['{"path": "a', '.txt", "n": 4', "2}"]
    assert snapshots == [{"path": "a"}, {"path": "a.txt", "n": 4}, {"path": "a.txt", "n": 42}]
    assert events[-1].reason == "toolUse"
    assert events[5].tool_call is msg.content[0]
    assert msg.content[0].model_dump() == {
        "type": "toolCall",
        "id": "toolu_01",
        "name": "read",
        "arguments": {"path": "a.txt", "n": 42},
    }
    assert msg.stop_reason == "toolUse"


async def test_several_tool_calls_after_text(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            message_start(),
            *text_block(0, "Reading both."),
            *tool_block(1, "toolu_a", "read", '{"path":', ' "a"}'),
            *tool_block(2, "toolu_b", "read", '{"path": "b"}'),
            *message_end("tool_use"),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    assert [e.content_index for e in events if e.type.startswith("toolcall")] == [1, 1, 1, 1, 2, 2, 2]
    assert [(b.id, b.arguments) for b in msg.content[1:]] == [
        ("toolu_a", {"path": "a"}),
        ("toolu_b", {"path": "b"}),
    ]
    assert all("partial" not in json.dumps(b.model_dump()).lower() for b in msg.content)  # no scratch fields


async def test_tool_use_start_without_input_and_input_sent_whole(loopback: LoopbackServer) -> None:
    # llama.cpp's llama-server omits ``input`` at content_block_start; some gateways instead send
    # the whole input there and no deltas at all.
    loopback.queue_sse(
        [
            message_start(),
            block_start(0, {"type": "tool_use", "id": "call_1", "name": "add"}),
            delta(0, type="input_json_delta", partial_json='{"a": 1, "b": 2}'),
            block_stop(0),
            block_start(1, {"type": "tool_use", "id": "call_2", "name": "add", "input": {"a": 3, "b": 4}}),
            block_stop(1),
            *message_end("tool_use"),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events) == [
        "start",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "toolcall_start",
        "toolcall_end",
        "done",
    ]
    assert [b.arguments for b in msg.content] == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]


async def test_usage_with_cache_read_write_and_1h_writes(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            message_start(
                100,
                cache_read_input_tokens=200,
                cache_creation_input_tokens=1000,
                cache_creation={"ephemeral_5m_input_tokens": 600, "ephemeral_1h_input_tokens": 400},
            ),
            *text_block(0, "Hi"),
            *message_end(
                "end_turn", {"output_tokens": 50, "input_tokens": None, "cache_read_input_tokens": 200}
            ),
        ]
    )
    _, msg = await run(stream(make_model(loopback), ctx(), opts()))
    usage = msg.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write, usage.cache_write1h) == (
        100,
        50,
        200,
        1000,
        400,
    )
    assert usage.total_tokens == 1350
    cost = usage.cost
    assert cost.input == pytest.approx(100 * 5 / 1e6)
    assert cost.output == pytest.approx(50 * 25 / 1e6)
    assert cost.cache_read == pytest.approx(200 * 0.5 / 1e6)
    # 1h writes are billed at 2x base input, the rest at the 5m write rate
    assert cost.cache_write == pytest.approx((600 * 6.25 + 400 * 10) / 1e6)
    assert cost.total == pytest.approx(cost.input + cost.output + cost.cache_read + cost.cache_write)
    assert msg.model_dump()["usage"]["cacheWrite1h"] == 400


async def test_message_delta_without_usage_keeps_usage(loopback: LoopbackServer) -> None:
    loopback.queue_sse([message_start(12), *text_block(0, "Hello"), *message_end("end_turn")])
    _, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert (msg.stop_reason, msg.usage.input, msg.usage.output, msg.usage.total_tokens) == ("stop", 12, 1, 13)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("end_turn", "stop"),
        ("pause_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "toolUse"),
    ],
)
async def test_successful_stop_reasons(loopback: LoopbackServer, raw: str, reason: str) -> None:
    loopback.queue_sse([message_start(), *text_block(0, "x"), *message_end(raw)])
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert (events[-1].type, events[-1].reason) == ("done", reason)
    assert (msg.stop_reason, msg.raw_stop_reason, msg.error_message) == (reason, raw, None)


@pytest.mark.parametrize(
    ("raw", "details", "message"),
    [
        (
            "refusal",
            {"type": "refusal", "category": "cyber", "explanation": "Blocked under the Usage Policy."},
            "Blocked under the Usage Policy.",
        ),
        ("refusal", None, "The model refused to complete the request"),
        ("sensitive", None, "Provider stopped with: sensitive"),
        ("brand_new_reason", None, "Unhandled stop reason: brand_new_reason"),
    ],
)
async def test_failing_stop_reasons(loopback: LoopbackServer, raw: str, details: Any, message: str) -> None:
    extra = {"stop_details": details} if details else {}
    loopback.queue_sse([message_start(412), *text_block(0, "partial"), *message_end(raw, **extra)])
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events) == ["start", "text_start", "text_delta", "text_end", "error"]
    assert events[-1].reason == "error"
    assert (msg.stop_reason, msg.raw_stop_reason, msg.error_message) == ("error", raw, message)
    assert msg.content[0].text == "partial"
    assert msg.usage.input == 412


# --- HTTP errors and retries -----------------------------------------------------------


def anthropic_error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Any:
    return json_reply(status, {"type": "error", "error": {"type": kind, "message": message}}, headers)


@pytest.mark.parametrize(
    ("status", "kind", "text"),
    [
        (400, "invalid_request_error", "messages: at least one message is required"),
        (401, "authentication_error", "invalid x-api-key"),
        (429, "rate_limit_error", "Number of request tokens has exceeded your rate limit"),
        (500, "api_error", "Internal server error"),
        (529, "overloaded_error", "Overloaded"),
    ],
)
async def test_http_errors_end_in_a_single_error_event(
    loopback: LoopbackServer, status: int, kind: str, text: str
) -> None:
    loopback.queue(anthropic_error(status, kind, text, {"retry-after": "0"}))
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events) == ["error"]  # no ``start``: headers never arrived with a 2xx
    assert (msg.stop_reason, msg.content) == ("error", [])
    assert msg.error_message is not None
    assert msg.error_message.startswith(str(status))
    assert text in msg.error_message
    assert kind in msg.error_message
    assert KEY not in msg.error_message
    assert KEY not in msg.model_dump_json()
    assert len(loopback.requests) == 1  # max_retries defaults to 0


@pytest.mark.parametrize(("status", "kind"), [(429, "rate_limit_error"), (529, "overloaded_error")])
async def test_retryable_errors_are_retried_when_asked(
    loopback: LoopbackServer, status: int, kind: str
) -> None:
    loopback.queue(anthropic_error(status, kind, "slow down", {"retry-after": "0"}))
    loopback.queue_sse([message_start(), *text_block(0, "after retry"), *message_end()])
    events, msg = await run(stream(make_model(loopback), ctx(), opts(max_retries=2)))
    assert types(events)[-1] == "done"
    assert msg.content[0].text == "after retry"
    assert len(loopback.requests) == 2
    assert loopback.requests[0].json == loopback.requests[1].json


async def test_non_retryable_status_is_not_retried(loopback: LoopbackServer) -> None:
    loopback.queue(anthropic_error(400, "invalid_request_error", "bad"))
    _, msg = await run(stream(make_model(loopback), ctx(), opts(max_retries=3)))
    assert msg.stop_reason == "error"
    assert len(loopback.requests) == 1


async def test_connection_dropped_mid_stream_keeps_partial_content(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            message_start(30),
            block_start(0, {"type": "text", "text": ""}),
            delta(0, type="text_delta", text="Half a sen"),
            DROP,
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events) == ["start", "text_start", "text_delta", "error"]
    assert msg.stop_reason == "error"
    assert msg.content[0].text == "Half a sen"
    assert msg.usage.input == 30
    assert msg.error_message
    assert "connection" in msg.error_message.lower()


async def test_stream_ending_before_message_stop_is_an_error(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [message_start(), *text_block(0, "Hello"), ev("message_delta", delta={"stop_reason": "end_turn"})]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events) == ["start", "text_start", "text_delta", "text_end", "error"]
    assert msg.error_message == "Anthropic stream ended before message_stop"
    assert msg.content[0].text == "Hello"


async def test_stream_without_any_message_event_has_no_stop_reason(loopback: LoopbackServer) -> None:
    loopback.queue_sse([sse({"type": "ping"}, event="ping")])
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events) == ["start", "error"]
    assert msg.error_message == "Anthropic stream ended without a stop reason"


# --- errors inside a 200 stream, malformed data, foreign events ------------------------


async def test_error_event_inside_a_200_stream(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            message_start(7),
            *text_block(0, "Hi"),
            sse(
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
                event="error",
            ),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events) == ["start", "text_start", "text_delta", "text_end", "error"]
    assert msg.error_message == "overloaded_error: Overloaded"
    assert (msg.content[0].text, msg.usage.input) == ("Hi", 7)


async def test_error_object_without_event_line_inside_a_200_stream(loopback: LoopbackServer) -> None:
    # llama.cpp-style: a bare ``data: {"error": ...}`` line after streaming started
    loopback.queue_sse(
        [
            message_start(),
            block_start(0, {"type": "text", "text": ""}),
            delta(0, type="text_delta", text="Hi"),
            sse(
                {"error": {"code": 500, "message": "Context size has been exceeded.", "type": "server_error"}}
            ),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events) == ["start", "text_start", "text_delta", "error"]
    assert msg.error_message == "server_error: Context size has been exceeded."


async def test_plain_text_error_event(loopback: LoopbackServer) -> None:
    loopback.queue_sse([message_start(), sse("upstream went away", event="error")])
    _, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert msg.error_message == "upstream went away"


async def test_data_lines_without_event_lines_are_understood(loopback: LoopbackServer) -> None:
    bare = [
        sse(json.loads(line.split(b"data: ", 1)[1]))
        for line in [message_start(3), *text_block(0, "plain"), *message_end()]
    ]
    loopback.queue_sse([*bare, b"data: [DONE]\n\n"])
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events) == ["start", "text_start", "text_delta", "text_end", "done"]
    assert (msg.content[0].text, msg.usage.input) == ("plain", 3)


async def test_malformed_sse_json_and_malformed_tool_json_are_repaired(loopback: LoopbackServer) -> None:
    # Pi's anthropic-sse-parsing case: ``\H`` is an invalid escape and a raw tab sits inside a
    # string, both in the SSE JSON and again in the tool JSON it carries.
    bad_tool = (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":'
        b'{"type":"input_json_delta","partial_json":"{\\"path\\":\\"A\\H\\",\\"text\\":\\"col1\tcol2\\"}"}}\n\n'
    )
    bad_text = (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":'
        b'{"type":"text_delta","text":"tab\there \\q"}}\n\n'
    )
    loopback.queue_sse(
        [
            message_start(),
            block_start(0, {"type": "tool_use", "id": "toolu_t", "name": "edit", "input": {}}),
            bad_tool,
            block_stop(0),
            block_start(1, {"type": "text", "text": ""}),
            bad_text,
            block_stop(1),
            *message_end("tool_use"),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events)[-1] == "done"
    assert msg.error_message is None
    assert msg.content[0].arguments == {"path": "A\\H", "text": "col1\tcol2"}
    assert msg.content[1].text == "tab\there \\q"


async def test_unparseable_data_is_an_error_naming_the_event(loopback: LoopbackServer) -> None:
    loopback.queue_sse([message_start(), b"event: content_block_start\ndata: {not json at all\n\n"])
    _, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert msg.stop_reason == "error"
    assert (msg.error_message or "").startswith("Could not parse Anthropic SSE event content_block_start")


async def test_unknown_events_after_message_stop_are_ignored(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            message_start(),
            *text_block(0, "Hello"),
            *message_end(),
            b"event: done\ndata: [DONE]\n\n",
            b"event: proxy.stats\ndata: not json\n\n",
            b'data: {"error": "late"}\n\n',
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events)[-1] == "done"
    assert [b.model_dump() for b in msg.content] == [{"type": "text", "text": "Hello"}]


async def test_crlf_line_endings_and_split_chunks(loopback: LoopbackServer) -> None:
    wire = b"".join([message_start(), *text_block(0, "split"), *message_end()]).replace(b"\n", b"\r\n")
    loopback.queue_sse([wire[i : i + 7] for i in range(0, len(wire), 7)])
    events, msg = await run(stream(make_model(loopback), ctx(), opts()))
    assert types(events) == ["start", "text_start", "text_delta", "text_end", "done"]
    assert msg.content[0].text == "split"


# --- abort -------------------------------------------------------------------------------


async def test_abort_before_the_request(loopback: LoopbackServer) -> None:
    controller = AbortController()
    controller.abort()
    events, msg = await run(stream(make_model(loopback), ctx(), opts(signal=controller.signal)))
    assert types(events) == ["error"]
    assert (events[0].reason, msg.stop_reason, msg.error_message) == (
        "aborted",
        "aborted",
        "Request was aborted",
    )
    assert loopback.requests == []


async def test_abort_mid_stream_keeps_partial_content_and_input_usage(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            message_start(55),
            block_start(0, {"type": "text", "text": ""}),
            delta(0, type="text_delta", text="Once upon"),
            Delay(3),
            delta(0, type="text_delta", text=" a time"),
            block_stop(0),
            *message_end(),
        ]
    )
    controller = AbortController()
    s = stream(make_model(loopback), ctx(), opts(signal=controller.signal))
    events: list[Any] = []
    started = asyncio.get_running_loop().time()
    async for e in s:
        events.append(e)
        if e.type == "text_delta":
            controller.abort()
    msg = await s.result()
    assert asyncio.get_running_loop().time() - started < 2  # did not wait for the server
    assert types(events) == ["start", "text_start", "text_delta", "error"]
    assert (events[-1].reason, msg.stop_reason, msg.error_message) == (
        "aborted",
        "aborted",
        "Request was aborted",
    )
    assert msg.content[0].text == "Once upon"
    assert msg.usage.input == 55


# --- API keys ----------------------------------------------------------------------------


async def test_missing_key_through_the_entry_point(
    monkeypatch: pytest.MonkeyPatch, loopback: LoopbackServer
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    model = make_model(loopback, base_url="https://api.anthropic.com")
    events, msg = await run(entry_stream(model, ctx()))
    assert types(events) == ["error"]
    assert msg.stop_reason == "error"
    assert msg.error_message
    assert "ANTHROPIC_API_KEY" in msg.error_message
    # called directly, the provider says the same instead of raising
    events, msg = await run(stream(model, ctx(), None))
    assert types(events) == ["error"]
    assert msg.error_message
    assert "ANTHROPIC_API_KEY" in msg.error_message


async def test_env_key_is_sent_but_never_echoed(
    monkeypatch: pytest.MonkeyPatch, loopback: LoopbackServer
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    loopback.queue(anthropic_error(401, "authentication_error", "invalid x-api-key"))
    events, msg = await run(entry_stream(make_model(loopback), ctx()))
    assert loopback.requests[0].headers["x-api-key"] == KEY
    assert msg.error_message == "401 authentication_error: invalid x-api-key"
    assert all(KEY not in json.dumps(e.to_dict()) for e in events)


async def test_oauth_token_is_sent_as_bearer(loopback: LoopbackServer) -> None:
    loopback.queue_sse([message_start(), *text_block(0, "ok"), *message_end()])
    token = "sk-ant-oat01-secret"
    _, msg = await run(stream(make_model(loopback), ctx(), opts(api_key=token)))
    assert msg.stop_reason == "stop"
    headers = loopback.requests[0].headers
    assert headers["authorization"] == f"Bearer {token}"
    assert "x-api-key" not in headers
    assert headers["anthropic-beta"].split(",")[0] == "oauth-2025-04-20"


async def test_local_server_needs_no_key(loopback: LoopbackServer) -> None:
    loopback.queue_sse([message_start(), *text_block(0, "local"), *message_end()])
    _, msg = await run(stream(make_model(loopback, provider="llama.cpp"), ctx(), {"http_client": CLIENT}))
    assert msg.content[0].text == "local"
    assert "x-api-key" not in loopback.requests[0].headers


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
            model, replay_history(model), AnthropicOptions(api_key=KEY, http_client=CLIENT, temperature=0.3)
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
        http_client=CLIENT,
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
        stream_simple(model, ctx(), SimpleStreamOptions(api_key=KEY, http_client=CLIENT, **options))
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
