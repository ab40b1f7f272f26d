"""Explain / Fix under a failing cell, and ``%pi fix`` / ``%pi explain``, in a real ipykernel
(jupyter_client; no browser). Where a test needs the notebook bridge, ``FakeNotebook`` answers
it as JupyterLab's labextension does (hello, read, insert, edit, set_outputs) from a list of
cells, so the edit and the rerun land in something the test can read."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch

from pi_notebook.notebook.bridge.client import TARGET
from pi_notebook.notebook.error_actions import help_line
from pi_notebook.notebook.run.error_buttons import WIDGET_MIME
from pi_notebook.notebook.tools.notebook_tools import READ_TOOLS

pytestmark = pytest.mark.kernel

BAD = "total = undefined_price * 3"
GOOD = "total = 7 * 3"


def _execute(k: Kernel, code: str, cell_id: str | None = None, allow_stdin: bool = True) -> str:
    """An execute request as JupyterLab sends it (``metadata.cellId``)."""
    content = {
        "code": code, "silent": False, "store_history": True, "user_expressions": {},
        "allow_stdin": allow_stdin, "stop_on_error": True,
    }  # fmt: skip
    msg = k.kc.session.msg("execute_request", content, metadata={"cellId": cell_id} if cell_id else {})
    k.kc.shell_channel.send(msg)
    return str(msg["header"]["msg_id"])


class FakeNotebook:
    """The labextension's side of the bridge over a list of cells."""

    def __init__(self, k: Kernel, cells: list[dict[str, Any]]) -> None:
        self.k = k
        self.cells = cells
        self.ops: list[dict[str, Any]] = []

    def cell(self, cell_id: str) -> dict[str, Any]:
        return next(c for c in self.cells if c["id"] == cell_id)

    def react(self, watch: Watch, msg: dict[str, Any]) -> None:
        content = msg["content"]
        if msg["msg_type"] == "comm_open" and content.get("target_name") == TARGET:
            hello = {"op": "hello", "protocol": 1, "frontend": "JupyterLab", "version": "4", "path": "n"}
            self.k.send_comm(content["comm_id"], hello)
        elif msg["msg_type"] == "comm_msg" and "op" in content["data"] and "req" in content["data"]:
            data = content["data"]
            self.ops.append(data)
            try:
                result = self.answer(data)
                reply = {"req": data["req"], "ok": True, "result": result}
            except KeyError as exc:
                reply = {"req": data["req"], "ok": False, "error": str(exc), "refused": True}
            self.k.send_comm(content["comm_id"], reply)

    def answer(self, data: dict[str, Any]) -> dict[str, Any]:
        op = data["op"]
        if op == "read":
            return {"path": "nb.ipynb", "dirty": False, "cells": [dict(c) for c in self.cells]}
        if op == "insert":
            at = [c["id"] for c in self.cells].index(data["after"]) + 1
            first = len(self.cells)
            made = [{"id": f"new{i}", "outputs": [], **c} for i, c in enumerate(data["cells"], first)]
            self.cells[at:at] = made
            return {"index": at, "ids": [c["id"] for c in made]}
        cell = self.cell(data["id"])
        if data.get("expect") is not None and cell["source"] != data["expect"]:
            raise KeyError(f"cell {data['id']} changed since it was read")
        if op == "edit":
            cell["source"] = data["source"]
            return {"id": data["id"]}
        before = {"outputs": cell["outputs"], "execution_count": None, "created": False}
        cell["outputs"] = data["outputs"]
        return before


def _click_approvals(watch: Watch, k: Kernel, clicked: set[str]) -> None:
    for label in ("Apply", "Approve"):
        for button in watch.find("ButtonModel", description=label):
            if button.comm_id not in clicked and not button.state.get("disabled"):
                clicked.add(button.comm_id)
                k.click(button.comm_id)


def _fail(k: Kernel, cell_id: str = "bad", allow_stdin: bool = True) -> tuple[Watch, int]:
    msg = _execute(k, BAD, cell_id, allow_stdin)
    watch = Watch(k).until_replies([msg], timeout=30)
    reply = watch.replies[msg][1]
    assert reply["status"] == "error", reply
    assert reply["ename"] == "NameError", reply
    return watch, int(reply["execution_count"])


