"""Static renderers: deterministic text, escaped and sanitised HTML, Markdown helpers."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

sys.path.insert(0, str(Path(__file__).parent))

from hostile import Tags, assert_inert
from view_events import Run, tool_run

from pi_notebook.notebook.view.reduce import Footer, ViewState, add_notice, mark_queued, reduce
from pi_notebook.notebook.view.render import (
    MATH,
    MAX_SHOWN,
    NO_MATH,
    SplitScanner,
    footer_text,
    format_details,
    frontend_markdown,
    prompt_html,
    render_html,
    render_markdown,
    render_text,
    renders_raw_html,
    renders_unsafe_link,
    safe_split,
    static_bundle,
)
from pi_notebook.notebook.view.render.text import PROMPT_CHARS, PROMPT_LINES, fold_prompt

PROMPT = "Add 2 and 3, then read missing.txt"

EXPECTED_TEXT = """\
> Add 2 and 3, then read missing.txt

[thinking]
    I need both tools.

Let me use the tools.

[tool] add (done)
    args: {"a": 2, "b": 3}
    result: 5
    details: {"exact": true}

[tool] read_file (error)
    args: {"path": "missing.txt"}
    result: ENOENT: missing.txt

The sum is **5**; the file is missing.

Approvals follow --approve deny.
"""


def state_of(run: Run, prompt: str = PROMPT) -> ViewState:
    state = ViewState(prompt=prompt)
    for event in run.events:
        reduce(state, event)
    return state


# --- render_text -----------------------------------------------------------------------------


def test_render_text_is_complete_and_exact() -> None:
    state = state_of(tool_run())
    add_notice(state, "Approvals follow --approve deny.")
    assert render_text(state) == EXPECTED_TEXT


def test_render_text_ignores_ids_times_usage_and_model() -> None:
    one = state_of(tool_run(model="faux-1", ids=("call_1", "call_2"), ts=1_000))
    two = state_of(tool_run(model="gpt-x", ids=("toolu_9f", "toolu_a0"), ts=9_999_999))
    two.footer.input_tokens += 12345
    two.footer.cost += 1.5
    two.footer.elapsed = 99.0
    assert one.footer != two.footer
    assert render_text(one) == render_text(two)
    text = render_text(one)
    for volatile in ("call_1", "faux-1", "$", "tokens", "0.4 s"):
        assert volatile not in text


def test_render_text_covers_injected_queued_errors_and_not_executed() -> None:
    run = Run().start("go")
    run.user("also check X")
    message = run.assistant(
        ("text", "Partial"),
        ("tool", "t", "slow", {}),
        stop_reason="aborted",
        error_message="Request was aborted",
    )
    run.turn_end(message).end()
    state = ViewState(prompt="go")
    mark_queued(state, "follow_up", "then summarise")
    mark_queued(state, "steer", "also check X")
    for event in run.events:
        reduce(state, event)
    assert render_text(state) == (
        "> go\n\n"
        "> [steer] also check X\n\n"
        "Partial\n\n"
        "[tool] slow (error)\n"
        "    args: {}\n"
        "    not executed: the run ended first\n\n"
        "queued follow-up: then summarise\n\n"
        "Aborted: Request was aborted\n"
    )


def test_render_text_details_are_deterministic_for_opaque_objects() -> None:
    class Opaque:
        pass

    assert format_details({"obj": Opaque()}, indent=None) == '{"obj": "<Opaque>"}'
    assert format_details({}) == ""
    assert format_details("raw text") == "raw text"
    long = format_details("x" * (MAX_SHOWN + 10))
    assert long.endswith("(10 more characters)")


def test_footer_text_shows_turns_tokens_cost_elapsed_model() -> None:
    footer = Footer(turns=2, input_tokens=1234, output_tokens=56, cost=0.01234, elapsed=3.21, model="m1")
    assert footer_text(footer) == "2 turns · 1,234 in / 56 out tokens · $0.0123 · 3.2 s · m1"
    footer.cache_read_tokens = 800
    assert "(cache 800 read / 0 write)" in footer_text(footer)
    assert footer_text(Footer(turns=1)).startswith("1 turn · ")


# --- render_html -----------------------------------------------------------------------------


HOSTILE = "<script>alert(1)</script> <img src=x onerror=alert(2)> <b onclick='x()'>bold</b>"


def hostile_state() -> ViewState:
    run = Run().start(HOSTILE)
    run.user("steer " + HOSTILE)
    message = run.assistant(
        ("thinking", "think " + HOSTILE),
        ("text", "answer " + HOSTILE + "\n\n[click](javascript:alert(3)) ![pix](http://evil.example/p.png)"),
        ("tool", "t1", "<i>name</i>", {"code": HOSTILE}),
        stop_reason="toolUse",
        error_message=None,
    )
    run.tool_start("t1", "<i>name</i>", {"code": HOSTILE})
    run.tool_end("t1", "<i>name</i>", "output " + HOSTILE, details={"html": HOSTILE})
    run.turn_end(message).end()
    state = state_of(run, HOSTILE)
    state.error_message = "error " + HOSTILE
    state.footer.model = HOSTILE
    add_notice(state, "notice " + HOSTILE)
    return state


def test_render_html_escapes_model_and_tool_output() -> None:
    markup = render_html(hostile_state())
    parsed = assert_inert(markup)
    lowered = markup.lower()
    assert "<script" not in lowered
    assert "<img" not in lowered
    assert "onerror=" not in lowered.replace("onerror=alert(2)&gt;", "")  # only as escaped text
    text = "".join(parsed.text)
    # The hostile strings are shown, as text, in every place they came from.
    assert text.count("<script>alert(1)</script>") >= 8
    assert "javascript:" not in " ".join(a.get("href", "") for _, a in parsed.tags)
    links = [a["href"] for t, a in parsed.tags if t == "a"]
    assert links == ["http://evil.example/p.png"]  # the image became a link, not a fetch


def test_render_html_renders_markdown() -> None:
    markdown = (
        "# Title\n\n## Sub\n\nSome *em* and **strong** and `inline <code>`.\n\n"
        "```python\nprint('<hi>')\n```\n\n"
        "- one\n- two\n\n1. first\n2. second\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "> quoted\n\n[site](https://example.com) ~~gone~~\n"
    )
    run = Run().start("md")
    run.assistant(("text", markdown))
    markup = render_html(state_of(run.end(), "md"))
    parsed = assert_inert(markup)
    tags = [t for t, _ in parsed.tags]
    for tag in (
        "h1",
        "h2",
        "em",
        "strong",
        "code",
        "pre",
        "ul",
        "ol",
        "li",
        "table",
        "th",
        "td",
        "blockquote",
        "s",
    ):
        assert tag in tags, tag
    assert "print(&#x27;&lt;hi&gt;&#x27;)" in markup or "print('&lt;hi&gt;')" in markup
    assert "inline &lt;code&gt;" in markup
    anchor = next(a for t, a in parsed.tags if t == "a")
    assert anchor == {"href": "https://example.com", "rel": "noopener noreferrer nofollow"}


def test_render_html_link_schemes() -> None:
    html = render_markdown(
        "[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c]( javascript:x) [d](vbscript:x) "
        "[e](data:text/html,hi) [f](file:///etc/passwd) [g](https://ok.example) [h](mailto:a@b.c) "
        "[i](relative/path)"
    )
    hrefs = [a["href"] for t, a in Tags(html).tags if t == "a"]
    assert hrefs == ["https://ok.example", "mailto:a@b.c", "relative/path"]
    assert "javascript:alert(1)" in html  # kept as visible text


def test_render_html_structure_thinking_details_footer() -> None:
    markup = render_html(state_of(tool_run()))
    parsed = assert_inert(markup)
    classes = [_without_math_marks(a.get("class", "")) for _, a in parsed.tags]
    assert classes[0] == "pi-view pi-static"
    assert sum("pi-tool " in c or c.startswith("pi-tool pi-tool--") for c in classes) == 2
    assert "pi-tool pi-tool--done" in classes
    assert "pi-tool pi-tool--error" in classes
    tags = [(t, _without_math_marks(a.get("class", ""))) for t, a in parsed.tags]
    assert [t for t, c in tags if c == "pi-thinking"] == ["details"]
    assert [t for t, c in tags if c == "pi-details"] == ["details"]
    footer = markup[markup.index('class="pi-footer') :]
    assert "2 turns · 250 in / 32 out tokens · $0.0033 · 0.4 s · faux-1" in footer
    assert "<style" not in markup  # inline styles only: notebook sanitisers drop <style>


def test_static_bundle() -> None:
    state = state_of(tool_run())
    assert static_bundle(state) == {"text/plain": render_text(state), "text/html": render_html(state)}


FRAGMENTS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<a href='javascript:x'>y</a>",
    "[l](javascript:alert(1))",
    "![i](http://e.example/x.png)",
    "<!-- c -->",
    "<http://ok.example>",
    "<javascript:alert(1)>",
    "[r]: javascript:alert(1)\n",
    "[r][r]",
    "`",
    "``",
    "```",
    "~~~",
    "$",
    "\\",
    "<",
    ">",
    "'",
    '"',
    "&lt;",
    "# ",
    "- ",
    "    ",
    "\n",
    "\n\n",
    "| a | b |\n|---|---|\n",
    "text",
    "(",
    ")",
    "[",
    "]",
    "!",
    "<div>",
    "</div>",
    "<b",
    "x=1",
    "](",
    "]:",
    "java&#115;cript:x",
    "javascript\\:x",
    ":",
    " ",
    "<",
    "> ",
]
hostile_text = st.lists(st.sampled_from(FRAGMENTS), max_size=24).map("".join)


@settings(max_examples=200, deadline=None)
@given(hostile_text)
def test_render_html_is_inert_for_any_text(text: str) -> None:
    state = ViewState(prompt=text)
    run = Run().start(text)
    run.user(text)
    message = run.assistant(("thinking", text), ("text", text), ("tool", "t", text, {"k": text}))
    run.tool_start("t", text, {"k": text}).tool_end("t", text, text, details={"d": text}).turn_end(
        message
    ).end()
    for event in run.events:
        reduce(state, event)
    state.error_message = text
    add_notice(state, text)
    assert_inert(render_html(state))


# --- Markdown for the frontend ------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(hostile_text)
# A code span across lines that a GFM table ends early (found by this test): one parser saw
# code, the other raw HTML.
@example("`[r]: javascript:alert(1)\n| a | b |\n|---|---|\n`<img src=x onerror=alert(1)>`")
@example("`x\n| a | b |\n|---|---|\n`<script>alert(1)</script>`")
def test_frontend_markdown_never_renders_raw_html_images_or_unsafe_links(text: str) -> None:
    disarmed = frontend_markdown(text)
    assert not renders_raw_html(disarmed)
    assert not renders_unsafe_link(disarmed)
    tables = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    for parser in (MarkdownIt("commonmark", {"html": True}), tables):
        html = parser.render(disarmed)
        assert "<img" not in html
        assert "<script" not in html


def test_frontend_markdown_keeps_code_and_ordinary_text() -> None:
    plain = "No tags here: a < b, x > y, and `code`.\n\n```js\nif (a<b) {}\n```\n"
    assert frontend_markdown(plain) == plain
    code = "Use `<div>` and:\n\n```html\n<div class='x'>hi</div>\n```\n"
    assert frontend_markdown(code) == code
    assert frontend_markdown("hi <b>there</b>") == "hi &lt;b>there&lt;/b>"
    assert (
        frontend_markdown("see ![chart](http://x.example/c.png)")
        == "see &#33;[chart](http://x.example/c.png)"
    )
    assert frontend_markdown("auto <https://ok.example> link") == "auto <https://ok.example> link"
    assert frontend_markdown("already \\<b> escaped") == "already \\<b> escaped"
    assert frontend_markdown("math $$a<b$$ here") == "math $$a\\lt b$$ here"


def _without_math_marks(classes: str) -> str:
    marks = set(NO_MATH.split()) | set(MATH.split())
    return " ".join(c for c in classes.split() if c not in marks)


def test_frontend_markdown_keeps_dollars_literal() -> None:
    """JupyterLab's MathJax pairs any two ``$``: a lone one must reach it as ``\\$``."""
    assert frontend_markdown("costs $5 and the second costs $6") == (
        "costs \\\\$5 and the second costs \\\\$6"
    )
    prompt = "Why does $`a` differ from $`b`?"
    assert frontend_markdown(prompt) == "Why does \\\\$`a` differ from \\\\$`b`?"
    assert frontend_markdown("an escaped \\$5") == "an escaped \\\\$5"
    # Math the model clearly writes as math, and code, are left alone.
    assert frontend_markdown("$$x^2$$ and\n$$\ny\n$$\n") == "$$x^2$$ and\n$$\ny\n$$\n"
    assert frontend_markdown("`$a$` and\n```\n$b$\n```\n") == "`$a$` and\n```\n$b$\n```\n"


