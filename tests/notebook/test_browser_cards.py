"""JupyterLab in Debian's Chromium: what a run shows, live and frozen. ``\\(...\\)`` and
``\\[...\\]`` math typeset (live and frozen); a 50 KB prompt folded, and opened with a click;
the same font size, line height and family for each part, live and frozen; run_code's code
highlighted in the approval card, and the figure and DataFrame it made shown in its card (live,
frozen, and after the saved notebook is opened again); a complete tool
call whose turn ended in llama.cpp's parse error is offered on its card, and Approve runs it
(a loopback server speaks llama.cpp's stream).

Each run ends with a call that waits for Approve, so the live view can be looked at before it
freezes. Screenshots go to ``test-output/browser/cards-*.png``. Never downloads a browser: it
launches ``/usr/bin/chromium`` and is skipped without it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from browser_lab import CHROMIUM, SHOTS, Lab, chromium_page
from loopback import LoopbackServer, json_reply, serving
from test_browser import run_cell
from test_run_retry import call_then_parse_error, chat_reply

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is not installed"),
]
playwright_sync = pytest.importorskip("playwright.sync_api")

SETUP = r'''
%load_ext pi_notebook
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_text, faux_tool_call

def then_ask(text, call_id, **args):
    """An answer, then a call that waits for Approve (so the live view stays up)."""
    args = args or {"name": "v_" + call_id, "value": 1}
    name = "run_code" if "code" in args else "set_variable"
    return faux_assistant_message([faux_text(text), faux_tool_call(name, args, id=call_id)],
                                  stop_reason="toolUse")

PLOT = """import matplotlib.pyplot as plt
import pandas as pd
fig, ax = plt.subplots(figsize=(4, 3))
ax.plot([1, 4, 9, 16])
plt.show()
pd.DataFrame({"wine": ["red", "white"], "score": [91, 88]})"""

faux = register_faux_provider()
faux.set_responses([
    then_ask("Inline \\(E = mc^2\\) and display:\n\n\\[a^2 + b^2 = c^2\\]", "m1"),
    faux_assistant_message("Math done."),
    then_ask("Read it all.", "p1"),
    faux_assistant_message("Long prompt done."),
    then_ask("A paragraph of *plain* text, with `code` in it.\n\n- a list item", "s1"),
    faux_assistant_message("Sizes done."),
    then_ask("", "r1", code=PLOT),
    then_ask("Plotted and tabulated.", "r2"),
    faux_assistant_message("Rich done."),
])
print("setup done")
'''
MATH = "%%pi --model faux:faux-1 --approve ask\nShow math."
SIZES = "%%pi\nSame size live and frozen."
LONG = "%%pi\n" + "\n".join(f"row {i}: " + "x" * 30 for i in range(1_200))  # 50 KB


RICH = "%%pi --name rich --model faux:faux-1 --approve ask\nPlot and tabulate."
UNPARSED = "%%pi --name local --model llama.cpp:tiny --approve ask\nCompute 6 * 7 with run_code."


def test_what_a_run_shows_live_and_frozen(tmp_path: Path) -> None:
    expect = playwright_sync.expect
    with (
        serving(LoopbackServer()) as server,
        Lab(tmp_path) as lab,
        playwright_sync.sync_playwright() as p,
    ):
        server.queue(json_reply(404, {"error": "no /props here"}))
        server.queue_sse(call_then_parse_error("x = 6 * 7\nprint('x is', x)"))
        server.queue_sse(chat_reply("It is 42."))
        local = f"import os; os.environ['LLAMA_CPP_BASE_URL'] = {server.url!r}\n"
        url = lab.write_notebook("cards.ipynb", [local + SETUP, MATH, LONG, SIZES, UNPARSED, RICH])
        with chromium_page(p, lab, "cards-failure.png") as page:
            page.goto(url)
            page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=60_000)
            page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for(timeout=90_000)
            cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
            run_cell(page, cells.nth(0))
            expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=60_000)
            _math(page, cells.nth(1), expect)
            _long_prompt(page, cells.nth(2), expect)
            _sizes(page, cells.nth(3), expect)
            _unparsed(page, cells.nth(4), expect, server)
            _rich(page, cells.nth(5), expect)
            _reopened(page, url, lab.notebooks / "cards.ipynb", expect)


def _approve(cell: Any, expect: Any) -> None:
    approve = cell.get_by_role("button", name="Approve")
    expect(approve).to_be_visible(timeout=30_000)
    approve.click()


def _math(page: Any, cell: Any, expect: Any) -> None:
    """``\\(E = mc^2\\)`` and ``\\[...\\]`` are typeset, not shown as ``(E = mc^2)``."""
    run_cell(page, cell)
    live = cell.locator(".pi-view:not(.pi-static) .pi-text")
    expect(live.locator("mjx-container")).to_have_count(2, timeout=30_000)
    expect(live).not_to_contain_text("(E = mc^2)")
    cell.screenshot(path=str(SHOTS / "cards-math-live.png"))
    _approve(cell, expect)
    static = cell.locator(".pi-static")
    expect(static).to_be_visible(timeout=30_000)
    expect(static.locator(".pi-text mjx-container")).to_have_count(2, timeout=10_000)
    expect(static).not_to_contain_text("(E = mc^2)")
    cell.screenshot(path=str(SHOTS / "cards-math-frozen.png"))


def _height(locator: Any) -> float:
    return float(locator.evaluate("e => e.getBoundingClientRect().height"))


def _long_prompt(page: Any, cell: Any, expect: Any) -> None:
    """A 50 KB prompt shows its first lines and a fold; a click opens the rest, live and frozen."""
    run_cell(page, cell)
    prompt = cell.locator(".pi-view:not(.pi-static) .pi-prompt")
    expect(prompt).to_contain_text("row 7:", timeout=30_000)
    expect(prompt.locator("summary")).to_contain_text("Show the whole prompt")
    assert _height(prompt) < 300, _height(prompt)
    prompt.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "cards-prompt-live.png"))
    prompt.locator("summary").click()
    expect(prompt.locator("details")).to_have_attribute("open", "")
    assert _height(prompt) > 5_000, _height(prompt)
    prompt.locator("summary").click()  # closed again: the approval card is near
    _approve(cell, expect)
    frozen = cell.locator(".pi-static .pi-prompt")
    expect(frozen).to_be_visible(timeout=30_000)
    expect(frozen).to_contain_text("row 1199:")  # in the page, folded
    assert _height(frozen) < 300, _height(frozen)
    frozen.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "cards-prompt-frozen.png"))
    frozen.locator("summary").click()
    expect(frozen.locator("details")).to_have_attribute("open", "")
    assert _height(frozen) > 5_000, _height(frozen)


MEASURED = {
    "text": ".pi-text p",
    "list": ".pi-text li",
    "code": ".pi-text code",
    "prompt": ".pi-prompt",
    "tool head": ".pi-tool-head",
    "args": ".pi-args",
    "footer": "div.pi-footer",
}
STYLE_JS = """e => { const s = getComputedStyle(e);
  return [s.fontSize, s.lineHeight, s.fontFamily, s.fontWeight].join(' | '); }"""


def _styles(root: Any) -> dict[str, str]:
    return {name: root.locator(sel).last.evaluate(STYLE_JS) for name, sel in MEASURED.items()}


def _sizes(page: Any, cell: Any, expect: Any) -> None:
    """Font size, line height and family of each part are the same live and frozen."""
    run_cell(page, cell)
    live = cell.locator(".pi-view:not(.pi-static)")
    expect(live.get_by_role("button", name="Approve")).to_be_visible(timeout=30_000)
    before = _styles(live)
    cell.screenshot(path=str(SHOTS / "cards-sizes-live.png"))
    _approve(cell, expect)
    frozen = cell.locator(".pi-static")
    expect(frozen).to_be_visible(timeout=30_000)
    after = _styles(frozen)
    cell.screenshot(path=str(SHOTS / "cards-sizes-frozen.png"))
    for name in MEASURED:
        print(f"{name:10} live   {before[name]}\n{'':10} frozen {after[name]}")
    assert before == after


def _unparsed(page: Any, cell: Any, expect: Any, server: LoopbackServer) -> None:
    """The server's parse error after a complete ``run_code`` call: the card offers it, Approve
    runs it once (no second ask), and the model answers its result; the prompt is sent once."""
    run_cell(page, cell)
    card = cell.locator(".pi-view:not(.pi-static) .pi-tool", has_text="run_code")
    expect(card).to_contain_text("could not parse the model's output after this call", timeout=30_000)
    expect(card.locator(".pi-code")).to_contain_text("print('x is', x)")
    card.scroll_into_view_if_needed()
    cell.screenshot(path=str(SHOTS / "cards-unparsed-offer.png"))
    _approve(cell, expect)
    static = cell.locator(".pi-static")
    expect(static).to_be_visible(timeout=30_000)
    expect(static.locator(".pi-tool", has_text="run_code")).to_contain_text("x is 42")
    expect(static).to_contain_text("It is 42.")
    expect(static).not_to_contain_text("does not match")
    expect(static.locator(".pi-footer")).to_contain_text("2 turns")  # the offered turn is one turn
    cell.screenshot(path=str(SHOTS / "cards-unparsed-ran.png"))
    chats = [r.json["messages"] for r in server.requests if r.path.endswith("/chat/completions")]
    assert [[m["role"] for m in messages] for messages in chats] == [
        ["system", "user"],
        ["system", "user", "assistant", "tool"],
    ]


def _figure_and_table(root: Any, expect: Any) -> None:
    """The card shows the figure (a decoded PNG) and the table, its rows one line high."""
    card = root.locator(".pi-tool", has_text="run_code")
    image = card.locator("img")
    expect(image).to_be_visible(timeout=30_000)
    assert image.evaluate("i => i.naturalWidth") > 100
    table = card.locator("table")
    expect(table).to_contain_text("white")
    cells = ["", "wine", "score", "0", "red", "91", "1", "white", "88"]
    expect(table.locator("td, th")).to_contain_text(cells)
    assert table.locator("tr").last.evaluate("r => r.getBoundingClientRect().height") < 24


def _rich(page: Any, cell: Any, expect: Any) -> None:
    """run_code's code is highlighted Python in the approval card; the figure and DataFrame it
    made are shown in its card, live and frozen."""
    run_cell(page, cell)
    live = cell.locator(".pi-view:not(.pi-static)")
    code = live.locator(".pi-tool .pi-code")
    expect(code).to_contain_text("fig, ax = plt.subplots(figsize=(4, 3))", timeout=30_000)
    expect(code).not_to_contain_text("\\n")
    assert code.locator("span[style*='color']").count() > 5  # highlighted, not an escaped string
    code.scroll_into_view_if_needed()
    cell.screenshot(path=str(SHOTS / "cards-approval-code.png"))
    _approve(cell, expect)
    expect(live.get_by_role("button", name="Approve")).to_be_visible(timeout=30_000)  # the next call
    _figure_and_table(live, expect)
    cell.screenshot(path=str(SHOTS / "cards-rich-live.png"))
    _approve(cell, expect)
    static = cell.locator(".pi-static")
    expect(static).to_contain_text("Rich done.", timeout=30_000)
    _figure_and_table(static, expect)
    expect(static.locator(".pi-code span[style*='color']").first).to_be_visible()
    cell.screenshot(path=str(SHOTS / "cards-rich-frozen.png"))


def _reopened(page: Any, url: str, path: Path, expect: Any) -> None:
    """Saved, then opened again: the frozen output still shows the figure and the table."""
    page.locator(".lm-MenuBar-itemLabel", has_text="File").click()
    page.locator(".lm-Menu-itemLabel").filter(has_text=re.compile(r"^Save( Notebook)?$")).first.click()
    deadline = 30
    while deadline and not json.loads(path.read_text())["cells"][5]["outputs"]:
        page.wait_for_timeout(1_000)
        deadline -= 1
    page.screenshot(path=str(SHOTS / "cards-saved.png"))
    # the frozen run; the Insert as cell row under it (the run ran code) is a widget output
    outputs = json.loads(path.read_text())["cells"][5]["outputs"]
    [output] = [o for o in outputs if "text/html" in o.get("data", {})]
    frozen = "".join(output["data"]["text/html"])
    assert 'src="data:image/png;base64,' in frozen
    assert "<table" in frozen
    page.goto(url)
    cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
    cell = cells.nth(5)
    static = cell.locator(".pi-static")
    expect(static).to_contain_text("Rich done.", timeout=60_000)
    # JupyterLab may render a reopened notebook's outputs once more (the kernel connecting, the
    # windowed notebook attaching cells): a scroll that starts on the first rendering fails with
    # "not attached to the DOM". The locator finds the new one on the next try (at most 3).
    for attempt in range(3):
        try:
            static.scroll_into_view_if_needed(timeout=10_000)
            break
        except Exception as error:  # playwright's Error; the last try's goes to the test
            if "not attached" not in str(error) or attempt == 2:
                raise
            page.wait_for_timeout(500)
    _figure_and_table(static, expect)
    cell.screenshot(path=str(SHOTS / "cards-rich-reopened.png"))
