"""Review a run's changes at once, in a real ipykernel (jupyter_client) whose notebook is
``NotebookFrontend``: a frontend with the bridge, answering as the labextension does.

* A run that inserts, edits, runs and deletes cells ends with a summary, one line per change,
  and Accept all / Undo all under it; Undo all restores the notebook exactly (ids, types,
  sources, order, the outputs ``run_cell`` replaced) and the summary says so, its buttons
  disabled. A cell the user changed since is kept and named.
* An edit still waiting for Apply when the run was stopped is listed; Accept all applies it,
  folds the summary, and ``%pi undo`` can still take everything back.
* A run that changed nothing shows no summary; a ``--text`` run (nobody can click) ends its
  text with the summary and the ``%pi undo`` line; a headless run (nbclient) has no bridge, so
  it changes nothing and shows neither summary nor buttons.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from queue import Empty
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch
from notebook_frontend import NotebookFrontend
from test_headless_kernel import FAUX_SETUP, execute

pytestmark = pytest.mark.kernel

RUN = "%%pi --model faux:faux-1 --approve auto\nFix my notebook."
CELLS = [
    ("c-x", "code", "x = 1"),
    ("c-fix", "code", "y = 10 / 0\ny"),
    ("c-old", "markdown", "An obsolete note."),
    ("c-run", "code", RUN),
]
CHANGES = """
faux.set_responses([
    tool_use("read_notebook", {}, "r1"),
    tool_use("insert_cells", {"cells": [{"source": "total = 6 * 7"},
                                        {"source": "## Notes", "cell_type": "markdown"}]}, "i1"),
    tool_use("edit_cell", {"cell_id": "c-fix", "old": "10 / 0", "new": "10 / 5"}, "e1"),
    tool_use("run_cell", {"cell_id": "c-fix"}, "u1"),
    tool_use("delete_cells", {"cell_ids": ["c-old"]}, "d1"),
    "Done.",
])
"""
SUMMARY = [
    "This run changed the notebook: inserted 2 cells, edited 1 cell, ran 1 cell, deleted 1 cell",
    "  + inserted cell new-1: total = 6 * 7",
    "  + inserted cell new-2: ## Notes",
    "  ~ edited cell c-fix: y = 10 / 0 → y = 10 / 5",
    "  > ran cell c-fix: its outputs replaced",
    "  - deleted markdown cell c-old (was cell 3): An obsolete note.",
]


def run_in_cell(k: Kernel, code: str, cell_id: str) -> str:
    """An ``execute_request`` as JupyterLab sends it: a page (stdin allowed) and the cell's id."""
    content = {
        "code": code,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": True,
        "stop_on_error": True,
    }
    request = k.kc.session.msg("execute_request", content, metadata={"cellId": cell_id})
    k.kc.shell_channel.send(request)
    return str(request["header"]["msg_id"])


def pump(watch: Watch, front: NotebookFrontend, until: Any, timeout: float = 30) -> None:
    """Read IOPub (answering the bridge) until ``until(watch)``; the kernel is idle, a click's
    work runs on its loop."""
    deadline = time.monotonic() + timeout
    while not until(watch):
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout} s; shown: {watch.shown_text()[-2000:]}")
        try:
            msg = watch.kernel.kc.get_iopub_msg(timeout=0.05)
        except Empty:
            continue
        watch._record(msg)
        front.react(watch, msg)


def review_html(watch: Watch) -> str:
    found = [
        str(w.state.get("value", ""))
        for w in watch.find("HTMLModel")
        if "pi-review" in str(w.state.get("value"))
    ]
    assert found, "no review summary shown"
    return found[-1]


def review_display(watch: Watch) -> dict[str, Any]:
    shown = [
        c["data"] for _, kind, c in watch.displays if kind == "display_data" and "pi-review" in str(c["data"])
    ]
    assert len(shown) == 1, shown
    return dict(shown[0])


def changing_run(k: Kernel) -> tuple[NotebookFrontend, Watch]:
    """The run of ``CHANGES``: Approve clicked on ``delete_cells`` (it always asks)."""
    assert k.run(CHANGES)["status"] == "ok"
    front = NotebookFrontend(k, CELLS)
    clicked: set[str] = set()

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        front.react(watch, msg)
        for button in watch.find("ButtonModel", description="Approve", disabled=False):
            if button.comm_id not in clicked:
                clicked.add(button.comm_id)
                k.click(button.comm_id)

    cell = run_in_cell(k, RUN, "c-run")
    watch = Watch(k).until_replies([cell], react, timeout=60)
    assert watch.replies[cell][1]["status"] == "ok"
    return front, watch


