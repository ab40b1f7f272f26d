"""The contract every wire-API provider keeps, checked for all four against a real HTTP server on
127.0.0.1 that speaks each API's own wire format (its error bodies, its SSE events):

* an HTTP error ends the stream with a single ``error`` event carrying the API's error text;
  retryable statuses are retried only when ``max_retries`` allows, and a server that asks for
  a longer wait than ``max_retry_delay_ms`` fails at once;
* a dropped connection or an abort keeps the content that arrived; an abort before the request
  sends nothing;
* a missing API key is an ``error`` event naming the variable to set, before any request; a key
  from the environment is sent in the API's header and never appears in an event, not even when
  the server echoes it back in an error; local servers need no key;
* options or a context that cannot be used are an ``error`` event too: streams never raise.

What is particular to one API (its event shapes, errors inside a 200 stream, request bodies)
stays in that API's own test module.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from ai import anthropic_fixtures as anthropic
from ai import google_fixtures as google
from ai import openai_fixtures as completions
from ai import openai_responses_fixtures as responses
from ai.stream_helpers import collect, ctx, kinds
from loopback import DROP, Delay, LoopbackServer, Reply, json_reply

from pi_notebook.ai import AbortController, Model
from pi_notebook.ai import stream as entry_stream
from pi_notebook.ai.providers import anthropic_messages, openai_completions, openai_responses
from pi_notebook.ai.providers import google as google_provider
from pi_notebook.ai.registry import StreamFunction

KEY = "test-secret-key-0123456789-not-real"
# Not a local address (so a key is required) and never resolvable (so nothing leaves the machine).
CLOUD_URL = "https://api.example.invalid/v1"
MESSAGES = {
    400: "Invalid value for 'input'.",
    401: "Incorrect API key provided.",
    429: "Rate limit reached for requests",
    500: "The server had an error while processing your request.",
    503: "The engine is currently overloaded.",
    529: "Overloaded",
}


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Wire:
    """One API as the contract tests drive it."""

    api: str
    stream: StreamFunction
    stream_simple: StreamFunction
    make_model: Callable[..., Model]
    error_body: Callable[[int, str], dict[str, Any]]
    """The API's JSON body for an HTTP error."""
    error_text: Callable[[int, str], str]
    """The ``error_message`` the provider makes of that body (Pi's text for this API)."""
    reply: Callable[[str], list[Any]]
    """A complete answer holding one text block."""
    partial: Callable[[str], list[Any]]
    """The start of an answer: a text block opened and one delta, nothing after it."""
    key_header: tuple[str, str]
    """Where the API key goes: header name and value template."""
    key_env: tuple[str, ...]
    """The environment variables the provider's key is read from, in the order it tries them."""
    env_var: str
    """The one of them a user sets for an API key."""
    local_provider: str
    partial_input_tokens: int | None = None
    """Input tokens the partial answer already reported, which must survive a failure."""
    http_retries: bool = True
    """Whether ``max_retries`` retries HTTP errors (Pi's Google provider ignores it)."""

    def error_reply(self, status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
        return json_reply(status, self.error_body(status, message), headers)


def _openai_error(status: int, message: str) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 401: "invalid_request_error", 429: "rate_limit_error"}
    error = {"message": message, "type": kind.get(status, "server_error"), "param": None, "code": None}
    return {"error": error}


def _anthropic_error(status: int, message: str) -> dict[str, Any]:
    kinds_by_status = {
        400: "invalid_request_error",
        401: "authentication_error",
        429: "rate_limit_error",
        500: "api_error",
    }
    error = {"type": kinds_by_status.get(status, "overloaded_error"), "message": message}
    return {"type": "error", "error": error}


def _google_error(status: int, message: str) -> dict[str, Any]:
    codes = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL"}
    return {"error": {"code": status, "message": message, "status": codes.get(status, "UNAVAILABLE")}}


def _responses_partial(text: str) -> list[Any]:
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    return [
        responses.created(),
        responses.ev("response.output_item.added", output_index=0, item=item),
        responses.ev("response.output_text.delta", output_index=0, content_index=0, delta=text),
    ]


