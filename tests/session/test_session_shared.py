"""Two processes on one session file (two kernels resumed the same conversation): each notices
the other's writes, says so once, and chains its next entry onto the file's real last entry, so
a third process resuming the file (which follows ``parentId`` from the last line) gets every
prompt of both. Real processes (``shared_writer.py``), taking turns or writing at full speed."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

from pi_notebook.session import SessionManager
from pi_notebook.session.entries import MessageEntry

WRITER = Path(__file__).parent / "shared_writer.py"
ROOT = Path(__file__).parent.parent.parent


def start(path: Path, name: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(path), name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def ask(proc: subprocess.Popen[str], command: str, notices: list[str]) -> None:
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(command + "\n")
    proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "writer died"
        if line.startswith("notice"):
            notices.append(line.strip())
        elif line.startswith("done"):
            return


def finish(proc: subprocess.Popen[str], notices: list[str]) -> None:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    notices += [line for line in out.splitlines() if line.startswith("notice")]


def prompts(path: Path) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing skipped, nothing repaired
        resumed = SessionManager.open(str(path))
    return [
        str(e.message.content)
        for e in resumed.get_branch()
        if isinstance(e, MessageEntry) and e.message.role == "user"
    ]


def seeded(tmp_path: Path) -> Path:
    manager = SessionManager.create(str(tmp_path), str(tmp_path))
    manager.append_message({"role": "user", "content": "first", "timestamp": 0})
    manager.append_message(
        {"role": "assistant", "content": [], "api": "faux", "provider": "faux", "model": "f"}
        | {"stopReason": "stop"}
    )
    assert manager.session_file is not None
    return Path(manager.session_file)


def test_two_processes_taking_turns_keep_every_prompt_reachable(tmp_path: Path) -> None:
    path = seeded(tmp_path)
    a, b = start(path, "A"), start(path, "B")
    told: dict[str, list[str]] = {"A": [], "B": []}
    try:
        for n in range(10):
            ask(a, f"turn {n}", told["A"])
            ask(b, f"turn {n}", told["B"])
        ask(b, "turn 10", told["B"])
    finally:
        finish(a, told["A"])
        finish(b, told["B"])
    got = prompts(path)
    assert len(got) == 22  # 21 prompts of the two and the first one
    expected = ["first"] + [f"A prompt {n}" for n in range(10)] + [f"B prompt {n}" for n in range(11)]
    assert sorted(got) == sorted(expected)
    for name in ("A", "B"):
        shared = [line for line in told[name] if line.startswith("notice shared")]
        assert len(shared) == 1, told[name]  # said once per process
        assert "Another process also writes the session file" in shared[0]


def test_two_processes_at_full_speed_keep_every_prompt_reachable(tmp_path: Path) -> None:
    path = seeded(tmp_path)
    a, b = start(path, "A"), start(path, "B")
    notices: list[str] = []
    assert a.stdin is not None
    assert b.stdin is not None
    for proc in (a, b):  # both start at once; communicate() then closes their stdin
        proc.stdin.write("free 40\n")
        proc.stdin.flush()
    finish(a, notices)
    finish(b, notices)
    got = prompts(path)
    assert sorted(got) == sorted(["first"] + [f"{w} prompt {n}" for w in "AB" for n in range(40)])