def test_the_summary_lists_the_changes_and_undo_all_restores_the_notebook(k: Kernel) -> None:
    front, watch = changing_run(k)
    assert front.shape() == [
        ("c-x", "code", "x = 1"),
        ("c-fix", "code", "y = 10 / 5\ny"),
        ("c-run", "code", RUN),
        ("new-1", "code", "total = 6 * 7"),
        ("new-2", "markdown", "## Notes"),
    ]
    assert front.cell("c-fix")["outputs"]  # run_cell wrote them
    bundle = review_display(watch)
    assert bundle["text/plain"].splitlines() == SUMMARY
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "This run changed the notebook" in bundle["text/html"]
    assert "This run changed the notebook" not in watch.final_bundle()["text/plain"]  # once, under the run
    accept, undo = watch.button("Accept all"), watch.button("Undo all")

    before = len(front.requests)
    k.click(undo.comm_id)
    k.click(undo.comm_id)  # a second click, sent before the first disabled the button: ignored
    k.click(accept.comm_id)
    pump(watch, front, lambda w: "Undid the run" in review_html(w))
    quiet = time.monotonic() + 1.5  # what a second undo or the accept would have drawn by now
    pump(watch, front, lambda w: time.monotonic() > quiet)
    assert front.shape() == CELLS
    # one undo, last change first: c-old back, run_cell's outputs, the edit, the two inserted cells
    assert [r["op"] for r in front.requests[before:]] == ["insert", "set_outputs", "edit", "delete", "delete"]
    assert front.cell("c-fix")["outputs"] == []
    shown = review_html(watch)
    assert "Undid the run (inserted 2 cells, edited 1 cell, ran 1 cell, deleted 1 cell)" in shown
    assert "kept" not in shown
    assert "Accepted" not in shown
    assert shown.index("restored deleted cell c-old") < shown.index(
        "removed inserted cell new-1"
    )  # last first
    assert "pi-review-undone" in shown
    assert watch.widgets[accept.comm_id].state["disabled"]
    assert watch.widgets[undo.comm_id].state["disabled"]
    # the run's journal is empty now: %pi undo has nothing to take back
    assert k.run("%pi undo")["stdout"].strip().startswith("Nothing to undo")
    assert front.shape() == CELLS


def test_undo_all_keeps_a_cell_the_user_changed_since_and_says_so(k: Kernel) -> None:
    front, watch = changing_run(k)
    front.cell("new-1")["source"] = "total = 0  # mine"  # the user's edit after the run
    k.click(watch.button("Undo all").comm_id)
    pump(watch, front, lambda w: "Undid the run" in review_html(w))
    shown = review_html(watch)
    assert "except 1 change kept" in shown
    assert "kept insert of cell new-1: cell new-1 changed since it was read (nothing overwritten)" in shown
    assert front.shape() == [*CELLS, ("new-1", "code", "total = 0  # mine")]


WAITING = """
faux.set_responses([
    tool_use("read_notebook", {}, "r1"),
    tool_use("insert_cells", {"cells": [{"source": "total = 6 * 7"}]}, "i1"),
    tool_use("edit_cell", {"cell_id": "c-fix", "old": "10 / 0", "new": "10 / 5"}, "e1"),
    "Done.",
])
"""


def test_accept_all_applies_the_edit_still_waiting_when_the_run_was_stopped(k: Kernel) -> None:
    assert k.run(WAITING)["status"] == "ok"
    run = "%%pi --model faux:faux-1\nFix my notebook."
    front = NotebookFrontend(k, [*CELLS[:3], ("c-run", "code", run)])
    done: list[str] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        front.react(watch, msg)
        if "Apply this change?" in watch.shown_text() and "stop" not in done:
            done.append("stop")  # the edit's card asks: the user stops the run instead
            k.click(watch.button("Stop").comm_id)
        elif not done and watch.find("ButtonModel", description="Apply", disabled=False):
            done.append("apply")  # the insert's card
            k.click(watch.button("Apply").comm_id)

    cell = run_in_cell(k, run, "c-run")
    watch = Watch(k).until_replies([cell], react, timeout=60)
    assert done == ["apply", "stop"]
    assert front.cell("c-fix")["source"] == "y = 10 / 0\ny"
    assert review_display(watch)["text/plain"].splitlines() == [
        "This run changed the notebook: inserted 1 cell; 1 edit waiting for Apply",
        "  + inserted cell new-1: total = 6 * 7",
        "  ? edit of cell c-fix not applied (the run ended before Apply): y = 10 / 0 → y = 10 / 5",
    ]
    accept, undo = watch.button("Accept all"), watch.button("Undo all")
    k.click(accept.comm_id)
    pump(watch, front, lambda w: "Accepted" in review_html(w))
    assert front.cell("c-fix")["source"] == "y = 10 / 5\ny"
    shown = review_html(watch)
    assert (
        "Accepted: kept inserted 1 cell; applied 1 of 1 waiting edit (%pi undo can still take them back)"
        in shown
    )
    assert "applied the edit of cell c-fix" in shown
    assert '<details class="pi-review-fold">' in shown  # folded: no longer open
    assert watch.widgets[accept.comm_id].state["disabled"]
    assert watch.widgets[undo.comm_id].state["disabled"]
    # %pi undo takes back the run, the edit Accept all applied included
    undo_cell = run_in_cell(k, "%pi undo", "c-undo")
    Watch(k).until_replies([undo_cell], front.react, timeout=30)
    assert front.shape() == [*CELLS[:3], ("c-run", "code", run)]


