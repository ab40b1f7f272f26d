"""Approvals that remember in JupyterLab and Jupyter Notebook 7 (Debian's Chromium through
Playwright): a click on
"Allow for this conversation" on a ``run_code`` card approves it and lets the next identical
call through without a card (both cards say "allowed for this conversation", the second that it
repeats call 1); a later cell's ``run_code`` runs without asking; ``%pi approvals`` lists the
grant and ``%pi approvals clear`` forgets it. Screenshots go to ``test-output/browser/``
(``grants-{lab,notebook}-*.png``).
Never downloads a browser: it launches ``/usr/bin/chromium``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from browser_lab import CHROMIUM, SHOTS, Lab, chromium_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is not installed"),
]
playwright_sync = pytest.importorskip("playwright.sync_api")

SETUP = """\
%load_ext pi_notebook
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_tool_call
def append(call_id):
    return faux_assistant_message([faux_tool_call("run_code", {"code": "hits.append(1)"}, id=call_id)],
                                  stop_reason="toolUse")
hits = []
faux = register_faux_provider()
faux.set_responses([append("r1"), append("r2"), faux_assistant_message("Appended twice."),
                    append("r3"), faux_assistant_message("Appended again.")])
print("setup done")
"""
CELLS = [
    SETUP,
    "%%pi --model faux:faux-1\nappend twice",
    "%pi approvals",
    "%%pi\nonce more",
    "%pi approvals clear",
    "print('hits', hits)",
]


def run_cell(page: Any, cell: Any) -> None:
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_allow_for_this_conversation(tmp_path: Path, app: str) -> None:
    if app == "notebook":
        pytest.importorskip("notebook", reason="Jupyter Notebook 7 (the `notebook` package) is not installed")
    expect = playwright_sync.expect
    with Lab(tmp_path, app=app) as lab, playwright_sync.sync_playwright() as p:
        url = lab.write_notebook("grants.ipynb", CELLS)
        with chromium_page(p, lab, f"grants-{app}-failure.png") as page:
            page.goto(url)
            page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=60_000)
            cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
            for _ in range(6):  # a Shift+Enter before the kernel is ready is dropped (Notebook 7)
                run_cell(page, cells.nth(0))
                try:
                    expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text(
                        "setup done", timeout=15_000
                    )
                    break
                except AssertionError:
                    continue
            else:
                raise AssertionError("the setup cell never ran")

            run_cell(page, cells.nth(1))
            card = cells.nth(1).locator(".pi-tool").first
            allow = card.get_by_role("button", name="Allow for this conversation")
            expect(allow).to_be_visible(timeout=30_000)
            expect(card.get_by_role("button", name="Approve")).to_be_visible()
            page.screenshot(path=str(SHOTS / f"grants-{app}-offered.png"), full_page=True)
            allow.click()
            out = cells.nth(1).locator(".jp-OutputArea").first
            expect(out).to_contain_text("Appended twice.", timeout=30_000)
            expect(out).to_contain_text("same as call 1, which succeeded")
            assert out.get_by_text("allowed for this conversation").count() == 2
            assert out.get_by_role("button", name="Approve").count() == 0  # r2 asked nobody
            page.screenshot(path=str(SHOTS / f"grants-{app}-granted.png"), full_page=True)

            run_cell(page, cells.nth(2))
            listed = cells.nth(2).locator(".jp-OutputArea")
            expect(listed).to_contain_text("tool run_code: allowed for this conversation", timeout=30_000)

            run_cell(page, cells.nth(3))
            again = cells.nth(3).locator(".jp-OutputArea").first
            expect(again).to_contain_text("Appended again.", timeout=30_000)
            expect(again).to_contain_text("allowed for this conversation")
            assert again.get_by_role("button", name="Approve").count() == 0

            run_cell(page, cells.nth(4))
            expect(cells.nth(4).locator(".jp-OutputArea")).to_contain_text("cleared 1 grant", timeout=30_000)
            run_cell(page, cells.nth(5))
            expect(cells.nth(5).locator(".jp-OutputArea")).to_contain_text("hits [1, 1, 1]", timeout=30_000)
