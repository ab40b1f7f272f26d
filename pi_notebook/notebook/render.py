"""Static renderers of a ``ViewState``: deterministic plain text, self-contained HTML, and the
Markdown helpers the live widgets share with them.

* ``render_text`` is what nbval compares: no ids, times, token counts or costs, so two runs of
  the same conversation give the same bytes.
* ``render_html`` is the frozen output a saved notebook shows on GitHub, nbviewer or VS Code
  without widget JavaScript: inline styles only (sanitisers drop ``<style>`` blocks), assistant
  Markdown rendered here with markdown-it-py (raw HTML off, links restricted to safe schemes,
  images turned into links so that opening a notebook never fetches a URL the model chose),
  every model and tool string escaped.
* ``frontend_markdown`` prepares Markdown for the *frontend's* renderer (the live view): it
  escapes raw HTML tags and image syntax outside code, for the same two reasons.

Pure: no widget or IPython imports.
"""

from __future__ import annotations

import html
import json
import re
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from .view import FINAL_STATUSES, Footer, TextBlock, ThinkingBlock, ToolCard, UserItem, ViewState

__all__ = [
    "MAX_SHOWN",
    "format_args",
    "format_details",
    "frontend_markdown",
    "render_html",
    "render_markdown",
    "render_text",
    "renders_raw_html",
    "safe_split",
    "static_bundle",
]

MAX_SHOWN = 20_000
"""Characters of one tool field (arguments, result, details) kept in an output; a notebook is
not the place for a 5 MB tool result, and the model already saw it."""

SAFE_SCHEMES = frozenset({"http", "https", "mailto"})

# --- Markdown, server side ---------------------------------------------------------------------

_SCHEME = re.compile(r"^\s*([a-zA-Z][a-zA-Z0-9+.\-]*):")


def _safe_link(url: str) -> bool:
    match = _SCHEME.match(url)
    return match is None or match.group(1).lower() in SAFE_SCHEMES


def _render_image_as_link(
    renderer: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    label = str(renderer.renderInlineAsText(token.children or [], options, env)) or src
    return f'<a href="{html.escape(src)}" rel="noopener noreferrer nofollow">{html.escape(label)}</a>'


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
    "table_open": "border-collapse:collapse;margin:4px 0;",
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


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md.validateLink = _safe_link  # type: ignore[method-assign]
    md.add_render_rule("image", _render_image_as_link)
    md.add_render_rule("link_open", _render_link_open)
    md.add_render_rule("fence", _render_code_block)
    md.add_render_rule("code_block", _render_code_block)
    md.core.ruler.push("pi_styles", _style_tokens)
    return md


def render_markdown(text: str) -> str:
    """Markdown to HTML with raw HTML escaped, unsafe link schemes left as text, images as links."""
    return str(_markdown().render(text))


# --- Markdown for the frontend's renderer --------------------------------------------------------

_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})")
_SPECIAL = re.compile(r"[\\`$<!]")
_AUTOLINK = re.compile(r"<(?:[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]*|[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+)>")
_OPENER = re.compile(r"<(?=[A-Za-z/!?])")
_RISKY = re.compile(r"<[A-Za-z/!?]|!\[")
_ESCAPABLE = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _run_length(line: str, i: int, char: str) -> int:
    j = i
    while j < len(line) and line[j] == char:
        j += 1
    return j - i


def _closing_run(line: str, start: int, char: str, length: int) -> int:
    """Index of the next run of exactly ``length`` ``char``s at or after ``start``, or -1."""
    i = line.find(char * length, start)
    while i != -1:
        run = _run_length(line, i, char)
        if run == length:
            return i
        i = line.find(char * length, i + run)
    return -1


def _escape_line(line: str) -> tuple[str, bool]:
    """Disarm tag openers and image markers outside code spans; keep backslash escapes and
    autolinks. Returns the line and whether a code span kept a ``<tag`` or ``![`` (then the
    caller checks the result with a real parser). Jumps between special characters with a
    regex, so plain prose costs one C-level scan."""
    out: list[str] = []
    risky = False
    i, n = 0, len(line)
    while (match := _SPECIAL.search(line, i)) is not None:
        j = match.start()
        out.append(line[i:j])
        char, nxt = line[j], line[j + 1 : j + 2]
        i = j + 1
        if char == "\\":
            if nxt and nxt in _ESCAPABLE:
                i += 1
            out.append(line[j:i])
        elif char in "`$":
            run = _run_length(line, j, char)
            close = _closing_run(line, j + run, char, run)
            i = j + run
            if close == -1:
                out.append(char * run)
            elif char == "`":
                i = close + run
                out.append(line[j:i])
                risky = risky or _RISKY.search(line, j, i) is not None
            else:  # math: no HTML parser sees it, but a plain-Markdown one would
                i = close + run
                out.append(_OPENER.sub(r"\\lt ", line[j:i]).replace("![", "&#33;["))
        elif char == "<":
            link = _AUTOLINK.match(line, j)
            if link is not None:
                i = link.end()
                out.append(link.group())
            else:
                out.append("&lt;" if nxt and (nxt.isalpha() or nxt in "/!?") else "<")
        else:  # "!"
            out.append("&#33;" if nxt == "[" else "!")
    out.append(line[i:n])
    return "".join(out), risky


