"""Markdown for the *frontend's* renderer (the live view), and where a stream may be cut.

* ``frontend_markdown`` escapes raw HTML tags and image syntax outside code, so an answer
  shown by JupyterLab's or VS Code's Markdown renderer never makes the browser fetch a URL the
  model chose; breaks links whose destination is not ``http``, ``https``, ``mailto`` or a
  relative URL, so no ``javascript:`` link can be clicked; escapes lone dollar signs, so "$5
  and $6" is not typeset as math; passes ``\\( \\)`` and ``\\[ \\]`` math on as math (see
  ``TEX_OPEN``); and keeps the work of the frontend's parser bounded (``limits``).
* ``safe_split`` finds the end of the complete blocks of a growing Markdown text, so the live
  view can freeze them and re-send only the tail; ``SplitScanner`` does it reading each line
  of the growing text once, not the whole tail on every frame.

Pure: no widget or IPython imports.
"""

from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt

from .limits import PLAIN_NOTE, cap_line, cap_nesting, closes_fence, opens_fence, too_much_markup

__all__ = [
    "SplitScanner",
    "closes_fence",
    "frontend_markdown",
    "opens_fence",
    "plain_markdown",
    "renders_raw_html",
    "renders_unsafe_link",
    "safe_split",
    "unsafe_url",
]

_SPECIAL = re.compile(r"[\\`$<!\]]")
# Autolinks are kept for the schemes a link may have; ``<javascript:...>`` is escaped as a tag.
_AUTOLINK = re.compile(r"<(?:(?:https?|mailto):[^\s<>]*|[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+)>", re.IGNORECASE)
_OPENER = re.compile(r"<(?=[A-Za-z/!?])")
_RISKY = re.compile(r"<[A-Za-z/!?]|!\[|\][(:]")
_ESCAPABLE = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_LONE_DOLLAR = re.compile(r"(?<![$\\])\\?\$(?!\$)")
_LINK_SCHEME = re.compile(r"(?:https?|mailto):", re.IGNORECASE)
_URL_HEAD = re.compile(r"[^\s)>/?#]*")
_NOT_A_PATH = re.compile(r"[:&\\%\x00-\x1f\x7f]")
_SCHEME = re.compile(r"^\s*([a-zA-Z][a-zA-Z0-9+.\-]*):")
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})

DOLLAR = "\\\\$"
"""A lone ``$`` as Markdown for JupyterLab: ``\\\\$``. Its Markdown parser turns it into the text
``\\$``, which MathJax (``processEscapes``) shows as a plain ``$``. A plain ``$`` or ``\\$`` would
reach MathJax as ``$`` and pair with the next one: "costs $5 and $6" came out as italic math."""


TEX_OPEN = {"(": "\\\\(", "[": "\\\\["}
"""``\\(`` and ``\\[`` as Markdown for JupyterLab: doubled. Its renderer takes math out of the text
before the Markdown parser sees it, and it knows ``$``, ``$$`` and ``\\\\(``/``\\\\[`` (two
backslashes); the ``\\(`` a model writes is a Markdown escape of ``(``, so ``\\(E\\)`` came out
as ``(E)``. Doubled, the parser leaves ``\\(`` for MathJax."""
TEX_CLOSE = {"(": "\\)", "[": "\\]"}


def _disarm_math(text: str) -> str:
    """Math for a frontend: no tag opener or image marker (a parser without JupyterLab's math
    step would read them); ``<x`` is TeX's ``\\lt x``."""
    return _OPENER.sub(r"\\lt ", text).replace("![", "&#33;[")


def _tex_math(line: str, j: int) -> tuple[str, int, str]:
    """``\\(`` or ``\\[`` at ``j``: the Markdown to emit, where to go on, and the bracket of a
    display math block left open at the end of the line (``""`` when it closed)."""
    bracket = line[j + 1]
    close = line.find(TEX_CLOSE[bracket], j + 2)
    if close == -1:
        if bracket == "(":  # inline math ends on its line: this one is plain text
            return line[j : j + 2], j + 2, ""
        return TEX_OPEN[bracket] + _disarm_math(line[j + 2 :]), len(line), bracket
    inner = _disarm_math(line[j + 2 : close])
    return TEX_OPEN[bracket] + inner + "\\" + TEX_CLOSE[bracket], close + 2, ""


