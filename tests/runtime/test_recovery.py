"""The two recoveries an ``AgentSession`` makes on its own, over real HTTP where the wire
matters: auto-retry that honours the server's ``Retry-After``, and compaction on a context
overflow (compact once, retry the turn, give up on a second overflow). Plus the failure
records (``AssistantMessage.failure``) the retry reads."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from loopback import LoopbackServer, json_reply
from openai_fixtures import KEY, make_model, text_reply

from pi_notebook import AgentSession
from pi_notebook.ai import stream_simple
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_text
from pi_notebook.ai.types import Context, UserMessage
from pi_notebook.runtime import AgentSessionSettings, RetrySettings
from pi_notebook.runtime.compaction import OVERFLOW_GAVE_UP
from pi_notebook.session import CompactionSettings, SessionManager

OVERFLOW = "prompt is too long: 213462 tokens > 200000 maximum"


def session_for(tmp_path: Path, model: Any, settings: AgentSessionSettings) -> AgentSession:
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    session = AgentSession.create(cwd=str(tmp_path), model=model, session_manager=manager, settings=settings)
    session.agent.get_api_key = lambda provider: KEY
    return session


def record(session: AgentSession, *types: str) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    session.subscribe(lambda e: seen.append(e.to_dict()), set(types))
    return seen


async def test_retry_after_longer_than_the_backoff_is_honoured(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    limited = {"error": {"message": "Rate limit reached", "type": "rate_limit"}}
    loopback.queue(json_reply(429, limited, {"retry-after": "0.4"}))
    loopback.queue_sse(text_reply("hel", "lo"))
    settings = AgentSessionSettings(retry=RetrySettings(base_delay_ms=10))
    session = session_for(tmp_path, make_model(loopback), settings)
    events = record(session, "auto_retry_start", "auto_retry_end")
    started = time.monotonic()
    await session.prompt("hi")
    waited = time.monotonic() - started
    assert events[0]["delayMs"] == 400  # the server's 0.4 s, not the 10 ms backoff
    assert events[1] == {"type": "auto_retry_end", "success": True, "attempt": 1}
    assert waited >= 0.4
    assert session.messages[-1].content[0].text == "hello"  # type: ignore[union-attr]


async def test_a_server_asking_for_minutes_is_not_retried(loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.queue(json_reply(429, {"error": {"message": "Rate limit reached"}}, {"retry-after": "600"}))
    session = session_for(tmp_path, make_model(loopback), AgentSessionSettings())
    events = record(session, "agent_end", "auto_retry_start")
    await session.prompt("hi")
    assert [e["type"] for e in events] == ["agent_end"]
    assert events[0]["willRetry"] is False
    assert session.messages[-1].failure.retry_after_s == 600  # type: ignore[union-attr]


async def test_failures_are_recorded_by_kind(loopback: LoopbackServer) -> None:
    loopback.queue(json_reply(503, {"error": {"message": "busy"}}, {"retry-after-ms": "1500"}))
    model = make_model(loopback)
    context = Context(messages=[UserMessage(content="hi")])
    http = await stream_simple(model, context, {"api_key": KEY}).result()
    assert http.failure is not None
    assert (http.failure.kind, http.failure.status, http.failure.retry_after_s) == ("http", 503, 1.5)
    assert http.failure.url == f"{loopback.url}/v1/chat/completions"
    assert "failure" not in http.model_dump()
    assert "_failure" not in http.model_dump_json()
    await loopback.stop()
    refused = await stream_simple(model, context, {"api_key": KEY}).result()
    assert refused.failure is not None
    assert refused.failure.to_dict() == {"kind": "connect", "url": f"{loopback.url}/v1/chat/completions"}


def overflow(text: str = OVERFLOW) -> Any:
    return faux_assistant_message([], stop_reason="error", error_message=text)


def compacting(faux: FauxRegistration, tmp_path: Path) -> AgentSession:
    settings = AgentSessionSettings(compaction=CompactionSettings(reserve_tokens=100, keep_recent_tokens=10))
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    return AgentSession.create(
        cwd=str(tmp_path), model=faux.get_model(), session_manager=manager, settings=settings
    )


async def test_an_overflow_compacts_and_retries_the_turn_once(faux: FauxRegistration, tmp_path: Path) -> None:
    faux.set_responses(
        [
            faux_assistant_message([faux_text("first answer " * 20)]),
            overflow(),
            faux_assistant_message([faux_text("the summary")]),
            faux_assistant_message([faux_text("answered after compaction")]),
        ]
    )
    session = compacting(faux, tmp_path)
    await session.prompt("first question " * 20)
    events = record(session, "compaction_start", "compaction_end", "agent_end", "auto_retry_start")
    await session.prompt("second question")
    assert [(e["type"], e.get("reason"), e.get("willRetry")) for e in events] == [
        ("agent_end", None, False),
        ("compaction_start", "overflow", None),
        ("compaction_end", "overflow", True),
        ("agent_end", None, False),
    ]
    assert session.messages[-1].content[0].text == "answered after compaction"  # type: ignore[union-attr]
    assert not any(getattr(m, "stop_reason", None) == "error" for m in session.messages)


async def later_overflow(*_: Any) -> Any:
    """An overflow made when asked, a few ms after the compaction entry: Pi skips an answer whose
    timestamp is not newer than the latest compaction (a scripted one would predate it)."""
    await asyncio.sleep(0.005)
    return overflow()


async def test_a_second_overflow_in_a_row_gives_up(faux: FauxRegistration, tmp_path: Path) -> None:
    faux.set_responses(
        [
            faux_assistant_message([faux_text("first answer " * 20)]),
            overflow(),
            faux_assistant_message([faux_text("the summary")]),
            later_overflow,
        ]
    )
    session = compacting(faux, tmp_path)
    await session.prompt("first question " * 20)
    events = record(session, "compaction_end")
    await session.prompt("second question")
    assert [e.get("errorMessage") for e in events] == [None, OVERFLOW_GAVE_UP]
    assert session.messages[-1].stop_reason == "error"  # type: ignore[union-attr]


async def test_a_summary_request_is_retried_under_the_retry_settings(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    faux.set_responses(
        [
            faux_assistant_message([faux_text("first answer " * 20)]),
            overflow("503 Service Unavailable"),  # the summary request fails once, transiently
            faux_assistant_message([faux_text("the summary")]),
        ]
    )
    session = compacting(faux, tmp_path)
    session.settings = AgentSessionSettings(
        retry=RetrySettings(base_delay_ms=1), compaction=session.settings.compaction
    )
    await session.prompt("first question " * 20)
    events = record(
        session,
        "compaction_end",
        "summarization_retry_scheduled",
        "summarization_retry_attempt_start",
        "summarization_retry_finished",
    )
    await session.compact()
    assert [e["type"] for e in events] == [
        "summarization_retry_scheduled",
        "summarization_retry_attempt_start",
        "summarization_retry_finished",
        "compaction_end",
    ]
    assert events[0] == {
        "type": "summarization_retry_scheduled",
        "attempt": 1,
        "maxAttempts": 3,
        "delayMs": 1,
        "errorMessage": "503 Service Unavailable",
    }
    assert events[1] == {
        "type": "summarization_retry_attempt_start",
        "source": "compaction",
        "reason": "manual",
    }
    assert events[-1]["result"]["summary"].endswith("the summary")
