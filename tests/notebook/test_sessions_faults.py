"""Recording that cannot write never breaks the answer, on a real ``InteractiveShell`` with the
faux provider: a full disk (a real 64 KiB tmpfs where the machine lets root mount one, an
injected ``ENOSPC`` everywhere), a read-only folder (a read-only tmpfs, an injected ``EROFS``),
a session folder under a file, a symlink loop, a folder path over 255 bytes. Each cell shows
the answer; the first failure is one line that says what to do (``PI_NOTEBOOK_RECORD=0``),
never repeated; the conversation goes on in memory and is written once the disk allows.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, run  # noqa: F401
from session_helpers import MODEL, cell, files, plain, restart, sdir_fixture  # noqa: F401
from tmpfs import fill, remount_read_only, tmpfs_fixture  # noqa: F401

from pi_notebook.ai.faux import FauxRegistration
from pi_notebook.session import SessionManager, storage

HINT = "PI_NOTEBOOK_RECORD=0"


def shown(captured: Any) -> str:
    return plain(captured) + str(captured.stdout) + str(captured.stderr)


def two_cells(ip: Any, faux: FauxRegistration) -> tuple[str, str]:
    faux.set_responses(["first answer", "second answer"])
    _, first = cell(ip, MODEL, "first question")
    _, second = cell(ip, "", "second question")
    return shown(first), shown(second)


def assert_told_once(first: str, second: str) -> None:
    assert "first answer" in first
    assert "Traceback" not in first
    assert first.count(HINT) == 1, first
    assert "Cannot write the session file" in first
    assert "second answer" in second
    assert HINT not in second
    assert "Traceback" not in second


def test_a_full_disk_keeps_the_answer_and_says_so_once(
    ip: Any, faux: FauxRegistration, tmpfs: Any, sdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = tmpfs("size=64k")
    (disk / "sessions").mkdir()
    fill(disk)
    monkeypatch.setenv("PI_NOTEBOOK_SESSION_DIR", str(disk / "sessions"))
    faux.set_responses(["first answer", "second answer", "third answer"])
    _, first = cell(ip, MODEL, "first question")
    _, second = cell(ip, "", "second question")
    assert_told_once(shown(first), shown(second))
    assert not [p for p in (disk / "sessions").glob("*.jsonl") if p.stat().st_size == 0]  # no 0-byte file
    (disk / "filler").unlink()  # space again: the next cell writes everything, in order
    _, third = cell(ip, "", "third question")
    assert "third answer" in shown(third)
    assert "is written again" in shown(third)
    [path] = (disk / "sessions").glob("*.jsonl")
    reopened = SessionManager.open(str(path))
    users = [e for e in reopened.get_branch() if getattr(getattr(e, "message", None), "role", "") == "user"]
    assert len(users) == 3


def test_a_read_only_folder_keeps_the_answer(ip: Any, faux: FauxRegistration, tmpfs: Any, sdir: Path) -> None:
    disk = tmpfs("size=64k")
    (disk / "sessions").mkdir()
    remount_read_only(disk)
    os.environ["PI_NOTEBOOK_SESSION_DIR"] = str(disk / "sessions")  # sdir's monkeypatch restores it
    first, second = two_cells(ip, faux)
    assert_told_once(first, second)
    assert "Read-only file system" in first


def test_a_read_only_agent_dir_keeps_the_answer(
    ip: Any, faux: FauxRegistration, tmpfs: Any, sdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only ``~/.pi/agent`` (Pi's default place): the session folder cannot be made."""
    agent = tmpfs("size=64k")
    remount_read_only(agent)
    monkeypatch.delenv("PI_NOTEBOOK_SESSION_DIR")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    first, second = two_cells(ip, faux)
    assert_told_once(first, second)
    assert "Read-only file system" in first


@pytest.mark.parametrize(
    "case", [(errno.ENOSPC, "No space left on device"), (errno.EROFS, "Read-only file system")]
)
def test_an_injected_write_error_keeps_the_answer(
    ip: Any, faux: FauxRegistration, sdir: Path, monkeypatch: pytest.MonkeyPatch, case: tuple[int, str]
) -> None:
    code, reason = case

    def refuse(fd: int, data: bytes | memoryview) -> int:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(storage, "os_write", refuse)
    first, second = two_cells(ip, faux)
    assert_told_once(first, second)
    assert reason in first
    assert files(sdir) == []  # a failed creation leaves no empty file behind
    status = str(run(ip, "%pi status")[1].stdout)
    assert "cannot be written now;" in status
    assert "entries wait in memory" in status
    monkeypatch.setattr(storage, "os_write", os.write)
    faux.set_responses(["third answer"])
    _, third = cell(ip, "", "third question")
    assert "third answer" in shown(third)
    [path] = files(sdir)
    assert sum(1 for line in path.read_text().splitlines() if '"role":"user"' in line) == 3


