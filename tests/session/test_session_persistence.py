"""Persistence: when files appear, one line per entry, damaged and foreign lines, migrations,
newer versions, redaction and Pi's file locations."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from session_scenarios import assistant, text, user

from pi_notebook.session import (
    SessionError,
    SessionFormatWarning,
    SessionManager,
    default_session_dir,
    entry_to_dict,
    get_agent_dir,
    redact_strings,
)


def lines(path: str | None) -> list[dict[str, Any]]:
    assert path is not None
    return [json.loads(line) for line in Path(path).read_text("utf-8").splitlines()]


def test_nothing_is_written_before_the_first_assistant_message(tmp_path: Path) -> None:
    m = SessionManager.create("/p", str(tmp_path))
    m.append_model_change("anthropic", "x")
    m.append_message(user("hi"))
    assert m.session_file
    assert not os.path.exists(m.session_file)
    m.append_message(assistant(text("hello")))
    assert [row["type"] for row in lines(m.session_file)] == ["session", "model_change", "message", "message"]
    m.append_message(user("more"))
    assert len(lines(m.session_file)) == 5


def test_file_name_and_header(tmp_path: Path) -> None:
    m = SessionManager.create("/p", str(tmp_path))
    m.append_message(assistant(text("x")))
    name = os.path.basename(m.session_file or "")
    stamp = m.get_header().timestamp.replace(":", "-").replace(".", "-")
    assert name == f"{stamp}_{m.session_id}.jsonl"


def test_default_locations_follow_pi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    assert get_agent_dir() == str(tmp_path / "agent")
    directory = default_session_dir("/home/me/proj:x")
    assert directory == str(tmp_path / "agent" / "sessions" / "--home-me-proj-x--")
    assert os.path.isdir(directory)
    m = SessionManager.create("/home/me/proj:x")
    assert os.path.dirname(m.session_file or "") == directory
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    assert get_agent_dir() == os.path.join(os.path.expanduser("~"), ".pi", "agent")


def write(path: Path, *rows: Any, tail: str = "") -> str:
    body = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    path.write_text(body + tail, "utf-8")
    return str(path)


HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-07-30T10:00:00.000Z", "cwd": "/p"}


def msg(entry_id: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-07-30T10:00:01.000Z",
        "message": message,
    }


def test_torn_and_invalid_lines_are_skipped_and_earlier_entries_kept(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("a1", None, user("one")),
        "{not json",
        "[1, 2]",
        msg("a2", "a1", assistant(text("two"))),
        tail='{"type":"message","id":"a3","parentId":"a2","timest',
    )
    with pytest.warns(SessionFormatWarning, match="torn last line"):
        m = SessionManager.open(path)
    assert [e.id for e in m.get_entries()] == ["a1", "a2"]
    assert m.problems == [
        "line 3: not valid JSON, skipped",
        "line 4: not a JSON object, skipped",
        "line 6: torn last line, skipped",
    ]
    # the next append starts on a fresh line: the torn fragment cannot swallow it
    new = m.append_message(user("three"))
    with pytest.warns(SessionFormatWarning):
        again = SessionManager.open(path)
    assert [e.id for e in again.get_entries()] == ["a1", "a2", new]


def test_a_file_that_is_not_a_session_is_a_clear_error(tmp_path: Path) -> None:
    path = write(tmp_path / "notes.jsonl", {"hello": "world"})
    with pytest.raises(SessionError, match=r"Session file is not a valid pi session: .*notes\.jsonl"):
        SessionManager.open(path)
    assert Path(path).read_text() == '{"hello": "world"}\n'  # left untouched


def test_an_empty_file_becomes_a_new_session(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    m = SessionManager.open(str(path))
    assert [row["type"] for row in lines(str(path))] == ["session"]
    m.append_message(user("first"))  # the file exists, so it grows at once
    assert len(lines(str(path))) == 2


def test_v1_file_is_migrated_and_rewritten(tmp_path: Path) -> None:
    path = write(
        tmp_path / "v1.jsonl",
        {"type": "session", "id": "old", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": user("u0")},
        {"type": "message", "timestamp": "2025-01-01T00:00:02.000Z", "message": assistant(text("a0"))},
        {"type": "message", "timestamp": "2025-01-01T00:00:03.000Z", "message": user("u1")},
        {
            "type": "compaction",
            "timestamp": "2025-01-01T00:00:04.000Z",
            "summary": "S",
            "firstKeptEntryIndex": 3,
            "tokensBefore": 9,
        },
        {
            "type": "message",
            "timestamp": "2025-01-01T00:00:05.000Z",
            "message": {
                "role": "hookMessage",
                "customType": "h",
                "content": "hook",
                "display": True,
                "timestamp": 1,
            },
        },
    )
    m = SessionManager.open(path)
    entries = m.get_entries()
    assert [e.parent_id for e in entries] == [None] + [e.id for e in entries[:-1]]
    assert entries[3].first_kept_entry_id == entries[2].id  # type: ignore[union-attr]
    assert entries[4].message.role == "custom"  # type: ignore[union-attr]
    rows = lines(path)
    assert rows[0]["version"] == 3
    assert "firstKeptEntryIndex" not in rows[4]
    assert [row.get("id") for row in rows[1:]] == [e.id for e in entries]
    assert [m.role for m in m.build_session_context().messages] == ["compactionSummary", "user", "custom"]


def test_v2_file_renames_hook_messages(tmp_path: Path) -> None:
    hook = {"role": "hookMessage", "customType": "h", "content": "x", "display": False, "timestamp": 1}
    path = write(tmp_path / "v2.jsonl", {**HEADER, "version": 2}, msg("a1", None, hook))
    m = SessionManager.open(path)
    assert m.get_entries()[0].message.role == "custom"  # type: ignore[union-attr]
    assert lines(path)[1]["message"]["role"] == "custom"
    assert lines(path)[0]["version"] == 3


def test_lines_from_a_newer_pi_are_reported_not_fatal(tmp_path: Path) -> None:
    path = write(
        tmp_path / "v4.jsonl",
        {**HEADER, "version": 4, "metadata": {"k": 1}},
        msg("a1", None, user("hi")),
        {
            "type": "leaf",
            "id": "l1",
            "parentId": "a1",
            "timestamp": "2026-07-30T10:00:02.000Z",
            "targetId": "a1",
        },
        {"kind": "checkpoint", "data": 1},
        {"type": "model_change", "id": "m1", "parentId": "l1", "timestamp": "t"},  # missing provider
        msg("a2", "m1", assistant(text("there"))),
    )
    with pytest.warns(SessionFormatWarning) as caught:
        m = SessionManager.open(path)
    assert len(caught) == 1
    assert "\n" not in str(caught[0].message)
    assert m.problems[0].startswith("header: session version 4 is newer")
    assert any("unknown entry type 'leaf'" in p for p in m.problems)
    assert any("line 4: not an entry (no 'type' field; a newer Pi?)" in p for p in m.problems)
    assert any("line 5: 'model_change' entry does not have Pi's shape" in p for p in m.problems)
    # unknown entries stay in the tree, so the branch below them is intact
    assert [e.id for e in m.get_branch()] == ["a1", "l1", "m1", "a2"]
    assert [x.role for x in m.build_session_context().messages] == ["user", "assistant"]
    assert entry_to_dict(m.get_entries()[1])["targetId"] == "a1"
    assert m.get_header().model_dump()["metadata"] == {"k": 1}


def test_redaction_applies_to_written_lines_only(tmp_path: Path) -> None:
    secret = "sk-live-0123456789"
    m = SessionManager.create(
        "/p", str(tmp_path), redact=redact_strings(lambda s: s.replace(secret, "[REDACTED]"))
    )
    m.append_message(user(f"my key is {secret}"))
    m.append_message(assistant(text(f"got {secret}")))
    m.append_custom_entry("cfg", {"token": secret, "n": 1})
    body = Path(m.session_file or "").read_text()
    assert secret not in body
    assert body.count("[REDACTED]") == 3
    assert secret in m.build_session_context().messages[0].content[0].text
    reopened = SessionManager.open(m.session_file or "")
    assert [e.id for e in reopened.get_entries()] == [e.id for e in m.get_entries()]
    assert reopened.get_entries()[2].data == {"token": "[REDACTED]", "n": 1}  # type: ignore[union-attr]


def test_set_session_file_to_a_missing_path_keeps_that_path(tmp_path: Path) -> None:
    target = tmp_path / "chosen.jsonl"
    m = SessionManager.open(str(target))
    m.append_message(user("a"))
    m.append_message(assistant(text("b")))
    assert m.session_file == str(target)
    assert len(lines(str(target))) == 3


def test_in_memory_never_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    m = SessionManager.in_memory()
    m.append_message(user("a"))
    m.append_message(assistant(text("b")))
    assert not m.is_persisted()
    assert m.session_file is None
    assert list(tmp_path.iterdir()) == []
