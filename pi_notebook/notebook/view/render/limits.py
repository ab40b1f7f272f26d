"""How much Markdown the renderers take on, so that no answer can make rendering slow or deep.

A Markdown parser's work grows with the markup it meets, not only with the length of the text:
markdown-it-py spends about a microsecond on a character of prose but tens of microseconds on
each bracket, emphasis mark or backtick of a text made of little else (10,000 ``[`` take it
about half a second), and JupyterLab's parser (marked) recurses once per nested block quote
(5,000 ``>`` overflow its stack and the output shows a JavaScript error instead of the answer).
``bench/bench_render.py`` measures both kinds of text. So, in the static HTML and the live view
alike:

* ``too_much_markup``: a text longer than ``MAX_MARKDOWN_CHARS``, or with more than
  ``MAX_MARKUP`` markup characters outside fenced code, is shown as plain text (with
  ``PLAIN_NOTE``); an ordinary long answer (about 45 markup characters per 1,000) stays well
  under both;
* ``cap_nesting``: a line that opens more than ``MAX_NESTING`` block quotes or list items has
  the next marker escaped, so the rest of the line reads as text.

Pure: no widget or IPython imports.
"""

from __future__ import annotations

import re

__all__ = ["MAX_MARKDOWN_CHARS", "MAX_MARKUP", "MAX_NESTING", "PLAIN_NOTE", "cap_nesting", "too_much_markup"]

MAX_MARKDOWN_CHARS = 100_000
"""Longer texts are shown as plain text (a 100,000-character answer is about 25,000 tokens)."""

MAX_MARKUP = 6_000
"""Markup characters (``[ ] * _ ` < ! & \\ | ~ $``) outside fenced code beyond which a text is
shown as plain text: about half a second of markdown-it-py at its slowest per character."""

MAX_NESTING = 8
"""Block quotes and list items one line may open (markdown-it drops text nested deeper than 20
levels, which a list item counts twice)."""

PLAIN_NOTE = "(Shown as plain text: too long or too much Markdown markup to render.)"

_MARKUP = re.compile(r"[\[\]*_`<!&\\|~$]")
_FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})")
_CONTAINER = re.compile(r"[ \t]{0,4}(>|(?:[-+*]|\d{1,9}[.)])(?=[ \t]|$))")


def opens_fence(line: str) -> str:
    """The fence (```` ``` ```` or ``~~~``, or longer) that ``line`` opens, else ``""``."""
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


def _prose_lines(text: str) -> list[str]:
    """The lines of ``text`` outside fenced code (a fence line itself counts as code)."""
    out: list[str] = []
    fence = ""
    for line in text.splitlines():
        if fence:
            if closes_fence(line, fence):
                fence = ""
        elif opened := opens_fence(line):
            fence = opened
        else:
            out.append(line)
    return out


def too_much_markup(text: str) -> bool:
    """Whether ``text`` is to be shown as plain text rather than rendered as Markdown."""
    if len(text) > MAX_MARKDOWN_CHARS:
        return True
    if len(_MARKUP.findall(text)) <= MAX_MARKUP:  # the usual case: one C-level scan
        return False
    return sum(len(_MARKUP.findall(line)) for line in _prose_lines(text)) > MAX_MARKUP


def cap_line(line: str) -> str:
    """``line`` with the marker after its first ``MAX_NESTING`` block quote or list markers
    escaped (``\\>``, ``\\-``, ``12\\.``), so the rest of the line is text."""
    pos = depth = 0
    while (match := _CONTAINER.match(line, pos)) is not None:
        depth += 1
        if depth > MAX_NESTING:
            marker, at = match.group(1), match.start(1)
            escaped = f"{marker[:-1]}\\{marker[-1]}"
            return line[:at] + escaped + line[match.end(1) :]
        pos = match.end()
    return line


def cap_nesting(text: str) -> str:
    """``text`` with ``cap_line`` applied to every line outside fenced code."""
    out: list[str] = []
    fence = ""
    for line in text.splitlines(keepends=True):
        if fence:
            if closes_fence(line, fence):
                fence = ""
            out.append(line)
        elif opened := opens_fence(line):
            fence = opened
            out.append(line)
        else:
            out.append(cap_line(line))
    return "".join(out)
