"""What the user sees in cell outputs, turned into what the model can read: images (bounded,
or a text placeholder for a model without image input) and rich output as bounded text.

* ``ImageBudget``: at most ``MAX_IMAGES`` images of at most ``MAX_IMAGE_BYTES`` each in one
  tool result; every image gets a one-line label (``[figure 1: 640x480 PNG]``), and one that is
  not attached says why.
* ``bundle_text``: a display bundle as text. HTML (a DataFrame table) loses its tags and keeps
  its rows, a Plotly figure becomes its trace types, names and sizes, a widget view its
  ``text/plain``; a default ``<Foo object>`` repr gives way to a richer format.
* ``Shown``: what the *user* sees of a result in its tool card, whatever the model sees: the
  PNG/JPEG images and the HTML of rich values (a DataFrame's table), bounded, carried in the
  result's ``details["display"]`` (the view validates and sanitises them, ``render/rich.py``).
* ``open_figures`` / ``take_figures``: matplotlib figures a piece of code left open, rendered
  to PNG the way the inline backend shows them after a cell, then closed (so they do not show
  up again in the output of the cell that ran the code).
"""

from __future__ import annotations

import base64
import json
import re
import struct
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from ...ai.types import ImageContent
from .references import truncate

MAX_IMAGES = 4
MAX_IMAGE_BYTES = 1_000_000
NOT_SENT = "not sent to the model"
"""How a label starts for an image the model did not receive: the user sees the image on the
card right below the label, so "not shown" would read as a lie (the model is who did not see it)."""
NO_IMAGE_INPUT = f"{NOT_SENT}: it has no image input"
_IMAGE_MIMES = ("image/png", "image/jpeg")
_WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
_PLOTLY_MIME = "application/vnd.plotly.v1+json"
_DEFAULT_REPR = re.compile(r"^<[\w.]+ (object|at)\b.*>$|^<(IPython|matplotlib)\.[\w.]+.*>$", re.DOTALL)


# --- images ---------------------------------------------------------------------------------


def image_size(data: bytes, mime: str) -> tuple[int, int] | None:
    """(width, height) read from a PNG's IHDR or a JPEG's start-of-frame marker."""
    if mime == "image/png" and data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if mime == "image/jpeg" and data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                return None
            marker, length = data[i + 1], struct.unpack(">H", data[i + 2 : i + 4])[0]
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                height, width = struct.unpack(">HH", data[i + 5 : i + 9])
                return int(width), int(height)
            i += 2 + length
    return None


def decode_image(value: Any) -> bytes | None:
    """The bytes of a bundle's image value (bytes, or base64 text as Jupyter stores it)."""
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    if isinstance(value, list):
        value = "".join(value)
    if isinstance(value, str):
        try:
            return base64.b64decode(value)
        except ValueError:
            return None
    return None


@dataclass
class ImageBudget:
    """The images of one tool result: how many are attached, and the labels of all of them."""

    sees_images: bool = True
    max_images: int = MAX_IMAGES
    max_bytes: int = MAX_IMAGE_BYTES
    images: list[ImageContent] = field(default_factory=list)
    seen: int = 0

    def add(self, data: bytes, mime: str, noun: str = "image") -> str:
        """Attach ``data`` if the budget allows; the label says what it is and where it went."""
        self.seen += 1
        size = image_size(data, mime)
        kind = mime.split("/")[1].upper()
        what = f"{noun} {self.seen}: {size[0]}x{size[1]} {kind}" if size else f"{noun} {self.seen}: {kind}"
        if not self.sees_images:
            return f"[{what}, {NO_IMAGE_INPUT}]"
        if len(data) > self.max_bytes:
            return f"[{what}, {len(data) / 1e6:.1f} MB, {NOT_SENT}: over the {self.max_bytes / 1e6:g} MB cap]"
        if len(self.images) >= self.max_images:
            return f"[{what}, {NOT_SENT}: at most {self.max_images} images in one result]"
        self.images.append(ImageContent(data=base64.b64encode(data).decode("ascii"), mime_type=mime))
        return f"[{what}, attached]"

    def add_bundle(self, data: dict[str, Any], noun: str = "image") -> list[str]:
        labels = []
        for mime in _IMAGE_MIMES:
            raw = decode_image(data.get(mime)) if mime in data else None
            if raw:
                labels.append(self.add(raw, mime, noun))
                break  # one image per bundle: a PNG and a JPEG of it would be the same picture
        return labels


# --- what the tool card shows ---------------------------------------------------------------

SHOWN_IMAGES = 4
SHOWN_IMAGE_BYTES = 1_000_000
SHOWN_HTML = 4
SHOWN_HTML_CHARS = 100_000
"""Bounds of ``Shown``: the details are kept in the session file and in the saved notebook, so a
result shows at most a few images of at most 1 MB and a few HTML tables of at most 100,000
characters (pandas shows at most 60 rows by default, some 20,000 characters)."""


