"""Project trust in JupyterLab (Debian's Chromium through Playwright): the first ``%%pi`` cell
in an undecided project folder shows Pi's question with its buttons, a click on Trust saves the
answer and the same cell's ``/review`` template reaches the model expanded. Screenshots go to
``test-output/browser/``. Never downloads a browser: it launches ``/usr/bin/chromium``."""

from __future__ import annotations

import json
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
import os
os.environ["HOME"] = {home!r}
os.environ["PI_CODING_AGENT_DIR"] = {agent!r}
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message
def echo(context, *rest):
    return faux_assistant_message("The model got: " + context.messages[-1].content[0].text)
faux = register_faux_provider(token_size={{"min": 2, "max": 2}}, tokens_per_second=200)
faux.set_responses([echo])
print("setup done")
"""
RUN = "%%pi --model faux:faux-1\n/review sales.csv"


def run_cell(page: Any, cell: Any) -> None:
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def test_trust_buttons_in_jupyterlab(tmp_path: Path) -> None:
    expect = playwright_sync.expect
    with Lab(tmp_path) as lab, playwright_sync.sync_playwright() as p:
        prompts = lab.notebooks / ".pi" / "prompts"
        prompts.mkdir(parents=True)
        (prompts / "review.md").write_text("---\ndescription: Review\n---\nReview $1 for missing values.\n")
        setup = SETUP.format(home=str(tmp_path / "home"), agent=str(tmp_path / "agent"))
        url = lab.write_notebook("trust.ipynb", [setup, RUN])
        with chromium_page(p, lab, "trust-failure.png") as page:
            page.goto(url)
            page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=60_000)
            page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for(timeout=90_000)
            cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
            run_cell(page, cells.nth(0))
            expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=60_000)
            run_cell(page, cells.nth(1))
            card = cells.nth(1).locator(".pi-trust")
            expect(card).to_contain_text("Trust project folder?", timeout=30_000)
            expect(card.get_by_role("button", name="Do not trust")).to_be_visible()
            page.screenshot(path=str(SHOTS / "trust-question.png"), full_page=True)
            card.get_by_role("button", name="Trust", exact=True).click()
            answer = "The model got: Review sales.csv for missing values."
            expect(cells.nth(1).locator(".pi-view").last).to_contain_text(answer, timeout=30_000)
            expect(cells.nth(1).locator(".jp-OutputArea").first).to_contain_text("nb is trusted (saved in Pi")
            page.screenshot(path=str(SHOTS / "trust-answered.png"), full_page=True)
    store = json.loads((tmp_path / "agent" / "trust.json").read_text())
    assert store == {str(lab.notebooks.resolve()): True}