def test_frontend_markdown_passes_tex_delimiters_to_mathjax() -> None:
    """JupyterLab takes ``\\\\(`` math out before its Markdown parser; a model's ``\\(`` is a
    Markdown escape of ``(`` and showed as ``(E)``."""
    assert frontend_markdown("so \\(E = mc^2\\) holds") == "so \\\\(E = mc^2\\\\) holds"
    assert frontend_markdown("one \\[a<b\\] two") == "one \\\\[a\\lt b\\\\] two"
    block = "see\n\\[\nx <y\n\\] after <b>\n"
    assert frontend_markdown(block) == "see\n\\\\[\nx \\lt y\n\\\\] after &lt;b>\n"
    # an unclosed \( is text; a blank line ends an unclosed \[ block, and tags after it are disarmed
    assert frontend_markdown("a \\( b") == "a \\( b"
    assert frontend_markdown("\\[\nx\n\n<b>") == "\\\\[\nx\n\n&lt;b>"
    assert frontend_markdown("`\\(x\\)`") == "`\\(x\\)`"  # code stays code
    # a link inside math that a math-less parser would read is checked and disarmed
    hostile = "\\[\n[x](javascript:alert(1))\n\nz"
    assert not renders_unsafe_link(frontend_markdown(hostile))
    assert not renders_raw_html(frontend_markdown("\\(<img src=x>\\)"))


