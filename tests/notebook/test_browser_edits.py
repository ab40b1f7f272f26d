"""The agent edits the live notebook, in JupyterLab and in Notebook 7 (Debian's Chromium).

A scripted run (the faux provider's tool calls) reads the notebook with an edit the user has
not saved, inserts two cells (the card shows the cells Apply inserts), proposes two edits (the
test Applies one and Rejects the other), runs the edited cell on approval, deletes a cell
(asked although the run is not ``ask`` for the others), and tries to edit a cell the user
changed while the run waited: refused, the user's text kept. After saving, the file holds
exactly the accepted changes; undo (the button under the run in JupyterLab, ``%pi undo`` in
Notebook 7) then restores everything the run changed, and the saved file says so again.

Needs the ``pi-notebook-bridge`` labextension built by ``scripts/setup.sh``; without it the
test fails (the frontend would not answer and every edit tool would fall back).
Screenshots: ``test-output/browser/edits-*.png``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from browser_lab import BRIDGE_BUILD, CHROMIUM, SHOTS, Lab, chromium_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is not installed"),
]
playwright_sync = pytest.importorskip("playwright.sync_api")

SETUP = """\
%load_ext pi_notebook
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_tool_call
def call(name, args, id):
    return faux_assistant_message([faux_tool_call(name, args, id=id)], stop_reason="toolUse")
