"""What every library's summary shares: the budgets, byte sizes, the ``describe()`` table, a
plain text table for head rows, and fitting lines into a share of the character limit.

Nothing here imports a data library; numpy is used only through ``sys.modules`` by callers
that already hold numpy values.
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections.abc import Sequence
from typing import Any

SAMPLE_ROWS = 100_000  # statistics are computed on at most this many evenly spaced rows
COUNT_BUDGET_S = 0.05  # exact missing-value counts while this lasts, then a sample
MAX_COLUMNS = 200
MAX_NUMERIC = 20
HEAD_ROWS = 5
HEAD_COLUMNS = 12
CELL_CHARS = 30
STAT_NAMES = ("count", "mean", "std", "min", "25%", "50%", "75%", "max")
QUANTILES = (0.25, 0.5, 0.75)


def human_bytes(size: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"  # pragma: no cover - the loop returns at GB


class Budget:
    """A deadline: ``affords(cost)`` while ``cost`` more seconds still end before it."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.perf_counter() + seconds

    def affords(self, cost: float) -> bool:
        return time.perf_counter() + cost <= self.deadline


def sample_step(rows: int) -> int:
    """The stride of an evenly spaced sample of at most ``SAMPLE_ROWS`` of ``rows`` rows."""
    return max(1, -(-rows // SAMPLE_ROWS))


def strided_sample(array: Any) -> Any:
    """Evenly spaced elements of a numpy array or torch tensor, at most about ``SAMPLE_ROWS``:
    its largest dimension is strided until the view is small enough. A view: nothing is
    copied until the caller flattens it."""
    view = array
    while math.prod(view.shape) > SAMPLE_ROWS:
        dim = max(range(len(view.shape)), key=lambda d: view.shape[d])
        step = min(view.shape[dim], -(-math.prod(view.shape) // SAMPLE_ROWS))
        if step <= 1:
            break
        index = [slice(None)] * len(view.shape)
        index[dim] = slice(None, None, step)
        view = view[tuple(index)]
    return view


def sample_note(sample_rows: int, rows: int) -> str:
    if sample_rows >= rows:
        return "all rows"
    return f"an evenly spaced sample of {sample_rows:,} of {rows:,} rows"


def fmt(value: Any) -> str:
    """A statistic as text: 6 significant digits, ``nan`` for a missing one."""
    if value is None:
        return "nan"
    try:
        return f"{float(value):.6g}"
    except (TypeError, ValueError):
        return str(value)


def numpy_stats(values: Any) -> list[str]:
    """``STAT_NAMES`` of a float64 numpy array, NaNs left out."""
    numpy = sys.modules["numpy"]
    valid = values[~numpy.isnan(values)]
    if not len(valid):
        return ["0", *["nan"] * 7]
    quartiles = numpy.percentile(valid, [25, 50, 75])
    std = valid.std(ddof=1) if len(valid) > 1 else float("nan")
    stats = [valid.mean(), std, valid.min(), *quartiles, valid.max()]
    return [f"{len(valid):,}", *(fmt(float(v)) for v in stats)]


def guarded(compute: Any, *args: Any) -> list[str]:
    """``compute(*args)``, or one line saying it failed: a column whose statistics the library
    cannot compute (a decimal quantile, an exotic dtype) must not cost the whole summary."""
    try:
        result: list[str] = compute(*args)
    except Exception as exc:
        return [f"(statistics failed: {type(exc).__name__})", *[""] * 7]
    return result


def stats_table(rows: Sequence[tuple[str, Sequence[str]]], where: str, more: bool = False) -> list[str]:
    """The ``describe()`` table of the numeric columns: one row of ``STAT_NAMES`` a column."""
    if not rows:
        return []
    table = [["column", *STAT_NAMES]] + [[name[:24], *stats] for name, stats in rows]
    if more:
        table.append(["...", *[""] * len(STAT_NAMES)])
    widths = [max(len(row[c]) for row in table) for c in range(len(table[0]))]
    body = ["  " + "  ".join(cell.rjust(widths[c]) for c, cell in enumerate(row)).rstrip() for row in table]
    return [f"numeric columns (describe over {where}):", *body]


def text_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """Rows as a plain text table, each cell cut to ``CELL_CHARS``, numbers right-aligned."""
    cells = [[cut(str(h)) for h in header]] + [[cut(cell(v)) for v in row] for row in rows]
    numeric = [all(isinstance(row[c], int | float) for row in rows) for c in range(len(header))]
    widths = [max(len(row[c]) for row in cells) for c in range(len(header))]
    return ["  " + "  ".join(_align(row, widths, numeric)).rstrip() for row in cells]


def _align(row: list[str], widths: list[int], numeric: list[bool]) -> list[str]:
    return [c.rjust(w) if n else c.ljust(w) for c, w, n in zip(row, widths, numeric, strict=True)]


def cell(value: Any) -> str:
    """A value as a table cell: ``null`` for None, floats with 6 significant digits."""
    return "null" if value is None else fmt(value) if isinstance(value, float) else str(value)


def cut(text: str, limit: int = CELL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


PLAN_LINE_CHARS = 160
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def plan_lines(text: str) -> list[str]:
    """A library's printed plan as indented lines, each cut to ``PLAN_LINE_CHARS``, without the
    memory addresses of function reprs (noise, and they differ between two runs)."""
    lines = ["  " + line.rstrip() for line in _ADDRESS.sub("", text).rstrip().splitlines()]
    return [line if len(line) <= PLAN_LINE_CHARS else line[: PLAN_LINE_CHARS - 1] + "…" for line in lines]


def fit(lines: list[str], budget: int, more: str) -> list[str]:
    """The first lines that fit in ``budget`` characters, and a note of how many were left."""
    kept: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        if used + len(line) + 1 > budget:
            return [*kept, more.format(len(lines) - i)]
        kept.append(line)
        used += len(line) + 1
    return kept


def assemble(header: list[str], sections: Sequence[tuple[str, list[str], float]], limit: int) -> str:
    """``header``, then each (title, lines, share of ``limit``) section fitted to its share; the
    last section gets whatever the others left."""
    parts = list(header)
    for i, (title, lines, share) in enumerate(sections):
        if not lines:
            continue
        used = sum(len(p) + 1 for p in parts)
        room = max(0, limit - used - 20) if i == len(sections) - 1 else int(limit * share)
        parts += ([title] if title else []) + fit(lines, room, "  ... {} more lines")
    return "\n".join(parts)
