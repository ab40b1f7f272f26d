"""A ``%%pi`` run survives a reload of a notebook that was never saved with it, with the notebook
bridge (the pi-notebook-bridge labextension), in JupyterLab and Notebook 7 in Debian's Chromium.

* Mid-run, the cell saved empty and the prompt typed after the last save: the reloaded page has
  the cell (by id) with an empty input; the run comes back in it with its source, so saving
  from the new page writes the prompt above its answer.
* An approval pending in a cell added after the last save: the reloaded document has no such
  cell; the bridge inserts it at the end (source, id, the live card) and a notification says so;
  Approve works there, the run ends and the kernel is idle.

The long answer holds mid-stream until the test releases it (``faux_gate.py``). Screenshots of
each page state go to ``test-output/browser/reload-unsaved-<app>-*.png``. Never downloads a
browser.
"""

from __future__ import annotations

import json
import re
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from browser_lab import BRIDGE_BUILD, CHROMIUM, SHOTS, Lab, chromium_page
from faux_gate import held_setup, release
from test_browser import run_cell, step
from test_browser_notebook7 import _run_first_cell
from test_browser_reload import _open, _save

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is not installed"),
    pytest.mark.skipif(
        not (BRIDGE_BUILD / "package.json").exists(), reason="build the labextension: bash scripts/setup.sh"
    ),
]
playwright_sync = pytest.importorskip("playwright.sync_api")

WORDS = "".join(f"w{i} " for i in range(80))
SETUP = f"""\
%load_ext pi_notebook
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_text, faux_tool_call
faux = register_faux_provider(token_size={{"min": 1, "max": 1}})
faux.set_responses([
    faux_assistant_message({WORDS!r} + "the end."),
    faux_assistant_message(
        [faux_text("I will set a variable."),
         faux_tool_call("set_variable", {{"name": "approved_after_reload", "value": 9}}, id="r1")],
        stop_reason="toolUse",
    ),
    faux_assistant_message("Set after the reload, **done**."),
])
"""
TYPED = "%%pi --model faux:faux-1\nCount slowly, typed after the save."
ADDED = "%%pi\nSet a variable, in a cell added after the save."
NOTICE = "A pi cell that ran after the last save was not in the notebook"
EMPTY_ID = "saved-empty"


def _shot(page: Any, lab: Lab, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"reload-unsaved-{lab.app}-{name}.png"), full_page=True)


def _kernel_state(lab: Lab) -> str:
    with urllib.request.urlopen(f"{lab.url}/api/kernels?token={lab.token}", timeout=10) as reply:
        [kernel] = json.load(reply)
    return str(kernel["execution_state"])


def _wait_idle(lab: Lab, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    state = _kernel_state(lab)
    while state != "idle" and time.monotonic() < deadline:
        time.sleep(0.3)
        state = _kernel_state(lab)
    assert state == "idle", f"the kernel is still {state} {timeout:g} s after the run ended"


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_an_unsaved_run_comes_back_after_a_reload(tmp_path: Path, app: str) -> None:
    if app == "notebook":
        pytest.importorskip("notebook", reason="Jupyter Notebook 7 is not installed")
    expect = playwright_sync.expect
    with Lab(tmp_path, app=app) as lab, playwright_sync.sync_playwright() as p:
        setup = held_setup(SETUP, lab.root / "release")
        url = lab.write_notebook("unsaved.ipynb", [setup, ""], ids=["setup", EMPTY_ID])
        with chromium_page(p, lab, f"reload-unsaved-{app}-failure.png") as page:
            cells = _open(page, lab, url, reload=False)
            (run_cell if app == "lab" else _run_first_cell)(page, cells.nth(0))
            expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=90_000)
            _source_comes_back(page, lab, cells, expect)
            _approval_in_an_added_cell(page, lab, expect)


