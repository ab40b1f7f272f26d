"""Nothing lost when an append fails part-way: an injected writer fails at every byte offset of a
line (as a full disk or a Ctrl-C in a slow write does), and the file and the tree in memory stay
consistent; a file whose torn line stayed (a killed process) still resumes with every complete
turn, the entries after the tear attached to the one before it."""

from __future__ import annotations

import errno
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pi_notebook.session import SessionManager, storage
from pi_notebook.session.entries import MessageEntry

if TYPE_CHECKING:  # imported late so that the file runs against an older package, and fails there
    from pi_notebook.session import WriteNotice


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def answer(text: str) -> dict[str, object]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "faux",
        "provider": "faux",
        "model": "faux-1",
        "stopReason": "stop",
        "timestamp": 2,
    }


def turns(manager: SessionManager, count: int, start: int = 0) -> None:
    for n in range(start, start + count):
        manager.append_message(user(f"question {n} é"))
        manager.append_message(answer(f"answer {n} é"))


def texts(manager: SessionManager) -> list[str]:
    out = []
    for entry in manager.get_branch():
        if isinstance(entry, MessageEntry):
            content = entry.message.content
            out.append(content if isinstance(content, str) else content[0].text)  # type: ignore[union-attr]
    return out


def failing_writer(after: int, error: BaseException) -> Callable[[int, bytes | memoryview], int]:
    """``os.write`` that writes ``after`` bytes in all (across calls), then raises ``error``."""
    left = [after]

    def write(fd: int, data: bytes | memoryview) -> int:
        if left[0] <= 0:
            raise error
        written = os.write(fd, bytes(data[: left[0]]))
        left[0] -= written
        return written

    return write


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[SessionManager, list[WriteNotice]]:
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    notices: list[WriteNotice] = []
    manager.on_write_notice(notices.append)
    turns(manager, 2)
    return manager, notices


def line_length(manager: SessionManager, text: str) -> int:
    """The byte length of the line a user message ``text`` would get."""
    probe = SessionManager.in_memory()
    probe.append_message(user(text))
    return len(probe.get_entries()[0].model_dump_json().encode()) + 1


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()])
def test_an_append_failing_at_every_byte_leaves_file_and_tree_consistent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    length = line_length(SessionManager.in_memory(), "torn é question")
    assert length > 100
    for offset in range(length):
        folder = tmp_path / f"o{offset}"
        manager = SessionManager.create(str(folder), str(folder))
        notices: list[WriteNotice] = []
        manager.on_write_notice(notices.append)
        turns(manager, 2)
        path = manager.session_file
        assert path is not None
        before = Path(path).read_bytes()
        monkeypatch.setattr(storage, "os_write", failing_writer(offset, error))
        if isinstance(error, KeyboardInterrupt):
            with pytest.raises(KeyboardInterrupt):
                manager.append_message(user("torn é question"))
        else:
            manager.append_message(user("torn é question"))  # never raises: told once instead
            assert [n.kind for n in notices] == ["write_failed"]
            assert "No space left on device" in notices[0].text
        assert Path(path).read_bytes() == before, offset  # truncated back to the last whole line
        assert manager.unsaved_entries == 1
        assert texts(manager)[-1] == "torn é question"  # the tree in memory still has it
        monkeypatch.setattr(storage, "os_write", os.write)
        manager.append_message(answer("after é"))
        assert manager.unsaved_entries == 0
        reopened = SessionManager.open(path)
        assert reopened.problems == []
        assert texts(reopened) == texts(manager)
        assert texts(reopened)[-2:] == ["torn é question", "after é"]
        assert len(texts(reopened)) == 6


def test_a_failed_write_is_told_once_and_recovery_once(
    recorded: tuple[SessionManager, list[WriteNotice]], monkeypatch: pytest.MonkeyPatch
) -> None:
    manager, notices = recorded
    monkeypatch.setattr(storage, "os_write", failing_writer(0, OSError(errno.ENOSPC, "No space left")))
    turns(manager, 3, start=2)
    assert [n.kind for n in notices] == ["write_failed"]
    assert manager.write_failure is not None
    assert manager.unsaved_entries == 6
    monkeypatch.setattr(storage, "os_write", os.write)
    turns(manager, 1, start=5)
    assert [n.kind for n in notices] == ["write_failed", "write_recovered"]
    assert "7 entries saved" in notices[1].text  # the 6 pending and the one that succeeded
    assert manager.write_failure is None
    assert manager.session_file is not None
    assert len(texts(SessionManager.open(manager.session_file))) == 12


def test_a_failed_write_without_listener_is_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = SessionManager.create(str(tmp_path), str(tmp_path))
    turns(manager, 1)
    monkeypatch.setattr(storage, "os_write", failing_writer(5, OSError(errno.EROFS, "Read-only file system")))
    with pytest.warns(UserWarning, match="Read-only file system") as caught:
        turns(manager, 2, start=1)
    assert len(caught) == 1


