"""The ``openai-responses`` provider against a real HTTP server on 127.0.0.1 speaking the
Responses API's SSE wire format (``event: <type>`` + ``data: <json>``), one chunk per event.

Ports Pi's openai-responses terminal-event and partial-json-cleanup tests: text, reasoning,
tool calls, usage, every status, error events and malformed chunks, and Pi's text for HTTP
errors. HTTP errors, retries, dropped connections, aborts and API keys, which every provider
handles alike, are in ``test_provider_contract.py``; the request body is in
``test_openai_responses_request.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ai.openai_responses_fixtures import (
    KEY,
    USAGE,
    completed,
    created,
    ev,
    function_item,
    make_model,
    message_item,
    paced,
    reasoning_item,
)
from ai.stream_helpers import collect as run
from ai.stream_helpers import ctx
from ai.stream_helpers import kinds as types
from loopback import LoopbackServer, sse

from pi_notebook.ai.http import ProviderError
from pi_notebook.ai.providers.openai_responses import (
    NO_TERMINAL_EVENT,
    OpenAIResponsesOptions,
    format_http_error,
    stream,
    stream_simple,
)
from pi_notebook.ai.text import short_hash

# --- streaming: text, reasoning, tools --------------------------------------------------


async def test_text_stream_events_usage_and_request(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [created(), *message_item(0, "msg_1", "Hel", "lo"), completed(usage=USAGE), b"data: [DONE]\n\n"]
    )
    events, msg = await run(stream(make_model(loopback), ctx(system_prompt="Be brief."), {"api_key": KEY}))
    assert types(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert [e.delta for e in events if e.type == "text_delta"] == ["Hel", "lo"]
    assert all(e.partial is msg for e in events[:-1])  # one mutable message, as in Pi
    assert events[-1].reason == "stop"
    assert events[-1].message is msg
    assert [b.model_dump() for b in msg.content] == [
        {"type": "text", "text": "Hello", "textSignature": '{"v":1,"id":"msg_1"}'}
    ]
    assert (msg.stop_reason, msg.raw_stop_reason, msg.response_id) == ("stop", "completed", "resp_1")
    usage = msg.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (60, 20, 40, 0)
    assert (usage.reasoning, usage.total_tokens) == (5, 120)
    assert usage.cost.total == pytest.approx((60 * 1.25 + 20 * 10 + 40 * 0.125) / 1e6)

    [request] = loopback.requests
    assert (request.method, request.path) == ("POST", "/v1/responses")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.json == {
        "model": "gpt-5-mini",
        "input": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        ],
        "stream": True,
        "store": False,
        "reasoning": {"effort": "none"},  # a reasoning model asked for no reasoning
    }


async def test_reasoning_summaries_with_encrypted_content_then_text(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            created(),
            *reasoning_item(0, "rs_1", [["Think", " hard"], ["Second"]], encrypted="gAAAA=="),
            *message_item(1, "msg_1", "Answer", phase="final_answer"),
            completed(usage=USAGE),
        ]
    )
    s = stream_simple(make_model(loopback), ctx(), {"api_key": KEY, "reasoning": "high"})
    events, msg = await run(s)
    assert types(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_delta",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "done",
    ]
    assert [e.delta for e in events if e.type == "thinking_delta"] == [
        "Think",
        " hard",
        "\n\n",
        "Second",
        "\n\n",
    ]
    thinking, text = msg.content
    assert thinking.thinking == "Think hard\n\nSecond"  # the summaries joined, from output_item.done
    assert json.loads(thinking.thinking_signature) == {
        "type": "reasoning",
        "id": "rs_1",
        "encrypted_content": "gAAAA==",
        "summary": [
            {"type": "summary_text", "text": "Think hard"},
            {"type": "summary_text", "text": "Second"},
        ],
    }
    assert text.text_signature == '{"v":1,"id":"msg_1","phase":"final_answer"}'
    body = loopback.requests[0].json
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["max_output_tokens"] == 128_000


async def test_reasoning_text_without_summary(loopback: LoopbackServer) -> None:
    item = {"type": "reasoning", "id": "rs_2", "summary": []}
    done = {**item, "content": [{"type": "reasoning_text", "text": "raw chain"}]}
    loopback.queue_sse(
        [
            ev("response.output_item.added", output_index=0, item=item),
            ev("response.reasoning_text.delta", output_index=0, content_index=0, delta="raw "),
            ev("response.reasoning_text.delta", output_index=0, content_index=0, delta="chain"),
            ev("response.output_item.done", output_index=0, item=done),
            completed(),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "done",
    ]
    assert msg.content[0].thinking == "raw chain"
    assert msg.usage.total_tokens == 0  # no usage reported: stays zero


async def test_tool_call_arguments_split_across_chunks(loopback: LoopbackServer) -> None:
    fragments = ['{"pa', 'th": "READ', 'ME.md", "li', 'nes": [1, 2', "]}"]
    # paced, so the consumer sees each state of the one mutable message before the next chunk
    loopback.queue_sse(
        paced([created(), *function_item(0, "call_1", "fc_1", "read", *fragments), completed()])
    )
    s = stream(make_model(loopback), ctx(), {"api_key": KEY})
    events: list[Any] = []
    partial_args: list[dict[str, Any]] = []
    async for e in s:
        events.append(e)
        if e.type == "toolcall_delta":
            partial_args.append(dict(e.partial.content[e.content_index].arguments))
    msg = await s.result()
    assert types(events) == ["start", "toolcall_start", *["toolcall_delta"] * 5, "toolcall_end", "done"]
    assert "".join(e.delta for e in events if e.type == "toolcall_delta") == "".join(fragments)
    assert partial_args[1] == {"path": "READ"}  # partial JSON is parsed while it streams
    assert partial_args[-1] == {"path": "README.md", "lines": [1, 2]}
    [call] = msg.content
    assert call.model_dump() == {
        "type": "toolCall",
        "id": "call_1|fc_1",
        "name": "read",
        "arguments": {"path": "README.md", "lines": [1, 2]},
    }
    assert events[-2].tool_call is call
    assert "partial" not in json.dumps(call.model_dump())  # scratch buffers never persist
    assert (msg.stop_reason, msg.raw_stop_reason) == ("toolUse", "completed")


async def test_several_tool_calls_after_text_and_arguments_done_suffix(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            created(),
            *message_item(0, "msg_1", "Reading both."),
            *function_item(1, "call_a", "fc_a", "read", '{"path":', '"a.txt"}'),
            # the done event carries more than the deltas did: the missing suffix is emitted as a delta
            *function_item(2, "call_b", "fc_b", "read", '{"path":"b', final='{"path":"b.txt"}'),
            completed(),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
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
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    assert [e.delta for e in events if e.type == "toolcall_delta"][2:] == ['{"path":"b', '.txt"}']
    assert [(b.id, b.arguments) for b in msg.content[1:]] == [
        ("call_a|fc_a", {"path": "a.txt"}),
        ("call_b|fc_b", {"path": "b.txt"}),
    ]
    assert [e.content_index for e in events if e.type == "toolcall_end"] == [1, 2]
    assert msg.stop_reason == "toolUse"


async def test_refusal_deltas_become_text(loopback: LoopbackServer) -> None:
    item = {"type": "message", "id": "msg_r", "role": "assistant", "content": []}
    loopback.queue_sse(
        [
            ev("response.output_item.added", output_index=0, item=item),
            ev("response.refusal.delta", output_index=0, content_index=0, delta="I can't"),
            ev(
                "response.output_item.done",
                output_index=0,
                item={**item, "content": [{"type": "refusal", "refusal": "I can't help."}]},
            ),
            completed(),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events) == ["start", "text_start", "text_delta", "text_end", "done"]
    assert msg.content[0].text == "I can't help."


async def test_azure_encrypted_reasoning_is_backfilled_from_the_completed_response(
    loopback: LoopbackServer,
) -> None:
    item = {"type": "reasoning", "id": "rs_az", "summary": []}
    loopback.queue_sse(
        [
            ev("response.output_item.added", output_index=0, item=item),
            ev("response.output_item.done", output_index=0, item=item),
            completed(output=[{**item, "encrypted_content": "AZURE=="}]),
        ]
    )
    _, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert json.loads(msg.content[0].thinking_signature)["encrypted_content"] == "AZURE=="


async def test_service_tier_pricing(loopback: LoopbackServer) -> None:
    usage = {"input_tokens": 1_000_000, "output_tokens": 0, "total_tokens": 1_000_000}
    loopback.queue_sse([completed(usage=usage, service_tier="flex")])
    _, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY, "service_tier": "flex"}))
    assert msg.usage.cost.input == pytest.approx(1.25 * 0.5)
    assert msg.usage.cost.total == pytest.approx(1.25 * 0.5)
    assert loopback.requests[0].json["service_tier"] == "flex"


# --- terminal events and statuses --------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "status", "reason"),
    [
        ("response.completed", "completed", "stop"),
        ("response.incomplete", "incomplete", "length"),
        ("response.completed", "in_progress", "stop"),
        ("response.completed", "queued", "stop"),
    ],
)
async def test_successful_statuses(loopback: LoopbackServer, kind: str, status: str, reason: str) -> None:
    loopback.queue_sse([*message_item(0, "msg_1", "ok"), completed(status, kind=kind)])
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events)[-1] == "done"
    assert events[-1].reason == reason
    assert (msg.stop_reason, msg.raw_stop_reason) == (reason, status)


async def test_incomplete_replaces_a_provisional_final_answer_stop(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        paced(
            [
                *message_item(0, "msg_p", "answer", phase="final_answer"),
                completed("incomplete", kind="response.incomplete"),
            ]
        )
    )
    s = stream(make_model(loopback), ctx(), {"api_key": KEY})
    seen = [e.partial.stop_reason async for e in s if e.type.startswith("text_")]
    msg = await s.result()
    assert seen == ["stop", "stop", "stop"]  # the final_answer phase sets stop provisionally, as in Pi
    assert msg.stop_reason == "length"


@pytest.mark.parametrize("status", ["cancelled", "failed"])
async def test_failing_status_in_a_completed_event(loopback: LoopbackServer, status: str) -> None:
    loopback.queue_sse([*message_item(0, "msg_1", "partial"), completed(status)])
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events)[-1] == "error"
    assert (msg.stop_reason, msg.raw_stop_reason, msg.error_message) == (
        "error",
        status,
        "An unknown error occurred",
    )
    assert msg.content[0].text == "partial"


@pytest.mark.parametrize(
    ("response", "message"),
    [
        ({"error": {"code": "server_error", "message": "boom"}}, "server_error: boom"),
        ({"error": {"code": None, "message": None}}, "unknown: no message"),
        ({"incomplete_details": {"reason": "max_output_tokens"}}, "incomplete: max_output_tokens"),
        ({}, "Unknown error (no error details in response)"),
    ],
)
async def test_response_failed(loopback: LoopbackServer, response: dict[str, Any], message: str) -> None:
    loopback.queue_sse([created(), completed("failed", kind="response.failed", **response)])
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events) == ["start", "error"]
    assert (msg.stop_reason, msg.raw_stop_reason, msg.error_message) == ("error", "failed", message)


async def test_error_event_inside_a_200_stream(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            *message_item(0, "msg_1", "so far"),
            ev(
                "error",
                code="rate_limit_exceeded",
                message="Rate limit reached",
                param=None,
                sequence_number=9,
            ),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events)[-1] == "error"
    assert events[-1].reason == "error"
    assert msg.error_message == "Error Code rate_limit_exceeded: Rate limit reached"
    assert msg.content[0].text == "so far"


async def test_error_object_inside_a_200_stream(loopback: LoopbackServer) -> None:
    loopback.queue_sse([sse({"error": {"message": "gateway hiccup", "type": "server_error"}})])
    _, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert msg.error_message == "gateway hiccup"


async def test_stream_ended_without_terminal_event(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            created(),
            ev(
                "response.output_item.added",
                output_index=0,
                item={"type": "reasoning", "id": "rs", "summary": []},
            ),
            ev("response.reasoning_text.delta", output_index=0, content_index=0, delta="partial reasoning"),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events) == ["start", "thinking_start", "thinking_delta", "error"]
    assert events[0].partial.stop_reason == "error"  # the same object, now final
    assert (msg.stop_reason, msg.error_message) == ("error", NO_TERMINAL_EVENT)
    assert msg.content[0].thinking == "partial reasoning"


async def test_malformed_chunk_is_an_error(loopback: LoopbackServer) -> None:
    loopback.queue_sse([*message_item(0, "msg_1", "fine"), b"event: response.completed\ndata: {not json\n\n"])
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events)[-1] == "error"
    assert msg.error_message
    assert msg.error_message.startswith("Could not parse OpenAI Responses SSE event")
    assert "{not json" in msg.error_message
    assert msg.content[0].text == "fine"


async def test_unknown_events_comments_and_crlf_are_tolerated(loopback: LoopbackServer) -> None:
    body = b"".join(
        [
            b": keep-alive\r\n\r\n",
            ev("response.in_progress", response={"id": "resp_1"}).replace(b"\n", b"\r\n"),
            *message_item(0, "msg_1", "ok"),
            ev("response.output_text.annotation.added", output_index=0, annotation={}),
            completed(),
        ]
    )
    loopback.queue_sse([body[:37], body[37:101], body[101:]])  # events split across chunks
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events) == ["start", "text_start", "text_delta", "text_end", "done"]
    assert msg.content[0].text == "ok"


def test_error_text_for_bodies_without_an_error_object() -> None:
    assert format_http_error(ProviderError(502, "502 Bad gateway", {}, "Bad gateway")) == (
        "OpenAI API error (502): 502 Bad gateway"
    )
    assert (
        format_http_error(ProviderError(500, "x", {}, ""))
        == "OpenAI API error (500): 500 status code (no body)"
    )
    assert format_http_error(ProviderError(400, "x", {}, '{"detail":"nope"}')) == (
        "OpenAI API error (400): 400 status code (no body)"
    )
    assert (
        format_http_error(ProviderError(400, "x", {}, '{"error":"flat"}'))
        == 'OpenAI API error (400): 400 "flat"'
    )
    assert format_http_error(ProviderError(None, "Connection error: refused")) == "Connection error: refused"


def test_short_hash_matches_pi() -> None:
    # vectors computed with Pi's TypeScript shortHash under node
    assert short_hash("") == "k4n83c7h0j2b"
    assert short_hash("abc") == "y0biex7f9bbh"
    assert short_hash("héllo😀") == "1olj6nu1frhbfw"


def test_options_dataclass_defaults() -> None:
    opts = OpenAIResponsesOptions(api_key="k", reasoning_effort="low")
    assert (opts.reasoning_summary, opts.service_tier, opts.tool_choice) == (None, None, None)