def _source_comes_back(page: Any, lab: Lab, cells: Any, expect: Any) -> None:
    cells.nth(1).locator(".jp-InputArea-editor").click()
    page.keyboard.type(TYPED)
    page.keyboard.press("Shift+Enter")
    expect(cells.nth(1).locator(".pi-view")).to_contain_text("w5 ", timeout=30_000)
    _shot(page, lab, "1-typed-running")
    started = time.monotonic()
    cells = _open(page, lab, "", reload=True)  # never saved: the file's cell is empty
    editor = cells.nth(1).locator(".jp-InputArea-editor")
    live = cells.nth(1).locator(".pi-view").first
    expect(live).to_contain_text("w2", timeout=60_000)
    step(f"{lab.app}: the live view back {time.monotonic() - started:.1f} s after the reload began")
    expect(editor).to_contain_text("Count slowly, typed after the save.", timeout=10_000)
    assert "the end." not in live.inner_text(), "the run had ended before the view came back"
    _shot(page, lab, "2-reloaded-source-and-live-view-back")
    release(lab.root / "release")
    expect(cells.nth(1).locator(".pi-static")).to_contain_text("the end.", timeout=120_000)
    _shot(page, lab, "3-frozen-under-its-source")
    saved = _save(page, lab, "unsaved.ipynb")
    [cell] = [c for c in saved["cells"] if c["id"] == EMPTY_ID]
    assert "".join(cell["source"]) == TYPED
    [output] = cell["outputs"]
    assert "the end." in "".join(output["data"]["text/html"])
    _wait_idle(lab)
    step(f"{lab.app}: unsaved reload mid-run, the cell's source back with its run")


def _approval_in_an_added_cell(page: Any, lab: Lab, expect: Any) -> None:
    cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
    saved_count = cells.count()
    last = cells.nth(saved_count - 1)
    if last.locator(".jp-InputArea-editor").inner_text().strip():  # no empty cell at the end
        last.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Escape")
        page.keyboard.press("b")
        expect(cells).to_have_count(saved_count + 1)
        added = cells.nth(saved_count)
    else:
        added = last
    added.locator(".jp-InputArea-editor").click()
    page.keyboard.type(ADDED)
    page.keyboard.press("Shift+Enter")
    expect(added.get_by_role("button", name="Approve")).to_be_visible(timeout=30_000)
    _shot(page, lab, "4-approval-pending-unsaved")
    file_ids = [c["id"] for c in json.loads((lab.notebooks / "unsaved.ipynb").read_text())["cells"]]
    cells = _open(page, lab, "", reload=True)
    restored = page.locator(".jp-NotebookPanel .jp-CodeCell", has_text="in a cell added after the save")
    approve = restored.get_by_role("button", name="Approve")
    expect(approve).to_be_visible(timeout=30_000)
    expect(cells).to_have_count(len(file_ids) + 1)  # the file's cells, then the inserted one
    expect(cells.last).to_contain_text("in a cell added after the save")
    assert _kernel_state(lab) == "busy"  # the run waits for the answer, which the page can now give
    expect(page.get_by_text(NOTICE).first).to_be_visible(timeout=10_000)
    page.wait_for_timeout(1000)  # the toast slides in
    _shot(page, lab, "5-reloaded-cell-inserted-notification")
    cells.first.locator(".jp-InputArea-editor").click()  # elsewhere, then the notification's button
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Show the cell").click()
    expect(cells.last).to_have_class(re.compile(r"\bjp-mod-active\b"), timeout=10_000)
    approve.scroll_into_view_if_needed()
    _shot(page, lab, "6-shown-approval-back")
    approve.click()
    frozen = restored.locator(".pi-static")
    expect(frozen).to_contain_text("Set after the reload", timeout=30_000)
    expect(frozen.locator(".pi-tool", has_text="set_variable")).to_contain_text("done")
    _wait_idle(lab)
    frozen.scroll_into_view_if_needed()
    _shot(page, lab, "7-approved-kernel-idle")
    saved = _save(page, lab, "unsaved.ipynb")
    assert "".join(saved["cells"][-1]["source"]) == ADDED
    assert "Set after the reload" in "".join(saved["cells"][-1]["outputs"][0]["data"]["text/html"])
    step(f"{lab.app}: unsaved reload with an approval pending in an added cell, approved, kernel idle")