def _in_display_math(line: str) -> tuple[str, str | None]:
    """A line inside an open ``\\[`` block: the math part to emit and the rest of the line after
    ``\\]`` (``None``: still open; a blank line ends it, as it ends math in JupyterLab)."""
    close = line.find("\\]")
    if close == -1:
        return _disarm_math(line), None if line.strip() else ""
    return _disarm_math(line[:close]) + "\\\\]", line[close + 2 :]


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


def unsafe_url(url: str) -> bool:
    """Whether ``url`` (as a parser hands it to the renderer) has a scheme other than ``http``,
    ``https`` or ``mailto``: ``javascript:``, ``data:``, ``file:``, ``vbscript:`` ..."""
    match = _SCHEME.match(url)
    return match is not None and match.group(1).lower() not in SAFE_SCHEMES


def unsafe_destination(line: str, start: int) -> bool:
    """Whether the link destination that starts at ``line[start:]`` (after ``](`` or ``]:``)
    may be anything but an ``http``/``https``/``mailto`` URL or a plain relative path.

    Judged on the raw text, before any parser's unescaping: a scheme, an entity (``&#115;``), a
    backslash escape or a percent sign in the part before the first ``/``, ``?`` or ``#`` makes
    it unsafe, and so does a destination on the next line (only spaces left on this one)."""
    rest = line[start:].lstrip(" \t")
    if rest.startswith("<"):
        rest = rest[1:].lstrip(" \t")
    if not rest.strip():
        return True
    if _LINK_SCHEME.match(rest):
        return False
    head = _URL_HEAD.match(rest)
    return head is not None and _NOT_A_PATH.search(head.group()) is not None


def _code_run(line: str, j: int, char: str) -> tuple[str, int, bool]:
    """A run of backticks or dollars at ``j``: the Markdown to emit, where to go on, and whether
    a code span kept something a parser could read as HTML, an image or a link."""
    run = _run_length(line, j, char)
    close = _closing_run(line, j + run, char, run)
    if close == -1:
        return char * run, j + run, False
    end = close + run
    if char == "`":
        return line[j:end], end, _RISKY.search(line, j, end) is not None
    # math: no HTML parser sees it, but a plain-Markdown one would
    return _OPENER.sub(r"\\lt ", line[j:end]).replace("![", "&#33;["), end, False


def _escape_char(line: str, j: int) -> tuple[str, int]:
    """The Markdown to emit for the special character at ``j`` (not a code run), and where to
    go on."""
    char, nxt = line[j], line[j + 1 : j + 2]
    if char == "\\":
        if nxt == "$":  # the model's literal dollar: keep it literal through MathJax too
            return DOLLAR, j + 2
        end = j + 2 if nxt and nxt in _ESCAPABLE else j + 1
        return line[j:end], end
    if char == "$":
        return DOLLAR, j + 1
    if char == "<":
        link = _AUTOLINK.match(line, j)
        if link is not None:
            return link.group(), link.end()
        return ("&lt;" if nxt and (nxt.isalpha() or nxt in "/!?") else "<"), j + 1
    if char == "]":
        if nxt in ("(", ":") and unsafe_destination(line, j + 2):
            return f"]\\{nxt}", j + 2  # "]\\(" is no link: the text shows as written
        return "]", j + 1
    return ("&#33;" if nxt == "[" else "!"), j + 1


def _escape_line(line: str) -> tuple[str, bool, str]:
    """Disarm tag openers, image markers and unsafe link destinations outside code spans; keep
    backslash escapes and safe autolinks; double ``\\(`` / ``\\[`` math (``TEX_OPEN``). Returns
    the line, whether a code span kept a ``<tag``, ``![`` or ``](`` (then the caller checks the
    result with a real parser), and ``"["`` when a ``\\[`` block goes on after the line. Jumps
    between special characters with a regex, so plain prose costs one C-level scan."""
    out: list[str] = []
    risky = False
    i = 0
    while (match := _SPECIAL.search(line, i)) is not None:
        j = match.start()
        out.append(line[i:j])
        char = line[j]
        if char == "`" or (char == "$" and _run_length(line, j, char) > 1):
            emitted, i, kept = _code_run(line, j, char)
            risky = risky or kept
        elif char == "\\" and line[j + 1 : j + 2] in TEX_OPEN:
            emitted, i, bracket = _tex_math(line, j)
            if bracket:
                return "".join(out) + emitted, risky, bracket
        else:
            emitted, i = _escape_char(line, j)
        out.append(emitted)
    out.append(line[i:])
    return "".join(out), risky, ""


