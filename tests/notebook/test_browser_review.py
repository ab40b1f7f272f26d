"""Review a run's changes at once, in JupyterLab and in Notebook 7 (Debian's Chromium).

A scripted run (the faux provider's tool calls, ``--approve auto``; ``delete_cells`` still asks
and is approved) inserts a cell, edits one and deletes one; its output ends with the summary,
one line per change, and Accept all / Undo all. Undo all restores the notebook: after saving,
the file holds exactly the cells it had (ids, types, sources, order). A second run inserts a
cell (Apply) and proposes an edit, and the user stops it while the edit waits for Apply; the
summary lists the waiting edit, Accept all applies it and folds the summary; both buttons are
then disabled. Screenshots: ``test-output/browser/review-{lab,notebook}-*.png``.

Needs the ``pi-notebook-bridge`` labextension built by ``scripts/setup.sh``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from browser_lab import BRIDGE_BUILD, CHROMIUM, SHOTS, Lab, chromium_page
from test_browser_edits import _save, _start

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
    call("insert_cells", {"cells": [{"source": "total = 6 * 7"}]}, "t2"),
    call("edit_cell", {"cell_id": "c-fix", "old": "10 / 0", "new": "10 / 5"}, "t3"),
    call("delete_cells", {"cell_ids": ["c-old"]}, "t4"),
    faux_assistant_message("Tidied."),
    call("read_notebook", {}, "u1"),
    call("insert_cells", {"cells": [{"source": "check = y * 4"}]}, "u2"),
    call("edit_cell", {"cell_id": "c-fix", "old": "10 / 0", "new": "10 / 4"}, "u3"),
    faux_assistant_message("Fixed."),
])
print("setup done:", faux is not None)
"""
IDS = ["c-setup", "c-x", "c-fix", "c-old", "c-run1", "c-run2", "c-end"]
CELLS = [
    SETUP,
    "x = 1",
    "y = 10 / 0\ny",
    "# md\nAn obsolete note.",
    "%%pi --model faux:faux-1 --approve auto\nTidy my notebook.",
    "%%pi --model faux:faux-1\nFix the division.",
    "# md\nThe end.",
]
ORIGINAL = [
    ("c-setup", "code", SETUP),
    ("c-x", "code", "x = 1"),
    ("c-fix", "code", "y = 10 / 0\ny"),
    ("c-old", "markdown", "An obsolete note."),
    ("c-run1", "code", CELLS[4]),
    ("c-run2", "code", CELLS[5]),
    ("c-end", "markdown", "The end."),
]


def _cells(path: Path) -> list[tuple[str, str, str]]:
    return [(c["id"], c["cell_type"], "".join(c["source"])) for c in json.loads(path.read_text())["cells"]]


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_review_a_runs_changes_then_undo_all_and_accept_all(tmp_path: Path, app: str) -> None:
    assert (BRIDGE_BUILD / "package.json").exists(), "build the labextension: bash scripts/setup.sh"
    if app == "notebook":
        pytest.importorskip("notebook", reason="Jupyter Notebook 7 (the `notebook` package) is not installed")
    with Lab(tmp_path, app=app) as lab, playwright_sync.sync_playwright() as p:
        url = lab.write_notebook("review.ipynb", CELLS, ids=IDS)
        with chromium_page(p, lab, f"review-{app}-failure.png", height=1400) as page:
            _start(page, url, app)
            saved = lab.notebooks / "review.ipynb"
            _undo_all(page, saved, app)
            _accept_all(page, saved, app)


def _run(page: Any, has_text: str) -> Any:
    # the cell whose input has the text (a run's read_notebook card shows other cells' inputs)
    run = page.locator(".jp-Cell").filter(has=page.locator(".jp-InputArea-editor", has_text=has_text))
    run.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    return run