def test_a_failing_cell_shows_explain_and_fix_with_the_line_as_its_text(k: Kernel) -> None:
    watch, count = _fail(k)
    [shown] = [c for _, kind, c in watch.displays if kind == "display_data"]
    assert shown["data"]["text/plain"] == help_line(count)  # what a console or GitHub shows
    assert WIDGET_MIME in shown["data"]
    assert watch.button("Explain")
    assert watch.button("Fix")
    assert f"%pi fix {count}" in watch.button("Fix").state["tooltip"]


def test_a_client_that_names_no_cell_gets_the_line_alone(k: Kernel) -> None:
    msg = _execute(k, BAD)  # jupyter console, qtconsole, Colab: no cellId
    watch = Watch(k).until_replies([msg], timeout=30)
    count = int(watch.replies[msg][1]["execution_count"])
    [shown] = [c for _, kind, c in watch.displays if kind == "display_data"]
    assert shown["data"] == {"text/plain": help_line(count)}
    assert watch.find("ButtonModel") == []


def test_nothing_in_a_headless_run_nor_with_the_trait_off_nor_under_a_pi_cell(k: Kernel) -> None:
    watch, _ = _fail(k, allow_stdin=False)  # nbclient, nbconvert, papermill
    assert watch.displays == []
    assert watch.find("ButtonModel") == []
    assert k.run("%config PiMagics.error_actions = False")["status"] == "ok"
    try:
        watch, _ = _fail(k)
        assert watch.displays == []
        assert watch.find("ButtonModel") == []
    finally:
        assert k.run("%config PiMagics.error_actions = True")["status"] == "ok"
    msg = _execute(k, "%%pi --no-such-option\nhello", "pi-cell")
    watch = Watch(k).until_replies([msg], timeout=30)
    assert watch.replies[msg][1]["status"] == "error"
    assert watch.find("ButtonModel", description="Fix") == []


def test_a_bad_number_is_one_line_that_says_what_to_do(k: Kernel) -> None:
    _, count = _fail(k)
    reply = k.run("%pi fix 99999")
    assert reply["status"] == "error"
    assert reply["ename"] == "UsageError"
    assert reply["evalue"].startswith(
        "%pi fix 99999: cell [99999] did not fail (or it is one of the extension's own cells); "
        "cells that failed: ["
    )
    assert reply["evalue"].endswith(f"[{count}]. Give the N shown as [N] beside a failed cell")
    reply = k.run("%pi explain the last one")
    assert reply["ename"] == "UsageError"
    assert "takes the number of a cell that failed" in reply["evalue"]
    assert "\n" not in reply["evalue"]


def test_explain_answers_with_read_only_tools_and_the_cell_in_its_prompt(k: Kernel) -> None:
    _, count = _fail(k)
    k.run(
        "offered = []\n"
        "def answer(context, options, state, model):\n"
        "    offered.append(sorted(t.name for t in context.tools or []))\n"
        "    return 'undefined_price was never defined: define it first.'\n"
        "faux.set_responses([answer])"
    )
    reply = k.run("%pi model faux:faux-1")
    assert reply["status"] == "ok", reply
    reply = k.run("%pi explain")
    assert reply["status"] == "ok", reply
    assert k.value("_pi.text") == "undefined_price was never defined: define it first."
    offered = eval(k.value("offered"))
    assert offered
    assert set(offered[0]) <= set(READ_TOOLS), offered
    assert "run_code" not in offered[0]
    assert "edit_cell" not in offered[0]
    prompt = k.value("_pi.messages[0].content[0].text")
    assert f"Cell [{count}] of this notebook raised an error" in prompt
    assert BAD in prompt
    assert "NameError: name 'undefined_price' is not defined" in prompt


FIX_SCRIPT = """
faux.set_responses([
    tool_use("read_notebook", {}, "r1"),
    tool_use("edit_cell", {"cell_id": "bad", "old": "undefined_price", "new": "7"}, "e1"),
    tool_use("run_cell", {"cell_id": "bad"}, "x1"),
    "Fixed: undefined_price was never defined.",
])
"""