@lru_cache(maxsize=1)
def _checkers() -> tuple[MarkdownIt, ...]:
    # Frontends differ in block syntax (JupyterLab's parser has GFM tables, plain CommonMark
    # has none), and a table changes where a multi-line code span ends: text that is code to
    # one parser can be raw HTML to the other. So both must agree that nothing is raw. Every
    # link is let through (markdown-it would drop a javascript: link), so it can be checked.
    parsers = (
        MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]),
        MarkdownIt("commonmark", {"html": True}),
    )
    for parser in parsers:
        parser.validateLink = lambda url: True  # type: ignore[method-assign]
    return parsers


def _finds(markdown: str, html: bool, links: bool) -> bool:
    for parser in _checkers():
        for token in parser.parse(markdown):
            if html and token.type == "html_block":
                return True
            for child in token.children or ():
                if html and child.type in ("html_inline", "image"):
                    return True
                if links and child.type == "link_open" and unsafe_url(str(child.attrGet("href") or "")):
                    return True
    return False


def renders_raw_html(markdown: str) -> bool:
    """Whether a CommonMark parser with raw HTML on (with or without GFM tables) finds an HTML
    tag or an image in ``markdown``."""
    return _finds(markdown, html=True, links=False)


def renders_unsafe_link(markdown: str) -> bool:
    """Whether such a parser finds a link whose URL is not ``http``, ``https``, ``mailto`` or
    relative (``unsafe_url``)."""
    return _finds(markdown, html=False, links=True)


