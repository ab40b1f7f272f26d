"""JupyterLab in Debian's Chromium through Playwright: a ``%%pi`` cell streams, a tool card is
approved, a steering message typed into the live view reaches the agent, a second run is
stopped, and the finished outputs are static HTML. Screenshots go to ``test-output/browser/``.

Never downloads a browser through Playwright: it launches ``/usr/bin/chromium`` and is skipped without it.
"""

from __future__ import annotations

import re
import sys
import time
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
import asyncio, pi_notebook
from pi_notebook.agent import tool
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_text, faux_tool_call

@tool
async def slow_step(seconds: float, on_update) -> str:
    """Wait for a while."""
    on_update("waiting for steer")
    await asyncio.sleep(seconds)
    return "slow step finished"

async def silent_then_dollars(context, options, state, model):
    await asyncio.sleep(3)  # a slow prompt: nothing streams, the footer must still move
    return faux_assistant_message(
        [faux_text("The first costs $5 and the second costs $6."),
         faux_tool_call("slow_step", {"seconds": 3}, id="d1")],
        stop_reason="toolUse",
    )

price_a, price_b = 5, 6

def echo_steer(context, options, state, model):
    last = context.messages[-1]
    return faux_assistant_message("Steering received: **" + last.content[0].text + "**.")

