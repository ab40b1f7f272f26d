"""Hostile model output, and the checks that every rendering of it stays inert and bounded.

What a prompt-injected answer or tool result may contain: every active payload either sets
``window.__pwned`` or opens a dialog, and every fetching one points at ``beacon`` (a loopback
URL whose server must never see a request). ``LARGE`` holds the inputs that cost a Markdown
parser the most: a 200 KB line, deep nesting, 10,000 brackets, nested emphasis.

``assert_inert`` checks server-side HTML (the renderer's own tags and attributes only);
``faux_setup`` is the kernel code that scripts the faux model (and a tool) to answer with all
of it; ``DOM_CHECK`` is what a browser test evaluates in the page that shows it.
"""

from __future__ import annotations

from html.parser import HTMLParser

PWN = "window.__pwned=1;alert(1)"


def active(beacon: str) -> list[str]:
    """Payloads that would run script or fetch ``beacon`` if rendered as HTML or trusted Markdown."""
    return [
        f"<script>{PWN}</script>",
        f'<img src=x onerror="{PWN}">',
        f'<img src="{beacon}/img-tag">',
        f'<iframe src="{beacon}/iframe"></iframe>',
        f'<iframe srcdoc="<script>parent.{PWN}</script>"></iframe>',
        f'<svg onload="{PWN}"><circle r="1"/></svg>',
        f"<svg><script>{PWN}</script></svg>",
        f"<style>body{{background:url({beacon}/style)}}</style><style>*{{display:none}}</style>",
        f'<link rel="stylesheet" href="{beacon}/link">',
        f'<meta http-equiv="refresh" content="0;url={beacon}/refresh">',
        f'<object data="{beacon}/object"></object><embed src="{beacon}/embed">',
        f'<video poster="{beacon}/poster"></video><audio src="{beacon}/audio" autoplay></audio>',
        f'<a href="javascript:{PWN}">html link</a> <details open ontoggle="{PWN}">x</details>',
        f'<form action="{beacon}/form"><button>go</button></form><base href="{beacon}/base/">',
        f"[md link](javascript:{PWN}) [upper](JaVaScRiPt:{PWN}) [entity](java&#115;cript:{PWN})",
        f"[pointy](<javascript:{PWN}>) [escaped](javascript\\:{PWN}) [vb](vbscript:msgbox(1))",
        f"[spaced](\n  javascript:{PWN}) <javascript:{PWN}>",
        f"[data link](data:text/html,<script>{PWN}</script>)",
        f"[reference][evil]\n\n[evil]: javascript:{PWN}",
        f"![markdown image]({beacon}/beacon) ![ref image][pic] [![linked image]({beacon}/nested)](http://x.test)",
        f"[pic]: {beacon}/beacon-ref",
        "![data image](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9ImFsZXJ0KDEpIi8+)",
        '<img src="data:image/png;base64,iVBORw0KGgo=">',
        f"$$\\href{{javascript:{PWN}}}{{math link}}$$ $$\\style{{background:url({beacon}/mathjax)}}{{x}}$$",
        f"$$\\require{{{beacon}/require.js}}\\href{{{beacon}/mathjax-link}}{{y}}$$",
        f"\\begin{{equation}}\\href{{javascript:{PWN}}}{{z}}\\end{{equation}}",
        f'```html\n<script>{PWN}</script>\n```\n\n`<img src=x onerror="{PWN}">` in code',
    ]


LARGE = {
    "long line": "A" * 200_000,
    "nested quotes": ">" * 5_000 + " deep quote",
    "nested lists": "- " * 5_000 + "deep item",
    "brackets": "[" * 10_000,
    "nested emphasis": "*a **b " * 2_500 + "c" + "** a*" * 2_500,
    "links": "[a](" * 5_000,
    "images": "![x](" * 5_000,
}


def answer(beacon: str) -> str:
    """One assistant answer with every active payload, each in its own paragraph."""
    return "\n\n".join(["Here is the report.", *active(beacon)])


# --- server-side HTML ----------------------------------------------------------------------------


class Tags(HTMLParser):
    """Every start tag with its attributes, the text (entities decoded) and the deepest nesting."""

    VOID = frozenset({"wbr", "br", "hr", "img", "meta", "link", "input", "embed", "source"})

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.depth = self.max_depth = 0
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        if tag not in self.VOID:
            self.depth += 1
            self.max_depth = max(self.max_depth, self.depth)

    def handle_endtag(self, tag: str) -> None:
        self.depth -= tag not in self.VOID

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


