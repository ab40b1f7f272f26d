"""What a tool card shows beyond text: the images and rich HTML a tool put in its result's
``details["display"]`` (``tools/outputs.py``: figures ``run_code`` made, a DataFrame's table),
and Python source in the arguments (``run_code``'s code), highlighted.

Nothing from a tool reaches the page as written. ``run_code`` runs code the model wrote, so a
value's ``_repr_html_`` is model output in effect: ``table_html`` rebuilds it from a short list
of table and text tags with no attributes but ``colspan``/``rowspan``, every text escaped, or
gives up (the caller then shows the ``text/plain``). An image is drawn only from base64 PNG or
JPEG bytes (checked, bounded) as a ``data:`` URL, which fetches nothing. Pure: no widget or
IPython imports.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
from collections.abc import Callable
from functools import lru_cache
from html.parser import HTMLParser
from typing import Any, ClassVar

MAX_ITEMS = 8
MAX_IMAGE_CHARS = 1_400_000
"""Base64 characters of one image (1 MB of bytes, as ``tools/outputs.py`` bounds them)."""
MAX_HTML_CHARS = 100_000
MAX_HIGHLIGHT = 20_000
"""Characters of source highlighted; longer code is shown plain (Pygments takes ~1 ms per KB)."""

_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_MAGIC = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}
_LONG_WORD = re.compile(r"\S{81,}")
IMAGE_STYLE = "display:block;max-width:100%;height:auto;margin:4px 0;"
TABLE_STYLE = "border-collapse:collapse;margin:4px 0;font-size:12px;line-height:1.5;"
CELL_STYLE = "border:1px solid rgba(127,127,127,.4);padding:2px 8px;text-align:right;"
RICH_STYLE = "max-width:100%;max-height:32em;overflow:auto;margin:3px 0;"


def display_items(details: Any) -> list[dict[str, Any]]:
    """The well-formed ``details["display"]`` items (at most ``MAX_ITEMS``)."""
    items = details.get("display") if isinstance(details, dict) else None
    if not isinstance(items, list):
        return []
    return [
        item for item in items[:MAX_ITEMS] if isinstance(item, dict) and isinstance(item.get("type"), str)
    ]


def image_tag(item: dict[str, Any]) -> str | None:
    """An ``<img>`` of the item's PNG/JPEG bytes, or None when they are not that (or too big)."""
    mime, data = item.get("mime"), item.get("data")
    if mime not in _MAGIC or not isinstance(data, str) or len(data) > MAX_IMAGE_CHARS:
        return None
    if not _BASE64.fullmatch(data):
        return None
    try:
        head = base64.b64decode(data[:16])
    except (binascii.Error, ValueError):
        return None
    if not head.startswith(_MAGIC[str(mime)]):
        return None
    alt = html.escape(str(item.get("label") or "image"))
    return f'<img class="pi-figure" src="data:{mime};base64,{data}" alt="{alt}" style="{IMAGE_STYLE}">'


class _Table(HTMLParser):
    """Rebuilds HTML from ``KEEP`` tags only; the text of ``DROP`` tags is dropped too."""

    KEEP = frozenset(
        {
            "table",
            "thead",
            "tbody",
            "tfoot",
            "tr",
            "th",
            "td",
            "caption",
            "p",
            "b",
            "i",
            "em",
            "strong",
            "code",
        }
    )
    DROP = frozenset(
        {"script", "style", "template", "noscript", "textarea", "title", "svg", "math", "iframe"}
    )
    STYLE: ClassVar[dict[str, str]] = {"table": TABLE_STYLE, "th": CELL_STYLE, "td": CELL_STYLE}

    def __init__(self, escape: Callable[[str], str]) -> None:
        super().__init__(convert_charrefs=True)
        self.escape = escape
        self.out: list[str] = []
        self.open: list[str] = []
        self.dropping = 0
        self.tables = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.DROP:
            self.dropping += 1
        elif tag == "br" and not self.dropping:
            self.out.append("<br>")
        elif tag in self.KEEP and not self.dropping:
            spans = "".join(
                f' {name}="{value}"'
                for name, value in attrs
                if name in ("colspan", "rowspan") and value and value.isdigit() and len(value) < 4
            )
            style = f' style="{self.STYLE[tag]}"' if tag in self.STYLE else ""
            self.out.append(f"<{tag}{spans}{style}>")
            self.open.append(tag)
            self.tables += tag == "table"

    def handle_endtag(self, tag: str) -> None:
        if tag in self.DROP:
            self.dropping = max(0, self.dropping - 1)
        elif tag in self.open and not self.dropping:
            # Close what is still open inside it: a stray end tag never closes our own markup.
            while self.open:
                inner = self.open.pop()
                self.out.append(f"</{inner}>")
                if inner == tag:
                    break

    def handle_data(self, data: str) -> None:
        if not self.dropping and data.strip():
            self.out.append(self.escape(data))


def table_html(markup: str, escape: Callable[[str], str] = html.escape) -> str | None:
    """``markup`` (a DataFrame's ``_repr_html_``) rebuilt from table and text tags, its text
    escaped by ``escape``; None when it holds no table or is too long."""
    if len(markup) > MAX_HTML_CHARS:
        return None
    parser = _Table(escape)
    parser.feed(markup)
    parser.close()
    if not parser.tables:
        return None
    parser.out += [f"</{tag}>" for tag in reversed(parser.open)]
    return "".join(parser.out)


@lru_cache(maxsize=32)
def highlight_python(source: str) -> str | None:
    """``source`` as Pygments-highlighted HTML (inline styles, escaped), or None when it is too
    long, has a word too long to wrap (the caller's ``<wbr>`` breaks it) or Pygments is missing."""
    if len(source) > MAX_HIGHLIGHT or _LONG_WORD.search(source):
        return None
    try:
        from pygments import highlight  # type: ignore[import-untyped]
        from pygments.formatters import HtmlFormatter  # type: ignore[import-untyped]
        from pygments.lexers import PythonLexer  # type: ignore[import-untyped]
    except ImportError:  # it comes with IPython, but the view does not depend on it
        return None
    formatter = HtmlFormatter(nowrap=True, noclasses=True, style="default")
    return str(highlight(source, PythonLexer(), formatter)).rstrip("\n")
