"""Self-contained static HTML of a ``ViewState``: the frozen output a saved notebook shows on
GitHub, nbviewer or VS Code without widget JavaScript.

Inline styles only (sanitisers drop ``<style>`` blocks); assistant Markdown is rendered here
with markdown-it-py with raw HTML off, links restricted to safe schemes and images turned into
links, so that opening a notebook never fetches a URL the model chose; every model and tool
string is escaped. Markdown with ``limits.too_much_markup`` is shown as escaped plain text, and
long words wrap inside the view, so no answer makes the page wider than its column. The live
widgets reuse the pieces (``pre_html``, ``tool_head_html``, ``args_html``, ``display_html``...).
Pure: no widget or IPython imports.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from ..reduce import Footer, TextBlock, ThinkingBlock, ToolCard, UserItem, ViewState
from ..review import review_html
from ..state import PlanCard
from .limits import PLAIN_NOTE, cap_nesting, too_much_markup
from .markdown import unsafe_url
from .rich import RICH_STYLE, display_items, highlight_python, image_tag, table_html
from .text import (
    clip,
    code_arg,
    end_text,
    fold_prompt,
    footer_text,
    format_args,
    format_details,
    plan_rows,
    plan_title,
    queued_text,
    status_label,
    tool_notes,
    user_label,
)

# --- long words ------------------------------------------------------------------------------

WRAP = 80
"""Longest run of non-space characters emitted without a break opportunity (``<wbr>``).

