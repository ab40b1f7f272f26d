"""A ``%%pi`` run that survives the page, in JupyterLab and Notebook 7 in Debian's Chromium:

* saved during the run, then reloaded mid-stream: the live view comes back (the widget manager
  of the new page fetches every widget's state), keeps streaming, and freezes at the end (the
  widget itself takes the frozen look: the output's ``update_display_data`` reaches only the
  page that ran the cell);
* saved with an approval pending, then reloaded: Approve works on the new page and the run ends;
* ``%pi show`` after those runs: static copies; with the widget outputs cleared (what the
  frozen look says to do), a kernel restart and a reopen show the static copies and no "model
  not found";
* reloaded without saving: the cell comes back without output and stays so (what the kernel
  sends answers a request of the closed page, which the new page drops); ``%pi show`` run on
  the new page gets the live view at once although it waits for the running cell (streaming,
  or a pending Approve that works), and the run freezes there.

The long answers hold mid-stream until the test releases them (``faux_gate.py``): each reload
lands mid-run, and each run then ends at once. Screenshots go to
``test-output/browser/reload-*.png``. Never downloads a browser.
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

from browser_lab import CHROMIUM, SHOTS, Lab, chromium_page
from faux_gate import held_setup, release
from test_browser import run_cell, step
from test_browser_notebook7 import _run_first_cell

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is not installed"),
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
STREAM = "%%pi --model faux:faux-1\nCount slowly."
APPROVE = "%%pi\nSet a variable."
SHOW = "%pi show\n%pi show 2"
CHECK = "print('after:', approved_after_reload, _pi.stop_reason)"
UNSAVED = "%%pi --model faux:faux-1\nCount again, unsaved."
SHOW_UNSAVED = "%pi show"
UNSAVED_APPROVE = "%%pi\nSet a variable again, unsaved."


def _save(page: Any, lab: Lab, name: str) -> dict[str, Any]:
    """Save with the keyboard and wait until the file on disk has changed."""
    path = lab.notebooks / name
    before = path.stat().st_mtime_ns
    page.locator(".jp-NotebookPanel").first.click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+s")
    for _ in range(100):
        if path.stat().st_mtime_ns != before:
            break
        page.wait_for_timeout(100)
    else:
        raise AssertionError("the notebook was not saved")
    page.wait_for_timeout(300)
    return dict(json.loads(path.read_text()))


def _open(page: Any, lab: Lab, url: str, *, reload: bool) -> Any:
    page.reload() if reload else page.goto(url)
    page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=60_000)
    if lab.app == "lab":
        page.locator(".jp-StatusBar-TextItem", has_text=re.compile(r"\| (Idle|Busy)")).first.wait_for(
            timeout=90_000
        )
    else:
        page.locator(".jp-DebuggerBugButton").first.wait_for(state="attached", timeout=90_000)
    return page.locator(".jp-NotebookPanel .jp-CodeCell")


def _restart_kernel(lab: Lab) -> None:
    with urllib.request.urlopen(f"{lab.url}/api/kernels?token={lab.token}", timeout=10) as reply:
        [kernel] = json.load(reply)
    request = urllib.request.Request(
        f"{lab.url}/api/kernels/{kernel['id']}/restart?token={lab.token}", data=b"", method="POST"
    )
    with urllib.request.urlopen(request, timeout=60):
        pass


def _shot(page: Any, lab: Lab, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"reload-{lab.app}-{name}.png"), full_page=True)


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_a_run_survives_a_reload(tmp_path: Path, app: str) -> None:
    if app == "notebook":
        pytest.importorskip("notebook", reason="Jupyter Notebook 7 is not installed")
    expect = playwright_sync.expect
    # Without the notebook bridge: what a frontend without the labextension gets (with it, the
    # run's own cell is written: test_browser_reload_bridge.py).
    with Lab(tmp_path, app=app, bridge=False) as lab, playwright_sync.sync_playwright() as p:
        setup = held_setup(SETUP, lab.root / "release")
        cells = [setup, STREAM, APPROVE, SHOW, CHECK, UNSAVED, SHOW_UNSAVED, UNSAVED_APPROVE, SHOW_UNSAVED]
        url = lab.write_notebook("reload.ipynb", cells)
        with chromium_page(p, lab, f"reload-{app}-failure.png") as page:
            cells = _open(page, lab, url, reload=False)
            if app == "lab":
                run_cell(page, cells.nth(0))
            else:
                _run_first_cell(page, cells.nth(0))
            expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=90_000)
            cells = _stream_then_reload(page, lab, cells, expect)
            cells = _approve_after_reload(page, lab, cells, expect)
            _show_then_restart(page, lab, url, cells, expect)
            _unsaved(page, lab, expect)


def _stream_then_reload(page: Any, lab: Lab, cells: Any, expect: Any) -> Any:
    run_cell(page, cells.nth(1))
    expect(cells.nth(1).locator(".pi-view")).to_contain_text("w5 ", timeout=30_000)
    saved = _save(page, lab, "reload.ipynb")
    [output] = saved["cells"][1]["outputs"]
    assert "application/vnd.jupyter.widget-view+json" in output["data"]  # the live widget
    step(f"{lab.app}: saved mid-stream, reloading")
    cells = _open(page, lab, "", reload=True)
    view = cells.nth(1).locator(".pi-view").first
    expect(view).to_contain_text("w2", timeout=30_000)  # the widget came back
    shown = view.first.inner_text()
    assert "the end." not in shown, "reloaded too late: the stream had ended"
    _shot(page, lab, "1-back-mid-stream")
    step(f"{lab.app}: live view back after the reload")
    release(lab.root / "release")
    frozen = cells.nth(1).locator(".pi-static")
    expect(frozen).to_contain_text("the end.", timeout=60_000)  # kept streaming, then froze
    expect(frozen).to_contain_text("saved during the run and opened again")
    expect(cells.nth(1).get_by_role("button", name="Stop")).to_have_count(0)
    # The page never got the output's update: what it shows is still the widget, frozen-looking.
    expect(cells.nth(1).locator(".jupyter-widgets.pi-view, .widget-vbox")).not_to_have_count(0)
    _shot(page, lab, "2-frozen-after-reload")
    step(f"{lab.app}: frozen after the reload")
    return cells


def _approve_after_reload(page: Any, lab: Lab, cells: Any, expect: Any) -> Any:
    cell = cells.nth(2)
    run_cell(page, cell)
    expect(cell.get_by_role("button", name="Approve")).to_be_visible(timeout=30_000)
    _save(page, lab, "reload.ipynb")
    cells = _open(page, lab, "", reload=True)
    cell = cells.nth(2)
    approve = cell.get_by_role("button", name="Approve")
    expect(approve).to_be_visible(timeout=30_000)
    approve.scroll_into_view_if_needed()
    _shot(page, lab, "3-approval-after-reload")
    approve.click()
    step(f"{lab.app}: approved after the reload")
    frozen = cell.locator(".pi-static")
    expect(frozen).to_contain_text("Set after the reload", timeout=30_000)
    expect(frozen.locator(".pi-tool", has_text="set_variable")).to_contain_text("done")
    _shot(page, lab, "4-approved-frozen")
    return cells


def _show_then_restart(page: Any, lab: Lab, url: str, cells: Any, expect: Any) -> None:
    run_cell(page, cells.nth(3))
    shown = cells.nth(3).locator(".pi-static")
    expect(shown).to_have_count(2, timeout=30_000)
    expect(shown.nth(0)).to_contain_text("Set after the reload")
    expect(shown.nth(1)).to_contain_text("the end.")
    run_cell(page, cells.nth(4))
    expect(cells.nth(4).locator(".jp-OutputArea")).to_contain_text("after: 9 stop", timeout=30_000)
    _shot(page, lab, "5-shown")
    # What the frozen look's notice says: clear the widget outputs, keep the static copies.
    for n in (1, 2):
        cells.nth(n).locator(".jp-OutputArea").click(button="right")
        page.get_by_role("menuitem", name="Clear Cell Output").click()
        expect(cells.nth(n).locator(".jp-OutputArea-output")).to_have_count(0)
    saved = _save(page, lab, "reload.ipynb")
    for n in (1, 2):
        assert saved["cells"][n]["outputs"] == []
    assert all("text/html" in output["data"] for output in saved["cells"][3]["outputs"])
    _restart_kernel(lab)
    cells = _open(page, lab, url, reload=True)
    expect(cells.nth(3).locator(".pi-static")).to_have_count(2, timeout=30_000)
    page.wait_for_timeout(3000)  # the widget manager gives a missing model 2 s
    expect(page.get_by_text("model not found")).to_have_count(0)
    _shot(page, lab, "6-reopened-after-restart")
    step(f"{lab.app}: reopened after a restart, no model not found")


def _unsaved(page: Any, lab: Lab, expect: Any) -> None:
    """Reloaded before any save: the run's cell stays empty, and ``%pi show`` run from the new
    page gets the live view at once (streaming, then an approval), which freezes there."""
    cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
    run_cell(page, cells.nth(0))  # the restarted kernel needs the setup again
    expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=90_000)
    run_cell(page, cells.nth(5))
    expect(cells.nth(5).locator(".pi-view")).to_contain_text("w5 ", timeout=30_000)
    cells = _open(page, lab, "", reload=True)
    # Nothing the kernel sends for the run reaches its cell: it answers a closed page's request.
    page.wait_for_timeout(2000)
    expect(cells.nth(5).locator(".jp-OutputArea-output")).to_have_count(0)
    _shot(page, lab, "7-unsaved-reloaded")
    run_cell(page, cells.nth(6))  # waits for the running cell, but the live view comes at once
    live = cells.nth(6).locator(".pi-view").first
    expect(live).to_contain_text("w2", timeout=30_000)
    expect(cells.nth(6).get_by_role("button", name="Stop")).to_be_visible()
    assert "the end." not in live.inner_text(), "the run had ended before the view came back"
    cells.nth(6).scroll_into_view_if_needed()
    _shot(page, lab, "8-unsaved-show-live")
    step(f"{lab.app}: unsaved reload, live view back in the %pi show cell")
    release(lab.root / "release")
    frozen = cells.nth(6).locator(".pi-static")
    expect(frozen).to_contain_text("the end.", timeout=60_000)
    expect(frozen).to_have_count(1)  # the %pi show itself added nothing when its turn came
    expect(cells.nth(6).locator(".jp-InputPrompt")).not_to_contain_text("*", timeout=10_000)
    expect(cells.nth(5).locator(".jp-OutputArea-output")).to_have_count(0)
    # An approval pending in an unsaved run: Approve in the %pi show cell.
    run_cell(page, cells.nth(7))
    expect(cells.nth(7).get_by_role("button", name="Approve")).to_be_visible(timeout=30_000)
    cells = _open(page, lab, "", reload=True)
    run_cell(page, cells.nth(8))
    approve = cells.nth(8).get_by_role("button", name="Approve")
    expect(approve).to_be_visible(timeout=30_000)
    approve.scroll_into_view_if_needed()
    _shot(page, lab, "9-unsaved-approval-back")
    approve.click()
    frozen = cells.nth(8).locator(".pi-static")
    expect(frozen).to_contain_text("Set after the reload", timeout=30_000)
    expect(frozen.locator(".pi-tool", has_text="set_variable")).to_contain_text("done")
    frozen.scroll_into_view_if_needed()
    _shot(page, lab, "10-unsaved-approved-frozen")
    step(f"{lab.app}: unsaved reload, approved from the %pi show cell")
