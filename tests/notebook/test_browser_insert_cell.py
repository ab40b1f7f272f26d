"""JupyterLab in Debian's Chromium: the cell ``insert_cell`` asks for appears below the
``%%pi`` cell, once: inserted live through the notebook bridge (the labextension this
checkout builds), not again by a ``set_next_input`` payload when the run ends. Once more in a
JupyterLab served from the wheel ``pip install``ed into a fresh venv (fixture ``wheel_venv``; see
``test_browser_edits.py``), on the Pi kernel of its kernelspec. Screenshots:
``test-output/browser/insert-cell*.png``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from browser_lab import BRIDGE_BUILD, CHROMIUM, SHOTS, Lab, chromium_page
from test_browser import run_cell
from wheel_venv import WheelVenv  # tests/ is on sys.path (tests/conftest.py)

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
    faux_assistant_message([faux_tool_call("insert_cell", {"code": "inserted_by_pi = 6 * 7"}, id="c1")],
                           stop_reason="toolUse"),
    faux_assistant_message("I added a cell below."),
])
print("setup done")
"""
RUN = "%%pi --model faux:faux-1 --approve auto\nAdd a cell that computes 6 * 7."


def test_inserted_cell_appears_in_jupyterlab(tmp_path: Path) -> None:
    assert (BRIDGE_BUILD / "package.json").exists(), "build the labextension: bash scripts/setup.sh"
    _run(tmp_path, None, "insert-cell")


@pytest.mark.wheel
def test_inserted_cell_appears_in_jupyterlab_installed_from_the_wheel(
    tmp_path: Path, wheel_venv: WheelVenv
) -> None:
    _run(tmp_path, wheel_venv, "insert-cell-wheel")


def _run(tmp_path: Path, venv: WheelVenv | None, shot: str) -> None:
    expect = playwright_sync.expect
    with Lab(tmp_path, venv=venv) as lab, playwright_sync.sync_playwright() as p:
        url = lab.write_notebook("insert.ipynb", [SETUP, RUN, ""])  # Shift+Enter moves on, adds none
        with chromium_page(p, lab, f"{shot}-failure.png", height=900) as page:
            _drive(page, url, expect, shot)


def _drive(page: Any, url: str, expect: Any, shot: str) -> None:
    page.goto(url)
    page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=60_000)
    page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for(timeout=90_000)
    cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
    expect(cells).to_have_count(3)
    run_cell(page, cells.nth(0))
    expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=60_000)
    run_cell(page, cells.nth(1))
    static = cells.nth(1).locator(".pi-static")
    expect(static).to_be_visible(timeout=60_000)
    expect(static.locator(".pi-tool", has_text="insert_cell")).to_contain_text("Inserted 1 cell after cell")
    expect(cells).to_have_count(4, timeout=30_000)
    expect(cells.nth(2).locator(".jp-InputArea-editor")).to_contain_text("inserted_by_pi = 6 * 7")
    expect(cells.nth(3).locator(".jp-InputArea-editor")).to_have_text("")
    page.screenshot(path=str(SHOTS / f"{shot}.png"), full_page=True)