@dataclass
class Shown:
    """The images and rich HTML of one tool result, for its tool card (``details["display"]``):
    ``{"type": "image", "mime", "data" (base64), "label"}``, ``{"type": "html", "html", "text"}``
    or ``{"type": "omitted", "label"}`` for one over the bounds."""

    items: list[dict[str, Any]] = field(default_factory=list)
    images: int = 0
    html: int = 0

    def add_image(self, data: bytes, mime: str, noun: str = "image") -> None:
        size = image_size(data, mime)
        kind = mime.split("/")[1].upper()
        label = f"{noun} {self.images + 1}: " + (f"{size[0]}x{size[1]} {kind}" if size else kind)
        if self.images >= SHOWN_IMAGES or len(data) > SHOWN_IMAGE_BYTES:
            bound = f"at most {SHOWN_IMAGES} images" if self.images >= SHOWN_IMAGES else "over 1 MB"
            label = f"[{noun}: {len(data):,} bytes, not shown: {bound}]"
            self.items.append({"type": "omitted", "label": label})
            return
        self.images += 1
        self.items.append(
            {"type": "image", "mime": mime, "data": base64.b64encode(data).decode("ascii"), "label": label}
        )

    def add_bundle(self, data: dict[str, Any], noun: str = "image") -> None:
        """The bundle's image if it has one, else its HTML (with its ``text/plain`` as fallback)."""
        for mime in _IMAGE_MIMES:
            raw = decode_image(data.get(mime)) if mime in data else None
            if raw:
                self.add_image(raw, mime, noun)
                return
        if "text/html" not in data or self.html >= SHOWN_HTML:
            return
        markup = _joined(data["text/html"])
        if len(markup) <= SHOWN_HTML_CHARS:
            self.html += 1
            self.items.append({"type": "html", "html": markup, "text": _joined(data.get("text/plain", ""))})

    def details(self, redact: Any) -> list[dict[str, Any]]:
        """The items with ``redact`` applied to their text (a secret in a table stays hidden)."""
        return [
            {**item, "html": redact(item["html"]), "text": redact(item["text"])}
            if item["type"] == "html"
            else item
            for item in self.items
        ]


# --- matplotlib figures --------------------------------------------------------------------------


def open_figures() -> set[int]:
    """Numbers of the open matplotlib figures (empty when pyplot was never imported)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    return set(pyplot.get_fignums()) if pyplot is not None else set()


def take_figures(before: set[int]) -> list[bytes]:
    """Render the figures opened since ``before`` to PNG (as the inline backend shows them:
    tight bounding box) and close them."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    import io

    pngs = []
    for number in sorted(set(pyplot.get_fignums()) - before):
        figure = pyplot.figure(number)
        buffer = io.BytesIO()
        try:
            figure.savefig(buffer, format="png", bbox_inches="tight")
            pngs.append(buffer.getvalue())
        except Exception:  # a broken figure must not break the tool result
            pass
        finally:
            pyplot.close(figure)
    return pngs


# --- rich output as text -------------------------------------------------------------------------


class _TextOfHtml(HTMLParser):
    """Visible text of an HTML fragment: table cells joined by ``|``, blocks on their own lines."""

    _BLOCK = frozenset({"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "pre"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("script", "style"):
            self.skip += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")
        elif tag in ("td", "th"):
            self.parts.append(" | ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.skip = max(0, self.skip - 1)

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def html_to_text(html: str, limit: int) -> str:
    parser = _TextOfHtml()
    parser.feed(html[: limit * 20])  # the tags are most of an HTML table
    lines = [" ".join(line.split()).strip(" |") for line in "".join(parser.parts).splitlines()]
    return truncate("\n".join(line for line in lines if line), limit)


def plotly_text(figure: Any, limit: int) -> str:
    if not isinstance(figure, dict):
        return "[Plotly figure]"
    traces = figure.get("data") or []
    layout = figure.get("layout") or {}
    title = layout.get("title")
    title = title.get("text") if isinstance(title, dict) else title
    lines = [f"[Plotly figure: {len(traces)} trace(s)" + (f", title {title!r}" if title else "") + "]"]
    for trace in traces[:10]:
        points = max((_points(trace.get(k)) for k in ("x", "y", "z", "values")), default=0)
        name = f" {trace['name']!r}" if trace.get("name") else ""
        lines.append(f"  {trace.get('type', 'scatter')}{name}: {points} points")
    for axis in ("xaxis", "yaxis"):
        label = (layout.get(axis) or {}).get("title")
        label = label.get("text") if isinstance(label, dict) else label
        if label:
            lines.append(f"  {axis[0]} axis: {label}")
    return truncate("\n".join(lines), limit)


def _points(values: Any) -> int:
    """Length of a trace's data: a list, or Plotly's typed array (``{"dtype", "bdata", "shape"}``)."""
    if isinstance(values, list):
        return len(values)
    if isinstance(values, dict) and isinstance(values.get("shape"), str | int):
        return int(str(values["shape"]).split(",")[0] or 0)
    if isinstance(values, dict) and isinstance(values.get("bdata"), str):
        width = int(re.sub(r"\D", "", str(values.get("dtype", "f8"))) or 8)  # "f8": 8 bytes a value
        return len(base64.b64decode(values["bdata"])) // max(1, width)
    return 0


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def bundle_text(data: dict[str, Any], limit: int) -> str:
    """A display bundle as bounded text (images are left to ``ImageBudget``)."""
    plain = _joined(data.get("text/plain", "")).strip()
    if _PLOTLY_MIME in data:
        return plotly_text(data[_PLOTLY_MIME], limit)
    if _WIDGET_MIME in data:
        return truncate(f"[widget] {plain}" if plain else "[widget]", limit)
    if "text/html" in data and (not plain or _DEFAULT_REPR.match(plain)):
        return html_to_text(_joined(data["text/html"]), limit)
    if plain and not (_DEFAULT_REPR.match(plain) and any(m in data for m in _IMAGE_MIMES)):
        return truncate(plain, limit)
    for mime in ("text/markdown", "text/latex", "application/json"):
        if mime in data:
            value = data[mime]
            text = value if isinstance(value, str | list) else json.dumps(value, default=str)
            return truncate(_joined(text), limit)
    return ""