def test_render_markdown_keeps_tex_delimiters_for_mathjax() -> None:
    assert render_markdown("so \\(E = mc^2\\) holds") == "<p>so \\(E = mc^2\\) holds</p>\n"
    shown = render_markdown("see\n\\[\nx_1 *y* <b>\n\\]")
    assert shown == "<p>see\n\\[\nx_1 *y* &lt;b&gt;\n\\]</p>\n"  # not Markdown inside, escaped
    assert render_markdown("a \\( b") == "<p>a ( b</p>\n"
    assert render_markdown("`\\(x\\)`").count("<code") == 1
    assert_inert(render_markdown("\\(<script>alert(1)</script>\\)"))


def test_a_long_prompt_is_folded_and_nothing_is_lost() -> None:
    many_lines = "\n".join(f"row {i}: " + "x" * 40 for i in range(1_200))
    one_word = "y" * 50_000
    for prompt in (many_lines, one_word, "a\n" * (2 * PROMPT_LINES) + "end"):
        head, rest = fold_prompt(prompt)
        assert head + rest == prompt
        assert rest
        assert len(head) <= PROMPT_CHARS
        assert head.count("\n") < PROMPT_LINES
    assert fold_prompt("short\nprompt") == ("short\nprompt", "")
    markup = prompt_html(many_lines + "\n<b>the end</b>")
    assert_inert(markup)
    shown, folded = markup.split("<details", 1)
    assert "row 7:" in shown
    assert "row 8:" not in shown
    assert "Show the whole prompt (" in folded
    assert "row 1199:" in folded
    assert "&lt;b&gt;the end&lt;/b&gt;" in folded
    assert "<details" not in prompt_html("a short prompt")


