"""The ``google-generative-ai`` provider against a real HTTP server on 127.0.0.1 speaking the
Gemini API's ``streamGenerateContent?alt=sse`` format: every ``data:`` is a whole
``GenerateContentResponse`` JSON, one chunk per event.

Ports Pi's google thinking-signature and raw-stop-reason tests, plus HTTP errors, retries,
dropped connections, aborts and API keys. The request body is in ``test_google_request.py``.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from ai.stream_helpers import collect as run
from ai.stream_helpers import ctx
from ai.stream_helpers import kinds as types
from loopback import DROP, Delay, LoopbackServer, json_reply, sse

from pi_notebook.ai import AbortController, Model, ModelCost
from pi_notebook.ai import stream as entry_stream
from pi_notebook.ai.providers.google import stream, stream_simple

KEY = "AIzaSy-test-secret-key-0123456789"
SIG1 = "c2lnLW9uZQ=="
SIG2 = "c2lnLXR3bw=="


def chunk(
    *parts: dict[str, Any],
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    response_id: str = "resp-g1",
) -> bytes:
    candidate: dict[str, Any] = {"index": 0}
    if parts:
        candidate["content"] = {"role": "model", "parts": list(parts)}
    if finish:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": "gemini-2.5-flash",
        "responseId": response_id,
    }
    if usage is not None:
        body["usageMetadata"] = usage
    return sse(body)


USAGE = {
    "promptTokenCount": 100,
    "cachedContentTokenCount": 40,
    "candidatesTokenCount": 20,
    "thoughtsTokenCount": 5,
    "totalTokenCount": 125,
}


def make_model(server: LoopbackServer, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "gemini-2.5-flash",
        "name": "Gemini 2.5 Flash",
        "api": "google-generative-ai",
        "provider": "google",
        "base_url": f"{server.url}/v1beta",
        "reasoning": True,
        "input": ["text", "image"],
        "cost": ModelCost(input=0.3, output=2.5, cache_read=0.075),
        "context_window": 1_048_576,
        "max_tokens": 65_536,
    }
    fields.update(overrides)
    return Model(**fields)


# --- streaming: text, thinking, tools --------------------------------------------------


async def test_text_stream_events_usage_and_request(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [chunk({"text": "Hel"}), chunk({"text": "lo"}), chunk({"text": ""}, finish="STOP", usage=USAGE)]
    )
    events, msg = await run(stream(make_model(loopback), ctx(system_prompt="Be brief."), {"api_key": KEY}))
    assert types(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert [e.delta for e in events if e.type == "text_delta"] == ["Hel", "lo", ""]
    assert all(e.partial is msg for e in events[:-1])
    assert events[-2].content == "Hello"
    assert events[-1].reason == "stop"
    assert [b.model_dump() for b in msg.content] == [{"type": "text", "text": "Hello"}]
    assert (msg.stop_reason, msg.raw_stop_reason, msg.response_id) == ("stop", "STOP", "resp-g1")
    assert (msg.api, msg.provider, msg.model) == ("google-generative-ai", "google", "gemini-2.5-flash")
    usage = msg.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (60, 25, 40, 0)
    assert (usage.reasoning, usage.total_tokens) == (5, 125)
    assert usage.cost.total == pytest.approx((60 * 0.3 + 25 * 2.5 + 40 * 0.075) / 1e6)

    [request] = loopback.requests
    assert (request.method, request.path) == (
        "POST",
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    )
    assert request.headers["x-goog-api-key"] == KEY
    assert KEY not in request.path  # never in the URL
    assert request.json == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}], "role": "user"},
        "generationConfig": {},  # the genai SDK always sends it
    }


async def test_thinking_then_text_with_signatures(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            chunk({"text": "Let me", "thought": True, "thoughtSignature": SIG1}),
            chunk({"text": " think", "thought": True}),  # later deltas may omit the signature
            chunk({"text": ".", "thought": True, "thoughtSignature": ""}),
            chunk({"text": "Answer", "thoughtSignature": SIG2}),  # a signature alone does not mean thinking
            chunk({"text": "!"}, finish="STOP"),
        ]
    )
    events, msg = await run(
        stream_simple(make_model(loopback), ctx(), {"api_key": KEY, "reasoning": "medium"})
    )
    assert types(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert events[5].content == "Let me think."
    assert events[9].content == "Answer!"
    assert [b.model_dump() for b in msg.content] == [
        {"type": "thinking", "thinking": "Let me think.", "thinkingSignature": SIG1},
        {"type": "text", "text": "Answer!", "textSignature": SIG2},
    ]
    body = loopback.requests[0].json
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 8192}


async def test_newer_signature_replaces_the_older_one(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            chunk({"text": "a", "thought": True, "thoughtSignature": SIG1}),
            chunk({"text": "b", "thought": True, "thoughtSignature": SIG2}),
            chunk(finish="STOP"),
        ]
    )
    _, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert msg.content[0].thinking_signature == SIG2


async def test_block_kind_changes_close_and_open_blocks(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            chunk({"text": "one"}, {"text": "two", "thought": True}),
            chunk({"text": "three"}, finish="STOP"),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_end",
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "done",
    ]
    assert [e.content_index for e in events if e.type.endswith("_end")] == [0, 1, 2]
    assert [b.type for b in msg.content] == ["text", "thinking", "text"]


async def test_function_calls_arrive_whole(loopback: LoopbackServer) -> None:
    loopback.queue_sse(
        [
            chunk({"text": "Reading."}),
            chunk(
                {
                    "functionCall": {"id": "fc-1", "name": "read", "args": {"path": "a.txt", "n": [1, 2]}},
                    "thoughtSignature": SIG1,
                }
            ),
            chunk(
                {"functionCall": {"name": "read", "args": {"path": "b.txt"}}},  # no id
                {"functionCall": {"id": "fc-1", "name": "grep"}},
            ),  # duplicate id, no args
            chunk(finish="STOP", usage=USAGE),
        ]
    )
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_end",
        *["toolcall_start", "toolcall_delta", "toolcall_end"] * 3,
        "done",
    ]
    assert [e.delta for e in events if e.type == "toolcall_delta"] == [
        '{"path":"a.txt","n":[1,2]}',
        '{"path":"b.txt"}',
        "{}",
    ]
    first, second, third = msg.content[1:]
    assert first.model_dump() == {
        "type": "toolCall",
        "id": "fc-1",
        "name": "read",
        "arguments": {"path": "a.txt", "n": [1, 2]},
        "thoughtSignature": SIG1,
    }
    assert re.fullmatch(r"read_\d+_\d+", second.id)
    assert re.fullmatch(r"grep_\d+_\d+", third.id)
    assert third.arguments == {}
    assert len({first.id, second.id, third.id}) == 3
    assert [e.tool_call for e in events if e.type == "toolcall_end"] == [first, second, third]
    assert (msg.stop_reason, msg.raw_stop_reason) == ("toolUse", "STOP")
    assert events[-1].reason == "toolUse"


# --- finish reasons ----------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "reason"), [("STOP", "stop"), ("MAX_TOKENS", "length")])
async def test_successful_finish_reasons(loopback: LoopbackServer, raw: str, reason: str) -> None:
    loopback.queue_sse([chunk({"text": "ok"}, finish=raw)])
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events)[-1] == "done"
    assert events[-1].reason == reason
    assert (msg.stop_reason, msg.raw_stop_reason) == (reason, raw)


@pytest.mark.parametrize(
    "raw",
    [
        "SAFETY",
        "RECITATION",
        "MALFORMED_FUNCTION_CALL",
        "PROHIBITED_CONTENT",
        "OTHER",
        "FINISH_REASON_UNSPECIFIED",
    ],
)
async def test_failing_finish_reasons(loopback: LoopbackServer, raw: str) -> None:
    loopback.queue_sse([chunk({"text": "partial"}), chunk(finish=raw, usage=USAGE)])
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events) == ["start", "text_start", "text_delta", "text_end", "error"]
    assert events[-1].reason == "error"
    assert (msg.stop_reason, msg.raw_stop_reason) == ("error", raw)
    assert msg.error_message == f"Provider stopped with: {raw}"
    assert msg.content[0].text == "partial"
    assert msg.usage.input == 60


async def test_unknown_finish_reason_ends_the_stream_at_once(loopback: LoopbackServer) -> None:
    # Pi's mapping throws on a value the SDK does not know, before that chunk's usage is read
    loopback.queue_sse([chunk({"text": "partial"}), chunk(finish="SOMETHING_NEW", usage=USAGE)])
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events) == ["start", "text_start", "text_delta", "error"]
    assert (msg.stop_reason, msg.raw_stop_reason) == ("error", "SOMETHING_NEW")
    assert msg.error_message == "Unhandled stop reason: SOMETHING_NEW"
    assert msg.usage.input == 0


async def test_stream_without_finish_reason(loopback: LoopbackServer) -> None:
    loopback.queue_sse([chunk({"text": "cut"})])
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events) == ["start", "text_start", "text_delta", "text_end", "error"]
    assert msg.error_message == "Google stream ended without a finish reason"


# --- failures ------------------------------------------------------------------------------


def google_error(status: int, code_name: str, message: str, headers: dict[str, str] | None = None) -> Any:
    return json_reply(status, {"error": {"code": status, "message": message, "status": code_name}}, headers)


@pytest.mark.parametrize(
    ("status", "code_name", "text"),
    [
        (400, "INVALID_ARGUMENT", "Request contains an invalid argument."),
        (401, "UNAUTHENTICATED", "API key not valid. Please pass a valid API key."),
        (429, "RESOURCE_EXHAUSTED", "You exceeded your current quota."),
        (500, "INTERNAL", "An internal error has occurred."),
        (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
    ],
)
async def test_http_errors_end_in_a_single_error_event(
    loopback: LoopbackServer, status: int, code_name: str, text: str
) -> None:
    loopback.queue(google_error(status, code_name, text, {"retry-after": "0"}))
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events) == ["error"]
    assert (msg.stop_reason, msg.content) == ("error", [])
    # the @google/genai SDK's message, which Pi shows: the JSON error body
    assert msg.error_message == json.dumps(
        {"error": {"code": status, "message": text, "status": code_name}}, separators=(",", ":")
    )
    assert KEY not in msg.model_dump_json()
    assert len(loopback.requests) == 1


async def test_non_json_error_body_is_wrapped(loopback: LoopbackServer) -> None:
    loopback.queue(json_reply(502, "upstream hiccup", {"content-type": "text/plain"}))
    _, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    # "status" is the response's own reason phrase (the loopback server sends "X"), as the SDK's
    assert msg.error_message == '{"error":{"message":"upstream hiccup","code":502,"status":"X"}}'


async def test_max_retries_is_ignored_like_pi(loopback: LoopbackServer) -> None:
    # Pi's Google provider has no HTTP-level retry: a 429 ends the stream even with max_retries.
    loopback.queue(google_error(429, "RESOURCE_EXHAUSTED", "slow down", {"retry-after": "0"}))
    loopback.queue_sse([chunk({"text": "after retry"}, finish="STOP")])
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY, "max_retries": 2}))
    assert types(events) == ["error"]
    assert msg.error_message is not None
    assert "RESOURCE_EXHAUSTED" in msg.error_message
    assert len(loopback.requests) == 1


async def test_error_chunk_inside_a_200_stream(loopback: LoopbackServer) -> None:
    error = {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
    loopback.queue_sse([chunk({"text": "so far"}), sse(error)])
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events)[-1] == "error"
    assert msg.error_message == f"got status: UNAVAILABLE. {json.dumps(error, separators=(',', ':'))}"
    assert msg.content[0].text == "so far"


async def test_bare_json_error_chunk_after_the_headers(loopback: LoopbackServer) -> None:
    # How an error reaches the genai SDK after a 200: a network chunk that is bare JSON, not SSE.
    error = {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
    loopback.queue_sse([chunk({"text": "so far"}), Delay(0.05), json.dumps(error).encode()])
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events)[-1] == "error"
    assert msg.error_message == f"got status: UNAVAILABLE. {json.dumps(error, separators=(',', ':'))}"
    assert msg.content[0].text == "so far"


async def test_connection_dropped_mid_stream_keeps_partial_content(loopback: LoopbackServer) -> None:
    loopback.queue_sse([chunk({"text": "Once upon"}), DROP])
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events) == ["start", "text_start", "text_delta", "error"]
    assert msg.error_message
    assert msg.error_message.startswith("Connection error")
    assert msg.content[0].text == "Once upon"


async def test_malformed_chunk_is_an_error(loopback: LoopbackServer) -> None:
    loopback.queue_sse([chunk({"text": "fine"}), b'data: {"candidates": [\n\n'])
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events) == ["start", "text_start", "text_delta", "error"]
    assert msg.error_message
    assert msg.error_message.startswith("Could not parse Gemini SSE chunk")


async def test_abort_before_the_request(loopback: LoopbackServer) -> None:
    controller = AbortController()
    controller.abort()
    events, msg = await run(
        stream(make_model(loopback), ctx(), {"api_key": KEY, "signal": controller.signal})
    )
    assert types(events) == ["error"]
    assert (events[0].reason, msg.stop_reason, msg.error_message) == (
        "aborted",
        "aborted",
        "Request was aborted",
    )
    assert loopback.requests == []


async def test_abort_mid_stream_keeps_partial_content(loopback: LoopbackServer) -> None:
    loopback.queue_sse([chunk({"text": "Once upon"}), Delay(3), chunk({"text": " a time"}, finish="STOP")])
    controller = AbortController()
    s = stream(make_model(loopback), ctx(), {"api_key": KEY, "signal": controller.signal})
    events: list[Any] = []
    started = asyncio.get_running_loop().time()
    async for e in s:
        events.append(e)
        if e.type == "text_delta":
            controller.abort()
    msg = await s.result()
    assert asyncio.get_running_loop().time() - started < 2
    assert types(events) == ["start", "text_start", "text_delta", "error"]
    assert (events[-1].reason, msg.stop_reason, msg.error_message) == (
        "aborted",
        "aborted",
        "Request was aborted",
    )
    assert msg.content[0].text == "Once upon"


# --- API keys ----------------------------------------------------------------------------


async def test_missing_key_through_the_entry_point(
    monkeypatch: pytest.MonkeyPatch, loopback: LoopbackServer
) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    model = make_model(loopback, base_url="https://generativelanguage.googleapis.com/v1beta")
    events, msg = await run(entry_stream(model, ctx()))
    assert types(events) == ["error"]
    assert msg.error_message
    assert "GEMINI_API_KEY" in msg.error_message
    for fn in (stream, stream_simple):
        events, msg = await run(fn(model, ctx(), None))
        assert types(events) == ["error"]
        assert msg.error_message
        assert "GEMINI_API_KEY" in msg.error_message
    assert loopback.requests == []


async def test_env_key_is_sent_in_a_header_and_never_echoed(
    monkeypatch: pytest.MonkeyPatch, loopback: LoopbackServer
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    loopback.queue(google_error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."))
    events, msg = await run(entry_stream(make_model(loopback), ctx()))
    request = loopback.requests[0]
    assert request.headers["x-goog-api-key"] == KEY
    assert KEY not in request.path
    assert msg.error_message
    assert "API key not valid" in msg.error_message
    assert all(KEY not in json.dumps(e.to_dict()) for e in events)


async def test_local_server_needs_no_key(loopback: LoopbackServer) -> None:
    loopback.queue_sse([chunk({"text": "local"}, finish="STOP")])
    _, msg = await run(stream(make_model(loopback, provider="local-gemma"), ctx(), None))
    assert msg.content[0].text == "local"
    assert "x-goog-api-key" not in loopback.requests[0].headers


async def test_bad_options_never_raise(loopback: LoopbackServer) -> None:
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY, "bogus": True}))
    assert types(events) == ["error"]
    assert msg.error_message
    assert "bogus" in msg.error_message
    events, _ = await run(stream_simple(make_model(loopback), ctx(), object()))
    assert types(events) == ["error"]
    assert loopback.requests == []
