"""JupyterLab and Jupyter Notebook 7 in Debian's Chromium: ``%pi export`` alone in a cell
inserts the code a run executed as ordinary code cells below it, through the notebook bridge,
marked and tagged as the agent's; run again (as Restart & Run All does) it inserts none twice;
the "Insert as cell" button under the run inserts its ``run_code`` call's code below the
``%%pi`` cell; after a kernel restart (the ``%%pi`` cell is not run again, no model is called)
running the exported cells alone reproduces the variables the agent made. Screenshots:
``test-output/browser/export-{lab,notebook}.png``."""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from browser_lab import BRIDGE_BUILD, CHROMIUM, SHOTS, Lab, chromium_page
from test_browser import run_cell

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is not installed"),
]
playwright_sync = pytest.importorskip("playwright.sync_api")

SETUP = """\
%load_ext pi_notebook
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_tool_call
faux = register_faux_provider()
faux.set_responses([
    faux_assistant_message([
        faux_tool_call("run_code", {"code": "base = [4, 5, 6]\\ntotal = sum(base)"}, id="c1"),
        faux_tool_call("set_variable", {"name": "doubled", "expression": "total * 2"}, id="c2"),
    ], stop_reason="toolUse"),
    faux_assistant_message("total is 15, doubled 30."),
])
print("setup done")
"""
RUN = "%%pi --model faux:faux-1 --approve auto\nCompute the total of 4, 5, 6 and double it."
CHECK = "print('check', total, doubled, 'faux' in globals())"


def _restart_kernel(lab: Lab) -> None:
    with urllib.request.urlopen(f"{lab.url}/api/kernels?token={lab.token}", timeout=10) as reply:
        [kernel] = json.load(reply)
    request = urllib.request.Request(
        f"{lab.url}/api/kernels/{kernel['id']}/restart?token={lab.token}", data=b"", method="POST"
    )
    with urllib.request.urlopen(request, timeout=60):
        pass


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_export_inserts_the_runs_code_and_it_reproduces_the_variables(tmp_path: Path, app: str) -> None:
    assert (BRIDGE_BUILD / "package.json").exists(), "build the labextension: bash scripts/setup.sh"
    if app == "notebook":
        pytest.importorskip("notebook", reason="Jupyter Notebook 7 (the `notebook` package) is not installed")
    expect = playwright_sync.expect
    with Lab(tmp_path, app=app) as lab, playwright_sync.sync_playwright() as p:
        url = lab.write_notebook("export.ipynb", [SETUP, RUN, "%pi export", CHECK])
        with chromium_page(p, lab, f"export-{app}-failure.png", height=1100) as page:
            _drive(page, lab, url, expect)


def _wait_idle(lab: Lab) -> None:
    """The kernel is idle (after a restart), as the server sees it."""
    for _ in range(120):
        with urllib.request.urlopen(f"{lab.url}/api/kernels?token={lab.token}", timeout=10) as reply:
            [kernel] = json.load(reply)
        if kernel.get("execution_state") == "idle":
            return
        time.sleep(0.5)
    raise AssertionError("the kernel did not become idle")


def _drive(page: Any, lab: Lab, url: str, expect: Any) -> None:
    page.goto(url)
    page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=60_000)
    cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
    expect(cells).to_have_count(4)
    for _ in range(6):  # a Shift+Enter before the kernel is ready is dropped (Notebook 7)
        run_cell(page, cells.nth(0))
        try:
            expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=15_000)
            break
        except AssertionError:
            continue
    else:
        raise AssertionError("the setup cell never ran")
    run_cell(page, cells.nth(1))
    expect(cells.nth(1).locator(".pi-static")).to_be_visible(timeout=60_000)
    # %pi export: the run's calls in order, below the export cell
    run_cell(page, cells.nth(2))
    expect(cells.nth(2).locator(".jp-OutputArea")).to_contain_text(
        "Inserted 2 cells below this cell (tag pi-export).", timeout=60_000
    )
    expect(cells).to_have_count(6, timeout=30_000)
    first, second = cells.nth(3).locator(".jp-InputArea-editor"), cells.nth(4).locator(".jp-InputArea-editor")
    expect(first).to_contain_text("# from %%pi run 1 (run_code, call 1)")
    expect(first).to_contain_text("total = sum(base)")
    expect(second).to_contain_text("# from %%pi run 1 (set_variable, call 2)")
    expect(second).to_contain_text("doubled = total * 2")
    # run again (as Run All would): nothing is inserted twice
    run_cell(page, cells.nth(2))
    expect(cells.nth(2).locator(".jp-OutputArea")).to_contain_text(
        "Inserted 0 cells below this cell (tag pi-export); 2 already in the notebook", timeout=60_000
    )
    expect(cells).to_have_count(6)
    # The run_code card's action, under the frozen run: one button per successful run_code call.
    insert = cells.nth(1).locator(".pi-insert-cell")
    expect(insert).to_have_count(1)
    expect(insert).to_contain_text("Insert as cell (run_code, call 1)")
    insert.click()
    expect(cells.nth(1).locator(".jp-OutputArea")).to_contain_text(
        "Inserted the code of run_code, call 1 as a cell.", timeout=30_000
    )
    expect(cells).to_have_count(7, timeout=30_000)
    by_button = cells.nth(2).locator(".jp-InputArea-editor")
    expect(by_button).to_contain_text("# from %%pi run 1 (run_code, call 1)")
    expect(by_button).to_contain_text("total = sum(base)")
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    page.wait_for_timeout(1500)
    saved = json.loads((lab.notebooks / "export.ipynb").read_text())["cells"]
    tags = [c["metadata"].get("tags") for c in saved]
    assert tags == [None, None, ["pi-export"], None, ["pi-export"], ["pi-export"], None]
    assert saved[5]["metadata"]["pi_notebook"] == {"run": 1, "tool": "set_variable", "call": 2}
    # A fresh kernel: the exported cells alone (no %%pi cell, no model) bring the variables back.
    _restart_kernel(lab)
    _wait_idle(lab)
    page.wait_for_timeout(1500)
    for index in (4, 5, 6):  # the exported cells and the check, nothing else
        run_cell(page, cells.nth(index))
        page.wait_for_timeout(300)
    expect(cells.nth(6).locator(".jp-OutputArea")).to_contain_text("check 15 30 False", timeout=60_000)
    page.screenshot(path=str(SHOTS / f"export-{lab.app}.png"), full_page=True)
