"""Bounded, fast summaries of pandas DataFrames and Series.

pandas is never imported here: a value is recognised through the already-imported module
(``sys.modules``), so a kernel that never imported pandas pays nothing.

A DataFrame summary answers the usual first questions without running code: shape, memory,
dtypes, missing values per column, ``describe()``-style statistics of the numeric columns and
the head rows. It stays fast on huge frames (10 million rows summarise in well under 100 ms):

* Missing values are counted exactly while a time budget lasts (numpy int and bool columns hold
  none, float columns cost ~2 ns a value, categorical and nullable columns read their codes or
  mask); a column too costly for what is left of the budget (an object column of 10 million
  values takes ~1 s) is counted on an evenly spaced sample, and the text says so.
* The statistics are computed with numpy on the same sample (at most ``SAMPLE_ROWS`` rows), and
  the text names the sample size.
* Each section gets a share of the character limit, so a frame with thousands of columns
  still shows its head.
"""

from __future__ import annotations

import sys
from typing import Any

from .common import (
    COUNT_BUDGET_S,
    MAX_COLUMNS,
    MAX_NUMERIC,
    SAMPLE_ROWS,
    STAT_NAMES,
    Budget,
    fit,
    human_bytes,
    numpy_stats,
    sample_note,
    stats_table,
)

STOP_AFTER_S = 0.08  # no column is looked at after this: a frame of 100,000 columns stays fast
SMALL_FRAME = 200_000  # cells: counted in one vectorised isna(), exactly (< 20 ms for objects)
_NS_PER_VALUE = {"f": 1.5e-9, "c": 3e-9, "m": 2e-9, "M": 2e-9, "O": 100e-9}
_EXTENSION_NS = {"CategoricalDtype": 2.5e-9, "ArrowDtype": 0.0}  # codes; a null bitmap
_MASKED_NS = 1.5e-9  # nullable Int64, Float64, boolean: a mask


def kind(value: Any) -> str | None:
    """``DataFrame`` or ``Series`` (subclasses too), else None."""
    pandas = sys.modules["pandas"]
    if isinstance(value, pandas.DataFrame):
        return "DataFrame"
    if isinstance(value, pandas.Series):
        return "Series"
    return None


def summarize(kind: str, value: Any, limit: int) -> str:
    return summarize_frame(value, limit) if kind == "DataFrame" else summarize_series(value, limit)


def one_line(kind: str, value: Any) -> str:
    if kind == "DataFrame":
        return f"{value.shape[0]} rows x {value.shape[1]} columns"
    return f"length {len(value)}, dtype {value.dtype}"


# --- missing values ----------------------------------------------------------------------------


def _count_missing(column: Any, sample: Any, budget: Budget) -> tuple[int, bool]:
    """(missing values, exact) for one Series; ``sample`` is its sampled rows."""
    numpy = sys.modules["numpy"]
    dtype = column.dtype
    if isinstance(dtype, numpy.dtype):
        if dtype.kind in "iub":
            return 0, True  # numpy integers and booleans cannot hold a missing value
        cost = len(column) * _NS_PER_VALUE.get(dtype.kind, 100e-9)
    else:
        cost = len(column) * _extension_cost(dtype)
    if budget.affords(cost):
        if isinstance(dtype, numpy.dtype) and dtype.kind in "fc":
            return int(numpy.count_nonzero(numpy.isnan(column.to_numpy()))), True
        return int(column.isna().sum()), True
    return int(sample.isna().sum()), len(sample) == len(column)


def column_name(name: Any) -> str:
    """A column label as text (a MultiIndex label's parts joined by " / ")."""
    return " / ".join(str(part) for part in name) if isinstance(name, tuple) else str(name)


def _extension_cost(dtype: Any) -> float:
    """Seconds a value to find the missing values of an extension dtype."""
    name = type(dtype).__name__
    if name in _EXTENSION_NS:
        return _EXTENSION_NS[name]
    storage = getattr(dtype, "storage", None)
    if storage is not None:  # pandas strings: python objects, or arrow with a null bitmap
        return 0.0 if str(storage).startswith("pyarrow") else _NS_PER_VALUE["O"]
    return _MASKED_NS if name.endswith(("Int64Dtype", "Float64Dtype", "Int32Dtype", "BooleanDtype")) else 1e-8