def test_a_torn_line_that_stayed_keeps_every_complete_turn(tmp_path: Path) -> None:
    """A killed writer (no truncation possible) left part of a line; the same process had
    chained later entries to it. Every byte offset of the torn line, including inside 'é'."""
    source = SessionManager.create(str(tmp_path), str(tmp_path / "src"))
    turns(source, 3)
    lost = source.append_message(user("lost é question"))
    turns(source, 1, start=3)  # chained to the lost entry
    assert source.session_file is not None
    lines = Path(source.session_file).read_bytes().split(b"\n")
    index = next(i for i, line in enumerate(lines) if lost.encode() in line and b"lost" in line)
    torn_line = lines[index]
    for offset in range(len(torn_line)):
        path = tmp_path / f"torn{offset}.jsonl"
        damaged = [*lines[:index], torn_line[:offset], *lines[index + 1 :]]
        path.write_bytes(b"\n".join(damaged))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            resumed = SessionManager.open(str(path))
        got = texts(resumed)
        assert got[:6] == [f"{kind} {n} é" for n in range(3) for kind in ("question", "answer")], offset
        assert got[6:] == ["question 3 é", "answer 3 é"], offset
        line = resumed.problem_line()
        assert line is not None, offset
        assert "attached to the entry before" in line, offset
        assert len(caught) == 1
        # the resumed session goes on from there, and a reload sees the same history
        resumed.append_message(user("next"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert texts(SessionManager.open(str(path))) == [*got, "next"]


def test_a_removed_file_is_written_again_whole(tmp_path: Path) -> None:
    manager = SessionManager.create(str(tmp_path), str(tmp_path))
    turns(manager, 2)
    assert manager.session_file is not None
    os.remove(manager.session_file)
    turns(manager, 1, start=2)
    assert texts(SessionManager.open(manager.session_file)) == texts(manager)
    assert len(texts(manager)) == 6


def test_a_folder_in_place_of_the_file_is_told_once_and_nothing_is_lost(tmp_path: Path) -> None:
    manager = SessionManager.create(str(tmp_path), str(tmp_path))
    notices: list[WriteNotice] = []
    manager.on_write_notice(notices.append)
    assert manager.session_file is not None
    os.mkdir(manager.session_file)
    turns(manager, 2)
    assert [n.kind for n in notices] == ["write_failed"]
    assert "a folder has its name" in notices[0].text
    os.rmdir(manager.session_file)
    turns(manager, 1, start=2)
    assert [n.kind for n in notices] == ["write_failed", "write_recovered"]
    assert texts(SessionManager.open(manager.session_file)) == texts(manager)


def test_an_interrupt_after_the_write_never_writes_an_entry_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C just after the line is on disk, before the writer notes it: the next append sees
    the file changed, finds the entry there and does not write it again."""
    from pi_notebook.session import writer

    manager = SessionManager.create(str(tmp_path), str(tmp_path))
    turns(manager, 1)
    original = writer.SessionWriter._written
    calls = [0]

    def interrupted(self: writer.SessionWriter, identity: object = None) -> None:
        calls[0] += 1
        if calls[0] == 1:
            raise KeyboardInterrupt
        original(self, identity)  # type: ignore[arg-type]

    monkeypatch.setattr(writer.SessionWriter, "_written", interrupted)
    with pytest.raises(KeyboardInterrupt):
        manager.append_message(user("written, then interrupted"))
    manager.append_message(answer("next"))
    assert manager.session_file is not None
    lines = Path(manager.session_file).read_text().splitlines()
    assert sum("written, then interrupted" in line for line in lines) == 1
    assert texts(SessionManager.open(manager.session_file)) == texts(manager)


def test_an_interrupt_after_the_file_is_created_never_blocks_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C just after the new file is on disk: the next append finds it is this session's
    and appends what it lacks (no 'File exists' forever, no entry twice)."""
    from pi_notebook.session import writer

    manager = SessionManager.create(str(tmp_path), str(tmp_path))
    original = writer.SessionWriter._written
    calls = [0]

    def interrupted(self: writer.SessionWriter, identity: object = None) -> None:
        calls[0] += 1
        if calls[0] == 1:
            raise KeyboardInterrupt
        original(self, identity)  # type: ignore[arg-type]

    monkeypatch.setattr(writer.SessionWriter, "_written", interrupted)
    manager.append_message(user("question"))
    with pytest.raises(KeyboardInterrupt):
        manager.append_message(answer("answer"))  # the file is created here
    manager.append_message(user("next"))
    assert manager.write_failure is None
    assert manager.session_file is not None
    lines = Path(manager.session_file).read_text().splitlines()
    assert len(lines) == 4  # the header and three entries, each once
    assert texts(SessionManager.open(manager.session_file)) == ["question", "answer", "next"]