def test_pi_fix_proposes_an_edit_that_is_applied_and_the_cell_reruns_green(k: Kernel) -> None:
    notebook = FakeNotebook(k, [{"id": "bad", "cell_type": "code", "source": BAD, "outputs": []}])
    _fail(k)
    assert k.run(FIX_SCRIPT + "\nget_ipython().run_line_magic('pi', 'model faux:faux-1')")["status"] == "ok"
    msg = _execute(k, "%pi fix", "fixer")
    notebook.cells.append({"id": "fixer", "cell_type": "code", "source": "%pi fix", "outputs": []})
    clicked: set[str] = set()

    def react(watch: Watch, m: dict[str, Any]) -> None:
        notebook.react(watch, m)
        _click_approvals(watch, k, clicked)

    watch = Watch(k).until_replies([msg], react, timeout=60)
    assert watch.replies[msg][1]["status"] == "ok", watch.replies[msg]
    assert len(clicked) == 2  # Apply (the diff), Approve (the rerun)
    assert notebook.cell("bad")["source"] == GOOD
    assert k.value("total") == "21"
    outputs = notebook.cell("bad")["outputs"]
    assert not any(o.get("name") == "stderr" for o in outputs), outputs
    assert k.value("_pi.text") == "Fixed: undefined_price was never defined."


def test_the_fix_button_runs_in_a_cell_below_the_failing_one(k: Kernel) -> None:
    notebook = FakeNotebook(k, [{"id": "bad", "cell_type": "code", "source": BAD, "outputs": []}])
    assert k.run(FIX_SCRIPT + "\nget_ipython().run_line_magic('pi', 'model faux:faux-1')")["status"] == "ok"
    msg = _execute(k, BAD, "bad")
    clicked: set[str] = set()
    watch = Watch(k).until_replies([msg], timeout=30)
    fix = watch.button("Fix")
    k.click(fix.comm_id)
    # awaited, so the kernel hears the clicks and the bridge's answers while it waits
    wait = "import asyncio\nfor _ in range(400):\n    if _pi is not None: break\n    await asyncio.sleep(0.1)"
    done = _execute(k, wait + "\nawait asyncio.sleep(1)")

    def react(w: Watch, m: dict[str, Any]) -> None:
        notebook.react(w, m)
        _click_approvals(w, k, clicked)

    # the run goes on while the kernel is idle; a later cell waits for the end of it
    watch.until_replies([done], react, timeout=60)
    assert [op["op"] for op in notebook.ops[:2]] == ["insert", "set_outputs"]
    inserted = notebook.ops[0]
    assert inserted["after"] == "bad"
    assert inserted["cells"][0]["source"].startswith("# %pi fix ")
    assert notebook.cell("bad")["source"] == GOOD
    assert k.value("total") == "21"
    last = notebook.ops[-1]
    assert last["op"] == "set_outputs"
    assert last["id"] == notebook.cells[1]["id"]
    assert "Fixed: undefined_price was never defined." in last["outputs"][0]["data"]["text/plain"]


def test_the_explain_button_answers_under_the_buttons_and_changes_nothing(k: Kernel) -> None:
    assert k.run("%pi model faux:faux-1")["status"] == "ok"
    k.run(
        "offered = []\n"
        "def answer(context, options, state, model):\n"
        "    offered.append(sorted(t.name for t in context.tools or []))\n"
        "    return 'undefined_price was never set.'\n"
        "faux.set_responses([answer])"
    )
    watch, _ = _fail(k)
    k.click(watch.button("Explain").comm_id)
    wait = "import asyncio\nfor _ in range(300):\n    if _pi is not None: break\n    await asyncio.sleep(0.1)"
    done = _execute(k, wait)
    watch.until_replies([done], timeout=60)
    assert k.value("_pi.text") == "undefined_price was never set."
    assert "undefined_price was never set." in watch.shown_text()  # the frozen answer, in the panel
    offered = eval(k.value("offered"))
    assert set(offered[0]) <= set(READ_TOOLS)
    assert watch.find("ButtonModel", description="Explain")[-1].state.get("disabled") is False


def test_the_offer_is_not_recorded_as_an_output_of_the_next_cell(k: Kernel) -> None:
    _fail(k)
    reply = k.run("from IPython.display import display\ndisplay('next cell')")
    assert reply["status"] == "ok", reply
    count = int(reply["execution_count"])
    k.run("from pi_notebook.notebook.state import state_for")
    outputs = f"state_for(get_ipython()).errors.outputs.get({count}, [])"
    recorded = k.value(f"[o.get('text/plain') for o in {outputs}]")
    assert recorded == "[\"'next cell'\"]"