def _missing_lines(frame: Any, sample: Any) -> tuple[str, list[str]]:
    rows, columns = frame.shape
    budget, stop = Budget(COUNT_BUDGET_S), Budget(STOP_AFTER_S)
    found, approximate, lines = [], [], []
    checked = min(columns, MAX_COLUMNS)
    dtypes = list(frame.dtypes)
    # A small frame in one call (a column at a time costs ~0.4 ms of pandas overhead each).
    counts = list(frame.iloc[:, :checked].isna().sum()) if frame.size <= SMALL_FRAME else None
    for i in range(checked):
        if counts is None and not stop.affords(0):
            checked = i
            break
        name = column_name(frame.columns[i])
        if counts is not None:
            count, exact = int(counts[i]), True
        else:
            count, exact = _count_missing(frame.iloc[:, i], sample.iloc[:, i], budget)
        if exact:
            shown = f"{count:,} missing ({count / rows:.2%})" if count else "no missing values"
            if count:
                found.append(f"{name} ({count:,})")
        else:
            approximate.append(str(name))
            shown = f"{count:,} missing in a {len(sample):,}-row sample (not counted exactly: too large)"
            if count:
                found.append(f"{name} (>= {count:,}, sampled)")
        lines.append(f"  {name}: {dtypes[i]}, {shown}")
    if columns > checked:
        lines.append(f"  ... {columns - checked:,} more columns not checked (inspect them one by one)")
    if found:
        head = f"missing values in {len(found)} of {columns:,} columns: " + ", ".join(found)
    else:
        head = "no missing values" + (f" in the first {checked:,} columns" if columns > checked else "")
    if approximate:
        head += f" (counted on a sample for: {', '.join(approximate[:10])})"
    return head, lines


# --- statistics ------------------------------------------------------------------------------


def _describe_lines(frame: Any, sample: Any, sampled: bool) -> list[str]:
    numpy = sys.modules["numpy"]
    budget = Budget(COUNT_BUDGET_S)
    rows: list[tuple[str, list[str]]] = []
    dtypes = list(frame.dtypes)
    more = False
    for i in range(min(frame.shape[1], MAX_COLUMNS)):
        dtype = dtypes[i]
        if not (isinstance(dtype, numpy.dtype) and dtype.kind in "iuf"):
            continue
        if len(rows) >= MAX_NUMERIC or not budget.affords(0):
            more = True
            break
        values = sample.iloc[:, i].to_numpy(dtype="float64")
        rows.append((column_name(frame.columns[i]), numpy_stats(values)))
    where = sample_note(len(sample), len(frame)) if sampled else "all rows"
    return stats_table(rows, where, more)


def _sample(frame: Any) -> tuple[Any, bool]:
    rows = len(frame)
    if rows <= SAMPLE_ROWS:
        return frame, False
    step = -(-rows // SAMPLE_ROWS)
    return frame.iloc[::step], True


# --- DataFrame, Series ---------------------------------------------------------------


def summarize_frame(frame: Any, limit: int) -> str:
    rows, columns = frame.shape
    if columns <= MAX_COLUMNS:
        memory = human_bytes(float(frame.memory_usage(index=True, deep=False).sum()))
    else:  # memory_usage costs ~40 us a column: rows x item sizes instead
        width = sum(getattr(dtype, "itemsize", 8) for dtype in frame.dtypes)
        memory = "~" + human_bytes(float(rows * width + frame.index.nbytes))
    sample, sampled = _sample(frame)
    missing, column_lines = _missing_lines(frame, sample)
    header = [f"DataFrame with {rows:,} rows x {columns:,} columns ({memory}, object contents not counted)"]
    header.append(missing)
    parts = [*header, "columns (dtype, missing values):"]
    parts += fit(column_lines, int(limit * 0.4), "  ... {} more columns (use limit or inspect a column)")
    parts += fit(_describe_lines(frame, sample, sampled), int(limit * 0.3), "  ... {} more lines")
    head = frame.head(5).to_string(max_cols=12, max_colwidth=30)
    used = sum(len(p) + 1 for p in parts)
    parts += ["head (5 rows):", *fit(head.splitlines(), max(0, limit - used - 20), "  ...")]
    return "\n".join(parts)


def summarize_series(series: Any, limit: int) -> str:
    numpy = sys.modules["numpy"]
    sample, sampled = _sample(series)
    count, exact = _count_missing(series, sample, Budget(COUNT_BUDGET_S))
    how = "" if exact else f" in a {len(sample):,}-row sample"
    name = "(unnamed)" if series.name is None else repr(series.name)
    lines = [f"Series {name}, length {len(series):,}, dtype {series.dtype}, {count:,} missing{how}"]
    dtype = series.dtype
    if isinstance(dtype, numpy.dtype) and dtype.kind in "iuf" and len(series):
        stats = numpy_stats(sample.to_numpy(dtype="float64"))
        where = f" (sample of {len(sample):,})" if sampled else ""
        shown = ", ".join(f"{n} {v}" for n, v in zip(STAT_NAMES, stats, strict=True))
        lines.append(f"describe{where}: {shown}")
    lines += ["head:", *series.head(10).to_string(max_rows=10).splitlines()]
    return "\n".join(fit(lines, limit, "..."))
