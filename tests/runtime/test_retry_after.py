"""A 429 with ``Retry-After: 1`` waits at least a second before the next request, whichever
layer retries it and whichever wire API carried it: the session's auto-retry (the backoff is
10 ms here, so only the server's wait can make it a second), the HTTP layer's own retries
(``max_retries`` in the stream options) and a summary's ``retry_assistant_call``. Over real HTTP
(the loopback server), timed by the server's own receive times."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic_fixtures as anthropic
import google_fixtures as google
import openai_fixtures as openai
import openai_responses_fixtures as responses
import pytest
from loopback import LoopbackServer, json_reply

from pi_notebook import AgentSession
from pi_notebook.ai import stream_simple
from pi_notebook.ai.retry import RetryPolicy, retry_assistant_call
from pi_notebook.ai.types import Context, Model, UserMessage
from pi_notebook.runtime import AgentSessionSettings, RetrySettings
from pi_notebook.session import SessionManager

LIMITED = {"error": {"message": "Rate limit reached for requests", "type": "rate_limit_error"}}


def _anthropic(text: str) -> list[Any]:
    return [anthropic.message_start(), *anthropic.text_block(0, text), *anthropic.message_end()]


def _google(text: str) -> list[Any]:
    return [google.chunk({"text": text}, finish="STOP", usage=google.USAGE)]


def _responses(text: str) -> list[Any]:
    return [
        responses.created(),
        *responses.message_item(0, "msg_1", text),
        responses.completed(usage=responses.USAGE),
    ]


WIRES: dict[str, tuple[Callable[..., Model], str, Callable[[str], list[Any]]]] = {
    "openai-completions": (openai.make_model, openai.KEY, lambda text: openai.text_reply(text)),
    "openai-responses": (responses.make_model, responses.KEY, _responses),
    "anthropic-messages": (anthropic.make_model, anthropic.KEY, _anthropic),
    "google-generative-ai": (google.make_model, google.KEY, _google),
}


def session_for(tmp_path: Path, model: Model, key: str) -> AgentSession:
    """A session whose backoff (10 ms) is far below the server's wait."""
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    settings = AgentSessionSettings(retry=RetrySettings(base_delay_ms=10))
    session = AgentSession.create(cwd=str(tmp_path), model=model, session_manager=manager, settings=settings)
    session.agent.get_api_key = lambda provider: key
    return session


def waited(server: LoopbackServer) -> float:
    first, second = server.requests
    return second.at - first.at


@pytest.mark.parametrize("api", list(WIRES))
async def test_the_session_waits_what_the_server_asked(
    loopback: LoopbackServer, tmp_path: Path, api: str
) -> None:
    make_model, key, reply = WIRES[api]
    loopback.queue(json_reply(429, LIMITED, {"retry-after": "1"}))
    loopback.queue_sse(reply("hello"))
    session = session_for(tmp_path, make_model(loopback), key)
    delays: list[int] = []
    session.subscribe(lambda e: delays.append(e.to_dict()["delayMs"]), {"auto_retry_start"})
    await session.prompt("hi")
    assert delays == [1000]
    assert session.messages[-1].content[0].text == "hello"  # type: ignore[union-attr]
    assert waited(loopback) >= 1.0


@pytest.mark.parametrize(
    "api", [a for a in WIRES if a != "google-generative-ai"]
)  # Pi: Gemini never retries here
async def test_the_http_layer_waits_what_the_server_asked(loopback: LoopbackServer, api: str) -> None:
    make_model, key, reply = WIRES[api]
    loopback.queue(json_reply(429, LIMITED, {"retry-after": "1"}))
    loopback.queue_sse(reply("hello"))
    context = Context(messages=[UserMessage(content="hi")])
    answer = await stream_simple(make_model(loopback), context, {"api_key": key, "max_retries": 1}).result()
    assert answer.stop_reason == "stop", answer.error_message
    assert waited(loopback) >= 1.0


async def test_a_summary_retry_waits_what_the_server_asked(loopback: LoopbackServer) -> None:
    """``retry_assistant_call`` (compaction and branch summaries) reads the failed answer's
    ``failure`` record as the session does."""
    loopback.queue(json_reply(429, LIMITED, {"retry-after": "1"}))
    loopback.queue_sse(openai.text_reply("summary"))
    model = openai.make_model(loopback)
    context = Context(messages=[UserMessage(content="hi")])
    delays: list[int] = []

    async def produce() -> Any:
        return await stream_simple(model, context, {"api_key": openai.KEY}).result()

    answer = await retry_assistant_call(
        produce,
        RetryPolicy(base_delay_ms=10),
        callbacks={"on_retry_scheduled": lambda attempt, most, delay, error: delays.append(delay)},
    )
    assert answer.stop_reason == "stop", answer.error_message
    assert delays == [1000]
    assert waited(loopback) >= 1.0


async def test_gemini_s_retry_info_in_the_body_is_the_server_s_wait(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """Gemini sends no ``Retry-After`` header: its 429 says ``retryDelay`` in a ``RetryInfo``."""
    exhausted = {
        "error": {
            "code": 429,
            "message": "Too many requests, please retry later.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}],
        }
    }
    loopback.queue(json_reply(429, exhausted))
    loopback.queue_sse(_google("hello"))
    session = session_for(tmp_path, google.make_model(loopback), google.KEY)
    await session.prompt("hi")
    assert session.messages[-1].content[0].text == "hello"  # type: ignore[union-attr]
    assert waited(loopback) >= 1.0