def test_a_session_folder_under_a_file_keeps_the_answer(
    ip: Any, faux: FauxRegistration, sdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("PI_NOTEBOOK_SESSION_DIR", str(blocker / "sessions"))
    first, second = two_cells(ip, faux)
    assert_told_once(first, second)


def test_a_symlink_loop_keeps_the_answer(
    ip: Any, faux: FauxRegistration, sdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop")
    monkeypatch.setenv("PI_NOTEBOOK_SESSION_DIR", str(loop / "sessions"))
    first, second = two_cells(ip, faux)
    assert_told_once(first, second)


def test_a_folder_path_over_255_bytes_gets_a_hashed_session_folder(
    ip: Any, faux: FauxRegistration, sdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path
    for n in range(3):
        deep = deep / (f"{n}-" + "é" * 60)  # 122 bytes a component: the encoded path is > 255
    deep.mkdir(parents=True)
    agent = tmp_path / "agent"
    monkeypatch.delenv("PI_NOTEBOOK_SESSION_DIR")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.chdir(deep)
    faux.set_responses(["first answer"])
    _, first = cell(ip, MODEL, "first question")
    assert "first answer" in shown(first)
    assert HINT not in shown(first)
    [folder] = (agent / "sessions").iterdir()
    assert len(folder.name.encode()) <= 255
    assert folder.name == storage.session_dir_name(str(deep))
    assert len(list(folder.glob("*.jsonl"))) == 1


def test_resume_of_a_path_that_is_a_folder_is_one_line(ip: Any, faux: FauxRegistration, sdir: Path) -> None:
    sdir.mkdir(parents=True, exist_ok=True)
    folder = sdir / "a-folder.jsonl"
    folder.mkdir()
    result, captured = run(ip, f"%pi resume {folder}")
    text = str(captured.stdout) + str(captured.stderr) + str(result.error_in_exec or "")
    assert "Traceback" not in text
    assert "a-folder.jsonl" in text
    assert len([x for x in text.splitlines() if x.strip()]) <= 2, text


# --- bad bytes and deep nesting in the folder's session files ------------------------------------

TORN_E = b'{"type":"message","id":"zz","parentId":"x","message":{"role":"user","content":"caf\xc3'
DEEP = b"[" * 100_000 + b"]" * 100_000


def test_bad_bytes_and_deep_nesting_lock_no_folder(
    ip: Any, faux: FauxRegistration, sdir: Path, tmp_path: Path
) -> None:
    """A line torn inside "é" and a line nested 100,000 deep, in this notebook's file and in
    another one of the folder: %pi sessions lists, the first cell says the recording exists,
    %pi resume by path continues it and says what was skipped, in one line."""
    ip.user_ns["__vsc_ipynb_file__"] = str(tmp_path / "analysis.ipynb")
    faux.set_responses(["first answer", "second answer", "third answer"])
    cell(ip, MODEL, "first question")
    [path] = files(sdir)
    with open(path, "ab") as handle:
        handle.write(TORN_E + b"\n" + DEEP + b"\n")
    (sdir / "other.jsonl").write_bytes(DEEP + b"\n" + TORN_E)
    restart(ip)
    listed = str(run(ip, "%pi sessions")[1].stdout)
    assert "first question" in listed
    _, captured = cell(ip, MODEL, "second question")
    assert "A recorded conversation of this notebook exists" in plain(captured)
    result, captured = run(ip, f"%pi resume {path}")
    assert result.error_in_exec is None, result.error_in_exec
    out = str(captured.stdout)
    assert "resumed from" in out
    problem = [x for x in out.splitlines() if x.startswith("Session file")]
    assert len(problem) == 1, out
    assert "not UTF-8" in problem[0]
    assert "nested too deeply" in problem[0]
    _, captured = cell(ip, "", "third question")
    assert "third answer" in shown(captured)


def test_a_bad_models_file_blocks_no_cell(
    ip: Any, faux: FauxRegistration, sdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pi_notebook.ai.models as catalogue

    bad = tmp_path / "models.json"
    bad.write_bytes(b'{"models": [{"id": "caf\xc3')
    monkeypatch.setenv(catalogue.USER_MODELS_ENV, str(bad))
    catalogue.reload_user_models()
    try:
        faux.set_responses(["first answer", "second answer"])
        _, first = cell(ip, MODEL, "first question")
        _, second = cell(ip, "", "second question")
    finally:
        catalogue.reload_user_models()
    assert "first answer" in shown(first)
    assert shown(first).count("PI_NOTEBOOK_MODELS=") == 1  # the bad file, once, in one line
    assert "second answer" in shown(second)
    assert "PI_NOTEBOOK_MODELS=" not in shown(second)
