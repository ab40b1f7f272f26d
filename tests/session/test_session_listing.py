"""Listing a directory's sessions, forking, and continuing the most recent one."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from session_scenarios import apply_ops, assistant, linear, text, user

from pi_notebook.session import (
    SessionError,
    SessionManager,
    entry_to_dict,
    find_most_recent_session,
    list_all_sessions,
    list_sessions,
)


def test_list_sessions_summarises_each_file(tmp_path: Path) -> None:
    a = SessionManager.create("/proj", str(tmp_path))
    apply_ops(a, linear())
    b = SessionManager.create("/proj", str(tmp_path))
    b.append_message({**user("second session"), "timestamp": 1_900_000_000_000})
    b.append_message({**assistant(text("reply")), "timestamp": 1_900_000_000_500})
    (tmp_path / "junk.jsonl").write_text('{"not": "a session"}\n')
    (tmp_path / "readme.txt").write_text("ignored")
    infos = list_sessions("/proj", str(tmp_path))
    assert [i.id for i in infos] == [b.session_id, a.session_id]  # most recent activity first
    newest, oldest = infos
    assert newest.first_message == "second session"
    assert newest.message_count == 2
    assert newest.modified.timestamp() == 1_900_000_000.5
    assert oldest.name == "Config review   session"  # Pi collapses line breaks, not spaces
    assert oldest.first_message == "Read the config, please."
    assert oldest.message_count == 7  # message entries of every role
    assert oldest.size == os.path.getsize(a.session_file or "")
    assert oldest.cwd == "/proj"
    assert oldest.parent_session_path is None
    assert "It sets DEBUG and PORT." in oldest.all_messages_text


def test_a_shared_directory_is_filtered_by_cwd(tmp_path: Path) -> None:
    for cwd in ("/one", "/two"):
        m = SessionManager.create(cwd, str(tmp_path))
        m.append_message(user(cwd))
        m.append_message(assistant(text("ok")))
    assert [i.first_message for i in list_sessions("/one", str(tmp_path))] == ["/one"]
    assert len(list_all_sessions(str(tmp_path))) == 2


def test_list_all_walks_every_project_of_the_agent_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path))
    for cwd in ("/one", "/two"):
        m = SessionManager.create(cwd)
        m.append_message(user(cwd))
        m.append_message(assistant(text("ok")))
    assert sorted(i.cwd for i in list_all_sessions()) == ["/one", "/two"]
    assert [i.cwd for i in list_sessions("/two")] == ["/two"]


def test_fork_copies_every_entry_into_a_new_project(tmp_path: Path) -> None:
    source = SessionManager.create("/proj", str(tmp_path / "a"))
    apply_ops(source, linear())
    fork = SessionManager.fork_from(source.session_file or "", "/elsewhere", str(tmp_path / "b"))
    header = fork.get_header()
    assert header.parent_session == source.session_file
    assert header.cwd == "/elsewhere"
    assert header.id != source.session_id
    assert [entry_to_dict(e) for e in fork.get_entries()] == [entry_to_dict(e) for e in source.get_entries()]
    assert fork.build_session_context().to_dict() == source.build_session_context().to_dict()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("")
    with pytest.raises(SessionError, match="Cannot fork"):
        SessionManager.fork_from(str(bad), "/x", str(tmp_path / "c"))


def test_continue_recent_opens_the_newest_file_or_starts_fresh(tmp_path: Path) -> None:
    fresh = SessionManager.continue_recent("/proj", str(tmp_path))
    assert fresh.get_entries() == []
    older = SessionManager.create("/proj", str(tmp_path))
    older.append_message(assistant(text("old")))
    newer = SessionManager.create("/proj", str(tmp_path))
    newer.append_message(assistant(text("new")))
    now = time.time()
    os.utime(older.session_file or "", (now - 100, now - 100))
    assert find_most_recent_session(str(tmp_path)) == newer.session_file
    resumed = SessionManager.continue_recent("/proj", str(tmp_path))
    assert resumed.session_id == newer.session_id
    assert resumed.session_file == newer.session_file
