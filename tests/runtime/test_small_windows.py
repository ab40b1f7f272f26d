"""Compaction on a model with a small window (8,192 tokens, the faux provider): Pi's defaults
would compact after every answer and then keep everything, so they are fitted to the window
(``runtime.compaction.fit_to_window``); a 200k window keeps Pi's values."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_notebook import AgentSession
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, register_faux_provider
from pi_notebook.runtime import AgentSessionSettings, RetrySettings
from pi_notebook.runtime.compaction import FULL_WINDOW, fit_to_window
from pi_notebook.session import CompactionSettings, SessionManager, prepare_compaction

PI_DEFAULTS = CompactionSettings()
BLOCK = "x" * 4000  # 1,000 tokens by the characters / 4 estimate, and in the faux usage


@pytest.fixture
def small() -> Iterator[FauxRegistration]:
    registration = register_faux_provider(
        provider="small", models=[{"id": "s8k", "contextWindow": 8192}], token_size={"min": 1, "max": 1}
    )
    try:
        yield registration
    finally:
        registration.unregister()


def make(
    faux: FauxRegistration, tmp_path: Path, compaction: CompactionSettings = PI_DEFAULTS
) -> AgentSession:
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    settings = AgentSessionSettings(retry=RetrySettings(base_delay_ms=1), compaction=compaction)
    return AgentSession.create(
        cwd=str(tmp_path), model=faux.get_model(), session_manager=manager, settings=settings
    )


def compactions(session: AgentSession) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    session.subscribe(lambda e: seen.append(e.to_dict()), {"compaction_start", "compaction_end"})
    return seen


def answers(n: int) -> list[Any]:
    return [faux_assistant_message(f"answer {i}") for i in range(n)]


async def test_pis_defaults_are_fitted_to_an_8k_window(small: FauxRegistration, tmp_path: Path) -> None:
    session = make(small, tmp_path)
    assert session.settings.compaction == PI_DEFAULTS  # what was asked for stays as it was
    fitted = session.compaction_settings()
    assert (fitted.reserve_tokens, fitted.keep_recent_tokens) == (2048, 2500)


async def test_a_short_conversation_does_not_compact(small: FauxRegistration, tmp_path: Path) -> None:
    small.set_responses(answers(4))
    session = make(small, tmp_path)
    events = compactions(session)
    for _ in range(4):  # about 4,100 tokens: more than the 2,500 kept, below 8,192 - 2,048
        await session.prompt(BLOCK)
    assert events == []
    assert small.state.call_count == 4  # no summary request either
    assert [m.role for m in session.messages] == ["user", "assistant"] * 4


async def test_a_conversation_near_the_window_compacts(small: FauxRegistration, tmp_path: Path) -> None:
    small.set_responses([*answers(5), faux_assistant_message("SUMMARY of the blocks")])
    session = make(small, tmp_path)
    events = compactions(session)
    for _ in range(4):
        await session.prompt(BLOCK)
    assert events == []
    await session.prompt(BLOCK * 3)  # about 4,100 + 3,000 tokens: over 8,192 - 2,048
    assert [(e["type"], e["reason"]) for e in events] == [
        ("compaction_start", "threshold"),
        ("compaction_end", "threshold"),
    ]
    assert events[1]["result"]["summary"].startswith("SUMMARY of the blocks")
    kept = session.messages
    assert kept[0].role == "compactionSummary"  # type: ignore[union-attr]
    assert [m.role for m in kept[1:]] == ["user", "assistant"]  # the last turn, about 3,000 tokens
    assert events[1]["result"]["tokensBefore"] > 8192 - 2048


async def test_compact_summarizes_what_pis_defaults_call_too_small(
    small: FauxRegistration, tmp_path: Path
) -> None:
    small.set_responses([*answers(4), faux_assistant_message("SUMMARY on demand")])
    session = make(small, tmp_path)
    for _ in range(4):
        await session.prompt(BLOCK)
    # Pi's values as given would keep all of it: "Nothing to compact (session too small)".
    assert prepare_compaction(session.session_manager.get_branch(), PI_DEFAULTS) is None
    result = await session.compact()
    assert result.summary.startswith("SUMMARY on demand")
    assert session.messages[0].role == "compactionSummary"  # type: ignore[union-attr]
    assert [m.role for m in session.messages[1:]] == ["user", "assistant"] * 3  # 2,500 tokens and more kept


async def test_a_200k_window_keeps_pis_values(tmp_path: Path) -> None:
    large = register_faux_provider(provider="large", models=[{"id": "l200k", "contextWindow": 200_000}])
    try:
        assert make(large, tmp_path).compaction_settings() == PI_DEFAULTS
    finally:
        large.unregister()
    assert fit_to_window(PI_DEFAULTS, FULL_WINDOW) == PI_DEFAULTS
    assert fit_to_window(PI_DEFAULTS, 0) == PI_DEFAULTS  # window unknown
    assert fit_to_window(PI_DEFAULTS, FULL_WINDOW - 1).reserve_tokens == 16383


def test_values_other_than_pis_defaults_are_used_as_given() -> None:
    chosen = CompactionSettings(reserve_tokens=800, keep_recent_tokens=300)
    assert fit_to_window(chosen, 2000) == chosen
    half = fit_to_window(CompactionSettings(reserve_tokens=1000), 8192)
    assert (half.reserve_tokens, half.keep_recent_tokens) == (1000, 2500)
    off = fit_to_window(CompactionSettings(enabled=False), 8192)
    assert off.enabled is False