WIRES = [
    Wire(
        api="openai-completions",
        stream=openai_completions.stream,
        stream_simple=openai_completions.stream_simple,
        make_model=completions.make_model,
        error_body=_openai_error,
        # the OpenAI SDK's wording, which Pi keeps: "<status>: <the error object as JSON>"
        error_text=lambda status, m: f"{status}: {_compact(_openai_error(status, m)['error'])}",
        reply=lambda text: completions.text_reply(text),
        partial=lambda text: [completions.chunk({"role": "assistant", "content": text})],
        key_header=("authorization", "Bearer {key}"),
        key_env=("OPENAI_API_KEY",),
        env_var="OPENAI_API_KEY",
        local_provider="ollama",
    ),
    Wire(
        api="openai-responses",
        stream=openai_responses.stream,
        stream_simple=openai_responses.stream_simple,
        make_model=responses.make_model,
        error_body=_openai_error,
        error_text=lambda status, m: (
            f"OpenAI API error ({status}): {_compact(_openai_error(status, m)['error'])}"
        ),
        reply=lambda text: [*responses.message_item(0, "msg_1", text), responses.completed()],
        partial=_responses_partial,
        key_header=("authorization", "Bearer {key}"),
        key_env=("OPENAI_API_KEY",),
        env_var="OPENAI_API_KEY",
        local_provider="vllm",
    ),
    Wire(
        api="anthropic-messages",
        stream=anthropic_messages.stream,
        stream_simple=anthropic_messages.stream_simple,
        make_model=anthropic.make_model,
        error_body=_anthropic_error,
        # the Anthropic SDK's wording, which Pi keeps: "<status> <the whole JSON body>"
        error_text=lambda status, m: f"{status} {_compact(_anthropic_error(status, m))}",
        reply=lambda text: [
            anthropic.message_start(),
            *anthropic.text_block(0, text),
            *anthropic.message_end(),
        ],
        partial=lambda text: [
            anthropic.message_start(55),
            anthropic.block_start(0, {"type": "text", "text": ""}),
            anthropic.delta(0, type="text_delta", text=text),
        ],
        key_header=("x-api-key", "{key}"),
        key_env=("ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"),
        env_var="ANTHROPIC_API_KEY",
        local_provider="llama.cpp",
        partial_input_tokens=55,
    ),
    Wire(
        api="google-generative-ai",
        stream=google_provider.stream,
        stream_simple=google_provider.stream_simple,
        make_model=google.make_model,
        error_body=_google_error,
        error_text=lambda status, m: _compact(_google_error(status, m)),
        reply=lambda text: [google.chunk({"text": text}, finish="STOP")],
        partial=lambda text: [google.chunk({"text": text})],
        key_header=("x-goog-api-key", "{key}"),
        key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        env_var="GEMINI_API_KEY",
        local_provider="local-gemma",
        http_retries=False,
    ),
]


@pytest.fixture(params=WIRES, ids=[w.api for w in WIRES])
def wire(request: pytest.FixtureRequest) -> Wire:
    return request.param  # type: ignore[no-any-return]


def _options(**extra: Any) -> dict[str, Any]:
    return {"api_key": KEY, **extra}


# --- HTTP errors and retries -------------------------------------------------------------


@pytest.mark.parametrize("status", sorted(MESSAGES))
async def test_http_errors_end_in_a_single_error_event(
    wire: Wire, loopback: LoopbackServer, status: int
) -> None:
    loopback.queue(wire.error_reply(status, MESSAGES[status], {"retry-after": "0"}))
    events, msg = await collect(wire.stream(wire.make_model(loopback), ctx(), _options()))
    assert kinds(events) == ["error"]  # no ``start``: the headers never came with a 2xx
    assert (events[0].reason, msg.stop_reason, msg.content) == ("error", "error", [])
    assert msg.error_message == wire.error_text(status, MESSAGES[status])
    assert KEY not in msg.model_dump_json()
    assert len(loopback.requests) == 1  # max_retries defaults to 0


@pytest.mark.parametrize(
    ("status", "headers"), [(429, {"retry-after": "0"}), (503, {"retry-after-ms": "10"})]
)
async def test_retryable_errors_are_retried_when_asked(
    wire: Wire, loopback: LoopbackServer, status: int, headers: dict[str, str]
) -> None:
    loopback.queue(wire.error_reply(status, "slow down", headers))
    loopback.queue_sse(wire.reply("after retry"))
    events, msg = await collect(wire.stream(wire.make_model(loopback), ctx(), _options(max_retries=2)))
    if not wire.http_retries:  # the first error ends the stream, as in Pi
        assert kinds(events) == ["error"]
        assert msg.error_message == wire.error_text(status, "slow down")
        assert len(loopback.requests) == 1
        return
    assert kinds(events) == ["start", "text_start", "text_delta", "text_end", "done"]
    assert msg.content[0].text == "after retry"  # type: ignore[union-attr]
    assert len(loopback.requests) == 2
    assert loopback.requests[0].json == loopback.requests[1].json