def test_render_html_keeps_dollars_out_of_mathjax() -> None:
    run = Run().start("Use $`a` and $`b`")
    run.assistant(("text", "It costs $5 and the second costs $6; area $$x^2$$."))
    state = state_of(run.end(), "Use $`a` and $`b`")
    markup = render_html(state)
    parsed = assert_inert(markup)
    root = parsed.tags[0][1]["class"].split()
    assert set(NO_MATH.split()) <= set(root)  # prompt, tool cards, footer ($0.0…): never math
    text_div = next(a["class"] for _, a in parsed.tags if "pi-text" in a.get("class", ""))
    assert set(MATH.split()) <= set(text_div.split())  # the answer's $$x^2$$ may render
    kept = f'<span class="{NO_MATH}">$</span>'
    assert f"costs {kept}5 and the second costs {kept}6" in markup
    assert "$$x^2$$" in markup


def test_frontend_markdown_falls_back_when_code_spans_disagree() -> None:
    # A backtick inside a link destination is not a code span: the tag after it is live HTML.
    tricky = "[x](`a)<img src=y>`"
    assert renders_raw_html(tricky)
    out = frontend_markdown(tricky)
    assert not renders_raw_html(out)
    assert "<img" not in out
    # A code span that spans two lines, seen per line, ends on the second one.
    two_lines = "x `a\nb` <img src=z> `c`"
    assert not renders_raw_html(frontend_markdown(two_lines))