faux = register_faux_provider()
faux.set_responses([
    call("read_notebook", {}, "t1"),
    call("insert_cells", {"cells": [{"source": "## Added by the agent", "cell_type": "markdown"},
                                    {"source": "total = 6 * 7"}]}, "t2"),
    call("edit_cell", {"cell_id": "c-fix", "old": "10 / 0", "new": "10 / 5"}, "t3"),
    call("edit_cell", {"cell_id": "c-other", "source": "z = 'changed by the agent'"}, "t4"),
    call("run_cell", {"cell_id": "c-fix"}, "t5"),
    call("delete_cells", {"cell_ids": ["c-old"]}, "t6"),
    call("edit_cell", {"cell_id": "c-user", "source": "w = 'agent'"}, "t7"),
    faux_assistant_message("Done."),
])
print("setup done")
"""
IDS = ["c-setup", "c-data", "c-fix", "c-other", "c-old", "c-user", "c-run", "c-undo"]
CELLS = [
    SETUP,
    "x = 1",
    "y = 10 / 0\ny",
    "z = 'keep me'",
    "# md\nAn obsolete note.",
    "w = 'user'",
    "%%pi --model faux:faux-1\nFix my notebook.",
    "%pi undo",
]


def test_agent_edits_the_live_notebook_in_jupyterlab(tmp_path: Path) -> None:
    _run(tmp_path, "lab")


def test_agent_edits_the_live_notebook_in_notebook7(tmp_path: Path) -> None:
    pytest.importorskip("notebook", reason="Jupyter Notebook 7 (the `notebook` package) is not installed")
    _run(tmp_path, "notebook")


def _run(tmp_path: Path, app: str) -> None:
    assert (BRIDGE_BUILD / "package.json").exists(), "build the labextension: bash scripts/setup.sh"
    with Lab(tmp_path, app=app) as lab, playwright_sync.sync_playwright() as p:
        url = lab.write_notebook("fix.ipynb", CELLS, ids=IDS)
        with chromium_page(p, lab, f"edits-{app}-failure.png", height=1800) as page:
            _drive(page, url, lab.notebooks / "fix.ipynb", app)


def _sources(path: Path) -> list[tuple[str, str]]:
    cells = json.loads(path.read_text())["cells"]
    return [(c["cell_type"], "".join(c["source"])) for c in cells]


def _type_at_end(page: Any, cell: Any, text: str) -> None:
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+End")
    page.keyboard.type(text)
    page.keyboard.press("Escape")  # command mode: the next keys do not land in the editor


def _start(page: Any, url: str, app: str) -> Any:
    page.goto(url)
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    if app == "lab":
        page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for(timeout=90_000)
    else:
        page.locator(".jp-DebuggerBugButton").first.wait_for(state="attached", timeout=90_000)
    cells = page.locator(".jp-NotebookPanel .jp-Cell")
    setup = cells.nth(0)
    for _ in range(6):  # a Shift+Enter before the kernel is ready is dropped (Notebook 7)
        setup.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        try:
            playwright_sync.expect(setup.locator(".jp-OutputArea")).to_contain_text(
                "setup done", timeout=15_000
            )
            return cells
        except AssertionError:
            continue
    raise AssertionError("the setup cell never ran")


def _card(view: Any, name: str) -> Any:
    """The tool card of the (only) call of ``name``."""
    return view.locator(".pi-tool").filter(
        has=view.page.locator(".pi-tool-head", has_text=re.compile(rf"^{name}\b"))
    )


def _save(page: Any) -> None:
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    page.wait_for_timeout(1500)


def _drive(page: Any, url: str, saved: Path, app: str) -> None:
    expect = playwright_sync.expect
    cells = _start(page, url, app)
    _type_at_end(page, cells.nth(1), "  # unsaved")  # the user's edit, not saved
    run = page.locator(".jp-Cell", has_text="Fix my notebook.")  # its index changes as cells go
    run.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    view = run.locator(".pi-view")

    insert = _card(view, "insert_cells")
    expect(insert).to_be_visible(timeout=60_000)
    # the card shows what Apply inserts, in its buttons' words (the run's policy is ask)
    expect(insert).to_contain_text("Apply inserts 2 cells after this %%pi cell", timeout=30_000)
    expect(insert).to_contain_text("## Added by the agent")
    expect(insert).to_contain_text("total = 6 * 7")
    expect(view.get_by_role("button", name="Approve")).to_have_count(0)
    page.screenshot(path=str(SHOTS / f"edits-{app}-0-insert.png"), full_page=True)
    insert.get_by_role("button", name="Apply").click()
    expect(view.locator(".pi-diff")).to_contain_text("+y = 10 / 5", timeout=30_000)
    apply = view.get_by_role("button", name="Apply")
    expect(apply).to_be_visible(timeout=30_000)
    expect(_card(view, "read_notebook")).to_contain_text("x = 1  # unsaved")
    expect(_card(view, "read_notebook")).to_contain_text("with unsaved edits")
    expect(view.locator(".pi-diff")).to_contain_text("+y = 10 / 5")
    expect(page.locator(".jp-MarkdownCell", has_text="Added by the agent")).to_have_count(1)  # inserted live
    page.screenshot(path=str(SHOTS / f"edits-{app}-1-diff.png"), full_page=True)
    apply.click()

    reject = view.get_by_role("button", name="Reject")
    expect(view.locator(".pi-diff")).to_contain_text("+z = 'changed by the agent'", timeout=30_000)
    # While the run waits, the user changes a cell the agent has read.
    _type_at_end(page, cells.nth(5), "  # mine")  # c-user, above the run
    reject.click()

    approve = view.get_by_role("button", name="Approve")
    expect(_card(view, "run_cell")).to_contain_text("Run cell c-fix?", timeout=30_000)
    approve.click()
    expect(_card(view, "delete_cells")).to_contain_text("Delete 1 cell?", timeout=30_000)
    page.screenshot(path=str(SHOTS / f"edits-{app}-2-delete.png"), full_page=True)
    view.get_by_role("button", name="Approve").click()

    static = run.locator(".pi-static")
    expect(static).to_be_visible(timeout=60_000)
    expect(static).to_contain_text("Done.")
    expect(_card(static, "run_cell")).to_contain_text("2.0")
    expect(static).to_contain_text("The user rejected this change")
    expect(static).to_contain_text("cell c-user changed")
    fixed = cells.nth(2)  # c-fix
    expect(fixed.locator(".jp-InputArea-editor")).to_have_text("y = 10 / 5y")
    expect(fixed.locator(".jp-OutputArea")).to_contain_text("2.0")  # run_cell's output, in the cell
    page.screenshot(path=str(SHOTS / f"edits-{app}-3-done.png"), full_page=True)

    _save(page)
    after_run = [
        ("code", SETUP),
        ("code", "x = 1  # unsaved"),
        ("code", "y = 10 / 5\ny"),
        ("code", "z = 'keep me'"),
        ("code", "w = 'user'  # mine"),
        ("code", CELLS[6]),
        ("markdown", "## Added by the agent"),
        ("code", "total = 6 * 7"),
        ("code", "%pi undo"),
    ]
    assert _sources(saved) == after_run

    if app == "lab":  # the button under the run
        told = run.locator(".jp-OutputArea")
        run.get_by_role("button", name="Undo this run's notebook changes").click()
    else:  # the command
        undo = page.locator(".jp-Cell", has_text="%pi undo").last
        undo.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        told = undo.locator(".jp-OutputArea")
    expect(told).to_contain_text("Undid the run", timeout=30_000)
    expect(told).to_contain_text("restored deleted cell c-old")
    expect(page.locator(".jp-MarkdownCell", has_text="Added by the agent")).to_have_count(0)
    page.screenshot(path=str(SHOTS / f"edits-{app}-4-undone.png"), full_page=True)
    _save(page)
    restored = json.loads(saved.read_text())["cells"]
    assert _sources(saved) == [
        ("code", SETUP),
        ("code", "x = 1  # unsaved"),
        ("code", "y = 10 / 0\ny"),
        ("code", "z = 'keep me'"),
        ("markdown", "An obsolete note."),
        ("code", "w = 'user'  # mine"),
        ("code", CELLS[6]),
        ("code", "%pi undo"),
        *([("code", "")] if app != "lab" else []),  # Shift+Enter on the last cell adds one
    ]
    fix = next(c for c in restored if c["id"] == "c-fix")
    assert fix["outputs"] == []  # run_cell's outputs taken back with the edit
    assert [c["id"] for c in restored][4] == "c-old"  # the deleted cell came back with its id
    assert re.search(
        r"Undid the run \(inserted 2 cells, edited 1 cell, ran 1 cell, deleted 1 cell\)", told.inner_text()
    )
