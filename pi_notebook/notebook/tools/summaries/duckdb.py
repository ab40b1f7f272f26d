"""Bounded summaries of DuckDB relations (``DuckDBPyRelation``).

duckdb is reached through ``sys.modules``, never imported. A relation is a query that has
not run: the summary shows its columns and types (known since the relation was made), its SQL
and DuckDB's ``EXPLAIN`` plan with the optimizer's row estimates, and says it was not
executed. It never fetches, counts (``shape`` and ``len`` run the query) or describes.
"""

from __future__ import annotations

import sys
from typing import Any

from .common import assemble, cut, plan_lines

SQL_CHARS = 400


def kind(value: Any) -> str | None:
    duckdb = sys.modules.get("duckdb")
    relation = getattr(duckdb, "DuckDBPyRelation", None)
    return "DuckDBPyRelation" if relation is not None and isinstance(value, relation) else None


def summarize(kind: str, value: Any, limit: int) -> str:
    columns = [f"  {name}: {kind}" for name, kind in zip(value.columns, value.types, strict=True)]
    header = [
        f"DuckDB relation {value.alias!r} ({value.type}) with {len(columns):,} columns",
        "lazy: not executed (schema and plan only; no row was read for this summary)",
    ]
    sections = [("columns:", columns, 0.35), ("SQL:", [f"  {_sql(value)}"], 0.2)]
    sections.append(("plan (EXPLAIN, not run; ~ are the optimizer's estimates):", _plan(value), 0.0))
    return assemble(header, sections, limit)


def one_line(kind: str, value: Any) -> str:
    shown = ", ".join(f"{name} {kind}" for name, kind in zip(value.columns, value.types, strict=True))
    return f"relation, not executed: {len(value.columns)} columns ({shown})"


def _sql(relation: Any) -> str:
    try:
        return cut(relation.sql_query(), SQL_CHARS)
    except Exception as exc:  # some relations (a Python object scan) have no SQL text
        return f"(no SQL text: {type(exc).__name__})"


def _plan(relation: Any) -> list[str]:
    return plan_lines(relation.explain())