# --- safe_split --------------------------------------------------------------------------------

BLOCKS = [
    "A paragraph with *emphasis*.\n",
    "Another paragraph\nthat wraps.\n",
    "# Heading\n",
    "```\ncode\n\nwith blank\n```\n",
    "~~~py\nx = 1\n~~~\n",
    "- item one\n- item two\n",
    "1. first\n",
    "2. second\n",
    "> quote\n",
    "    indented code\n",
    "  continuation\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\n",
    "---\n",
    "Setext\n===\n",
]
documents = st.lists(st.sampled_from(BLOCKS), min_size=1, max_size=10).map("\n".join)


@settings(max_examples=250, deadline=None)
@given(documents)
def test_safe_split_renders_the_same_in_two_pieces(doc: str) -> None:
    cut = safe_split(doc)
    assert 0 <= cut < len(doc) or cut == 0
    if cut:
        md = MarkdownIt("commonmark").enable("table")
        assert md.render(doc[:cut]) + md.render(doc[cut:]) == md.render(doc)


def test_safe_split_positions() -> None:
    doc = "para one\n\npara two\n\n```\ncode\n\nmore\n```\n\n- a\n\nlast\n"
    assert safe_split(doc) == doc.index("last")
    assert safe_split(doc, min_size=1000) == 0
    assert safe_split("only one paragraph\nstill going") == 0
    assert safe_split("a\n\n  indented continuation\n") == 0
    assert safe_split("a\n\npartial line without newline") == 0


@settings(max_examples=150, deadline=None)
@given(documents, st.integers(min_value=1, max_value=9))
def test_split_scanner_reads_a_growing_text_once_and_agrees_with_safe_split(doc: str, step: int) -> None:
    scanner = SplitScanner()
    for end in range(0, len(doc) + step, step):
        prefix = doc[:end]
        assert scanner.split(prefix) == safe_split(prefix)
        assert scanner.split(prefix, 1000) == safe_split(prefix, 1000)
    # each complete line once: the per-frame cost is the new text, not the whole tail
    assert scanner.scanned <= len(doc)


def test_split_scanner_starts_over_on_a_text_that_does_not_extend_the_last() -> None:
    scanner = SplitScanner()
    assert scanner.split("para one\n\npara two\n") == len("para one\n\n")
    assert scanner.split("```\nfenced\n\nstill fenced\n") == 0
    assert scanner.split("x\n") == 0  # shorter than what was read
