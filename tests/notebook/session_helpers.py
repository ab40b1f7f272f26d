"""Helpers of the session tests (``test_sessions*.py``) on a real ``InteractiveShell``: ``sdir``,
the fixture that gives a test its own session directory and restores the session traits after
it; running a ``%%pi`` cell or a ``%pi`` line; reading the session files; what a kernel restart
leaves."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_ipshell import outputs, run

from pi_notebook.notebook import conversations
from pi_notebook.notebook.state import state_for

MODEL = "--model faux:faux-1"
SESSION_TRAITS = (
    "record",
    "session_dir",
    "replay",
    "compact",
    "compact_reserve_tokens",
    "compact_keep_recent_tokens",
)


@pytest.fixture(name="sdir")
def sdir_fixture(ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private session directory (``$PI_NOTEBOOK_SESSION_DIR``); session traits restored after."""
    directory = tmp_path / "sessions"
    monkeypatch.setenv("PI_NOTEBOOK_SESSION_DIR", str(directory))
    for name in ("PI_NOTEBOOK_RECORD", "PI_NOTEBOOK_REPLAY", "JPY_SESSION_NAME"):
        monkeypatch.delenv(name, raising=False)
    state = state_for(ip)
    state.conversations.clear()
    state.sessions.replay_cursors.clear()
    try:
        yield directory
    finally:
        magics = ip.magics_manager.registry["PiMagics"]
        for trait in SESSION_TRAITS:
            setattr(magics, trait, magics.trait_defaults(trait))
        state.conversations.clear()
        state.sessions.replay_cursors.clear()


def cell(ip: Any, line: str, body: str) -> tuple[Any, Any]:
    result, captured = run(ip, f"%%pi {line}\n{body}")
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return result, captured


def line(ip: Any, text: str) -> str:
    result, captured = run(ip, f"%pi {text}")
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return str(captured.stdout)


def files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.jsonl"))


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def plain(captured: Any) -> str:
    [found] = outputs(captured)
    return str(found["text/plain"])


def restart(ip: Any) -> None:
    """What a kernel restart leaves: no conversations, nothing tracked (the files stay)."""
    conversations.clear()
    state_for(ip).sessions.replay_cursors.clear()
