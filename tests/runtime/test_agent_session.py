"""``AgentSession`` on the faux provider and a loopback server: retry, compaction, queues,
recording, settings, listeners by type. (The differential tests against Pi's own
``AgentSession`` are in ``tests/conformance``.)"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from pi_notebook import AgentSession
from pi_notebook.agent import AgentRunOptions
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_text, register_faux_provider
from pi_notebook.runtime import AgentSessionSettings, RetrySettings
from pi_notebook.runtime.agent_session import PROMPT_BUSY
from pi_notebook.session import CompactionSettings, SessionManager

FAST = AgentSessionSettings(retry=RetrySettings(base_delay_ms=1))


def make(
    faux: FauxRegistration, tmp_path: Path, settings: AgentSessionSettings = FAST, **kw: Any
) -> AgentSession:
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    return AgentSession.create(
        cwd=str(tmp_path), model=faux.get_model(), session_manager=manager, settings=settings, **kw
    )


def record(session: AgentSession, *types: str) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    session.subscribe(lambda e: seen.append(e.to_dict()), types or None)
    return seen


def when(session: AgentSession, kind: str) -> asyncio.Event:
    """An event set when the session first emits an event of type ``kind``."""
    seen = asyncio.Event()
    session.subscribe(lambda e: seen.set(), {kind})
    return seen


def entries(session: AgentSession) -> list[dict[str, Any]]:
    assert session.session_file is not None
    return [json.loads(line) for line in Path(session.session_file).read_text().splitlines()]


def error(text: str) -> Any:
    return faux_assistant_message([], stop_reason="error", error_message=text)


async def test_a_transient_error_is_retried_and_recorded(faux: FauxRegistration, tmp_path: Path) -> None:
    faux.set_responses([error("503 Service Unavailable"), faux_assistant_message([faux_text("hi")])])
    session = make(faux, tmp_path)
    events = record(session, "agent_end", "auto_retry_start", "auto_retry_end", "agent_settled")
    await session.prompt("hello")
    assert [(e["type"], e.get("willRetry"), e.get("success")) for e in events] == [
        ("agent_end", True, None),
        ("auto_retry_start", None, None),
        ("auto_retry_end", None, True),
        ("agent_end", False, None),
        ("agent_settled", None, None),
    ]
    assert events[1] == {
        "type": "auto_retry_start",
        "attempt": 1,
        "maxAttempts": 3,
        "delayMs": 1,
        "errorMessage": "503 Service Unavailable",
    }
    rows = entries(session)
    assert [r["type"] for r in rows] == ["session", "model_change", "thinking_level_change", *["message"] * 3]
    assert [r["message"].get("stopReason") for r in rows[3:]] == [None, "error", "stop"]  # the failure stays
    assert [m.role for m in session.messages] == ["user", "assistant"]  # ...but leaves the context


async def test_retries_end_after_max_retries_with_the_last_error(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    faux.set_responses([error("overloaded")] * 4)
    session = make(faux, tmp_path)
    events = record(session, "agent_end", "auto_retry_start", "auto_retry_end")
    await session.prompt("hello")
    assert [e.get("willRetry", e.get("attempt")) for e in events] == [True, 1, True, 2, True, 3, False, 3]
    assert events[-1] == {
        "type": "auto_retry_end",
        "success": False,
        "attempt": 3,
        "finalError": "overloaded",
    }
    assert [e["delayMs"] for e in events if e["type"] == "auto_retry_start"] == [1, 2, 4]


async def test_a_quota_error_is_not_retried(faux: FauxRegistration, tmp_path: Path) -> None:
    faux.set_responses([error("429 insufficient_quota")])
    session = make(faux, tmp_path)
    events = record(session, "agent_end", "auto_retry_start")
    await session.prompt("hello")
    assert events == [{"type": "agent_end", "messages": events[0]["messages"], "willRetry": False}]


async def test_stop_during_the_wait_cancels_the_retry(faux: FauxRegistration, tmp_path: Path) -> None:
    faux.set_responses([error("503 Service Unavailable")])
    slow = AgentSessionSettings(retry=RetrySettings(base_delay_ms=30_000))
    session = make(faux, tmp_path, slow)
    events = record(session, "auto_retry_start", "auto_retry_end")
    waiting = when(session, "auto_retry_start")
    task = asyncio.ensure_future(session.prompt("hello"))
    await asyncio.wait_for(waiting.wait(), 2)
    assert session.is_retrying
    session.interrupt()
    await asyncio.wait_for(task, 2)
    assert events[-1] == {
        "type": "auto_retry_end",
        "success": False,
        "attempt": 1,
        "finalError": "Retry cancelled",
    }
    assert session.is_idle


async def test_prompt_while_busy_needs_a_streaming_behaviour(faux: FauxRegistration, tmp_path: Path) -> None:
    faux.set_responses([faux_assistant_message([faux_text("one two three four " * 5)])] * 3)
    slow = register_faux_provider(tokens_per_second=200, token_size={"min": 1, "max": 1})
    slow.set_responses([faux_assistant_message([faux_text("one two three four " * 5)])] * 3)
    try:
        session = make(slow, tmp_path)
        queue = record(session, "queue_update")
        streaming = when(session, "message_update")
        task = asyncio.ensure_future(session.prompt("first"))
        await asyncio.wait_for(streaming.wait(), 2)
        with pytest.raises(RuntimeError) as raised:
            await session.prompt("second")
        assert str(raised.value) == PROMPT_BUSY
        await session.prompt("steered", streaming_behavior="steer")
        await session.prompt("later", streaming_behavior="follow_up")
        await asyncio.wait_for(task, 10)
    finally:
        slow.unregister()
    users = [m.content[0].text for m in session.messages if m.role == "user"]  # type: ignore[union-attr]
    assert users == ["first", "steered", "later"]
    assert [(e["steering"], e["followUp"]) for e in queue] == [
        (["steered"], []),
        (["steered"], ["later"]),
        ([], ["later"]),
        ([], []),
    ]


async def test_model_thinking_and_name_changes_are_recorded(faux: FauxRegistration, tmp_path: Path) -> None:
    reasoning = register_faux_provider(provider="faux-r", models=[{"id": "think-1", "reasoning": True}])
    try:
        session = make(faux, tmp_path)
        events = record(session, "thinking_level_changed", "session_info_changed")
        session.set_model(reasoning.get_model())
        session.set_thinking_level("high")
        session.set_thinking_level("high")  # no change, nothing recorded
        session.set_session_name("analysis")
        session.set_model(faux.get_model())  # no reasoning: back to "off"
    finally:
        reasoning.unregister()
    assert [e.get("level", e.get("name")) for e in events] == ["medium", "high", "analysis", "off"]
    rows = session.session_manager.get_entries()
    assert [r.type for r in rows] == [
        "model_change",
        "thinking_level_change",
        "model_change",
        "thinking_level_change",
        "thinking_level_change",
        "session_info",
        "model_change",
        "thinking_level_change",
    ]
    assert session.session_name == "analysis"


async def test_threshold_compaction_after_a_run(faux: FauxRegistration, tmp_path: Path) -> None:
    small = register_faux_provider(provider="faux-small", models=[{"id": "s", "contextWindow": 1000}])
    try:
        small.set_responses(
            [
                faux_assistant_message([faux_text("a short answer")]),
                faux_assistant_message([faux_text("the second answer")]),
                faux_assistant_message([faux_text("summary of it all")]),
            ]
        )
        settings = AgentSessionSettings(
            compaction=CompactionSettings(reserve_tokens=100, keep_recent_tokens=50)
        )
        session = make(small, tmp_path, settings)
        events = record(session, "compaction_start", "compaction_end")
        await session.prompt("a small first question")
        assert events == []  # far below the window
        await session.prompt("the second question " * 180)  # about 930 tokens: over 1000 - 100
    finally:
        small.unregister()
    assert [(e["type"], e["reason"]) for e in events] == [
        ("compaction_start", "threshold"),
        ("compaction_end", "threshold"),
    ]
    assert events[1]["result"]["summary"].startswith("summary of it all")
    assert events[1]["willRetry"] is False
    assert [r.type for r in session.session_manager.get_entries()][-1] == "compaction"
    assert session.messages[0].role == "compactionSummary"  # type: ignore[union-attr]


async def test_run_options_last_for_the_run_and_its_retries(faux: FauxRegistration, tmp_path: Path) -> None:
    faux.set_responses([error("503 Service Unavailable"), faux_assistant_message([faux_text("hi")])])
    session = make(faux, tmp_path)
    seen: list[Any] = []
    session.agent.stream_fn = _spy(session.agent.stream_fn, seen)
    await session.prompt("hello", run=AgentRunOptions(temperature=0.25, timeout_ms=1234))
    assert [(o.temperature, o.timeout_ms) for o in seen] == [(0.25, 1234), (0.25, 1234)]
    assert session.agent.on_payload is None
    assert session.agent.before_tool_call is None


def _spy(inner: Any, seen: list[Any]) -> Any:
    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        seen.append(options)
        return inner(model, context, options)

    return stream_fn


async def test_listeners_by_type_never_see_tokens(faux: FauxRegistration, tmp_path: Path) -> None:
    faux.set_responses([faux_assistant_message([faux_text("one two three four five six")])])
    session = make(faux, tmp_path)
    calls = {"all": 0, "ends": 0}
    session.subscribe(lambda e: calls.__setitem__("all", calls["all"] + 1))
    session.subscribe(lambda e: calls.__setitem__("ends", calls["ends"] + 1), {"message_end", "agent_end"})
    tokens = record(session, "message_update")
    await session.prompt("hello")
    assert len(tokens) > 5
    assert calls["ends"] == 3  # user and assistant message_end, agent_end
    assert calls["all"] == calls["ends"] + len(tokens) + 6  # agent, turn, 2 message starts, turn_end, settled