def _opens_fence(line: str) -> str:
    match = _FENCE.match(line)
    if match is None:
        return ""
    run = match.group(1)
    # CommonMark: a backtick fence's info string has no backticks (else it is a code span).
    return "" if run[0] == "`" and "`" in line[match.end() :] else run


def _closes_fence(line: str, fence: str) -> bool:
    match = _FENCE.match(line)
    if match is None:
        return False
    run = match.group(1)
    return run[0] == fence[0] and len(run) >= len(fence) and not line[match.end() :].strip()


@lru_cache(maxsize=1)
def _checker() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def renders_raw_html(markdown: str) -> bool:
    """Whether a CommonMark parser with raw HTML on finds an HTML tag or an image in ``markdown``."""
    for token in _checker().parse(markdown):
        if token.type == "html_block":
            return True
        if any(child.type in ("html_inline", "image") for child in token.children or ()):
            return True
    return False


def frontend_markdown(text: str) -> str:
    """Markdown for a frontend renderer (JupyterLab, VS Code) with raw HTML and images disarmed.

    Frontends sanitise HTML in Markdown but still render tags such as ``<img src=...>``, and
    Markdown images load any URL: either lets a prompt-injected answer make the browser fetch
    an address of the attacker's choosing. Outside fenced code and code spans, ``<tag`` becomes
    ``&lt;tag`` and ``![`` becomes ``&#33;[`` (so an image reads as a link); inside ``$math$``,
    ``<x`` becomes ``\\lt x``. Text without such characters is returned unchanged.

    The result never contains a tag opener outside code. When code that this line-based scan
    recognised kept one, the result is parsed with markdown-it; if that parser disagrees about
    where code is, every opener is escaped, inside code too (correct, if less pretty).
    """
    if "<" not in text and "![" not in text:
        return text
    out: list[str] = []
    fence = ""
    risky = False
    for line in text.splitlines(keepends=True):
        if fence:
            if _closes_fence(line, fence):
                fence = ""
            risky = risky or _RISKY.search(line) is not None
            out.append(line)
        elif opened := _opens_fence(line):
            fence = opened
            risky = risky or _RISKY.search(line) is not None
            out.append(line)
        else:
            escaped, line_risky = _escape_line(line)
            risky = risky or line_risky
            out.append(escaped)
    result = "".join(out)
    if risky and renders_raw_html(result):
        return _OPENER.sub("&lt;", text).replace("![", "&#33;[")
    return result


_LIST_OR_QUOTE = re.compile(r"(?:[-+*>]|\d{1,9}[.)])(?:\s|$)")


def safe_split(text: str, min_size: int = 0) -> int:
    """The largest offset ``k`` (0 if none) where ``text[:k]`` is a run of complete Markdown
    blocks that renders the same on its own: a blank line outside code fences, followed by a
    line that starts a new top-level block. The live view freezes ``text[:k]`` into its own
    output and keeps re-sending only the tail. Returns 0 when ``k < min_size``."""
    best = 0
    fence = ""
    pos = 0
    blank_before = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if fence:
            if _closes_fence(line, fence):
                fence = ""
        else:
            # A complete, unindented line after a blank one starts a new top-level block;
            # list items and quotes are left joined to their neighbours (numbering, spacing).
            starts_block = stripped and not line[0].isspace() and line.endswith("\n")
            if blank_before and starts_block and not _LIST_OR_QUOTE.match(line):
                best = pos
            fence = _opens_fence(line)
        blank_before = not stripped and not fence
        pos += len(line)
    return best if best >= min_size else 0


# --- shared formatting ---------------------------------------------------------------------------

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _opaque(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump()
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        try:
            return to_dict()
        except Exception:  # a DataFrame's to_dict may need arguments; fall through
            pass
    text = repr(value)
    # Memory addresses would make the text differ between two identical runs.
    return f"<{type(value).__name__}>" if _ADDRESS.search(text) else text


def _clip(text: str) -> str:
    if len(text) <= MAX_SHOWN:
        return text
    return f"{text[:MAX_SHOWN]}\n… ({len(text) - MAX_SHOWN} more characters)"


def _dumps(value: Any, indent: int | None) -> str:
    try:
        return json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=True, default=_opaque)
    except (TypeError, ValueError):  # e.g. non-string keys that cannot be sorted
        return str(_opaque(value))


