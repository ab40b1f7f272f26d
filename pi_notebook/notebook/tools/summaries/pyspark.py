"""Bounded summaries of Spark DataFrames (``pyspark.sql.DataFrame``, classic and Connect).

pyspark is reached through ``sys.modules``, never imported. A Spark DataFrame is a plan that
has not run: the summary shows its schema (the analysed plan's, which starts no Spark job)
and the plan ``explain()`` prints, and says it was not computed. It never counts, collects,
takes, caches or describes, which all start jobs.
"""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Any

from .common import assemble, plan_lines


def kind(value: Any) -> str | None:
    sql = sys.modules.get("pyspark.sql")
    frame = getattr(sql, "DataFrame", None)
    return "DataFrame" if frame is not None and isinstance(value, frame) else None


def summarize(kind: str, value: Any, limit: int) -> str:
    fields = value.schema.fields
    columns = [f"  {f.name}: {f.dataType.simpleString()}{'' if f.nullable else ' not null'}" for f in fields]
    streaming = ", streaming" if value.isStreaming else ""
    header = [
        f"Spark DataFrame with {len(fields):,} columns{streaming}",
        "lazy: not computed (schema and plan only; no Spark job was started for this summary)",
    ]
    return assemble(header, [("schema:", columns, 0.4), ("plan (explain):", _plan(value), 0.0)], limit)


def one_line(kind: str, value: Any) -> str:
    return f"{len(value.columns)} columns (not computed)"


def _plan(value: Any) -> list[str]:
    # explain() prints and returns None: its text is what it wrote.
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        value.explain()
    return plan_lines(printed.getvalue())
