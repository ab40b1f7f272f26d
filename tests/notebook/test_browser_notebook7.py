"""Jupyter Notebook 7 in Debian's Chromium through Playwright: the same ``%%pi`` path as the
JupyterLab test (a streamed answer, a tool card approved with the Approve button, a run stopped
with the Stop button, the finished outputs frozen to static HTML) in Notebook 7's one-document
shell, which has no status bar and opens notebooks at ``/notebooks/NAME``.
Screenshots go to ``test-output/browser/notebook7-*.png``.

Never downloads a browser through Playwright: it launches ``/usr/bin/chromium`` and is skipped
without it (or without the ``notebook`` package).
"""

from __future__ import annotations

import re
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
pytest.importorskip("notebook", reason="Jupyter Notebook 7 (the `notebook` package) is not installed")

SETUP = """\
%load_ext pi_notebook
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_text, faux_tool_call
faux = register_faux_provider(token_size={"min": 1, "max": 1}, tokens_per_second=30)
faux.set_responses([
    faux_assistant_message(
        [faux_text("I will set a variable first."),
         faux_tool_call("set_variable", {"name": "approved_in_nb7", "value": 7}, id="n1")],
        stop_reason="toolUse",
    ),
    faux_assistant_message("The variable is set, **done**."),
    faux_assistant_message("word " * 400),
])
print("setup done")
"""
RUN_1 = "%%pi --model faux:faux-1\nSet a variable."
RUN_2 = "%%pi\nNow talk for a long time."
CHECK = "print('after:', approved_in_nb7, _pi.stop_reason)"


def run_cell(page: Any, cell: Any) -> None:
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def _run_first_cell(page: Any, cell: Any) -> None:
    """Notebook 7 has no status bar to say the kernel is connected, and a Shift+Enter that
    lands before the editor and the kernel session are ready is dropped (seen on a loaded
    machine). So wait for the toolbar's debugger button, which appears once the kernel has
    answered, then press again while the prompt still reads ``[ ]``."""
    page.locator(".jp-DebuggerBugButton").first.wait_for(state="attached", timeout=90_000)
    prompt = cell.locator(".jp-InputPrompt")
    for _ in range(6):
        run_cell(page, cell)
        try:
            expect_not_empty(prompt)
            return
        except AssertionError:
            continue
    raise AssertionError("Notebook 7 never started the first cell")


def expect_not_empty(prompt: Any) -> None:
    try:
        playwright_sync.expect(prompt).not_to_have_text(re.compile(r"^\s*\[\s*\]:\s*$"), timeout=10_000)
    except Exception as exc:  # playwright raises its own AssertionError subclass or a timeout
        raise AssertionError(str(exc)) from exc


def test_pi_cell_in_notebook7(tmp_path: Path) -> None:
    with Lab(tmp_path, app="notebook") as lab, playwright_sync.sync_playwright() as p:
        url = lab.write_notebook("pi.ipynb", [SETUP, RUN_1, RUN_2, CHECK])
        with chromium_page(p, lab, "notebook7-failure.png") as page:
            _drive(page, url, playwright_sync.expect)


def _drive(page: Any, url: str, expect: Any) -> None:
    page.goto(url)
    page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=60_000)
    cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
    _run_first_cell(page, cells.nth(0))
    expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=90_000)

    run_1 = cells.nth(1)
    run_cell(page, run_1)
    approve = run_1.get_by_role("button", name="Approve")
    expect(approve).to_be_visible(timeout=30_000)
    expect(run_1.locator(".pi-view")).to_contain_text("I will set a variable first.")
    expect(run_1.locator(".jp-InputPrompt")).to_contain_text("*")  # still running
    page.screenshot(path=str(SHOTS / "notebook7-1-approval.png"), full_page=True)
    approve.click()
    static = run_1.locator(".pi-static")
    expect(static).to_be_visible(timeout=30_000)
    expect(static.locator("strong", has_text="done")).to_be_visible()  # Markdown rendered
    expect(static.locator(".pi-tool", has_text="set_variable")).to_contain_text("done")
    expect(run_1.locator(".pi-view:not(.pi-static)")).to_have_count(0)  # the live widget is gone

    run_2 = cells.nth(2)
    run_cell(page, run_2)
    expect(run_2.locator(".pi-view")).to_contain_text(re.compile(r"(word ){20}"), timeout=30_000)
    run_2.get_by_role("button", name="Stop").click()
    static = run_2.locator(".pi-static")
    expect(static).to_be_visible(timeout=30_000)
    expect(static).to_contain_text("Stopped with the Stop button.")
    expect(run_2.locator(".jp-InputPrompt")).not_to_contain_text("*", timeout=10_000)
    page.screenshot(path=str(SHOTS / "notebook7-2-stopped.png"), full_page=True)

    run_cell(page, cells.nth(3))
    expect(cells.nth(3).locator(".jp-OutputArea")).to_contain_text("after: 7 aborted", timeout=30_000)