async def test_a_non_retryable_status_is_not_retried(wire: Wire, loopback: LoopbackServer) -> None:
    loopback.queue(wire.error_reply(400, "bad"))
    _, msg = await collect(wire.stream(wire.make_model(loopback), ctx(), _options(max_retries=3)))
    assert (msg.stop_reason, msg.error_message) == ("error", wire.error_text(400, "bad"))
    assert len(loopback.requests) == 1


async def test_a_retry_delay_above_the_cap_fails_at_once(wire: Wire, loopback: LoopbackServer) -> None:
    loopback.queue(wire.error_reply(429, "later", {"retry-after": "120"}))
    options = _options(max_retries=3, max_retry_delay_ms=1000)
    events, msg = await collect(wire.stream(wire.make_model(loopback), ctx(), options))
    assert kinds(events) == ["error"]
    if not wire.http_retries:  # no retry, so no delay to refuse: the error as it came
        assert msg.error_message == wire.error_text(429, "later")
    else:
        assert (msg.error_message or "").startswith("Server requested 120s retry delay (max: 1s).")
    assert len(loopback.requests) == 1


# --- broken connections and aborts -------------------------------------------------------


async def test_a_dropped_connection_keeps_the_partial_content(wire: Wire, loopback: LoopbackServer) -> None:
    loopback.queue_sse([*wire.partial("Half a sen"), DROP])
    events, msg = await collect(wire.stream(wire.make_model(loopback), ctx(), _options()))
    assert kinds(events) == ["start", "text_start", "text_delta", "error"]
    assert (events[-1].reason, msg.stop_reason) == ("error", "error")
    assert (msg.error_message or "").startswith("Connection error")
    assert msg.content[0].text == "Half a sen"  # type: ignore[union-attr]
    if wire.partial_input_tokens is not None:
        assert msg.usage.input == wire.partial_input_tokens


async def test_a_silent_server_times_out_with_the_seconds_it_waited(
    wire: Wire, loopback: LoopbackServer
) -> None:
    """``timeout_ms`` bounds the wait for the headers: the error says how long, not just the
    exception's name, and reads as Pi's timeouts do ("Request timed out")."""
    loopback.queue(Reply(head_delay=3.0, parts=wire.reply("too late")))
    events, msg = await collect(wire.stream(wire.make_model(loopback), ctx(), _options(timeout_ms=250)))
    assert kinds(events) == ["error"]
    assert msg.error_message == "Request timed out: no answer from the server in 0.25 s (ReadTimeout)"


async def test_a_stream_that_stalls_times_out_and_keeps_the_partial_content(
    wire: Wire, loopback: LoopbackServer
) -> None:
    """The timeout is an idle timeout: it fires when the answer stops coming, mid-stream too."""
    loopback.queue_sse([*wire.partial("Half a sen"), Delay(3)])
    events, msg = await collect(wire.stream(wire.make_model(loopback), ctx(), _options(timeout_ms=250)))
    assert kinds(events) == ["start", "text_start", "text_delta", "error"]
    assert msg.error_message == (
        "Request timed out: the answer stalled, nothing more from the server in 0.25 s (ReadTimeout)"
    )
    assert msg.content[0].text == "Half a sen"  # type: ignore[union-attr]


async def test_an_abort_before_the_request_sends_nothing(wire: Wire, loopback: LoopbackServer) -> None:
    controller = AbortController()
    controller.abort()
    events, msg = await collect(
        wire.stream(wire.make_model(loopback), ctx(), _options(signal=controller.signal))
    )
    assert kinds(events) == ["error"]
    assert (events[0].reason, msg.stop_reason, msg.error_message) == (
        "aborted",
        "aborted",
        "Request was aborted",
    )
    assert loopback.requests == []