A browser lays out a very long word slowly when it may break it anywhere: with
``overflow-wrap:break-word``, Chromium took seconds for a 50,000-character word. With a
``<wbr>`` every ``WRAP`` characters the line breaks there, at the cost of an ordinary line."""

_LONG_RUN = re.compile(rf"\S{{{WRAP + 1},}}")
_MATH_SPAN = re.compile(r"\$\$[^$]{1,2000}\$\$")


def breakable(text: str, escape: Callable[[str], str] = html.escape, *, keep_math: bool = False) -> str:
    """``escape(text)`` with ``<wbr>`` every ``WRAP`` characters of a longer word; with
    ``keep_math``, ``$$...$$`` spans (up to 2,000 characters) are left whole for MathJax."""
    if len(text) <= WRAP or _LONG_RUN.search(text) is None:
        return escape(text)
    out: list[str] = []
    pos = 0
    for match in _LONG_RUN.finditer(text):
        out.append(escape(text[pos : match.start()]))
        out.append(_break_run(match.group(), escape, keep_math))
        pos = match.end()
    out.append(escape(text[pos:]))
    return "".join(out)


def _break_run(run: str, escape: Callable[[str], str], keep_math: bool) -> str:
    pieces: list[str] = []
    pos = 0
    for math in _MATH_SPAN.finditer(run) if keep_math else ():
        pieces += [escape(run[i : i + WRAP]) for i in range(pos, math.start(), WRAP)]
        pieces.append(escape(math.group()))
        pos = math.end()
    pieces += [escape(run[i : i + WRAP]) for i in range(pos, len(run), WRAP)]
    return "<wbr>".join(pieces)


# --- Markdown, server side ---------------------------------------------------------------------


def _safe_link(url: str) -> bool:
    return not unsafe_url(url)


def _render_image_as_link(
    renderer: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    label = str(renderer.renderInlineAsText(token.children or [], options, env)) or src
    return f'<a href="{html.escape(src)}" rel="noopener noreferrer nofollow">{breakable(label)}</a>'


def _render_link_open(
    renderer: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
    return str(renderer.renderToken(tokens, idx, options, env))


_CODE_BOX = (
    "font-family:var(--jp-code-font-family,ui-monospace,SFMono-Regular,Menlo,monospace);font-size:12px;"
    "padding:6px 8px;background:rgba(127,127,127,.08);border-radius:4px;overflow:auto;"
)
# Inline styles for Markdown blocks, so a saved notebook reads well where no stylesheet applies.
_TOKEN_STYLE = {
    # A wide table scrolls inside the view instead of widening the page.
    "table_open": "border-collapse:collapse;margin:4px 0;display:block;max-width:100%;overflow-x:auto;",
    "th_open": "border:1px solid rgba(127,127,127,.4);padding:2px 8px;",
    "td_open": "border:1px solid rgba(127,127,127,.4);padding:2px 8px;",
    "blockquote_open": "border-left:3px solid rgba(127,127,127,.4);margin:4px 0;padding:0 10px;opacity:.85;",
    "code_inline": "background:rgba(127,127,127,.12);border-radius:3px;padding:0 3px;",
}


def _style_tokens(state: StateCore) -> None:
    for token in state.tokens:
        _style(token)
        for child in token.children or ():
            _style(child)


def _style(token: Token) -> None:
    style = _TOKEN_STYLE.get(token.type)
    if style is not None:
        token.attrSet("style", style + str(token.attrGet("style") or ""))


def _render_code_block(
    renderer: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    rule = RendererHTML.fence if tokens[idx].type == "fence" else RendererHTML.code_block
    return str(rule(renderer, tokens, idx, options, env)).replace("<pre>", f'<pre style="{_CODE_BOX}">', 1)


NO_MATH = "mathjax_ignore tex2jax_ignore"
"""Classes MathJax skips (JupyterLab's MathJax 3, and MathJax 2 on older viewers). JupyterLab
typesets every ``$...$`` pair in an HTML output, so money and ``$`expr``` references in a
prompt, a tool card or the footer would come out as italic math."""
MATH = "mathjax_process tex2jax_process"
"""Classes that turn MathJax back on inside a ``NO_MATH`` element: the assistant's Markdown, where
``$$...$$`` the model wrote as math still renders."""
_LONE_DOLLAR = re.compile(r"(?<!\$)\$(?!\$)")
_KEPT_DOLLAR = f'<span class="{NO_MATH}">$</span>'


def _render_text(
    renderer: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """Text with each lone ``$`` in a span MathJax skips; ``$$...$$`` stays for MathJax."""
    escaped = breakable(tokens[idx].content, escapeHtml, keep_math=True)
    return _LONE_DOLLAR.sub(_KEPT_DOLLAR, escaped) if "$" in escaped else escaped


def _render_code_inline(
    renderer: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    return f"<code{renderer.renderAttrs(token)}>{breakable(token.content, escapeHtml)}</code>"


_TEX_CLOSE = {"(": "\\)", "[": "\\]"}
MAX_TEX = 2000
"""Longest ``\\(...\\)`` / ``\\[...\\]`` kept whole for MathJax (as ``$$...$$`` in ``breakable``)."""


def _tex_math(state: StateInline, silent: bool) -> bool:
    """``\\(...\\)`` and ``\\[...\\]`` (within one paragraph) kept as written for MathJax:
    CommonMark reads ``\\(`` as an escaped ``(``, so ``\\(E\\)`` came out as ``(E)``. Only
    escaped text: the math is not parsed as Markdown, and MathJax typesets it in ``.pi-text``."""
    src, pos = state.src, state.pos
    if src[pos] != "\\" or src[pos + 1 : pos + 2] not in _TEX_CLOSE:
        return False
    close = src.find(_TEX_CLOSE[src[pos + 1]], pos + 2, state.posMax)
    if close == -1 or close - pos > MAX_TEX:
        return False
    if not silent:
        state.push("tex_math", "", 0).content = src[pos : close + 2]
    state.pos = close + 2
    return True


def _render_tex(
    renderer: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    return escapeHtml(tokens[idx].content)


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md.validateLink = _safe_link  # type: ignore[method-assign]
    md.inline.ruler.before("escape", "tex_math", _tex_math)
    md.add_render_rule("tex_math", _render_tex)
    md.add_render_rule("text", _render_text)
    md.add_render_rule("image", _render_image_as_link)
    md.add_render_rule("link_open", _render_link_open)
    md.add_render_rule("code_inline", _render_code_inline)
    md.add_render_rule("fence", _render_code_block)
    md.add_render_rule("code_block", _render_code_block)
    md.core.ruler.push("pi_styles", _style_tokens)
    return md


_PLAIN_STYLE = "white-space:pre-wrap;margin:4px 0;"
_NOTE_STYLE = "font-size:12px;opacity:.7;font-style:italic;"


def render_markdown(text: str) -> str:
    """Markdown to HTML with raw HTML escaped, unsafe link schemes left as text, images as links;
    text with ``too_much_markup`` as escaped plain text (MathJax skips it) after ``PLAIN_NOTE``."""
    if too_much_markup(text):
        note = f'<div class="pi-plain-note" style="{_NOTE_STYLE}">{PLAIN_NOTE}</div>'
        body = f'<div class="pi-plain {NO_MATH}" style="{_PLAIN_STYLE}">{breakable(text)}</div>'
        return note + body
    return str(_markdown().render(cap_nesting(text)))


# --- HTML ------------------------------------------------------------------------------------

_MONO = "font-family:var(--jp-code-font-family,ui-monospace,SFMono-Regular,Menlo,monospace);"
_LINE = "line-height:1.5;"
# Each line-height is set on the element itself, not inherited from the view: live, these
# elements sit in ipywidgets' HTML widgets, whose line-height is the 28 px of a widget row.
CONTENT = "font-size:var(--jp-content-font-size1,14px);line-height:var(--jp-content-line-height,1.6);"
"""The assistant's Markdown in the frozen output: the size and line height JupyterLab gives the
live view's Markdown, so the text does not shrink when the output freezes."""
STYLE = {
    # A long word wraps (at the <wbr> of ``breakable``) instead of widening the page.
    "pi-view": "font-family:var(--jp-ui-font-family,system-ui,-apple-system,'Segoe UI',sans-serif);"
    "font-size:13px;line-height:1.5;border-left:3px solid #8b7cf6;padding:2px 0 2px 10px;margin:4px 0;"
    "overflow-wrap:break-word;",
    "pi-prompt": "white-space:pre-wrap;font-weight:600;opacity:.85;margin:2px 0 6px;" + _LINE,
    "pi-text": "margin:4px 0;overflow-x:auto;" + CONTENT,
    "pi-thinking": "opacity:.75;margin:4px 0;",
    "pi-summary": "cursor:pointer;font-style:italic;",
    "pi-tool": "border:1px solid rgba(127,127,127,.35);border-radius:6px;padding:4px 8px;margin:6px 0;",
    "pi-tool-head": _MONO + "font-size:12px;" + _LINE,
    "pi-pre": _MONO + "white-space:pre-wrap;word-break:break-word;font-size:12px;margin:3px 0;"
    "padding:4px 6px;background:rgba(127,127,127,.08);border-radius:4px;max-height:24em;overflow:auto;",
    "pi-progress": "font-size:12px;opacity:.8;white-space:pre-wrap;" + _LINE,
    "pi-user": "white-space:pre-wrap;font-style:italic;opacity:.85;margin:6px 0;" + _LINE,
    "pi-queued": "white-space:pre-wrap;font-size:12px;opacity:.7;" + _LINE,
    "pi-error": "white-space:pre-wrap;color:#c62828;font-weight:600;margin:6px 0;" + _LINE,
    "pi-notice": "white-space:pre-wrap;font-size:12px;opacity:.75;margin:4px 0;" + _LINE,
    "pi-plan": "border:1px solid rgba(139,124,246,.5);border-radius:6px;padding:4px 8px;margin:6px 0;"
    + _LINE,
    "pi-plan-step": "white-space:pre-wrap;margin:1px 0;" + _LINE,
    "pi-footer": "font-size:12px;opacity:.7;border-top:1px solid rgba(127,127,127,.25);"
    "margin-top:6px;padding-top:2px;" + _LINE,
}
STATUS_COLOR = {
    "streaming": "#757575",
    "pending_approval": "#1565c0",
    "running": "#b26a00",
    "done": "#2e7d32",
    "error": "#c62828",
    "denied": "#c62828",
}


def _div(cls: str, body: str, tag: str = "div", extra: str = "", *, math: bool = False) -> str:
    """An element with its inline style; MathJax skips it unless ``math`` (see ``NO_MATH``)."""
    marks = MATH if math else NO_MATH
    return f'<{tag} class="{cls}{extra} {marks}" style="{STYLE[cls]}">{body}</{tag}>'


def pre_html(text: str, cls: str, accent: str = "") -> str:
    edge = f"border-left:3px solid {accent};" if accent else ""
    return f'<pre class="pi-pre {cls}" style="{STYLE["pi-pre"]}{edge}">{breakable(text)}</pre>'


def result_html(card: ToolCard) -> str:
    """The result content, edged in the status colour so it reads apart from the arguments."""
    return pre_html(clip(card.content), "pi-result", STATUS_COLOR.get(card.status, ""))


def progress_html(text: str) -> str:
    """A tool's progress, or what an approval asks about: an edit's unified diff (a line
    starting ``@@``) is drawn as code with its added and removed lines coloured."""
    lines = text.split("\n")
    if any(_CELL_HEAD.match(line) for line in lines):
        return _cells_html(lines)
    if not any(line.startswith("@@") for line in lines):
        return _div("pi-progress", breakable(text))
    drawn = []
    for line in lines:
        color = _DIFF_COLORS.get(line[:1], "") if not line.startswith(("+++", "---")) else ""
        body = breakable(line) or " "  # an empty line keeps its height
        fill = f"background:{color};" if color else ""
        drawn.append(f'<span style="{fill}display:block;">{body}</span>')
    head, *rest = drawn
    diff = f'<pre class="pi-pre pi-diff" style="{STYLE["pi-pre"]}">{"".join(rest)}</pre>'
    return _div("pi-progress", head) + diff


_CELL_HEAD = re.compile(r"^\[\d+\] (code|markdown) cell:$")
"""A cell's head in what an insert card asks about (``tools/previews.py``)."""


def _cells_html(lines: list[str]) -> str:
    """An insert card's question: each cell's head, then its source as code."""
    out: list[str] = []
    body: list[str] | None = None
    for line in [*lines, "[0] code cell:"]:  # the sentinel head closes the last cell
        if _CELL_HEAD.match(line):
            if body is not None:
                out.append(pre_html("\n".join(body), "pi-cell-source"))
            body = []
            out.append(f"<div>{breakable(line)}</div>")
        elif body is None:
            out.append(f"<div>{breakable(line)}</div>")
        else:
            body.append(line)
    return _div("pi-progress", "".join(out[:-1]))


_DIFF_COLORS = {"+": "rgba(46,160,67,.22)", "-": "rgba(248,81,73,.22)"}


def tool_head_html(card: ToolCard) -> str:
    color = STATUS_COLOR.get(card.status, "#757575")
    name = breakable(card.name or "tool")
    status = html.escape(status_label(card))
    notes = "".join(
        f' <span class="pi-tool-note" style="color:#757575;">· {html.escape(note)}</span>'
        for note in tool_notes(card)
    )
    return _div(
        "pi-tool-head",
        f'<b>{name}</b> <span class="pi-status" style="color:{color};">{status}</span>{notes}',
    )


def details_html(card: ToolCard) -> str:
    body = format_details(card.details)
    if not body:
        return ""
    summary = f'<summary style="{STYLE["pi-summary"]}">Details</summary>'
    return f'<details class="pi-details">{summary}{pre_html(body, "pi-details-body")}</details>'


def args_html(card: ToolCard) -> tuple[str, int]:
    """The arguments as HTML, and how many characters of them it shows: Python source
    (``code_arg``) in a ``<pre><code>`` with real newlines, highlighted once complete (while it
    streams it is re-sent often, so plain); anything else as JSON, pretty when long."""
    code = code_arg(card)
    if code is None:
        args = format_args(card)
        return (pre_html(args, "pi-args") if args else ""), len(args)
    code = clip(code)
    body = highlight_python(code) if card.args is not None else None
    inner = body if body is not None else breakable(code)
    pre = f'<pre class="pi-pre pi-args pi-code" style="{STYLE["pi-pre"]}">'
    return f"{pre}<code>{inner}</code></pre>", len(code)


def display_html(card: ToolCard) -> str:
    """The images and rich values the tool returned for the user (``details["display"]``):
    figures as images, a table rebuilt from its HTML (``rich.table_html``) or, failing that, its
    ``text/plain``; empty when there are none."""
    parts: list[str] = []
    for item in display_items(card.details):
        kind = item["type"]
        if kind == "image":
            parts.append(image_tag(item) or "")
        elif kind == "html":
            markup = item.get("html")
            table = table_html(markup, breakable) if isinstance(markup, str) else None
            text = str(item.get("text") or "")
            if table is not None:
                parts.append(f'<div class="pi-rich" style="{RICH_STYLE}">{table}</div>')
            elif text:
                parts.append(pre_html(clip(text), "pi-rich-text"))
        elif kind == "omitted":
            parts.append(progress_html(str(item.get("label", ""))))
    return f'<div class="pi-display">{"".join(parts)}</div>' if any(parts) else ""


def _tool_html(card: ToolCard) -> str:
    parts = [tool_head_html(card), args_html(card)[0]]
    if card.progress:
        parts.append(progress_html(card.progress))
    if card.content:
        parts.append(result_html(card))
    parts.append(display_html(card))
    parts.append(details_html(card))
    return _div("pi-tool", "".join(parts), extra=f" pi-tool--{card.status}")


_FOLD_STYLE = "cursor:pointer;font-weight:normal;font-style:italic;font-size:12px;opacity:.8;"


def thinking_html(block: ThinkingBlock) -> str:
    summary = f'<summary style="{STYLE["pi-summary"]}">Thinking</summary>'
    body = "<p><em>[Reasoning redacted]</em></p>" if block.redacted else render_markdown(block.text)
    body = f'<div class="pi-thinking-body" style="{CONTENT}">{body}</div>'
    return _div("pi-thinking", summary + body, tag="details", math=True)


def footer_html(footer: Footer, activity: str = "") -> str:
    return _div("pi-footer", breakable(footer_text(footer, activity)))


SENT_OPEN_CHARS = 800
SENT_OPEN_LINES = 16


def sent_html(sent: str) -> str:
    """What the model received in place of the typed prompt (``ViewState.sent``) under a summary
    that says so: open when short, folded when longer than ``SENT_OPEN_CHARS`` characters or
    ``SENT_OPEN_LINES`` lines (a template's expansion and attached values can be long)."""
    if not sent:
        return ""
    lines = sent.count("\n") + 1
    size = f"{len(sent):,} characters, {lines:,} line{'s' if lines != 1 else ''}"
    summary = f'<summary class="pi-sent-fold" style="{_FOLD_STYLE}">What the model received ({size})'
    opened = " open" if len(sent) <= SENT_OPEN_CHARS and lines <= SENT_OPEN_LINES else ""
    body = pre_html(sent, "pi-sent-text")
    return f'<details class="pi-sent"{opened} style="font-weight:normal">{summary}</summary>{body}</details>'


def prompt_html(prompt: str, sent: str = "") -> str:
    """The prompt echoed; a long one folded (``fold_prompt``) into a ``<details>`` that opens
    on a click, live and frozen, so a 50 KB prompt takes a few lines and loses nothing. ``sent``:
    what the model received instead, folded below it (``sent_html``)."""
    if not prompt:
        return ""
    head, rest = fold_prompt(prompt)
    if not rest:
        return _div("pi-prompt", "› " + breakable(prompt) + sent_html(sent))
    more = f"{len(rest):,} more characters, {rest.count(chr(10)):,} more lines"
    summary = f'<summary class="pi-prompt-fold" style="{_FOLD_STYLE}">Show the whole prompt ({more})'
    summary += "</summary>"
    folded = f'<details class="pi-prompt-more">{summary}{breakable(rest.removeprefix(chr(10)))}</details>'
    return _div("pi-prompt", "› " + breakable(head) + folded + sent_html(sent))


def user_html(item: UserItem) -> str:
    return _div("pi-user", f"↳ {user_label(item)}: " + breakable(item.text))


def line_html(cls: str, text: str) -> str:
    """A one-line section (``pi-queued``, ``pi-error``, ``pi-notice``), empty when ``text`` is."""
    return _div(cls, breakable(text)) if text else ""


_PLAN_ICON = {"done": "☑", "running": "▶", "todo": "☐"}


def plan_html(plan: PlanCard | None) -> str:
    """The plan as a checklist (``plan_rows``); the running step in bold."""
    if plan is None:
        return ""
    rows = []
    for mark, number, step in plan_rows(plan):
        body = f"{_PLAN_ICON[mark]} {number}. {breakable(step)}"
        shown = f"<b>{body}</b>" if mark == "running" else body
        rows.append(_div("pi-plan-step", shown, extra=f" pi-plan-{mark}"))
    return _div("pi-plan", f"<b>{html.escape(plan_title(plan))}</b>" + "".join(rows))


def render_html(state: ViewState) -> str:
    """Self-contained static HTML of the run (inline styles, no scripts, all text escaped)."""
    parts: list[str] = [prompt_html(state.prompt, state.sent), plan_html(state.plan)]
    for item in state.items:
        if isinstance(item, TextBlock):
            if item.text.strip():
                parts.append(_div("pi-text", render_markdown(item.text), math=True))
        elif isinstance(item, ThinkingBlock):
            if item.text.strip() or item.redacted:
                parts.append(thinking_html(item))
        elif isinstance(item, ToolCard):
            parts.append(_tool_html(item))
        else:
            parts.append(user_html(item))
    parts.append(line_html("pi-queued", queued_text(state)))
    parts.append(line_html("pi-error", end_text(state)))
    parts.append(line_html("pi-notice", state.notice))
    parts.append(footer_html(state.footer))
    if state.review is not None and state.review.actions != "buttons":  # live: under the run, with them
        parts.append(review_html(state.review))
    return _div("pi-view", "".join(parts), extra=" pi-static")