def plain_markdown(text: str) -> str:
    """``text`` as a fenced code block (longer than any backtick run in it), after an italic
    ``PLAIN_NOTE``: what a frontend shows for text with ``too_much_markup``."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"*{PLAIN_NOTE}*\n\n{fence}text\n{text}\n{fence}\n"


def _escape_everywhere(text: str) -> str:
    """Every tag opener, image marker and link destination disarmed, inside code too."""
    disarmed = _OPENER.sub("&lt;", text).replace("![", "&#33;[").replace("](", "]\\(").replace("]:", "]\\:")
    return _LONE_DOLLAR.sub(lambda _m: DOLLAR, disarmed)


def frontend_markdown(text: str) -> str:
    """Markdown for a frontend renderer (JupyterLab, VS Code) with raw HTML, images and unsafe
    links disarmed, and the parser's work bounded.

    Frontends sanitise HTML in Markdown but still render tags such as ``<img src=...>``, and
    Markdown images load any URL: either lets a prompt-injected answer make the browser fetch
    an address of the attacker's choosing. Outside fenced code and code spans, ``<tag`` becomes
    ``&lt;tag`` and ``![`` becomes ``&#33;[`` (so an image reads as a link); inside ``$$math$$``,
    ``<x`` becomes ``\\lt x``. A link or reference definition whose destination is not safe
    (``unsafe_destination``) gets ``]\\(`` / ``]\\:``, which no parser reads as a link: JupyterLab
    renders the live view's Markdown without its HTML sanitiser, so a ``javascript:`` link
    would run when clicked. A lone ``$`` (or the model's ``\\$``) becomes ``DOLLAR``, so money
    and ``$`expr``` references read as written; ``$$...$$`` is left to the frontend's MathJax.
    ``\\(...\\)`` (on one line) and ``\\[...\\]`` (up to a blank line) are doubled for
    JupyterLab's math step (``TEX_OPEN``), their ``<x`` made ``\\lt x`` as in ``$$``.
    A line nesting more than ``limits.MAX_NESTING`` quotes or lists is cut there, and a text
    with ``too_much_markup`` is sent as a code block (``plain_markdown``). Other text is
    returned unchanged.

    The result never contains a tag opener or an unsafe link outside code. When code that this
    line-based scan recognised kept one, the result is parsed with markdown-it; if that parser
    disagrees about where code is, every opener and link is disarmed, inside code too
    (correct, if less pretty).
    """
    if too_much_markup(text):
        return plain_markdown(text)
    if "<" not in text and "![" not in text and "$" not in text and "]" not in text and "\\(" not in text:
        return cap_nesting(text)
    result, risky = _escape_lines(text)
    # Math is not disarmed for links: where it is not taken out as math (an unclosed block,
    # another frontend) the parser check decides.
    risky = risky or (("\\(" in text or "\\[" in text) and _RISKY.search(result) is not None)
    if risky and (renders_raw_html(result) or renders_unsafe_link(result)):
        return _escape_everywhere(cap_nesting(text))
    return result


def _escape_lines(text: str) -> tuple[str, bool]:
    """``frontend_markdown``'s line scan: fenced code as is, ``\\[`` blocks as math, other lines
    through ``_escape_line``; and whether a code span kept something a parser must check."""
    out: list[str] = []
    fence = math = ""
    risky = False
    for line in text.splitlines(keepends=True):
        if math:
            emitted, rest = _in_display_math(line)
            out.append(emitted)
            if rest is not None:  # the block closed: the rest of the line is prose
                escaped, line_risky, math = _escape_line(rest)
                out.append(escaped)
                risky = risky or line_risky
        elif fence:
            if closes_fence(line, fence):
                fence = ""
            risky = risky or _RISKY.search(line) is not None
            out.append(line)
        elif opened := opens_fence(line):
            fence = opened
            risky = risky or _RISKY.search(line) is not None
            out.append(line)
        else:
            escaped, line_risky, math = _escape_line(cap_line(line))
            risky = risky or line_risky
            out.append(escaped)
    return "".join(out), risky


_LIST_OR_QUOTE = re.compile(r"(?:[-+*>]|\d{1,9}[.)])(?:\s|$)")


def _scan_lines(text: str, start: int, end: int, state: tuple[int, str, bool]) -> tuple[int, str, bool]:
    """``safe_split``'s scan of the lines in ``text[start:end]`` from ``state`` = (the best cut
    so far, the open fence, whether the line before ``start`` was blank); returns the state
    after them."""
    best, fence, blank_before = state
    pos = start
    for line in text[start:end].splitlines(keepends=True):
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
    return best, fence, blank_before


def safe_split(text: str, min_size: int = 0) -> int:
    """The largest offset ``k`` (0 if none) where ``text[:k]`` is a run of complete Markdown
    blocks that renders the same on its own: a blank line outside code fences, followed by a
    line that starts a new top-level block. The live view freezes ``text[:k]`` into its own
    output and keeps re-sending only the tail. Returns 0 when ``k < min_size``.

    Only lines ending in a newline can start that block, so an unfinished last line never
    moves ``k``: ``SplitScanner`` relies on it to scan a growing text once."""
    best = _scan_lines(text, 0, len(text), (0, "", False))[0]
    return best if best >= min_size else 0


class SplitScanner:
    """``safe_split`` of a text that grows at its end, reading each line once: the scan's state
    (the best cut, an open fence, a blank line last) is kept after the last complete line, and
    each call reads only the lines completed since. ``scanned``: characters read so far."""

    def __init__(self) -> None:
        self.scanned = 0
        self.reset()

    def reset(self) -> None:
        """Start over (the text was cut or replaced)."""
        self._end = 0
        self._last_line = ""
        self._state: tuple[int, str, bool] = (0, "", False)

    def split(self, text: str, min_size: int = 0) -> int:
        """``safe_split(text, min_size)``, for ``text`` that extends the text of the last call
        (a text that does not, as far as its last scanned line shows, is scanned anew)."""
        end = self._end
        if end > len(text) or not text.startswith(self._last_line, end - len(self._last_line)):
            self.reset()
            end = 0
        complete = text.rfind("\n") + 1
        if complete > end:
            self._state = _scan_lines(text, end, complete, self._state)
            self.scanned += complete - end
            self._last_line = text[text.rfind("\n", 0, complete - 1) + 1 : complete]
            self._end = complete
        best = self._state[0]
        return best if best >= min_size else 0
