"""An extension's ``ctx.ui.confirm`` in JupyterLab (Debian's Chromium through Playwright): the
question appears in the running cell with Yes / No, a click on Yes lets the tool run, and the
frozen output keeps the question and its answer. Screenshots go to ``test-output/browser/``."""

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

SETUP = '''\
%load_ext pi_notebook
from pathlib import Path
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_tool_call
faux = register_faux_provider(token_size={"min": 1, "max": 1}, tokens_per_second=40)
Path("guard_ext.py").write_text("""
from pi_notebook.agent import tool

@tool
def drop_table(name: str) -> str:
    \\"\\"\\"Drop a table.\\"\\"\\"
    return "dropped " + name

def setup(pi):
    pi.register_tool(drop_table)

    async def guard(event, ctx):
        if not await ctx.ui.confirm("Drop " + event.input.name + "?", "This cannot be undone."):
            return {"block": True, "reason": "not confirmed"}

    pi.on("tool_call", guard)
""")
drop = faux_tool_call("drop_table", {"name": "staging"}, id="d1")
faux.set_responses([faux_assistant_message([drop], stop_reason="toolUse"), "Dropped it."])
print("setup done")
'''
LOAD = "%pi extension load guard_ext"
RUN = "%%pi --model faux:faux-1\nDrop the staging table."


def run_cell(page: Any, cell: Any) -> None:
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def test_confirm_in_jupyterlab(tmp_path: Path) -> None:
    expect = playwright_sync.expect
    with Lab(tmp_path) as lab, playwright_sync.sync_playwright() as p:
        url = lab.write_notebook("ext.ipynb", [SETUP, LOAD, RUN])
        with chromium_page(p, lab, "extension-failure.png") as page:
            page.goto(url)
            page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=60_000)
            page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for(timeout=90_000)
            cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
            run_cell(page, cells.nth(0))
            expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=60_000)
            run_cell(page, cells.nth(1))
            expect(cells.nth(1).locator(".jp-OutputArea")).to_contain_text("loaded guard_ext", timeout=30_000)
            cell = cells.nth(2)
            run_cell(page, cell)
            dialog = cell.locator(".pi-dialog")
            expect(dialog).to_contain_text("Drop staging?", timeout=30_000)
            expect(dialog).to_contain_text("This cannot be undone.")
            page.screenshot(path=str(SHOTS / "extension-confirm.png"), full_page=True)
            dialog.get_by_role("button", name="Yes").click()
            static = cell.locator(".pi-static")
            expect(static).to_be_visible(timeout=30_000)
            expect(static).to_contain_text("dropped staging")
            expect(static).to_contain_text("An extension asked \u201cDrop staging?\u201d: Yes.")
            expect(cell.locator(".pi-dialog")).to_have_count(0)
            page.screenshot(path=str(SHOTS / "extension-answered.png"), full_page=True)