def format_args(card: ToolCard, *, indent: int | None = 2) -> str:
    """The arguments as shown to the user: the raw JSON as it streams, then the final object,
    on one line when it is short."""
    if card.args is None:
        return _clip(card.args_text)
    compact = _dumps(card.args, None)
    return _clip(compact if indent is None or len(compact) <= 80 else _dumps(card.args, indent))


def format_details(details: Any, *, indent: int | None = 2) -> str:
    """The details as text; nothing for ``None`` or an empty container (Pi's error results
    carry ``details: {}``)."""
    if details is None or (isinstance(details, dict | list | tuple | str) and not details):
        return ""
    if isinstance(details, str):
        return _clip(details)
    return _clip(_dumps(details, indent))


_STATUS_LABEL = {
    "streaming": "writing arguments",
    "pending_approval": "awaiting approval",
    "running": "running",
    "done": "done",
    "error": "error",
    "denied": "denied",
}


def status_label(card: ToolCard) -> str:
    if card.status == "streaming" and card.args is not None:
        return "queued"
    return _STATUS_LABEL.get(card.status, card.status)


def footer_text(footer: Footer) -> str:
    turns = f"{footer.turns} turn" + ("" if footer.turns == 1 else "s")
    tokens = f"{footer.input_tokens:,} in / {footer.output_tokens:,} out tokens"
    if footer.cache_read_tokens or footer.cache_write_tokens:
        tokens += f" (cache {footer.cache_read_tokens:,} read / {footer.cache_write_tokens:,} write)"
    parts = [turns, tokens, f"${footer.cost:.4f}", f"{footer.elapsed:.1f} s"]
    if footer.model:
        parts.append(footer.model)
    return " · ".join(parts)


def end_text(state: ViewState) -> str:
    """One line on how the run ended, empty for a normal stop."""
    reason = state.stop_reason
    if reason == "aborted":
        return f"Aborted: {state.error_message or 'the run was stopped'}"
    if reason == "error" or state.error_message:
        return f"Error: {state.error_message or 'unknown error'}"
    if reason == "length":
        return "Stopped: the response hit the output token limit"
    return ""


def user_label(item: UserItem) -> str:
    return {"steer": "steer", "follow_up": "follow-up"}.get(item.origin, "message")


def queued_text(state: ViewState) -> str:
    return "\n".join(f"queued {user_label(UserItem(q.text, q.kind))}: {q.text}" for q in state.queued)


# --- plain text ------------------------------------------------------------------------------


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line else line for line in text.split("\n"))


def _tool_text(card: ToolCard) -> str:
    lines = [f"[tool] {card.name or '?'} ({status_label(card)})"]
    args = format_args(card, indent=None)
    if args:
        lines.append(_indent(f"args: {args}"))
    if card.content:
        lines.append(_indent(f"result: {_clip(card.content)}"))
    details = format_details(card.details, indent=None)
    if details:
        lines.append(_indent(f"details: {details}"))
    if card.progress and card.status not in FINAL_STATUSES:
        lines.append(_indent(f"progress: {card.progress}"))
    elif card.progress:
        lines.append(_indent(card.progress))
    return "\n".join(lines)


def render_text(state: ViewState) -> str:
    """Deterministic plain text of the whole run: prompt, thinking, text, tool calls with their
    arguments, results and details, injected messages, how it ended and the notice."""
    blocks: list[str] = [_indent(state.prompt, "> ")] if state.prompt else []
    for item in state.items:
        if isinstance(item, TextBlock):
            if item.text.strip():
                blocks.append(item.text.strip("\n"))
        elif isinstance(item, ThinkingBlock):
            if item.text.strip():
                blocks.append("[thinking]\n" + _indent(item.text.strip("\n")))
        elif isinstance(item, ToolCard):
            blocks.append(_tool_text(item))
        else:
            blocks.append(_indent(item.text, f"> [{user_label(item)}] "))
    for line in (queued_text(state), end_text(state), state.notice):
        if line:
            blocks.append(line)
    return "\n\n".join(blocks) + "\n"


# --- HTML ------------------------------------------------------------------------------------