def _undo_all(page: Any, saved: Path, app: str) -> None:
    expect = playwright_sync.expect
    run = _run(page, "Tidy my notebook.")
    approve = run.get_by_role("button", name="Approve")  # delete_cells asks even under auto
    expect(approve).to_be_visible(timeout=60_000)
    approve.click()
    review = run.locator(".pi-review")
    expect(review).to_be_visible(timeout=60_000)
    expect(review).to_contain_text(
        "This run changed the notebook: inserted 1 cell, edited 1 cell, deleted 1 cell"
    )
    expect(review).to_contain_text("total = 6 * 7")
    expect(review).to_contain_text("~ edited cell c-fix: y = 10 / 0 → y = 10 / 5")
    expect(review).to_contain_text("- deleted markdown cell c-old (was cell 4): An obsolete note.")
    expect(run.locator(".pi-static")).to_contain_text("Tidied.")
    expect(page.locator(".jp-MarkdownCell", has_text="An obsolete note.")).to_have_count(0)
    page.screenshot(path=str(SHOTS / f"review-{app}-1-summary.png"), full_page=True)
    _save(page)
    changed = _cells(saved)
    assert [c for c in changed if c[0] in IDS] == [
        ORIGINAL[0],
        ORIGINAL[1],
        ("c-fix", "code", "y = 10 / 5\ny"),
        *ORIGINAL[4:],
    ]
    assert [c[1:] for c in changed if c[0] not in IDS] == [("code", "total = 6 * 7")]

    run.get_by_role("button", name="Undo all").click()
    expect(review).to_contain_text(
        "Undid the run (inserted 1 cell, edited 1 cell, deleted 1 cell)", timeout=30_000
    )
    expect(review).to_contain_text("restored deleted cell c-old")
    expect(run.get_by_role("button", name="Undo all")).to_be_disabled()
    expect(run.get_by_role("button", name="Accept all")).to_be_disabled()
    expect(page.locator(".jp-MarkdownCell", has_text="An obsolete note.")).to_have_count(1)
    page.screenshot(path=str(SHOTS / f"review-{app}-2-undone.png"), full_page=True)
    _save(page)
    assert _cells(saved) == ORIGINAL  # exactly the notebook the run began with


def _accept_all(page: Any, saved: Path, app: str) -> None:
    expect = playwright_sync.expect
    run = _run(page, "Fix the division.")
    view = run.locator(".pi-view")
    insert = view.get_by_role("button", name="Apply")
    expect(view).to_contain_text("Apply inserts 1 cell", timeout=60_000)
    insert.click()
    expect(view.locator(".pi-diff")).to_contain_text("+y = 10 / 4", timeout=30_000)
    page.screenshot(path=str(SHOTS / f"review-{app}-3-waiting.png"), full_page=True)
    view.get_by_role("button", name="Stop").click()  # the user stops the run while the edit waits
    review = run.locator(".pi-review")
    expect(review).to_contain_text(
        "This run changed the notebook: inserted 1 cell; 1 edit waiting for Apply", timeout=60_000
    )
    expect(review).to_contain_text("? edit of cell c-fix not applied (the run ended before Apply)")
    fixed = page.locator(".jp-Cell", has_text="y = 10 /").first
    expect(fixed.locator(".jp-InputArea-editor")).to_have_text("y = 10 / 0y")
    page.screenshot(path=str(SHOTS / f"review-{app}-4-stopped.png"), full_page=True)

    run.get_by_role("button", name="Accept all").click()
    expect(review).to_contain_text(
        "Accepted: kept inserted 1 cell; applied 1 of 1 waiting edit (%pi undo can still take them back)",
        timeout=30_000,
    )
    expect(review.locator(".pi-review-line").first).to_be_hidden()  # folded
    expect(fixed.locator(".jp-InputArea-editor")).to_have_text("y = 10 / 4y")
    expect(run.get_by_role("button", name="Accept all")).to_be_disabled()
    expect(run.get_by_role("button", name="Undo all")).to_be_disabled()
    page.screenshot(path=str(SHOTS / f"review-{app}-5-accepted.png"), full_page=True)
    _save(page)
    cells = _cells(saved)
    assert ("c-fix", "code", "y = 10 / 4\ny") in cells
    assert [c[2] for c in cells if c[0] not in IDS] == ["check = y * 4"]
