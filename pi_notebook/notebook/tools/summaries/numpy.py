"""Bounded summaries of numpy arrays (``ndarray`` and its subclasses).

numpy is never imported here: a value is recognised through the already-imported module.
Statistics are computed on arrays of at most ``SMALL_ARRAY`` elements and skipped, saying so,
above that; ``array2string`` shows the edges of any size.
"""

from __future__ import annotations

import sys
from typing import Any

from .common import fmt, human_bytes

SMALL_ARRAY = 1_000_000


def kind(value: Any) -> str | None:
    return "ndarray" if isinstance(value, sys.modules["numpy"].ndarray) else None


def summarize(kind: str, value: Any, limit: int) -> str:
    return summarize_array(value, limit)


def one_line(kind: str, value: Any) -> str:
    return f"shape={value.shape} dtype={value.dtype}"


def summarize_array(array: Any, limit: int) -> str:
    numpy = sys.modules["numpy"]
    kind = type(array).__name__
    lines = [f"{kind} shape={array.shape} dtype={array.dtype} ({human_bytes(float(array.nbytes))})"]
    if 0 < array.size <= SMALL_ARRAY and array.dtype.kind in "iuf":
        values = array.astype("float64", copy=False).ravel()
        nans = int(numpy.count_nonzero(numpy.isnan(values)))
        valid = values[~numpy.isnan(values)] if nans else values
        if len(valid):
            lines.append(
                f"min {fmt(float(valid.min()))}, max {fmt(float(valid.max()))}, "
                f"mean {fmt(float(valid.mean()))}, {nans:,} NaN"
            )
    elif array.size > SMALL_ARRAY:
        lines.append(f"(statistics skipped: {array.size:,} elements)")
    lines.append(numpy.array2string(array, threshold=40, edgeitems=3, max_line_width=100))
    return "\n".join(lines)
