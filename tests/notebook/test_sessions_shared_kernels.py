"""Two real kernels on one session file (jupyter_client): kernel A records a conversation,
kernel B resumes the same file, and they take turns. Each cell shows its answer; the first
cell of each kernel after the other one wrote says so once, in one line; a third reader of
the file (what a third kernel's ``%pi resume`` loads) gets every prompt of both."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel

from pi_notebook.session import SessionManager
from pi_notebook.session.entries import MessageEntry
from pi_notebook.session.storage import encode_cwd

pytestmark = pytest.mark.kernel

SHARED = "Another process also writes the session file"


def cell(kernel: Kernel, code: str) -> str:
    """Run a cell; everything it printed or displayed as text."""
    shown: list[str] = []

    def hook(msg: dict[str, Any]) -> None:
        content = msg["content"]
        if msg["msg_type"] == "stream":
            shown.append(content["text"])
        elif msg["msg_type"] in ("display_data", "execute_result", "update_display_data"):
            shown.append(str(content.get("data", {}).get("text/plain", "")))
        elif msg["msg_type"] == "error":
            shown.append("\n".join(content.get("traceback", [])))

    reply = kernel.kc.execute_interactive(code, timeout=60, output_hook=hook)
    assert reply["content"]["status"] == "ok", "".join(shown)
    return "".join(shown)


def test_two_kernels_taking_turns_on_one_file(tmp_path: Path, private_agent_dir: Path) -> None:
    a = Kernel(tmp_path)
    b = Kernel(tmp_path)
    try:
        cell(a, "faux.set_responses([f'A answer {n}' for n in range(10)])")
        cell(b, "faux.set_responses([f'B answer {n}' for n in range(10)])")
        assert "A answer 0" in cell(a, "%%pi --model faux:faux-1\nA prompt 0")
        [path] = (private_agent_dir / "sessions" / encode_cwd(str(tmp_path))).glob("*.jsonl")
        assert "resumed from" in cell(b, f"%pi resume {path}")
        told = {"A": 0, "B": 0}
        for n in range(1, 4):
            shown_b = cell(b, f"%%pi --model faux:faux-1\nB prompt {n}")
            assert f"B answer {n - 1}" in shown_b
            shown_a = cell(a, f"%%pi\nA prompt {n}")
            assert f"A answer {n}" in shown_a
            assert "Traceback" not in shown_a + shown_b
            told["A"] += shown_a.count(SHARED)
            told["B"] += shown_b.count(SHARED)
    finally:
        a.close()
        b.close()
    resumed = SessionManager.open(str(path))
    prompts = [
        e.message.content[0].text  # type: ignore[union-attr]
        for e in resumed.get_branch()
        if isinstance(e, MessageEntry) and e.message.role == "user"
    ]
    expected = [f"A prompt {n}" for n in range(4)] + [f"B prompt {n}" for n in range(1, 4)]
    assert sorted(prompts) == sorted(expected)
    assert told == {"A": 1, "B": 1}  # each noticed the other's writes, once
