"""Project trust asked in the cell, in a real ipykernel driven through jupyter_client: the first
``%%pi`` cell in an undecided project folder shows Pi's question with buttons, the test clicks
Trust, the answer lands in Pi's trust store and the same cell's ``/template`` reaches the model
expanded; the next cell does not ask again. A headless run (``allow_stdin: false``, as nbclient
sends) never asks and stays untrusted. ``HOME`` and the agent dir are temporary folders."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch

pytestmark = pytest.mark.kernel

PROJECT = """
import os, pathlib
root = pathlib.Path({root!r})
os.environ["HOME"] = str(root / "home")
os.environ["PI_CODING_AGENT_DIR"] = str(root / "agent")
folder = root / "project"
(folder / ".pi" / "prompts").mkdir(parents=True, exist_ok=True)
(folder / ".pi" / "prompts" / "review.md").write_text("Review $1 please.\\n")
(folder / "AGENTS.md").write_text("Use db.query.\\n")
__session__ = str(folder / "nb.ipynb")
sent = []
def answer(context, *rest):
    sent.append(context.messages[-1].content[0].text)
    return faux_assistant_message("ok")
faux.set_responses([answer, answer])
"""


def setup(k: Kernel, root: Path) -> None:
    reply = k.run(PROJECT.format(root=str(root)))
    assert reply["status"] == "ok", reply


def test_trust_is_asked_in_the_cell_and_saved_in_pis_store(k: Kernel, tmp_path: Path) -> None:
    setup(k, tmp_path)
    cell = k.execute("%%pi --model faux:faux-1\n/review model.py")
    clicked: list[str] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        if not clicked and watch.find("ButtonModel", description="Trust"):
            clicked.append(watch.shown_text())
            k.click(watch.button("Trust").comm_id)

    watch = Watch(k).until_replies([cell], react, timeout=40)
    assert watch.replies[cell][1]["status"] == "ok", watch.replies[cell]
    assert clicked
    assert "Trust project folder?" in clicked[0]
    assert ".pi/prompts" in clicked[0]
    assert watch.find("ButtonModel", description="Do not trust")
    assert k.value("len(sent), sent[0]") == "1 Review model.py please."
    store = json.loads((tmp_path / "agent" / "trust.json").read_text())
    assert store == {str((tmp_path / "project").resolve()): True}
    again = k.execute("%%pi --model faux:faux-1\n/review two.py")
    watch = Watch(k).until_replies([again], lambda w, m: None, timeout=40)
    assert not watch.find("ButtonModel", description="Trust")
    assert k.value("sent[-1]") == "Review two.py please."


def test_a_headless_run_never_asks_and_stays_untrusted(k: Kernel, tmp_path: Path) -> None:
    setup(k, tmp_path)
    cell = k.execute("%%pi --model faux:faux-1\n/review model.py", allow_stdin=False)
    watch = Watch(k).until_replies([cell], lambda w, m: None, timeout=40)
    assert not watch.find("ButtonModel", description="Trust")
    assert k.value("sent") == "['/review model.py']"
    assert not (tmp_path / "agent" / "trust.json").exists()


def test_an_interrupt_while_the_question_waits_decides_nothing(k: Kernel, tmp_path: Path) -> None:
    setup(k, tmp_path)
    cell = k.execute("%%pi --model faux:faux-1\n/review model.py")
    asked: list[bool] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        if not asked and watch.find("ButtonModel", description="Trust"):
            asked.append(True)
            k.interrupt()

    watch = Watch(k).until_replies([cell], react, timeout=40)
    reply = watch.replies[cell][1]
    assert reply["status"] == "error"
    assert reply["ename"] == "KeyboardInterrupt", reply["ename"]
    assert asked
    assert not (tmp_path / "agent" / "trust.json").exists()
    updates = [c for _, kind, c in watch.displays if kind == "update_display_data"]
    shown = [c["data"].get("text/plain", "") for c in updates]
    assert any("Not answered" in text for text in shown), shown
    assert k.value("sent") == "[]"