def test_a_run_that_changes_nothing_shows_no_summary(k: Kernel) -> None:
    assert (
        k.run('faux.set_responses([tool_use("read_notebook", {}, "r1"), "Nothing to fix."])')["status"]
        == "ok"
    )
    front = NotebookFrontend(k, CELLS)
    cell = run_in_cell(k, RUN, "c-run")
    watch = Watch(k).until_replies([cell], front.react, timeout=60)
    assert [r["op"] for r in front.requests] == ["read"]
    assert watch.find("ButtonModel", description="Accept all") == []
    assert not [c for _, _, c in watch.displays if "pi-review" in str(c["data"])]
    assert "changed the notebook" not in watch.final_bundle()["text/plain"]


def test_where_nobody_can_click_the_summary_ends_the_text_with_the_command(k: Kernel) -> None:
    assert (
        k.run(CHANGES.replace('tool_use("delete_cells", {"cell_ids": ["c-old"]}, "d1"),', ""))["status"]
        == "ok"
    )
    run = RUN.replace("--approve auto", "--approve auto --text")
    front = NotebookFrontend(k, [*CELLS[:3], ("c-run", "code", run)])
    cell = run_in_cell(k, run, "c-run")
    watch = Watch(k).until_replies([cell], front.react, timeout=60)
    assert watch.find("ButtonModel") == []
    text = _only_display(watch)
    assert text.rstrip().endswith(
        "\n".join(
            [
                "This run changed the notebook: inserted 2 cells, edited 1 cell, ran 1 cell",
                *SUMMARY[1:5],
                "To take them back: %pi undo, alone in a cell.",
            ]
        )
    )


def _only_display(watch: Watch) -> str:
    [data] = [c["data"] for _, kind, c in watch.displays if kind == "display_data"]
    return str(data["text/plain"])


def test_a_headless_run_changes_nothing_and_shows_no_summary_nor_buttons(tmp_path: Path) -> None:
    sources = [FAUX_SETUP + CHANGES, "%%pi --model faux:faux-1 --approve auto\nFix my notebook."]
    cells = execute(tmp_path, sources, timeout=60).cells
    outputs = cells[1].outputs
    assert all("application/vnd.jupyter.widget-view+json" not in o.get("data", {}) for o in outputs)
    [shown] = [o.data["text/plain"] for o in outputs if o.output_type == "display_data"]
    assert "Not inserted: this headless run" in shown
    assert "changed the notebook" not in shown


def test_a_summary_line_never_shows_a_key(k: Kernel) -> None:
    """A line quotes a cell, and the output is saved with the notebook: keys are redacted."""
    secret = "zq7-4fJ2kP9sW1xV8"
    assert k.run(f"SERVICE_API_KEY = {secret!r}")["status"] == "ok"
    cells = [{"source": f"key = {secret!r}"}]
    assert (
        k.run(f'faux.set_responses([tool_use("insert_cells", {{"cells": {cells!r}}}, "i1"), "ok"])')["status"]
        == "ok"
    )
    front = NotebookFrontend(k, CELLS)
    cell = run_in_cell(k, RUN, "c-run")
    watch = Watch(k).until_replies([cell], front.react, timeout=60)
    assert front.cell("new-1")["source"] == f"key = {secret!r}"  # the notebook has what the agent wrote
    bundle = review_display(watch)
    assert "+ inserted cell new-1: key = '[REDACTED]'" in bundle["text/plain"]
    assert secret not in str(bundle)
    assert secret not in review_html(watch)