faux = register_faux_provider(token_size={"min": 1, "max": 1}, tokens_per_second=30)
faux.set_responses([
    silent_then_dollars,
    faux_assistant_message("Together $11, and $$E = mc^2$$ is still math."),
    faux_assistant_message(
        [faux_text("I will set a variable first."),
         faux_tool_call("set_variable", {"name": "approved_in_browser", "value": 42}, id="b1")],
        stop_reason="toolUse",
    ),
    faux_assistant_message([faux_tool_call("slow_step", {"seconds": 5}, id="b2")], stop_reason="toolUse"),
    echo_steer,
    faux_assistant_message("word " * 400),
])
pi_notebook.current().state.tools = [slow_step]
print("setup done")
'''
RUN_0 = "%%pi --model faux:faux-1 --tools none\nCompare $`price_a` and $`price_b`."
RUN_1 = "%%pi\nSet a variable, then take a slow step."
RUN_2 = "%%pi\nNow talk for a long time."
CHECK = "print('after:', approved_in_browser, _pi.stop_reason)"


T0 = [time.monotonic()]


def step(message: str) -> None:
    print(f"[{time.monotonic() - T0[0]:6.2f}s] {message}", flush=True)


def run_cell(page: Any, cell: Any) -> None:
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def test_pi_cell_in_jupyterlab(tmp_path: Path) -> None:
    expect = playwright_sync.expect
    T0[0] = time.monotonic()
    with Lab(tmp_path) as lab, playwright_sync.sync_playwright() as p:
        step("lab up")
        url = lab.write_notebook("pi.ipynb", [SETUP, RUN_0, RUN_1, RUN_2, CHECK])
        with chromium_page(p, lab, "failure.png") as page:
            _drive(page, url, expect)


def _drive(page: Any, url: str, expect: Any) -> None:
    page.goto(url)
    page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=60_000)
    step("notebook rendered")
    # The toolbar says idle before the kernel websocket is up; the status bar does not.
    page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for(timeout=90_000)
    step("kernel idle")
    cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
    run_cell(page, cells.nth(0))
    expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=60_000)
    step("setup cell ran")
    _dollars_and_waiting(page, cells.nth(1), expect)
    _approve_and_steer(page, cells.nth(2), expect)
    _stop(page, cells.nth(3), expect)
    run_cell(page, cells.nth(4))
    expect(cells.nth(4).locator(".jp-OutputArea")).to_contain_text("after: 42 aborted", timeout=30_000)
    step("check cell ran")


def _dollars_and_waiting(page: Any, cell: Any, expect: Any) -> None:
    """Run 0: a silent model (the footer keeps moving and says why), then dollar signs in the
    prompt, the answer and the footer that must read as written, not as MathJax soup."""
    run_cell(page, cell)
    view = cell.locator(".pi-view")
    footer = view.locator(".pi-footer").last  # the widget and its HTML both carry the class
    waiting = re.compile(r"[1-9]\.\d s · (faux-1 · )?waiting for the model")
    expect(footer).to_contain_text(waiting, timeout=30_000)
    # The widget frontend's control requests (create_subshell_request) must not make the
    # status bar say Idle while the cell runs.
    expect(page.locator(".jp-StatusBar-TextItem", has_text="| Busy").first).to_be_visible(timeout=2_000)
    page.screenshot(path=str(SHOTS / "0-waiting.png"), full_page=True)
    step("footer ticks while the model is silent")
    expect(view).to_contain_text("The first costs $5 and the second costs $6.", timeout=30_000)
    expect(footer).to_contain_text("running slow_step")
    expect(view.locator(".pi-prompt")).to_contain_text("Compare $`price_a` and $`price_b`.")
    expect(view.locator("mjx-container")).to_have_count(0)  # live: no $...$ typeset
    page.screenshot(path=str(SHOTS / "0-live-dollars.png"), full_page=True)
    static = cell.locator(".pi-static")
    expect(static).to_be_visible(timeout=30_000)
    expect(static).to_contain_text("The first costs $5 and the second costs $6.")
    expect(static).to_contain_text("Together $11, and")
    expect(static.locator(".pi-prompt")).to_contain_text("Compare $`price_a` and $`price_b`.")
    expect(static.locator(".pi-footer")).to_contain_text("$0.0000")
    # Only the math the model wrote as math ($$E = mc^2$$) is typeset.
    expect(static.locator("mjx-container")).to_have_count(1, timeout=10_000)
    expect(static.locator(".pi-text mjx-container")).to_have_count(1)
    page.screenshot(path=str(SHOTS / "0-static-dollars.png"), full_page=True)
    step("run 0 frozen, dollars as written")


def _approve_and_steer(page: Any, cell: Any, expect: Any) -> None:
    """Run 1: streamed text, an approval, then steering typed during a slow tool call."""
    run_cell(page, cell)
    view = cell.locator(".pi-view")
    expect(view).to_be_visible(timeout=30_000)
    approve = cell.get_by_role("button", name="Approve")
    expect(approve).to_be_visible(timeout=30_000)
    expect(view).to_contain_text("I will set a variable first.")  # streamed before the run ended
    expect(cell.locator(".jp-InputPrompt")).to_contain_text("*")  # still running
    page.screenshot(path=str(SHOTS / "1-approval.png"), full_page=True)
    approve.click()
    step("approved")
    card = cell.locator(".pi-tool", has_text="set_variable")
    expect(card).to_contain_text("done", timeout=30_000)
    expect(view).to_contain_text("waiting for steer", timeout=30_000)
    box = cell.get_by_placeholder("Steer the agent")
    box.click()
    box.press_sequentially("going left", delay=60)  # one state sync per keystroke
    cell.get_by_role("button", name="Send").click()
    step("steering sent")
    # Every keystroke and click was a comm answered with idle; the status bar must say Busy
    # again while the cell still runs (before the slow step ends).
    expect(cell.locator(".jp-InputPrompt")).to_contain_text("*")
    expect(page.locator(".jp-StatusBar-TextItem", has_text="| Busy").first).to_be_visible(timeout=2_000)
    page.screenshot(path=str(SHOTS / "2-steering.png"), full_page=True)
    static = cell.locator(".pi-static")
    expect(static).to_be_visible(timeout=30_000)
    expect(static).to_contain_text("steer: going left")
    # The third model call echoes the last message it saw: the whole text proves every keystroke
    # synced while the cell ran (the comm_msg idle wrapper) and that it came right after the tool turn.
    expect(static).to_contain_text("Steering received: going left.")
    expect(static.locator("strong", has_text="going left")).to_be_visible()  # Markdown rendered
    expect(static.locator(".pi-tool", has_text="set_variable")).to_contain_text("done")
    expect(static.locator(".pi-tool", has_text="slow_step")).to_contain_text("done")
    expect(cell.locator(".pi-view:not(.pi-static)")).to_have_count(0)  # the live widget is gone
    page.screenshot(path=str(SHOTS / "3-run1-static.png"), full_page=True)
    step("run 1 frozen")


def _stop(page: Any, cell: Any, expect: Any) -> None:
    """Run 2: Stop while the answer streams."""
    run_cell(page, cell)
    view = cell.locator(".pi-view")
    expect(view).to_contain_text(re.compile(r"(word ){20}"), timeout=30_000)
    cell.get_by_role("button", name="Stop").click()
    step("stop clicked")
    static = cell.locator(".pi-static")
    expect(static).to_be_visible(timeout=30_000)
    expect(static).to_contain_text("Aborted: Request was aborted")
    expect(static).to_contain_text("Stopped with the Stop button.")
    expect(static).not_to_contain_text("Stopping")
    expect(cell.locator(".jp-InputPrompt")).not_to_contain_text("*", timeout=10_000)
    page.screenshot(path=str(SHOTS / "4-stopped.png"), full_page=True)
