"""Bounded summaries of dask ``DataFrame`` and ``Series``.

dask is reached through ``sys.modules``, never imported. A dask collection is a task graph
that has not run: the summary shows what dask knows without computing (columns and dtypes from
its ``_meta``-based ``dtypes``, the number of partitions, whether the divisions are known, the
expression tree) and says it was not computed. It never calls ``len()``, ``shape[0]``,
``head()``, ``describe()`` or ``compute()``, which all run the graph.
"""

from __future__ import annotations

import sys
from typing import Any

from .common import assemble, plan_lines

NOT_COMPUTED = "lazy: not computed (schema and plan only; no partition was read or run for this summary)"


def kind(value: Any) -> str | None:
    frames = sys.modules.get("dask.dataframe")
    if frames is None:
        return None
    for name in ("DataFrame", "Series"):
        if isinstance(value, getattr(frames, name)):
            return name
    return None


def summarize(kind: str, value: Any, limit: int) -> str:
    divisions = "known" if value.known_divisions else "unknown"
    where = f"{value.npartitions:,} partitions, divisions {divisions}"
    if kind == "Series":
        header = [f"dask Series {value.name!r}, dtype {value.dtype}, {where}", NOT_COMPUTED]
        columns: list[str] = []
    else:
        dtypes = list(value.dtypes.items())
        columns = [f"  {name}: {dtype}" for name, dtype in dtypes]
        header = [f"dask DataFrame with {len(dtypes):,} columns, {where}", NOT_COMPUTED]
    sections = [("columns:", columns, 0.4), ("plan (expression tree):", _plan(value), 0.0)]
    return assemble(header, sections, limit)


def one_line(kind: str, value: Any) -> str:
    if kind == "Series":
        return f"dtype {value.dtype}, {value.npartitions} partitions (not computed)"
    return f"{len(value.columns)} columns, {value.npartitions} partitions (not computed)"


def _plan(value: Any) -> list[str]:
    expr = getattr(value, "expr", None)
    if expr is None or not hasattr(expr, "tree_repr"):  # the legacy (pre dask-expr) collections
        return plan_lines(str(value._name))
    return plan_lines(expr.tree_repr())
