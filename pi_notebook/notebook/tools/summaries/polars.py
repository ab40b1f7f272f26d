"""Bounded summaries of polars ``DataFrame``, ``Series`` and ``LazyFrame``.

polars is reached through ``sys.modules``, never imported. A DataFrame summary is the pandas
one in polars terms:

* nulls per column come from ``null_count()``, which polars keeps with each column (free, and
  exact at any size); NaNs of float columns are counted exactly while ``COUNT_BUDGET_S`` lasts,
  then on an evenly spaced sample, and the text says so;
* the statistics of the numeric columns are computed by polars on an evenly spaced sample of
  at most ``SAMPLE_ROWS`` rows (``gather_every``), named in the text;
* the head rows are polars' own table.

A ``LazyFrame`` is never collected: the summary shows its schema and its plan as written
(``explain(optimized=False)``), and says it was not computed. Knowing the schema of a file
scan whose schema was not given makes polars read the file's header or footer (as displaying
the LazyFrame in Jupyter does); no row is read.
"""

from __future__ import annotations

import sys
from typing import Any

from .common import (
    CELL_CHARS,
    COUNT_BUDGET_S,
    HEAD_COLUMNS,
    HEAD_ROWS,
    MAX_COLUMNS,
    MAX_NUMERIC,
    STAT_NAMES,
    Budget,
    assemble,
    fmt,
    guarded,
    human_bytes,
    plan_lines,
    sample_note,
    sample_step,
    stats_table,
)

_NAN_NS = 1e-9  # is_nan().sum() over a float column, a value


def kind(value: Any) -> str | None:
    polars = sys.modules["polars"]
    for name in ("DataFrame", "LazyFrame", "Series"):
        if isinstance(value, getattr(polars, name)):
            return name
    return None


def summarize(kind: str, value: Any, limit: int) -> str:
    if kind == "DataFrame":
        return summarize_frame(value, limit)
    if kind == "Series":
        return summarize_series(value, limit)
    return summarize_lazy(value, limit)


def one_line(kind: str, value: Any) -> str:
    if kind == "DataFrame":
        return f"{value.height} rows x {value.width} columns"
    if kind == "Series":
        return f"length {len(value)}, dtype {value.dtype}"
    return "lazy query, not computed (inspect it for its schema and plan)"


# --- missing values and statistics --------------------------------------------------------------


def _nan_count(series: Any, step: int, budget: Budget) -> tuple[int, bool]:
    """(NaN values, exact) of a float Series."""
    if budget.affords(len(series) * _NAN_NS):
        return int(series.is_nan().sum() or 0), True
    return int(series.gather_every(step).is_nan().sum() or 0), step == 1


def _column_lines(frame: Any, step: int) -> tuple[str, list[str]]:
    rows, columns = frame.height, frame.width
    names = frame.columns[:MAX_COLUMNS]
    nulls = frame.select(names).null_count().row(0)
    budget = Budget(COUNT_BUDGET_S)
    found, lines = [], []
    for name, null in zip(names, nulls, strict=True):
        column = frame.get_column(name)
        parts = [f"{null:,} null ({null / rows:.2%})" if null else "no nulls"]
        nans, exact = _nan_count(column, step, budget) if column.dtype.is_float() else (0, True)
        if nans:
            parts.append(f"{nans:,} NaN" + ("" if exact else " in a sample (not counted exactly: too large)"))
        if null or nans:
            found.append(f"{name} ({null + nans:,}{'' if exact else ', sampled'})")
        lines.append(f"  {name}: {column.dtype}, {', '.join(parts)}")
    if columns > len(names):
        lines.append(f"  ... {columns - len(names):,} more columns not checked (inspect them one by one)")
    if found:
        head = f"nulls or NaN in {len(found)} of {columns:,} columns: " + ", ".join(found)
    else:
        head = "no nulls or NaN" + (f" in the first {len(names):,} columns" if columns > len(names) else "")
    return head, lines


def _stats(series: Any) -> list[str]:
    valid = series.drop_nulls()
    if valid.dtype.is_float():
        valid = valid.drop_nans()
    if not len(valid):
        return ["0", *["nan"] * 7]
    quartiles = [valid.quantile(q, "linear") for q in (0.25, 0.5, 0.75)]
    stats = [valid.mean(), valid.std(), valid.min(), *quartiles, valid.max()]
    return [f"{len(valid):,}", *(fmt(v) for v in stats)]


def _numeric(frame: Any) -> tuple[list[str], bool]:
    names = [n for n, t in list(frame.schema.items())[:MAX_COLUMNS] if t.is_numeric()]
    return names[:MAX_NUMERIC], len(names) > MAX_NUMERIC


def _describe_lines(frame: Any, step: int) -> list[str]:
    names, more = _numeric(frame)
    if not names:
        return []
    sample = frame.select(names).gather_every(step)
    rows = [(name, guarded(_stats, sample.get_column(name))) for name in names]
    return stats_table(rows, sample_note(sample.height, frame.height), more)


def _table(frame: Any) -> list[str]:
    polars = sys.modules["polars"]
    with polars.Config(
        tbl_rows=HEAD_ROWS, tbl_cols=HEAD_COLUMNS, fmt_str_lengths=CELL_CHARS, tbl_hide_dataframe_shape=True
    ):
        return str(frame).splitlines()


# --- DataFrame, Series, LazyFrame ---------------------------------------------------------------


def summarize_frame(frame: Any, limit: int) -> str:
    rows, columns = frame.height, frame.width
    step = sample_step(rows)
    missing, column_lines = _column_lines(frame, step)
    header = [
        f"polars DataFrame with {rows:,} rows x {columns:,} columns (~{human_bytes(frame.estimated_size())})",
        missing,
    ]
    sections = [
        ("columns (dtype, nulls, NaN):", column_lines, 0.4),
        ("", _describe_lines(frame, step), 0.3),
        (f"head ({min(rows, HEAD_ROWS)} rows):", _table(frame.head(HEAD_ROWS)), 0.0),
    ]
    return assemble(header, sections, limit)


def summarize_series(series: Any, limit: int) -> str:
    rows = len(series)
    step = sample_step(rows)
    nulls = series.null_count()
    line = f"polars Series {series.name!r}, length {rows:,}, dtype {series.dtype}, {nulls:,} null"
    if series.dtype.is_float():
        nans, exact = _nan_count(series, step, Budget(COUNT_BUDGET_S))
        line += f", {nans:,} NaN" + ("" if exact else " in a sample")
    lines = [line]
    if series.dtype.is_numeric() and rows:
        sample = series.gather_every(step)
        where = "" if step == 1 else f" (sample of {len(sample):,})"
        stats = ", ".join(f"{n} {v}" for n, v in zip(STAT_NAMES, _stats(sample), strict=True))
        lines.append(f"describe{where}: {stats}")
    head = series.head(10).to_frame()
    return assemble(lines, [("head:", _table(head), 0.0)], limit)


def summarize_lazy(frame: Any, limit: int) -> str:
    schema = frame.collect_schema()
    columns = [f"  {name}: {dtype}" for name, dtype in schema.items()]
    plan = plan_lines(frame.explain(optimized=False))
    header = [
        f"polars LazyFrame with {len(columns):,} columns",
        "lazy: not computed (schema and plan only; no row was read or collected for this summary)",
    ]
    sections = [("schema:", columns, 0.5), ("plan (as written, not optimized):", plan, 0.0)]
    return assemble(header, sections, limit)