async def test_an_abort_mid_stream_keeps_the_partial_content(wire: Wire, loopback: LoopbackServer) -> None:
    loopback.queue_sse([*wire.partial("Once upon"), Delay(3)])
    controller = AbortController()
    s = wire.stream(wire.make_model(loopback), ctx(), _options(signal=controller.signal))
    events: list[Any] = []
    started = asyncio.get_running_loop().time()
    async for event in s:
        events.append(event)
        if event.type == "text_delta":
            controller.abort()
    msg = await s.result()
    assert asyncio.get_running_loop().time() - started < 2  # did not wait for the server
    assert kinds(events) == ["start", "text_start", "text_delta", "error"]
    assert (events[-1].reason, msg.stop_reason, msg.error_message) == (
        "aborted",
        "aborted",
        "Request was aborted",
    )
    assert msg.content[0].text == "Once upon"  # type: ignore[union-attr]
    if wire.partial_input_tokens is not None:
        assert msg.usage.input == wire.partial_input_tokens


# --- API keys ----------------------------------------------------------------------------


async def test_a_missing_key_names_the_variable_before_any_request(
    wire: Wire, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in wire.key_env:
        monkeypatch.delenv(name, raising=False)
    model = wire.make_model(loopback, base_url=CLOUD_URL)
    attempts = {
        "entry point": entry_stream(model, ctx()),
        "stream": wire.stream(model, ctx(), None),
        "stream_simple": wire.stream_simple(model, ctx(), {"reasoning": "high"}),
    }
    for how, s in attempts.items():
        events, msg = await collect(s)
        assert kinds(events) == ["error"], how
        assert msg.error_message == (
            f"No API key for provider: {model.provider}. Set {' or '.join(wire.key_env)} or pass api_key."
        ), how


async def test_an_env_key_is_sent_in_the_api_header_and_never_echoed(
    wire: Wire, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in wire.key_env:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(wire.env_var, KEY)
    message = f"Incorrect API key provided: {KEY[:3]}****{KEY[-4:]}."
    loopback.queue(wire.error_reply(401, message))
    events, msg = await collect(entry_stream(wire.make_model(loopback), ctx()))
    [request] = loopback.requests
    name, template = wire.key_header
    assert request.headers[name] == template.format(key=KEY)
    assert KEY not in request.path
    assert msg.error_message == wire.error_text(401, message)
    assert all(KEY not in json.dumps(e.to_dict()) for e in events)


async def test_a_key_echoed_back_in_an_error_is_redacted(wire: Wire, loopback: LoopbackServer) -> None:
    loopback.queue(wire.error_reply(401, f"Incorrect API key provided: {KEY}."))
    events, msg = await collect(wire.stream(wire.make_model(loopback), ctx(), _options()))
    assert kinds(events) == ["error"]
    assert msg.error_message == wire.error_text(401, "Incorrect API key provided: [redacted].")
    assert all(KEY not in json.dumps(e.to_dict()) for e in events)


async def test_a_local_server_needs_no_key(
    wire: Wire, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in wire.key_env:
        monkeypatch.delenv(name, raising=False)
    loopback.queue_sse(wire.reply("local"))
    _, msg = await collect(wire.stream(wire.make_model(loopback, provider=wire.local_provider), ctx(), None))
    assert (msg.stop_reason, msg.content[0].text) == ("stop", "local")  # type: ignore[union-attr]
    assert wire.key_header[0] not in loopback.requests[0].headers


# --- options and context that cannot be used ----------------------------------------------


async def test_unusable_options_and_context_are_an_error_event(wire: Wire, loopback: LoopbackServer) -> None:
    model = wire.make_model(loopback)
    attempts: list[tuple[Any, str]] = [
        (wire.stream(model, ctx(), _options(no_such_option=1)), "no_such_option"),
        (wire.stream(model, ctx(), 42), "options must be"),
        (wire.stream_simple(model, ctx(), {"api_key": KEY, "bogus": True}), "bogus"),
        (wire.stream_simple(model, ctx(), object()), "options must be"),
        (wire.stream(model, {"messages": "not a list"}, _options()), "messages"),  # type: ignore[arg-type]
        (wire.stream_simple(model, {"messages": [{"role": "nobody"}]}, _options()), "messages"),  # type: ignore[arg-type]
    ]
    for s, needle in attempts:
        events, msg = await collect(s)
        assert kinds(events) == ["error"], needle
        assert (events[0].reason, msg.content) == ("error", [])
        assert needle in (msg.error_message or ""), msg.error_message
    assert loopback.requests == []
