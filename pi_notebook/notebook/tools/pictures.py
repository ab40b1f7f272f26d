"""Pictures as context: the image of a `` $`expr` `` reference, sent to a model that reads images.

A referenced value has a picture when it is a matplotlib figure (rendered as the inline backend
shows one: PNG, tight bounding box), or when IPython's display formatter gives it a PNG or JPEG
format: a PIL image and an IPython ``Image`` (``_repr_png_`` / ``_repr_jpeg_``), any object with
a ``_repr_mimebundle_`` holding one. `` $`Out[7]` `` is the value cell 7 returned; when that cell
returned nothing but *displayed* a picture (``plt.show()``, ``display(img)``), the pictures it
displayed (the cell log's record) are the reference's.

``reference_content`` turns the prompt's references into the user message's content: the
summaries as text, each picture labelled in it (``[image 1: 640x480 PNG, attached]``), and the
pictures themselves, bounded like the notebook tools' images (``ImageBudget``: at most 4, of at
most 1 MB each) for a model with image input; a model without one gets the summary and a label
saying the picture was not shown.
"""

from __future__ import annotations

import io
import re
import sys
from typing import Any

from ...ai.types import ImageContent, TextContent
from .cell_log import CellErrorLog
from .outputs import ImageBudget, decode_image
from .references import Reference, expand_references, format_references

__all__ = ["picture_bundles", "reference_content"]

_IMAGE_MIMES = frozenset({"image/png", "image/jpeg"})
_OUT = re.compile(r"^\s*(?:Out|_oh)\[\s*(\d+)\s*\]\s*$")


def _figure_png(value: Any) -> bytes | None:
    """A matplotlib ``Figure`` rendered to PNG (``None`` for anything else)."""
    figure_module = sys.modules.get("matplotlib.figure")
    figure_type = getattr(figure_module, "Figure", None)
    if figure_type is None or not isinstance(value, figure_type):
        return None
    buffer = io.BytesIO()
    try:
        value.savefig(buffer, format="png", bbox_inches="tight")
    except Exception:  # a broken figure gives its summary only
        return None
    return buffer.getvalue()


def _formatted(shell: Any, value: Any) -> dict[str, Any]:
    """The PNG/JPEG formats IPython's display formatter gives ``value`` (only those run)."""
    formatter = getattr(shell, "display_formatter", None)
    if formatter is None:
        return {}
    try:
        data, _ = formatter.format(value, include=set(_IMAGE_MIMES))
    except Exception:
        return {}
    return {k: v for k, v in data.items() if k in _IMAGE_MIMES} if isinstance(data, dict) else {}


def picture_bundles(shell: Any, log: CellErrorLog | None, expr: str, value: Any) -> list[dict[str, Any]]:
    """The pictures of the reference ``expr`` whose value is ``value`` (module docstring)."""
    png = _figure_png(value)
    if png is not None:
        return [{"image/png": png}]
    bundle = _formatted(shell, value)
    if bundle:
        return [bundle]
    match = _OUT.match(expr)
    if match and log is not None and value is None:
        return [b for b in log.outputs.get(int(match.group(1)), []) if _IMAGE_MIMES & b.keys()]
    return []


def reference_content(
    prompt: str, shell: Any, log: CellErrorLog | None, *, sees_images: bool
) -> list[TextContent | ImageContent]:
    """The user message's content for ``prompt``: the prompt with its references expanded,
    their summaries (each picture labelled) and, for a model with image input, the pictures."""
    namespace = _with_displayed_outs(shell, log)
    text, refs = expand_references(
        prompt, namespace, pictures=lambda e, v: picture_bundles(shell, log, e, v), bounded=True
    )
    if not refs:
        return [TextContent(text=text)]
    budget = ImageBudget(sees_images=sees_images)
    labelled = [_labelled(ref, budget) for ref in refs]
    return [TextContent(text=text), TextContent(text=format_references(labelled)), *budget.images]


def _labelled(ref: Reference, budget: ImageBudget) -> Reference:
    labels = [label for bundle in ref.pictures for label in budget.add_bundle(_raw(bundle), "image")]
    if not labels:
        return ref
    return Reference(ref.expr, "\n".join([ref.summary, *labels]), ref.error, ref.pictures)


def _raw(bundle: dict[str, Any]) -> dict[str, Any]:
    """A bundle's images as bytes (the formatter gives bytes or base64 text; the log, text)."""
    out = {}
    for mime in ("image/png", "image/jpeg"):
        data = bundle.get(mime)
        raw = data if isinstance(data, bytes) else decode_image(data)
        if raw:
            out[mime] = raw
    return out


class _DisplayedOut(dict[int, Any]):
    """``Out`` that also answers (with ``None``) for cells that only displayed pictures, so that
    `` $`Out[7]` `` of a ``plt.show()`` cell evaluates and its displayed pictures are found."""

    def __init__(self, out: dict[int, Any], displayed: set[int]) -> None:
        super().__init__(out)
        self.displayed = displayed

    def __missing__(self, key: int) -> Any:
        if key in self.displayed:
            return None
        raise KeyError(key)


def _with_displayed_outs(shell: Any, log: CellErrorLog | None) -> dict[str, Any]:
    namespace: dict[str, Any] = shell.user_ns
    out = namespace.get("Out")
    if log is None or not isinstance(out, dict):
        return namespace
    displayed = {n for n, bundles in log.outputs.items() if any(_IMAGE_MIMES & b.keys() for b in bundles)}
    if not displayed - out.keys():
        return namespace
    return {**namespace, "Out": _DisplayedOut(out, displayed), "_oh": _DisplayedOut(out, displayed)}
