"""The ``anthropic-messages`` provider against a real HTTP server on 127.0.0.1 speaking
Anthropic's SSE wire format (``event: <type>`` + ``data: <json>``), one chunk per event.

Ports Pi's anthropic-sse-parsing, cache-write-1h-cost, empty-thinking-signature,
temperature, force-adaptive-thinking and eager-tool-input tests. HTTP errors, retries, dropped
connections, aborts and API keys, which every provider handles alike, are in
``test_provider_contract.py``; the request body shape is in ``test_anthropic_request.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ai.anthropic_fixtures import (
    KEY,
    block_start,
    block_stop,
    delta,
    ev,
    http_client,  # noqa: F401 (its autouse fixture: a client per test)
    make_model,
    message_end,
    message_start,
    opts,
    text_block,
    tool_block,
)
from ai.stream_helpers import collect as run
from ai.stream_helpers import ctx
from ai.stream_helpers import kinds as types
from loopback import Delay, LoopbackServer, sse

from pi_notebook.ai.providers.anthropic_messages import stream

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


# --- streams that end early ---------------------------------------------------------


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
    # Pi shows the error event's data as it came
    assert msg.error_message == '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
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


# --- API keys ----------------------------------------------------------------------------


async def test_oauth_token_is_sent_as_bearer(loopback: LoopbackServer) -> None:
    loopback.queue_sse([message_start(), *text_block(0, "ok"), *message_end()])
    token = "sk-ant-oat01-secret"
    _, msg = await run(stream(make_model(loopback), ctx(), opts(api_key=token)))
    assert msg.stop_reason == "stop"
    headers = loopback.requests[0].headers
    assert headers["authorization"] == f"Bearer {token}"
    assert "x-api-key" not in headers
    assert headers["anthropic-beta"].split(",")[0] == "oauth-2025-04-20"