_MONO = "font-family:var(--jp-code-font-family,ui-monospace,SFMono-Regular,Menlo,monospace);"
STYLE = {
    "pi-view": "font-family:var(--jp-ui-font-family,system-ui,-apple-system,'Segoe UI',sans-serif);"
    "font-size:13px;line-height:1.5;border-left:3px solid #8b7cf6;padding:2px 0 2px 10px;margin:4px 0;",
    "pi-prompt": "white-space:pre-wrap;font-weight:600;opacity:.85;margin:2px 0 6px;",
    "pi-text": "margin:4px 0;",
    "pi-thinking": "opacity:.75;margin:4px 0;",
    "pi-summary": "cursor:pointer;font-style:italic;",
    "pi-tool": "border:1px solid rgba(127,127,127,.35);border-radius:6px;padding:4px 8px;margin:6px 0;",
    "pi-tool-head": _MONO + "font-size:12px;",
    "pi-pre": _MONO + "white-space:pre-wrap;word-break:break-word;font-size:12px;margin:3px 0;"
    "padding:4px 6px;background:rgba(127,127,127,.08);border-radius:4px;max-height:24em;overflow:auto;",
    "pi-progress": "font-size:12px;opacity:.8;white-space:pre-wrap;",
    "pi-user": "white-space:pre-wrap;font-style:italic;opacity:.85;margin:6px 0;",
    "pi-queued": "white-space:pre-wrap;font-size:12px;opacity:.7;",
    "pi-error": "white-space:pre-wrap;color:#c62828;font-weight:600;margin:6px 0;",
    "pi-notice": "white-space:pre-wrap;font-size:12px;opacity:.75;margin:4px 0;",
    "pi-footer": "font-size:12px;opacity:.7;border-top:1px solid rgba(127,127,127,.25);"
    "margin-top:6px;padding-top:2px;",
}
STATUS_COLOR = {
    "streaming": "#757575",
    "pending_approval": "#1565c0",
    "running": "#b26a00",
    "done": "#2e7d32",
    "error": "#c62828",
    "denied": "#c62828",
}


def _div(cls: str, body: str, tag: str = "div", extra: str = "") -> str:
    return f'<{tag} class="{cls}{extra}" style="{STYLE[cls]}">{body}</{tag}>'


def pre_html(text: str, cls: str, accent: str = "") -> str:
    edge = f"border-left:3px solid {accent};" if accent else ""
    return f'<pre class="pi-pre {cls}" style="{STYLE["pi-pre"]}{edge}">{html.escape(text)}</pre>'


def result_html(card: ToolCard) -> str:
    """The result content, edged in the status colour so it reads apart from the arguments."""
    return pre_html(_clip(card.content), "pi-result", STATUS_COLOR.get(card.status, ""))


def progress_html(text: str) -> str:
    return _div("pi-progress", html.escape(text))


def tool_head_html(card: ToolCard) -> str:
    color = STATUS_COLOR.get(card.status, "#757575")
    name = html.escape(card.name or "tool")
    status = html.escape(status_label(card))
    return _div(
        "pi-tool-head",
        f'<b>{name}</b> <span class="pi-status" style="color:{color};">{status}</span>',
    )


def details_html(card: ToolCard) -> str:
    body = format_details(card.details)
    if not body:
        return ""
    summary = f'<summary style="{STYLE["pi-summary"]}">Details</summary>'
    return f'<details class="pi-details">{summary}{pre_html(body, "pi-details-body")}</details>'


def _tool_html(card: ToolCard) -> str:
    parts = [tool_head_html(card)]
    args = format_args(card)
    if args:
        parts.append(pre_html(args, "pi-args"))
    if card.progress:
        parts.append(progress_html(card.progress))
    if card.content:
        parts.append(result_html(card))
    parts.append(details_html(card))
    return _div("pi-tool", "".join(parts), extra=f" pi-tool--{card.status}")


def thinking_html(block: ThinkingBlock) -> str:
    summary = f'<summary style="{STYLE["pi-summary"]}">Thinking</summary>'
    body = "<p><em>[Reasoning redacted]</em></p>" if block.redacted else render_markdown(block.text)
    return _div("pi-thinking", summary + body, tag="details")


def footer_html(footer: Footer) -> str:
    return _div("pi-footer", html.escape(footer_text(footer)))


def prompt_html(prompt: str) -> str:
    return _div("pi-prompt", "› " + html.escape(prompt)) if prompt else ""


def user_html(item: UserItem) -> str:
    return _div("pi-user", f"↳ {user_label(item)}: " + html.escape(item.text))


def line_html(cls: str, text: str) -> str:
    """A one-line section (``pi-queued``, ``pi-error``, ``pi-notice``), empty when ``text`` is."""
    return _div(cls, html.escape(text)) if text else ""


def render_html(state: ViewState) -> str:
    """Self-contained static HTML of the run (inline styles, no scripts, all text escaped)."""
    parts: list[str] = [prompt_html(state.prompt)]
    for item in state.items:
        if isinstance(item, TextBlock):
            if item.text.strip():
                parts.append(_div("pi-text", render_markdown(item.text)))
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
    return _div("pi-view", "".join(parts), extra=" pi-static")


def static_bundle(state: ViewState) -> dict[str, str]:
    """The frozen output: ``{"text/plain": render_text(...), "text/html": render_html(...)}``."""
    return {"text/plain": render_text(state), "text/html": render_html(state)}
