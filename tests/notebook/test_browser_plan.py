"""The plan card of ``%%pi --plan`` in JupyterLab and Notebook 7, in Debian's Chromium: Run plan runs the plan
and the checklist shows the running step live (while a call waits for Approve) and the done
step in the frozen output; Edit changes a step in the card's text area and the model receives
the edited plan (the context of its call is recorded in the kernel); Cancel runs nothing and
changes no state. Screenshots go to ``test-output/browser/plan-*.png``; skipped without
``/usr/bin/chromium`` (never downloads a browser)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from browser_lab import CHROMIUM, SHOTS, Lab, chromium_page
from test_browser import run_cell
from test_browser_notebook7 import _run_first_cell

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is not installed"),
]
playwright_sync = pytest.importorskip("playwright.sync_api")

SETUP = r'''
%load_ext pi_notebook
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_tool_call
PLAN = "I looked at x.\n\n1. Set x to 2\n2. Print x\n"
seen = []
def said(reply):
    def factory(context, options, state, model):
        seen.append(context)
        return faux_assistant_message(reply) if isinstance(reply, str) else reply
    return factory
def use(name, args, call_id):
    return faux_assistant_message([faux_tool_call(name, args, id=call_id)], stop_reason="toolUse")
faux = register_faux_provider()
faux.set_responses([
    said(PLAN), said(use("plan_step", {"step": 1}, "s1")), said(use("run_code", {"code": "x = 2"}, "r1")),
    said(use("plan_step", {"step": 1, "status": "done"}, "d1")), said("x is 2."),
    said(PLAN), said("Ran the edited plan."),
    said(PLAN), said(use("run_code", {"code": "x = 99"}, "r2")),
])
x = 1
print("setup done")
'''
RUN = "%%pi --name run --model faux:faux-1 --plan --approve ask\nSet x to 2."
EDIT = "%%pi --name edit --model faux:faux-1 --plan\nSet x."
CANCEL = "%%pi --name cancel --model faux:faux-1 --plan --approve auto\nSet x."
CHECK = (
    "print('x =', x, '| calls', len(seen), '| left', faux.get_pending_response_count())\n"
    "print(seen[6].messages[-1].content[0].text)"
)
EDITED = "1. Set x to 3\n2. Print x twice"


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_plan_card_run_edit_cancel(tmp_path: Path, app: str) -> None:
    if app == "notebook":
        pytest.importorskip("notebook", reason="Jupyter Notebook 7 (the `notebook` package) is not installed")
    expect = playwright_sync.expect
    with Lab(tmp_path, app=app) as lab, playwright_sync.sync_playwright() as p:
        url = lab.write_notebook("plan.ipynb", [SETUP, RUN, EDIT, CANCEL, CHECK])
        with chromium_page(p, lab, f"plan-{app}-failure.png") as page:
            page.goto(url)
            page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=60_000)
            cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
            if app == "lab":
                page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for(timeout=90_000)
                run_cell(page, cells.nth(0))
            else:  # no status bar: wait for the kernel as the Notebook 7 test does
                _run_first_cell(page, cells.nth(0))
            expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=60_000)
            _run(page, cells.nth(1), expect)
            _edit(page, cells.nth(2), expect)
            _cancel(page, cells.nth(3), expect)
            run_cell(page, cells.nth(4))
            out = cells.nth(4).locator(".jp-OutputArea")
            # x is 2 (the Run plan's run_code; Cancel's x = 99 never ran), one reply left unused
            expect(out).to_contain_text("x = 2 | calls 8 | left 1", timeout=30_000)
            expect(out).to_contain_text("Run the plan as the user edited it")
            expect(out).to_contain_text("1. Set x to 3")


def _card(cell: Any, expect: Any) -> Any:
    card = cell.locator(".pi-plan-choice")
    expect(card).to_be_visible(timeout=30_000)
    expect(card).to_contain_text("1. Set x to 2")
    return card


def _run(page: Any, cell: Any, expect: Any) -> None:
    run_cell(page, cell)
    card = _card(cell, expect)
    expect(cell).to_contain_text("Plan ready (2 steps): Run plan, Edit or Cancel below.")
    cell.screenshot(path=str(SHOTS / "plan-card.png"))
    card.get_by_role("button", name="Run plan").click()
    # the plan's run waits for Approve of run_code: step 1 is the running one
    approve = cell.get_by_role("button", name="Approve")
    expect(approve).to_be_visible(timeout=30_000)
    live = cell.locator(".pi-view:not(.pi-static) .pi-plan-card")
    expect(live).to_contain_text("▶ 1. Set x to 2")
    expect(live).to_contain_text("☐ 2. Print x")
    cell.screenshot(path=str(SHOTS / "plan-running.png"))
    approve.click()
    frozen = cell.locator(".pi-static .pi-plan")
    expect(frozen).to_contain_text("Plan (1 of 2 steps done)", timeout=30_000)
    expect(frozen.locator(".pi-plan-done")).to_contain_text("☑ 1. Set x to 2")
    expect(cell).to_contain_text("Plan accepted: running it below.")
    expect(cell).to_contain_text("x is 2.")


def _edit(page: Any, cell: Any, expect: Any) -> None:
    run_cell(page, cell)
    card = _card(cell, expect)
    card.get_by_role("button", name="Edit").click()
    editor = card.locator("textarea")
    expect(editor).to_be_visible(timeout=10_000)
    expect(editor).to_have_value("I looked at x.\n\n1. Set x to 2\n2. Print x")
    editor.fill(EDITED)
    cell.screenshot(path=str(SHOTS / "plan-edit.png"))
    card.get_by_role("button", name="Run plan").click()
    frozen = cell.locator(".pi-static .pi-plan")
    expect(frozen).to_contain_text("Plan (0 of 2 steps done, edited)", timeout=30_000)
    expect(frozen).to_contain_text("☐ 1. Set x to 3")
    expect(cell).to_contain_text("Plan accepted as edited: running it below.")
    expect(cell).to_contain_text("Ran the edited plan.")


def _cancel(page: Any, cell: Any, expect: Any) -> None:
    run_cell(page, cell)
    card = _card(cell, expect)
    card.get_by_role("button", name="Cancel").click()
    expect(cell).to_contain_text("Plan cancelled: nothing was run.", timeout=30_000)
    expect(cell.locator(".pi-plan-choice")).to_have_count(0)
    cell.screenshot(path=str(SHOTS / "plan-cancelled.png"))
