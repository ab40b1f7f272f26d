"""The Pi kernel in JupyterLab and Jupyter Notebook 7, in Debian's Chromium through Playwright:
the kernelspec installed with ``python -m pi_notebook.kernel install --user`` into the server's
data dir, a notebook on kernel ``pi``; a ``%%python`` cell runs, a prompt streams, a tool call
is approved with the Approve button, a long answer is stopped with Stop, and the editor
highlights cells as Markdown (the kernel's ``codemirror_mode``). Screenshots go to
``test-output/browser/pi-kernel-*.png``.

Never downloads a browser: it launches ``/usr/bin/chromium`` and is skipped without it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "notebook"))

from browser_lab import CHROMIUM, SHOTS, Lab, chromium_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is not installed"),
]
playwright_sync = pytest.importorskip("playwright.sync_api")

REPO = Path(__file__).resolve().parents[2]

SETUP = """\
%%python
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_text, faux_tool_call
faux = register_faux_provider(token_size={"min": 1, "max": 1}, tokens_per_second=30)
faux.set_responses([
    faux_assistant_message(
        [faux_text("I will set a variable first."),
         faux_tool_call("set_variable", {"name": "approved_here", "value": 7}, id="n1")],
        stop_reason="toolUse",
    ),
    faux_assistant_message("The variable is set, **done**."),
    faux_assistant_message("word " * 400),
])
get_ipython().run_line_magic("config", 'PiMagics.model = "faux:faux-1"')
print("setup done")
"""
RUN_1 = "Set a variable, 100% sure!"
RUN_2 = "Now talk for a long time."
CHECK = "%%python\nprint('after:', approved_here, _pi.stop_reason)"


class PiLab(Lab):
    """``Lab`` with the Pi kernelspec installed into its data dir, and notebooks on it."""

    def _write_settings(self, env: dict[str, str]) -> None:
        super()._write_settings(env)
        subprocess.run(
            [sys.executable, "-m", "pi_notebook.kernel", "install", "--user"],
            env={**env, "PYTHONPATH": str(REPO)},
            check=True,
            capture_output=True,
            timeout=60,
        )

    def write_notebook(self, name: str, cells: list[str]) -> str:
        url = super().write_notebook(name, cells)
        path = self.notebooks / name
        notebook = json.loads(path.read_text())
        notebook["metadata"]["kernelspec"] = {
            "name": "pi",
            "display_name": "Pi (Python 3)",
            "language": "python",
        }
        path.write_text(json.dumps(notebook))
        return url


def run_cell(page: Any, cell: Any) -> None:
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def run_first_cell(page: Any, cell: Any) -> None:
    """A Shift+Enter before the kernel session is ready is dropped: press again while the
    prompt still reads ``[ ]``."""
    prompt = cell.locator(".jp-InputPrompt")
    for _ in range(9):
        run_cell(page, cell)
        try:
            playwright_sync.expect(prompt).not_to_have_text(re.compile(r"^\s*\[\s*\]:\s*$"), timeout=10_000)
            return
        except AssertionError:
            continue
    raise AssertionError("the first cell never started")


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_the_pi_kernel_in_the_browser(tmp_path: Path, app: str) -> None:
    if app == "notebook":
        pytest.importorskip("notebook", reason="Jupyter Notebook 7 (the `notebook` package) is not installed")
    with PiLab(tmp_path, app=app) as lab, playwright_sync.sync_playwright() as p:
        url = lab.write_notebook("pi.ipynb", [SETUP, RUN_1, RUN_2, CHECK])
        with chromium_page(p, lab, f"pi-kernel-{app}-failure.png") as page:
            drive(page, url, app, playwright_sync.expect)


def drive(page: Any, url: str, app: str, expect: Any) -> None:
    page.goto(url)
    page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=60_000)
    cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
    if app == "lab":
        page.locator(".jp-StatusBar-TextItem", has_text="Pi (Python 3)").first.wait_for(timeout=90_000)
    run_first_cell(page, cells.nth(0))
    expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=90_000)
    # the editor mode the kernel's language_info names
    expect(cells.nth(1).locator(".cm-content")).to_have_attribute("data-language", "markdown")

    run_1 = cells.nth(1)
    run_cell(page, run_1)
    approve = run_1.get_by_role("button", name="Approve")
    expect(approve).to_be_visible(timeout=30_000)
    expect(run_1.locator(".pi-view")).to_contain_text("I will set a variable first.")
    expect(run_1.locator(".pi-view")).to_contain_text("Set a variable, 100% sure!")  # the prompt as written
    page.screenshot(path=str(SHOTS / f"pi-kernel-{app}-1-approval.png"), full_page=True)
    approve.click()
    static = run_1.locator(".pi-static")
    expect(static).to_be_visible(timeout=30_000)
    expect(static.locator("strong", has_text="done")).to_be_visible()
    expect(static.locator(".pi-tool", has_text="set_variable")).to_contain_text("done")

    run_2 = cells.nth(2)
    run_cell(page, run_2)
    expect(run_2.locator(".pi-view")).to_contain_text(re.compile(r"(word ){20}"), timeout=30_000)
    run_2.get_by_role("button", name="Stop").click()
    static = run_2.locator(".pi-static")
    expect(static).to_be_visible(timeout=30_000)
    expect(static).to_contain_text("Stopped with the Stop button.")
    page.screenshot(path=str(SHOTS / f"pi-kernel-{app}-2-stopped.png"), full_page=True)

    run_cell(page, cells.nth(3))
    expect(cells.nth(3).locator(".jp-OutputArea")).to_contain_text("after: 7 aborted", timeout=30_000)
