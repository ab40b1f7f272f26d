"""The bound on every tool result: what a tool returns is capped before it joins the context
and before it is written to a session file, whichever tool it came from (a notebook tool, a
user's ``@tool``, an extension's or an MCP server's).

Pi truncates in each of its own tools (``truncateHead``: 2,000 lines or 50 KB, whichever comes
first, never a partial line) and passes any other tool's result on whole; here one cap at the
loop's tool boundary applies Pi's numbers to every result, so one tool returning 200 MB cannot
fill the model's context or write a 200 MB line:

* text blocks: the first 2,000 lines / 50 KB (UTF-8) of all text blocks together, cut at a line
  end when there is one, with a note saying how much was cut;
* images: each at most ``MAX_IMAGE_CHARS`` of base64 (no provider takes more), else a note;
* ``details`` (kept in the session, never sent): each string cut to the text limits, the whole
  to ``MAX_DETAILS_CHARS`` of text and ``MAX_DETAILS_IMAGE_CHARS`` of image data in
  ``{"type": "image", "data": ...}`` items (the notebook's figures), containers to
  ``MAX_ITEMS`` items. Values of other types are kept as they are.

A result within the bounds is returned unchanged (the same object), so the cost of the check is
one pass over the lengths.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..ai.types import ImageContent, TextContent
from .types import AgentToolResult

__all__ = [
    "MAX_BYTES",
    "MAX_DETAILS_CHARS",
    "MAX_DETAILS_IMAGE_CHARS",
    "MAX_IMAGE_CHARS",
    "MAX_ITEMS",
    "MAX_LINES",
    "cap_result",
    "truncate_head",
]

MAX_LINES = 2_000
MAX_BYTES = 50 * 1024
MAX_IMAGE_CHARS = 8_000_000
"""Base64 characters of one image in a result's content (about 6 MB of image)."""
MAX_DETAILS_CHARS = 200_000
"""Characters of text in a result's ``details`` altogether (each string also within the text cap)."""
MAX_DETAILS_IMAGE_CHARS = 8_000_000
"""Base64 characters of the images in a result's ``details`` altogether."""
MAX_ITEMS = 2_000
"""Items of one list or mapping in ``details``."""
_CUT = "[... cut: {what}]"


def truncate_head(
    text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES
) -> tuple[str, str | None]:
    """The start of ``text`` within ``max_lines`` lines and ``max_bytes`` UTF-8 bytes, ending at a
    line end when one is in reach (else within the first line), and a note of what was cut
    (``None`` when nothing was). Fast on huge text: only the kept prefix is encoded."""
    if len(text) <= max_bytes // 4 and text.count("\n") < max_lines:
        return text, None  # the common case: far within both limits whatever the encoding
    head = text[:max_bytes].encode("utf-8")[:max_bytes].decode("utf-8", "ignore")
    end, newlines = 0, 0
    while newlines < max_lines:
        found = head.find("\n", end)
        if found < 0:
            break
        end, newlines = found + 1, newlines + 1
    cut = newlines >= max_lines or len(head) < len(text)
    kept = head[:end] if cut and end else head  # no line end in reach: cut inside the first line
    if len(kept) == len(text):
        return text, None
    total_lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    kept_lines = kept.count("\n") + (0 if kept.endswith("\n") or not kept else 1)
    note = (
        f"[Tool result truncated: showing {kept_lines:,} of {total_lines:,} lines "
        f"({len(kept):,} of {len(text):,} characters); a tool result is limited to "
        f"{max_lines:,} lines or {max_bytes // 1024} KB. Ask for a smaller part if you need the rest.]"
    )
    return kept, note


def cap_result(result: AgentToolResult) -> AgentToolResult:
    """``result`` within the bounds above (itself when it already is)."""
    content = result.content or []
    new_content = _cap_content(content)
    details = _Details().cap(result.details) if result.details is not None else None
    if new_content is content and details is result.details:
        return result
    return dataclasses.replace(result, content=new_content, details=details)


def _cap_content(content: list[TextContent | ImageContent]) -> list[TextContent | ImageContent]:
    total = sum(len(b.text) for b in content if isinstance(b, TextContent))
    lines = sum(b.text.count("\n") for b in content if isinstance(b, TextContent)) if total > 1000 else 0
    big_image = any(isinstance(b, ImageContent) and len(b.data) > MAX_IMAGE_CHARS for b in content)
    if total <= MAX_BYTES // 4 and lines < MAX_LINES and not big_image:
        return content
    out: list[TextContent | ImageContent] = []
    bytes_left, lines_left, notes = MAX_BYTES, MAX_LINES, []
    for block in content:
        if isinstance(block, ImageContent):
            if len(block.data) > MAX_IMAGE_CHARS:
                size = f"{block.mime_type}, {len(block.data):,} base64 characters"
                notes.append(f"[Image ({size}) left out: too large.]")
            else:
                out.append(block)
            continue
        if bytes_left <= 0 or lines_left <= 0:
            size = f"{len(block.text):,} characters"
            notes.append(f"[Tool result truncated: a further text block of {size} left out.]")
            continue
        kept, note = truncate_head(block.text, lines_left, bytes_left)
        if note is not None:
            notes.append(note)
        out.append(block if note is None else TextContent(text=kept, text_signature=block.text_signature))
        bytes_left -= len(kept.encode("utf-8"))
        lines_left -= kept.count("\n")
    if notes:
        out.append(TextContent(text="\n\n".join(notes)))
    return out


class _Details:
    """One pass over a result's ``details`` with the shared budgets."""

    def __init__(self) -> None:
        self.text_left = MAX_DETAILS_CHARS
        self.images_left = MAX_DETAILS_IMAGE_CHARS
        self.changed = False

    def cap(self, value: Any) -> Any:
        capped = self._value(value, 0)
        return capped if self.changed else value

    def _value(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self._text(value)
        if depth > 32:  # deeper than any details a tool means to keep
            self.changed = True
            return _CUT.format(what="nested too deeply")
        if isinstance(value, dict):
            return self._mapping(value, depth)
        if isinstance(value, list | tuple):
            items = [self._value(item, depth + 1) for item in value[:MAX_ITEMS]]
            if len(value) > MAX_ITEMS:
                self.changed = True
                items.append(_CUT.format(what=f"{len(value) - MAX_ITEMS:,} more items"))
            return items
        return value

    def _mapping(self, value: dict[Any, Any], depth: int) -> dict[Any, Any]:
        image = value.get("type") == "image" and isinstance(value.get("data"), str)
        out: dict[Any, Any] = {}
        for index, (key, item) in enumerate(value.items()):
            if index >= MAX_ITEMS:
                self.changed = True
                out["..."] = _CUT.format(what=f"{len(value) - MAX_ITEMS:,} more entries")
                break
            if image and key == "data":
                out[key] = self._image(item)
            else:
                out[key] = self._value(item, depth + 1)
        return out

    def _image(self, data: str) -> str:
        if len(data) <= self.images_left:
            self.images_left -= len(data)
            return data
        self.changed = True
        return ""  # an empty image draws nothing; its label says what it was

    def _text(self, text: str) -> str:
        limit = min(MAX_BYTES, self.text_left)
        if len(text) <= limit // 4 and text.count("\n") < MAX_LINES:
            self.text_left -= len(text)
            return text
        kept, note = truncate_head(text, MAX_LINES, max(0, limit))
        self.text_left -= len(kept)
        if note is None:
            return text
        self.changed = True
        return f"{kept}\n\n{note}"
