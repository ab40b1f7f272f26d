"""Hostile model output is shown as text: nothing runs, nothing is fetched, and rendering it is
bounded, in all three renderings of a ``%%pi`` run.

* The renderers on their own: the inputs that cost a Markdown parser most (``hostile.LARGE``)
  render without recursing with their depth, into output linear in their size, with a break
  opportunity in every long word; the costly ones as plain text.
* A real kernel: the faux model answers with every payload (as thinking, text, a tool result and
  a tool name) and with ``LARGE``; every widget update and the frozen output are checked, and the
  frozen ``text/html`` (what the saved notebook keeps) is loaded in Debian's Chromium with every
  request routed (only the page itself is served), dialogs and ``window.__pwned`` watched and
  the layout measured. Screenshots go to ``test-output/browser/hostile-*.png``.
* JupyterLab: the same run in the browser, its live view and then its frozen output.

The beacon server must never see a request. Render times are measured in
``bench/bench_render.py``, not here.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from browser_lab import CHROMIUM, SHOTS, Lab, chromium_page
from hostile import DOM_CHECK, LARGE, PWN, RUN, active, answer, assert_inert, faux_setup
from kernel_driver import Kernel, Watch
from loopback import LoopbackServer, serving
from view_events import Run

from pi_notebook.notebook.view.reduce import ViewState, add_notice, reduce
from pi_notebook.notebook.view.render import (
    PLAIN_NOTE,
    frontend_markdown,
    render_html,
    render_markdown,
    render_text,
    renders_raw_html,
    renders_unsafe_link,
    too_much_markup,
)
from pi_notebook.notebook.view.render.static_html import WRAP

COSTLY = ("long line", "brackets", "nested emphasis", "links", "images")
NESTED = {"nested quotes": "deep quote", "nested lists": "deep item"}
has_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is not installed")


# --- the renderers ---------------------------------------------------------------------------------


def call_shallow(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` with the recursion limit 300 frames above the caller's depth: rendering may
    recurse as deep as Markdown's nesting limits allow, never as deep as its input nests."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 300)
    try:
        return fn(*args)
    finally:
        sys.setrecursionlimit(limit)


@pytest.mark.parametrize("name", list(LARGE))
def test_large_and_deep_inputs_render_bounded(name: str) -> None:
    text = LARGE[name]
    html = call_shallow(render_markdown, text)
    markdown = call_shallow(frontend_markdown, text)
    parsed = assert_inert(html)
    assert len(html) <= 6 * len(text) + 2_000
    assert len(markdown) <= 2 * len(text) + 200
    assert parsed.max_depth <= 30
    assert max(len(word) for chunk in parsed.text for word in chunk.split()) <= WRAP
    assert not renders_raw_html(markdown)
    assert not renders_unsafe_link(markdown)
    if name in COSTLY:  # shown as plain text, in the static HTML and in the live view
        assert too_much_markup(text)
        assert 'class="pi-plain' in html
        assert markdown.startswith(f"*{PLAIN_NOTE}*\n\n```")
    else:  # nesting is cut, and the text past the cut is kept
        assert not too_much_markup(text)
        assert NESTED[name] in "".join(parsed.text)
        assert NESTED[name] in markdown


def hostile_state(beacon: str) -> ViewState:
    """A run where every place the view shows holds hostile text."""
    text = answer(beacon)
    run = Run().start(text)
    run.user(text)
    message = run.assistant(
        ("thinking", text), ("text", text), ("tool", "t1", PWN, {"code": text}), stop_reason="toolUse"
    )
    run.tool_start("t1", PWN, {"code": text}).tool_end("t1", PWN, text, details={"html": text})
    run.turn_end(message).end()
    state = ViewState(prompt=text)
    for event in run.events:
        reduce(state, event)
    state.error_message = text
    add_notice(state, text)
    return state


def test_every_payload_is_text_in_the_static_renderings() -> None:
    state = hostile_state("http://127.0.0.1:9")
    parsed = assert_inert(render_html(state))
    shown, plain = "".join(parsed.text), render_text(state)
    for payload in active("http://127.0.0.1:9"):
        first_line = payload.splitlines()[0]
        assert first_line in plain
        if first_line.startswith("<"):  # raw HTML reads as written in the HTML too
            assert first_line in shown
    for payload in active("http://127.0.0.1:9"):
        markdown = frontend_markdown(payload)
        assert not renders_raw_html(markdown), payload
        assert not renders_unsafe_link(markdown), payload


# --- a real kernel: live widgets, the frozen output, and the frozen HTML in Chromium ----------------


@pytest.fixture(scope="module")
def beacon() -> Iterator[LoopbackServer]:
    """The address every fetching payload points at; it must never see a request."""
    with serving(LoopbackServer()) as server:
        yield server
    assert server.requests == [], [r.path for r in server.requests]


@pytest.fixture(scope="module")
def live(kernel: Kernel, beacon: LoopbackServer) -> Watch:
    kernel.fresh()
    reply = kernel.run(faux_setup(beacon.url, pause=0), timeout=60)
    assert reply["status"] == "ok", reply
    cell = kernel.execute(RUN)
    return Watch(kernel).until_replies([cell], timeout=120)


@pytest.mark.kernel
def test_the_live_widgets_show_every_payload_as_text(live: Watch) -> None:
    htmls = [str(w.state.get("value", "")) for w in live.find("HTMLModel")]
    assert any("&lt;script&gt;" in value for value in htmls)  # the tool card shows the result
    for value in htmls:
        assert_inert(value)
    markdown = []
    for output in live.find("OutputModel"):
        for item in output.state.get("outputs", ()):
            assert set(item["data"]) == {"text/markdown"}
            markdown.append(item["data"]["text/markdown"])
    assert any("&lt;script>" in text for text in markdown)  # the answer went through the stream
    assert any(text.startswith(f"*{PLAIN_NOTE}*") for text in markdown)  # LARGE, as plain text
    for text in markdown:
        assert not renders_raw_html(text)
        assert not renders_unsafe_link(text)


@pytest.mark.kernel
def test_the_frozen_text_shows_every_payload_as_written(live: Watch, beacon: LoopbackServer) -> None:
    plain = live.final_bundle()["text/plain"]
    for payload in active(beacon.url):
        assert payload.splitlines()[0] in plain
    # the answer is shown as thinking, text and tool result: linear in what the model sent
    assert len(plain) < 2 * (4 * len(answer(beacon.url)) + sum(map(len, LARGE.values())))


PAGE_URL = "http://saved-notebook.test/"
PAGE = "<!doctype html><html><head><meta charset='utf-8'><title>saved output</title></head>"
PAGE += "<body style='margin:0'><main style='max-width:860px;margin:0 auto'>{body}</main></body></html>"
WIDTH = 1000


@pytest.mark.kernel
@pytest.mark.browser
@has_chromium
def test_the_frozen_html_is_inert_and_bounded_in_chromium(live: Watch) -> None:
    playwright_sync = pytest.importorskip("playwright.sync_api")
    page_html = PAGE.format(body=live.final_bundle()["text/html"])

    def serve(route: Any) -> None:
        if route.request.url == PAGE_URL:
            route.fulfill(body=page_html, content_type="text/html; charset=utf-8")
        else:
            route.abort()

    with (
        playwright_sync.sync_playwright() as p,
        chromium_page(p, None, "hostile-static-failure.png", 900, WIDTH) as page,
    ):
        requests: list[str] = []
        dialogs: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.route("**/*", serve)
        page.goto(PAGE_URL)
        page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        page.wait_for_timeout(300)
        page.screenshot(path=str(SHOTS / "hostile-static.png"))
        page.locator(".pi-plain").scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "hostile-static-large.png"))
        assert requests == [PAGE_URL]
        assert dialogs == []
        assert page.evaluate("window.__pwned") is None
        assert page.locator("body").evaluate_all(DOM_CHECK) == []
        assert_layout(page, ".pi-view")


def assert_layout(page: Any, card: str, right: float = WIDTH) -> None:
    """No card wider than its column or the viewport; the page does not scroll sideways."""
    layout = page.evaluate(
        """(card) => ({page: document.documentElement.scrollWidth,
             cards: [...document.querySelectorAll(card)].map(v =>
                 [v.scrollWidth, v.clientWidth, v.getBoundingClientRect().right])})""",
        card,
    )
    assert layout["page"] <= page.viewport_size["width"], layout["page"]
    assert layout["cards"], f"no {card} on the page"
    for scroll_width, client_width, edge in layout["cards"]:
        assert scroll_width <= client_width + 1, layout["cards"]
        assert edge <= right, layout["cards"]


# --- JupyterLab: the live view, then the frozen output ----------------------------------------------


def run_cell(page: Any, cell: Any) -> None:
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


def assert_inert_in_page(page: Any, views: Any, dialogs: list[str]) -> None:
    assert views.evaluate_all(DOM_CHECK) == []
    assert page.evaluate("window.__pwned") is None
    assert dialogs == []


@pytest.mark.browser
@has_chromium
def test_jupyterlab_shows_hostile_output_inert(tmp_path: Path, beacon: LoopbackServer) -> None:
    playwright_sync = pytest.importorskip("playwright.sync_api")
    expect = playwright_sync.expect
    setup = "%load_ext pi_notebook\n" + faux_setup(beacon.url, pause=6)
    with Lab(tmp_path) as lab, playwright_sync.sync_playwright() as p:
        url = lab.write_notebook("hostile.ipynb", [setup, RUN])
        with chromium_page(p, lab, "hostile-lab-failure.png") as page:
            requests: list[str] = []
            dialogs: list[str] = []
            page.on("request", lambda request: requests.append(request.url))
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.goto(url)
            page.locator(".jp-StatusBar-TextItem", has_text="| Idle").first.wait_for(timeout=90_000)
            cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
            run_cell(page, cells.nth(0))
            expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text(
                "hostile setup done", timeout=60_000
            )
            run_cell(page, cells.nth(1))
            output = cells.nth(1).locator(".jp-Cell-outputArea")
            # the live view, while the pause tool waits
            live = output.locator(".pi-view:not(.pi-static)")
            expect(live.locator(".pi-footer").last).to_contain_text("running pause", timeout=30_000)
            live.locator(".pi-text").first.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / "hostile-lab-live.png"))
            # each sealed run of the answer that is shown as plain text carries the note, so
            # how many there are depends on how far the view has caught up
            live.get_by_text(PLAIN_NOTE).first.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / "hostile-lab-live-large.png"))
            expect(live).to_contain_text(f"<script>{PWN}</script>")  # shown as text
            assert_inert_in_page(page, output.locator(".pi-view"), dialogs)
            assert_layout(page, ".pi-view", right=page.viewport_size["width"])
            expect(live.locator(".pi-footer").last).to_contain_text("running pause")  # still live
            # the frozen output that replaces it (MathJax has typeset the model's $$...$$)
            static = output.locator(".pi-static")
            expect(static).to_be_visible(timeout=60_000)
            expect(output.locator(".pi-view:not(.pi-static)")).to_have_count(0)
            expect(static.locator("mjx-container").first).to_be_attached(timeout=10_000)
            assert_inert_in_page(page, output.locator(".pi-view"), dialogs)
            assert_layout(page, ".pi-view", right=page.viewport_size["width"])
            static.locator(".pi-tool").first.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / "hostile-lab-static.png"))
            others = [r for r in requests if not r.startswith(lab.url)]
            assert others == [], others
