"""A ``%%pi`` run that survives the page with the notebook bridge (the pi-notebook-bridge
labextension), in JupyterLab and Notebook 7 in Debian's Chromium: the run's own cell gets the
run back, whatever was saved.

* Saved during the run, reloaded mid-stream: the live view streams on in its cell and, at the
  end, the cell's output is the frozen view itself (no widget left), so the file saved from the
  new page holds static HTML, and a restarted kernel shows no "model not found".
* Reloaded before any save: the live view comes back in the run's own cell (the kernel writes
  the cell's output through the bridge) and freezes there.
* An approval pending, reloaded without saving: Approve is back in the run's cell and works.

Without the extension the fallbacks apply (``test_browser_reload.py``). The long answers hold
mid-stream until the test releases them (``faux_gate.py``). Screenshots go to
``test-output/browser/reload-bridge-*.png``. Never downloads a browser.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from browser_lab import BRIDGE_BUILD, CHROMIUM, SHOTS, Lab, chromium_page
from faux_gate import held_setup, release
from test_browser import run_cell, step
from test_browser_notebook7 import _run_first_cell
from test_browser_reload import _open, _restart_kernel, _save

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
    faux_assistant_message({WORDS!r} + "the second end."),
    faux_assistant_message(
        [faux_text("I will set a variable."),
         faux_tool_call("set_variable", {{"name": "approved_after_reload", "value": 9}}, id="r1")],
        stop_reason="toolUse",
    ),
    faux_assistant_message("Set after the reload, **done**."),
])
"""
SAVED = "%%pi --model faux:faux-1\nCount slowly."
UNSAVED = "%%pi --model faux:faux-1\nCount again, unsaved."
APPROVE = "%%pi\nSet a variable, unsaved."
WIDGET = ".jupyter-widgets.pi-view, .widget-vbox"


def _shot(page: Any, lab: Lab, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"reload-bridge-{lab.app}-{name}.png"), full_page=True)


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_the_run_comes_back_in_its_own_cell(tmp_path: Path, app: str) -> None:
    if app == "notebook":
        pytest.importorskip("notebook", reason="Jupyter Notebook 7 is not installed")
    expect = playwright_sync.expect
    with Lab(tmp_path, app=app) as lab, playwright_sync.sync_playwright() as p:
        setup = held_setup(SETUP, lab.root / "release")
        url = lab.write_notebook("bridge.ipynb", [setup, SAVED, UNSAVED, APPROVE])
        with chromium_page(p, lab, f"reload-bridge-{app}-failure.png") as page:
            cells = _open(page, lab, url, reload=False)
            (run_cell if app == "lab" else _run_first_cell)(page, cells.nth(0))
            expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=90_000)
            cells = _saved_then_reloaded(page, lab, cells, expect)
            cells = _reloaded_unsaved(page, lab, cells, expect)
            _approval_reloaded_unsaved(page, lab, cells, expect)
            _restart_and_reopen(page, lab, url, expect)


def _saved_then_reloaded(page: Any, lab: Lab, cells: Any, expect: Any) -> Any:
    run_cell(page, cells.nth(1))
    expect(cells.nth(1).locator(".pi-view")).to_contain_text("w5 ", timeout=30_000)
    _save(page, lab, "bridge.ipynb")
    cells = _open(page, lab, "", reload=True)
    expect(cells.nth(1).locator(".pi-view").first).to_contain_text("w2", timeout=30_000)
    assert "the end." not in cells.nth(1).locator(".pi-view").first.inner_text(), "reloaded too late"
    release(lab.root / "release")
    frozen = cells.nth(1).locator(".pi-static")
    expect(frozen).to_contain_text("the end.", timeout=60_000)
    expect(cells.nth(1).locator(WIDGET)).to_have_count(0)  # the cell's output is the static view
    expect(frozen).not_to_contain_text("saved during the run and opened again")
    _shot(page, lab, "1-saved-frozen")
    saved = _save(page, lab, "bridge.ipynb")
    [output] = saved["cells"][1]["outputs"]
    assert "text/html" in output["data"]
    assert "application/vnd.jupyter.widget-view+json" not in output["data"]
    step(f"{lab.app}: saved, reloaded, frozen in its own cell through the bridge")
    return cells


def _reloaded_unsaved(page: Any, lab: Lab, cells: Any, expect: Any) -> Any:
    run_cell(page, cells.nth(2))
    expect(cells.nth(2).locator(".pi-view")).to_contain_text("w5 ", timeout=30_000)
    cells = _open(page, lab, "", reload=True)  # not saved: the file has no output for it
    live = cells.nth(2).locator(".pi-view").first
    expect(live).to_contain_text("w2", timeout=30_000)
    expect(cells.nth(2).get_by_role("button", name="Stop")).to_be_visible()
    assert "the second end." not in live.inner_text(), "the run had ended before the view came back"
    _shot(page, lab, "2-unsaved-live-again")
    release(lab.root / "release")
    expect(cells.nth(2).locator(".pi-static")).to_contain_text("the second end.", timeout=60_000)
    expect(cells.nth(2).locator(WIDGET)).to_have_count(0)
    step(f"{lab.app}: unsaved reload, the live view back in its own cell, then frozen")
    return cells


def _approval_reloaded_unsaved(page: Any, lab: Lab, cells: Any, expect: Any) -> None:
    run_cell(page, cells.nth(3))
    expect(cells.nth(3).get_by_role("button", name="Approve")).to_be_visible(timeout=30_000)
    cells = _open(page, lab, "", reload=True)
    approve = cells.nth(3).get_by_role("button", name="Approve")
    expect(approve).to_be_visible(timeout=30_000)
    approve.scroll_into_view_if_needed()
    _shot(page, lab, "3-unsaved-approval-back")
    approve.click()
    frozen = cells.nth(3).locator(".pi-static")
    expect(frozen).to_contain_text("Set after the reload", timeout=30_000)
    expect(frozen.locator(".pi-tool", has_text="set_variable")).to_contain_text("done")
    _save(page, lab, "bridge.ipynb")
    step(f"{lab.app}: unsaved reload with an approval pending, approved in its own cell")


def _restart_and_reopen(page: Any, lab: Lab, url: str, expect: Any) -> None:
    _restart_kernel(lab)
    cells = _open(page, lab, url, reload=True)
    expect(cells.nth(1).locator(".pi-static")).to_contain_text("the end.", timeout=30_000)
    expect(cells.nth(3).locator(".pi-static")).to_contain_text("Set after the reload")
    page.wait_for_timeout(3000)  # the widget manager gives a missing model 2 s
    expect(page.get_by_text("model not found")).to_have_count(0)
    _shot(page, lab, "4-reopened-after-restart")
    step(f"{lab.app}: reopened after a restart, static outputs, no model not found")
