"""Markdown for the *frontend's* renderer (the live view), and where a stream may be cut.

* ``frontend_markdown`` escapes raw HTML tags and image syntax outside code, so an answer
  shown by JupyterLab's or VS Code's Markdown renderer never makes the browser fetch a URL the
  model chose, and escapes lone dollar signs, so "$5 and $6" is not typeset as math.
* ``safe_split`` finds the end of the complete blocks of a growing Markdown text, so the live
  view can freeze them and re-send only the tail.

Pure: no widget or IPython imports.
"""

from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt

__all__ = ["closes_fence", "frontend_markdown", "opens_fence", "renders_raw_html", "safe_split"]

_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})")
_SPECIAL = re.compile(r"[\\`$<!]")
_AUTOLINK = re.compile(r"<(?:[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]*|[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+)>")
_OPENER = re.compile(r"<(?=[A-Za-z/!?])")
_RISKY = re.compile(r"<[A-Za-z/!?]|!\[")
_ESCAPABLE = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_LONE_DOLLAR = re.compile(r"(?<![$\\])\\?\$(?!\$)")

DOLLAR = "\\\\$"
"""A lone ``$`` as Markdown for JupyterLab: ``\\\\$``. Its Markdown parser turns it into the text
``\\$``, which MathJax (``processEscapes``) shows as a plain ``$``. A plain ``$`` or ``\\$`` would
reach MathJax as ``$`` and pair with the next one: "costs $5 and $6" came out as italic math."""


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
            if nxt == "$":  # the model's literal dollar: keep it literal through MathJax too
                i += 1
                out.append(DOLLAR)
                continue
            if nxt and nxt in _ESCAPABLE:
                i += 1
            out.append(line[j:i])
        elif char == "$" and _run_length(line, j, char) == 1:
            out.append(DOLLAR)
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


def opens_fence(line: str) -> str:
    match = _FENCE.match(line)
    if match is None:
        return ""
    run = match.group(1)
    # CommonMark: a backtick fence's info string has no backticks (else it is a code span).
    return "" if run[0] == "`" and "`" in line[match.end() :] else run


def closes_fence(line: str, fence: str) -> bool:
    match = _FENCE.match(line)
    if match is None:
        return False
    run = match.group(1)
    return run[0] == fence[0] and len(run) >= len(fence) and not line[match.end() :].strip()


@lru_cache(maxsize=1)
def _checkers() -> tuple[MarkdownIt, ...]:
    # Frontends differ in block syntax (JupyterLab's parser has GFM tables, plain CommonMark
    # has none), and a table changes where a multi-line code span ends: text that is code to
    # one parser can be raw HTML to the other. So both must agree that nothing is raw.
    return (
        MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]),
        MarkdownIt("commonmark", {"html": True}),
    )


def renders_raw_html(markdown: str) -> bool:
    """Whether a CommonMark parser with raw HTML on (with or without GFM tables) finds an HTML
    tag or an image in ``markdown``."""
    for parser in _checkers():
        for token in parser.parse(markdown):
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
    ``&lt;tag`` and ``![`` becomes ``&#33;[`` (so an image reads as a link); inside ``$$math$$``,
    ``<x`` becomes ``\\lt x``. A lone ``$`` (or the model's ``\\$``) becomes ``DOLLAR``, so money
    and ``$`expr``` references read as written; ``$$...$$`` is left to the frontend's MathJax.
    Text without such characters is returned unchanged.

    The result never contains a tag opener outside code. When code that this line-based scan
    recognised kept one, the result is parsed with markdown-it; if that parser disagrees about
    where code is, every opener is escaped, inside code too (correct, if less pretty).
    """
    if "<" not in text and "![" not in text and "$" not in text:
        return text
    out: list[str] = []
    fence = ""
    risky = False
    for line in text.splitlines(keepends=True):
        if fence:
            if closes_fence(line, fence):
                fence = ""
            risky = risky or _RISKY.search(line) is not None
            out.append(line)
        elif opened := opens_fence(line):
            fence = opened
            risky = risky or _RISKY.search(line) is not None
            out.append(line)
        else:
            escaped, line_risky = _escape_line(line)
            risky = risky or line_risky
            out.append(escaped)
    result = "".join(out)
    if risky and renders_raw_html(result):
        return _LONE_DOLLAR.sub(lambda _m: DOLLAR, _OPENER.sub("&lt;", text).replace("![", "&#33;["))
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
            if closes_fence(line, fence):
                fence = ""
        else:
            # A complete, unindented line after a blank one starts a new top-level block;
            # list items and quotes are left joined to their neighbours (numbering, spacing).
            starts_block = stripped and not line[0].isspace() and line.endswith("\n")
            if blank_before and starts_block and not _LIST_OR_QUOTE.match(line):
                best = pos
            fence = opens_fence(line)
        blank_before = not stripped and not fence
        pos += len(line)
    return best if best >= min_size else 0
