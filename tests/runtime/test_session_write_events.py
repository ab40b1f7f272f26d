"""``AgentSession`` tells of its session file through ``session_write`` events: a disk that
refuses (an injected ``ENOSPC`` writer) during a run is one ``write_failed`` event and the
answer arrives all the same; the recovery is one ``write_recovered``; a failure while nobody
listens (between runs) is told when the next prompt starts."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from pi_notebook import AgentSession
from pi_notebook.ai.faux import FauxRegistration
from pi_notebook.session import SessionManager, storage


def refuse(fd: int, data: bytes | memoryview) -> int:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def make(faux: FauxRegistration, tmp_path: Path) -> AgentSession:
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    return AgentSession.create(cwd=str(tmp_path), model=faux.get_model(), session_manager=manager)


async def test_a_full_disk_during_a_run_is_one_event_and_the_answer_arrives(
    faux: FauxRegistration, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = make(faux, tmp_path)
    events: list[tuple[str, str]] = []
    session.subscribe(lambda e: events.append((e.kind, e.text)), {"session_write"})  # type: ignore[union-attr]
    faux.set_responses(["one", "two", "three"])
    monkeypatch.setattr(storage, "os_write", refuse)
    await session.prompt("first")
    await session.prompt("second")
    assert [kind for kind, _ in events] == ["write_failed"]
    assert "No space left on device" in events[0][1]
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant"]
    assert session.session_manager.unsaved_entries > 0
    monkeypatch.setattr(storage, "os_write", os.write)
    await session.prompt("third")
    assert [kind for kind, _ in events] == ["write_failed", "write_recovered"]
    assert session.session_manager.unsaved_entries == 0
    path = session.session_manager.session_file
    assert path is not None
    assert len(SessionManager.open(path).build_session_context().messages) == 6


async def test_a_failure_nobody_heard_is_told_at_the_next_prompt(
    faux: FauxRegistration, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = make(faux, tmp_path)
    faux.set_responses(["one", "two"])
    await session.prompt("first")  # the file exists now
    monkeypatch.setattr(storage, "os_write", refuse)
    session.session_manager.append_custom_entry("between-runs", {"n": 1})  # nobody listens
    events: list[str] = []
    session.subscribe(lambda e: events.append(e.kind), {"session_write"})  # type: ignore[union-attr]
    await session.prompt("second")
    assert events == ["write_failed"]
