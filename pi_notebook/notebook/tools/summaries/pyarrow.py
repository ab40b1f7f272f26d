"""Bounded summaries of pyarrow ``Table``, ``RecordBatch``, ``ChunkedArray`` and ``Array``.

pyarrow is reached through ``sys.modules``, never imported (``pyarrow.compute`` is used only
when it is loaded already, which pyarrow does on import). Arrow keeps a null count with every
array, so nulls per column are exact and free at any size; NaNs of float columns are counted
with ``pyarrow.compute`` while ``COUNT_BUDGET_S`` lasts, then on an evenly spaced sample
(``take``), and the statistics are computed on that sample of at most ``SAMPLE_ROWS`` rows.
The text names the sample.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from .common import (
    COUNT_BUDGET_S,
    HEAD_COLUMNS,
    HEAD_ROWS,
    MAX_COLUMNS,
    MAX_NUMERIC,
    STAT_NAMES,
    Budget,
    assemble,
    cell,
    fit,
    fmt,
    guarded,
    human_bytes,
    sample_note,
    sample_step,
    stats_table,
    text_table,
)

_NAN_NS = 2e-9  # pyarrow.compute is_nan + sum over a float column, a value


def kind(value: Any) -> str | None:
    pyarrow = sys.modules["pyarrow"]
    for name in ("Table", "RecordBatch", "ChunkedArray", "Array"):
        if isinstance(value, getattr(pyarrow, name)):
            return name
    return None


def summarize(kind: str, value: Any, limit: int) -> str:
    if kind in ("Table", "RecordBatch"):
        return summarize_table(kind, value, limit)
    return summarize_array(kind, value, limit)


def one_line(kind: str, value: Any) -> str:
    if kind in ("Table", "RecordBatch"):
        return f"{value.num_rows} rows x {value.num_columns} columns"
    return f"length {len(value)}, type {value.type}"


def _compute() -> Any:
    # A part of pyarrow, which the user imported; pyarrow itself loads it on first use.
    return importlib.import_module("pyarrow.compute")


def _indices(rows: int, step: int) -> Any:
    pyarrow = sys.modules["pyarrow"]
    numpy = sys.modules.get("numpy")  # an arange is ~30x faster than a range of Python ints
    positions = range(0, rows, step) if numpy is None else numpy.arange(0, rows, step)
    return pyarrow.array(positions, type=pyarrow.int64())


def _is_float(arrow_type: Any) -> bool:
    return bool(sys.modules["pyarrow"].types.is_floating(arrow_type))


def _is_numeric(arrow_type: Any) -> bool:
    types = sys.modules["pyarrow"].types
    return bool(types.is_integer(arrow_type) or types.is_floating(arrow_type) or types.is_decimal(arrow_type))


def _nan_count(column: Any, indices: Any, budget: Budget) -> tuple[int, bool]:
    pc = _compute()
    if indices is None or budget.affords(len(column) * _NAN_NS):
        return int(pc.sum(pc.is_nan(column)).as_py() or 0), True
    return int(pc.sum(pc.is_nan(column.take(indices))).as_py() or 0), False


def _stats(values: Any) -> list[str]:
    pc = _compute()
    valid = pc.drop_null(values)
    if _is_float(valid.type):
        valid = pc.filter(valid, pc.invert(pc.is_nan(valid)))
    if not len(valid):
        return ["0", *["nan"] * 7]
    if not _is_float(valid.type):
        valid = pc.cast(valid, sys.modules["pyarrow"].float64())
    low_high = pc.min_max(valid)
    quartiles = pc.quantile(valid, q=[0.25, 0.5, 0.75], interpolation="linear").to_pylist()
    stats = [pc.mean(valid).as_py(), pc.stddev(valid, ddof=1).as_py(), low_high["min"].as_py(), *quartiles]
    return [f"{len(valid):,}", *(fmt(v) for v in [*stats, low_high["max"].as_py()])]


def _column_lines(table: Any, indices: Any) -> tuple[str, list[str], list[str]]:
    """(the missing-values line, a line a column, the numeric columns)."""
    rows, columns = table.num_rows, table.num_columns
    budget = Budget(COUNT_BUDGET_S)
    found, lines, numeric = [], [], []
    for field, column in list(zip(table.schema, table.columns, strict=True))[:MAX_COLUMNS]:
        null = column.null_count
        parts = [f"{null:,} null ({null / rows:.2%})" if null else "no nulls"]
        nans, exact = _nan_count(column, indices, budget) if _is_float(field.type) else (0, True)
        if nans:
            parts.append(f"{nans:,} NaN" + ("" if exact else " in a sample (not counted exactly: too large)"))
        if null or nans:
            found.append(f"{field.name} ({null + nans:,}{'' if exact else ', sampled'})")
        if _is_numeric(field.type):
            numeric.append(field.name)
        lines.append(f"  {field.name}: {field.type}, {', '.join(parts)}")
    if columns > MAX_COLUMNS:
        lines.append(f"  ... {columns - MAX_COLUMNS:,} more columns not checked (inspect them one by one)")
    if found:
        head = f"nulls or NaN in {len(found)} of {columns:,} columns: " + ", ".join(found)
    else:
        head = "no nulls or NaN" + (f" in the first {MAX_COLUMNS:,} columns" if columns > MAX_COLUMNS else "")
    return head, lines, numeric


def _head(table: Any) -> list[str]:
    names = table.column_names[:HEAD_COLUMNS]
    if not names:
        return []
    part = table.select(names).slice(0, HEAD_ROWS).to_pylist()
    lines = text_table(names, [[row[n] for n in names] for row in part])
    if table.num_columns > HEAD_COLUMNS:
        lines.append(f"  ({table.num_columns - HEAD_COLUMNS:,} more columns not shown)")
    return lines


def summarize_table(kind: str, table: Any, limit: int) -> str:
    rows = table.num_rows
    step = sample_step(rows)
    indices = _indices(rows, step) if step > 1 else None
    missing, column_lines, numeric = _column_lines(table, indices)
    sample = table.select(numeric[:MAX_NUMERIC])
    sample = sample.take(indices) if indices is not None else sample
    stats = [(name, guarded(_stats, sample.column(name))) for name in numeric[:MAX_NUMERIC]]
    chunks = _chunks(table.column(0)) if kind == "Table" and table.num_columns else ""
    size = f"{human_bytes(table.nbytes)}{chunks}"
    header = [f"pyarrow {kind} with {rows:,} rows x {table.num_columns:,} columns ({size})", missing]
    sections = [
        ("columns (type, nulls, NaN):", column_lines, 0.4),
        ("", stats_table(stats, sample_note(sample.num_rows, rows), len(numeric) > MAX_NUMERIC), 0.3),
        (f"head ({min(rows, HEAD_ROWS)} rows):", _head(table), 0.0),
    ]
    return assemble(header, sections, limit)


def summarize_array(kind: str, array: Any, limit: int) -> str:
    rows = len(array)
    step = sample_step(rows)
    indices = _indices(rows, step) if step > 1 else None
    chunks = _chunks(array) if kind == "ChunkedArray" else ""
    line = f"pyarrow {kind}, length {rows:,}, type {array.type}{chunks} ({human_bytes(array.nbytes)})"
    line += f", {array.null_count:,} null"
    if _is_float(array.type):
        nans, exact = _nan_count(array, indices, Budget(COUNT_BUDGET_S))
        line += f", {nans:,} NaN" + ("" if exact else " in a sample")
    lines = [line]
    if _is_numeric(array.type) and rows:
        sample = array.take(indices) if indices is not None else array
        where = "" if indices is None else f" (sample of {len(sample):,})"
        stats = ", ".join(f"{n} {v}" for n, v in zip(STAT_NAMES, _stats(sample), strict=True))
        lines.append(f"describe{where}: {stats}")
    first = ", ".join(cell(value) for value in array.slice(0, 10).to_pylist())
    lines.append(f"first values: [{first}{', ...' if rows > 10 else ''}]")
    return "\n".join(fit(lines, limit, "..."))


def _chunks(column: Any) -> str:
    return f", {column.num_chunks:,} chunk{'' if column.num_chunks == 1 else 's'}"
