"""The agent edits the live notebook, in JupyterLab and in Notebook 7 (Debian's Chromium).

A scripted run (the faux provider's tool calls) reads the notebook with an edit the user has
not saved, inserts two cells (the card shows the cells Apply inserts), proposes two edits (the
test Applies one and Rejects the other), runs the edited cell on approval, deletes a cell
(asked although the run is not ``ask`` for the others), and tries to edit a cell the user
changed while the run waited: refused, the user's text kept. After saving, the file holds
exactly the accepted changes; undo (Undo all under the run in JupyterLab, ``%pi undo`` in
Notebook 7) then restores everything the run changed, and the saved file says so again.

Needs the ``pi-notebook-bridge`` labextension built by ``scripts/setup.sh``; without it the
test fails (the frontend would not answer and every edit tool would fall back).

The JupyterLab flow runs once more against the wheel ``pip install``ed into a fresh venv with no
node (fixture ``wheel_venv``, ``tests/wheel_venv.py``): that venv's JupyterLab, the bridge from its
``share/jupyter`` (installed by pip, as the server's extension API says), and the Pi kernel of its
``pi`` kernelspec importing the wheel's package; nothing of this checkout is on its paths. That
``pip install`` of the wheel is the whole install for the agent's notebook edits.
Screenshots: ``test-output/browser/edits-*.png``.
"""

from __future__ import annotations

import json
import re
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from browser_lab import BRIDGE_BUILD, CHROMIUM, SHOTS, Lab, chromium_page
from wheel_venv import WheelVenv  # tests/ is on sys.path (tests/conftest.py)

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
import pi_notebook
print("setup done:", pi_notebook.__file__)
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


@pytest.mark.wheel
def test_agent_edits_the_live_notebook_in_jupyterlab_installed_from_the_wheel(
    tmp_path: Path, wheel_venv: WheelVenv
) -> None:
    _run(tmp_path, "lab", wheel_venv)


def _run(tmp_path: Path, app: str, venv: WheelVenv | None = None) -> None:
    if venv is None:
        assert (BRIDGE_BUILD / "package.json").exists(), "build the labextension: bash scripts/setup.sh"
    name = f"{app}-wheel" if venv is not None else app
    with Lab(tmp_path, app=app, venv=venv) as lab, playwright_sync.sync_playwright() as p:
        if venv is not None:
            _assert_bridge_installed_by_pip(lab)
        url = lab.write_notebook("fix.ipynb", CELLS, ids=IDS)
        with chromium_page(p, lab, f"edits-{name}-failure.png", height=1800) as page:
            cells = _start(page, url, app)
            if venv is not None:  # the kernel imports the wheel's package, not this checkout's
                wheels = str(venv.site / "pi_notebook" / "__init__.py")
                playwright_sync.expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text(wheels)
            _drive(page, cells, lab.notebooks / "fix.ipynb", app, name)


def _assert_bridge_installed_by_pip(lab: Lab) -> None:
    """The server's extension API: the bridge enabled and OK, with the ``install.json`` pip put
    there, in a server whose environment is the venv (``sys.prefix``)."""
    with urllib.request.urlopen(f"{lab.url}/lab/api/extensions?token={lab.token}", timeout=30) as reply:
        listed = json.loads(reply.read())
    bridge = next((e for e in listed if e["name"] == "pi-notebook-bridge"), None)
    assert bridge is not None, listed
    assert (bridge["enabled"], bridge["status"]) == (True, "ok"), bridge
    assert bridge["install"]["packageManager"] == "python", bridge
    assert bridge["install"]["packageName"] == "pi-notebook", bridge


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
                "setup done:", timeout=15_000
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


def _drive(page: Any, cells: Any, saved: Path, app: str, name: str) -> None:
    expect = playwright_sync.expect
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
    page.screenshot(path=str(SHOTS / f"edits-{name}-1-diff.png"), full_page=True)
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
    page.screenshot(path=str(SHOTS / f"edits-{name}-2-delete.png"), full_page=True)
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
    page.screenshot(path=str(SHOTS / f"edits-{name}-3-done.png"), full_page=True)

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
        run.get_by_role("button", name="Undo all").click()  # the review of the run's changes
    else:  # the command
        undo = page.locator(".jp-Cell", has_text="%pi undo").last
        undo.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        told = undo.locator(".jp-OutputArea")
    expect(told).to_contain_text("Undid the run", timeout=30_000)
    expect(told).to_contain_text("restored deleted cell c-old")
    expect(page.locator(".jp-MarkdownCell", has_text="Added by the agent")).to_have_count(0)
    page.screenshot(path=str(SHOTS / f"edits-{name}-4-undone.png"), full_page=True)
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
