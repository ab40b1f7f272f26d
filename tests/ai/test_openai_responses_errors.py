"""The ``openai-responses`` provider's failure paths against a real HTTP server on 127.0.0.1:
HTTP 4xx/5xx, retries with ``retry-after``, aborts before and during the stream, missing and
environment API keys (never echoed), options that cannot be used.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ai.stream_helpers import collect as run
from ai.stream_helpers import ctx
from ai.stream_helpers import kinds as types
from loopback import Delay, LoopbackServer, json_reply, sse

from pi_notebook.ai import AbortController, Model
from pi_notebook.ai import stream as entry_stream
from pi_notebook.ai.http import ProviderError
from pi_notebook.ai.providers.openai_responses import format_http_error, stream, stream_simple

KEY = "sk-proj-test-secret-key-0123456789"


def ev(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields}, event=kind)


def created() -> bytes:
    return ev("response.created", response={"id": "resp_1", "status": "in_progress"})


def message_item(index: int, item_id: str, text: str) -> list[bytes]:
    item = {"type": "message", "id": item_id, "role": "assistant", "content": []}
    done = {**item, "content": [{"type": "output_text", "text": text, "annotations": []}]}
    return [
        ev("response.output_item.added", output_index=index, item=item),
        ev("response.output_text.delta", output_index=index, content_index=0, delta=text),
        ev("response.output_item.done", output_index=index, item=done),
    ]


def completed() -> bytes:
    return ev("response.completed", response={"id": "resp_1", "status": "completed"})


def make_model(server: LoopbackServer, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "gpt-5-mini",
        "api": "openai-responses",
        "provider": "openai",
        "base_url": f"{server.url}/v1",
        "reasoning": True,
    }
    fields.update(overrides)
    return Model(**fields)


# --- HTTP errors and retries -------------------------------------------------------------


def openai_error(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> Any:
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return json_reply(status, body, headers)


@pytest.mark.parametrize(
    ("status", "kind", "text"),
    [
        (400, "invalid_request_error", "Invalid value for 'input'."),
        (401, "invalid_request_error", "Incorrect API key provided."),
        (429, "rate_limit_error", "Rate limit reached for requests"),
        (500, "server_error", "The server had an error while processing your request."),
        (503, "server_error", "The engine is currently overloaded."),
    ],
)
async def test_http_errors_end_in_a_single_error_event(
    loopback: LoopbackServer, status: int, kind: str, text: str
) -> None:
    loopback.queue(openai_error(status, text, kind, {"retry-after": "0"}))
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY}))
    assert types(events) == ["error"]  # no ``start``: headers never arrived with a 2xx
    assert (msg.stop_reason, msg.content) == ("error", [])
    error = {"message": text, "type": kind, "param": None, "code": None}
    assert msg.error_message == f"OpenAI API error ({status}): {json.dumps(error, separators=(',', ':'))}"
    assert KEY not in msg.model_dump_json()
    assert len(loopback.requests) == 1  # max_retries defaults to 0


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


@pytest.mark.parametrize(
    ("status", "headers"), [(429, {"retry-after": "0"}), (503, {"retry-after-ms": "10"})]
)
async def test_retryable_errors_are_retried_when_asked(
    loopback: LoopbackServer, status: int, headers: dict[str, str]
) -> None:
    loopback.queue(openai_error(status, "slow down", "rate_limit_error", headers))
    loopback.queue_sse([*message_item(0, "msg_1", "after retry"), completed()])
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY, "max_retries": 2}))
    assert types(events) == ["start", "text_start", "text_delta", "text_end", "done"]
    assert msg.content[0].text == "after retry"
    assert len(loopback.requests) == 2
    assert loopback.requests[0].json == loopback.requests[1].json


async def test_non_retryable_status_and_oversized_retry_after_are_not_retried(
    loopback: LoopbackServer,
) -> None:
    loopback.queue(openai_error(400, "bad", "invalid_request_error"))
    _, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY, "max_retries": 3}))
    assert msg.stop_reason == "error"
    assert len(loopback.requests) == 1
    loopback.queue(openai_error(429, "later", "rate_limit_error", {"retry-after": "120"}))
    opts = {"api_key": KEY, "max_retries": 3, "max_retry_delay_ms": 1000}
    _, msg = await run(stream(make_model(loopback), ctx(), opts))
    assert len(loopback.requests) == 2
    assert msg.error_message
    assert msg.error_message.startswith("Server requested 120s retry delay (max: 1s).")


# --- abort -------------------------------------------------------------------------------


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
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    loopback.queue_sse(
        [
            created(),
            ev("response.output_item.added", output_index=0, item=item),
            ev("response.output_text.delta", output_index=0, content_index=0, delta="Once upon"),
            Delay(3),
            ev("response.output_text.delta", output_index=0, content_index=0, delta=" a time"),
            completed(),
        ]
    )
    controller = AbortController()
    s = stream(make_model(loopback), ctx(), {"api_key": KEY, "signal": controller.signal})
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
    assert (msg.content[0].text, msg.response_id) == ("Once upon", "resp_1")


# --- API keys ----------------------------------------------------------------------------


async def test_missing_key_through_the_entry_point(
    monkeypatch: pytest.MonkeyPatch, loopback: LoopbackServer
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = make_model(loopback, base_url="https://api.openai.com/v1")
    events, msg = await run(entry_stream(model, ctx()))
    assert types(events) == ["error"]
    assert msg.stop_reason == "error"
    assert msg.error_message
    assert "OPENAI_API_KEY" in msg.error_message
    # called directly, the provider says the same instead of raising
    for fn in (stream, stream_simple):
        events, msg = await run(fn(model, ctx(), None))
        assert types(events) == ["error"]
        assert msg.error_message
        assert "OPENAI_API_KEY" in msg.error_message
    assert loopback.requests == []


async def test_env_key_is_sent_but_never_echoed(
    monkeypatch: pytest.MonkeyPatch, loopback: LoopbackServer
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    loopback.queue(
        openai_error(401, "Incorrect API key provided: sk-proj-****6789.", "invalid_request_error")
    )
    events, msg = await run(entry_stream(make_model(loopback), ctx()))
    assert loopback.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert msg.error_message
    assert "Incorrect API key provided" in msg.error_message
    assert all(KEY not in json.dumps(e.to_dict()) for e in events)


async def test_local_server_needs_no_key(loopback: LoopbackServer) -> None:
    loopback.queue_sse([*message_item(0, "m", "local"), completed()])
    _, msg = await run(stream(make_model(loopback, provider="vllm"), ctx(), None))
    assert msg.content[0].text == "local"
    assert "authorization" not in loopback.requests[0].headers


async def test_bad_options_never_raise(loopback: LoopbackServer) -> None:
    events, msg = await run(stream(make_model(loopback), ctx(), {"api_key": KEY, "no_such_option": 1}))
    assert types(events) == ["error"]
    assert msg.error_message
    assert "no_such_option" in msg.error_message
    events, msg = await run(stream_simple(make_model(loopback), ctx(), 42))
    assert types(events) == ["error"]
    assert loopback.requests == []