# fmt: off
SAFE_TAGS = {
    "div", "span", "b", "p", "em", "strong", "code", "pre", "details", "summary", "ul", "ol", "li", "a",
    "blockquote", "hr", "br", "s", "table", "thead", "tbody", "tr", "th", "td",
    "h1", "h2", "h3", "h4", "h5", "h6", "wbr",
}
# fmt: on
SAFE_ATTRS = {"class", "style", "href", "rel", "title", "start"}


def assert_inert(markup: str) -> Tags:
    """No tag outside the renderer's own vocabulary, no event handler, no script URL."""
    parsed = Tags(markup)
    for tag, attrs in parsed.tags:
        assert tag in SAFE_TAGS, (tag, attrs)
        assert set(attrs) <= SAFE_ATTRS, (tag, attrs)
        href = attrs.get("href", "").strip().lower()
        assert not href.startswith(("javascript:", "vbscript:", "data:", "file:")), href
    return parsed


# --- the faux model that answers with all of it ----------------------------------------------------


def faux_setup(beacon: str, pause: float) -> str:
    """Kernel code: the faux model answers with the hostile answer (as thinking and text), calls
    ``report`` (a tool whose result is hostile) and a tool with a hostile name, then answers
    with ``LARGE`` while ``pause`` (a tool) waits ``pause`` seconds, so a browser can look at
    the live view; ``print("hostile setup done")`` at the end."""
    large = "\n\n".join(LARGE.values())
    return f"""\
import asyncio
import pi_notebook
from pi_notebook.agent import tool
from pi_notebook.ai.faux import (
    faux_assistant_message, faux_text, faux_thinking, faux_tool_call, register_faux_provider)

ANSWER = {answer(beacon)!r}
LARGE = {large!r}

@tool
def report(html: str) -> str:
    \"\"\"A tool whose result is hostile.\"\"\"
    return "tool result " + ANSWER + html

@tool
async def pause(seconds: float) -> str:
    \"\"\"Wait, so that the live view can be looked at.\"\"\"
    await asyncio.sleep(seconds)
    return "paused"

faux = register_faux_provider(token_size={{"min": 2000, "max": 4000}})
faux.set_responses([
    faux_assistant_message(
        [faux_thinking(ANSWER), faux_text(ANSWER),
         faux_tool_call("report", {{"html": ANSWER[:300]}}, id="r1"),
         faux_tool_call('<img src=x onerror="{PWN}">', {{}}, id="r2")],
        stop_reason="toolUse"),
    faux_assistant_message([faux_text(LARGE), faux_tool_call("pause", {{"seconds": {pause}}}, id="p1")],
                           stop_reason="toolUse"),
    faux_assistant_message("Done."),
])
pi_notebook.current().state.tools = [report, pause]
print("hostile setup done")
"""


RUN = "%%pi --model faux:faux-1 --tools none --approve auto\nShow me the report."

DOM_CHECK = """(roots) => {
    const bad = [];
    for (const el of roots.flatMap(root => [root, ...root.querySelectorAll('*')])) {
        const tag = el.tagName.toLowerCase();
        if (['script', 'iframe', 'img', 'object', 'embed', 'svg', 'style', 'link', 'meta', 'video',
             'audio', 'form', 'base', 'frame', 'input', 'button'].includes(tag)
            && !el.closest('.pi-controls, .pi-approval')) {
            bad.push('element ' + tag);
        }
        for (const attr of el.getAttributeNames()) {
            if (attr.startsWith('on')) bad.push('handler ' + attr + ' on ' + tag);
        }
        for (const attr of ['href', 'src', 'xlink:href', 'action', 'formaction', 'data']) {
            const value = el.getAttribute(attr);
            if (value === null) continue;
            let scheme = 'relative';
            try { scheme = new URL(value, 'http://base.test/').protocol; }
            catch (e) { scheme = 'unparsable'; }
            if (!['http:', 'https:', 'mailto:'].includes(scheme)) bad.push(attr + '=' + value.slice(0, 80));
        }
    }
    return bad;
}"""
"""JavaScript for ``locator.evaluate_all``: what in the elements' subtrees could run or fetch (a
tag that loads or runs something, an event handler, a URL that is not http, https or mailto);
the live view's own controls (Stop, Send, Approve ...) excepted."""
