"""JupyterLab and Jupyter Notebook 7 in Debian's Chromium: a cell that raises shows Explain and
Fix under its traceback. Explain answers under the buttons; Fix (the faux model calls
``read_notebook``, ``edit_cell``, ``run_cell``) runs in a cell inserted below the failing one:
its card shows the diff, Apply changes the failing cell, Approve reruns it and the cell shows
its new, green output. Screenshots: ``test-output/browser/error-actions-{lab,notebook}.png``
(the buttons), ``error-explained-*.png`` (Explain's answer) and ``error-fixed-*.png`` (after
the fix)."""

from __future__ import annotations

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
faux = register_faux_provider(tokens_per_second=200)
def call(name, args, call_id):
    return faux_assistant_message([faux_tool_call(name, args, id=call_id)], stop_reason="toolUse")
faux.set_responses([
    "`undefined_price` is not defined: the cell uses a name no cell has set. Set it first.",
    call("read_notebook", {}, "r1"),
    call("edit_cell", {"cell_id": "bad", "old": "undefined_price", "new": "7"}, "e1"),
    call("run_cell", {"cell_id": "bad"}, "x1"),
    "Fixed: `undefined_price` was never defined; the cell now uses 7.",
])
get_ipython().run_line_magic("pi", "model faux:faux-1")
print("setup done")
"""
BAD = "total = undefined_price * 3\ntotal"


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_explain_and_fix_under_a_failing_cell(tmp_path: Path, app: str) -> None:
    assert (BRIDGE_BUILD / "package.json").exists(), "build the labextension: bash scripts/setup.sh"
    if app == "notebook":
        pytest.importorskip("notebook", reason="Jupyter Notebook 7 (the `notebook` package) is not installed")
    with Lab(tmp_path, app=app) as lab, playwright_sync.sync_playwright() as p:
        url = lab.write_notebook("errors.ipynb", [SETUP, BAD], ids=["setup", "bad"])
        with chromium_page(p, lab, f"error-actions-{app}-failure.png", height=1100) as page:
            _drive(page, url, app, playwright_sync.expect)


def _run(page: Any, cell: Any) -> None:
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def _start(page: Any, url: str, app: str, expect: Any) -> Any:
    page.goto(url)
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
    if app == "lab":
        page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for(timeout=90_000)
    else:
        page.locator(".jp-DebuggerBugButton").first.wait_for(state="attached", timeout=90_000)
    cells = page.locator(".jp-NotebookPanel .jp-Cell")
    for _ in range(6):  # a Shift+Enter before the kernel is ready is dropped (Notebook 7)
        _run(page, cells.nth(0))
        try:
            expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=15_000)
            return cells
        except AssertionError:
            continue
    raise AssertionError("the setup cell never ran")


def _drive(page: Any, url: str, app: str, expect: Any) -> None:
    cells = _start(page, url, app, expect)
    bad = cells.nth(1)
    _run(page, bad)
    actions = bad.locator(".pi-error-actions")
    expect(actions).to_be_visible(timeout=30_000)
    expect(bad.locator(".jp-OutputArea")).to_contain_text("NameError")
    explain, fix = actions.get_by_role("button", name="Explain"), actions.get_by_role("button", name="Fix")
    expect(explain).to_be_visible()
    expect(fix).to_be_visible()
    page.mouse.move(0, 0)
    page.screenshot(path=str(SHOTS / f"error-actions-{app}.png"), full_page=True)
    # Explain: the answer under the buttons, frozen when it ends; nothing changed
    explain.click()
    answer = actions.locator(".pi-static")
    expect(answer).to_contain_text("is not defined: the cell uses a name", timeout=60_000)
    expect(fix).to_be_enabled(timeout=30_000)
    expect(actions.locator(".pi-error-note")).to_have_text("")  # "Pi is explaining cell [2]…" went
    page.mouse.move(0, 0)
    page.screenshot(path=str(SHOTS / f"error-explained-{app}.png"), full_page=True)
    # Fix: a cell below the failing one holds the run; its card shows the diff
    fix.click()
    expect(cells).to_have_count(3, timeout=30_000)
    run = cells.nth(2)
    expect(run.locator(".jp-InputArea-editor")).to_contain_text("# %pi fix 2 (the Fix button under cell [2])")
    expect(actions.locator(".pi-error-note")).to_have_text("Pi's fix is in the cell below (# %pi fix 2).")
    expect(run.locator(".pi-diff")).to_contain_text("+total = 7 * 3", timeout=60_000)
    run.get_by_role("button", name="Apply").click()
    expect(bad.locator(".jp-InputArea-editor")).to_contain_text("total = 7 * 3", timeout=30_000)
    run.get_by_role("button", name="Approve").click()
    expect(bad.locator(".jp-OutputArea")).to_contain_text("21", timeout=60_000)
    expect(bad.locator(".jp-OutputArea")).not_to_contain_text("NameError")
    fixed = run.locator(".pi-static")
    expect(fixed).to_contain_text("Fixed: undefined_price was never defined", timeout=60_000)
    if app == "lab":  # the run has ended: the kernel is idle again (Notebook 7 shows no such text)
        page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for(timeout=30_000)
    page.mouse.move(0, 0)
    bad.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"error-fixed-{app}.png"), full_page=True)
