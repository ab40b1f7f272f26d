"""What the notebook tools read about cells: the kernel's input history (with ``Out`` values
and the errors recorded per execution count) and the notebook file as last saved.

Everything returned is bounded (``references.truncate``); the callers redact secrets.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from .references import summarize, truncate

_PI_CELL = re.compile(r"^\s*%%pi(\s|$)", re.MULTILINE)


class CellErrorLog:
    """Errors of executed cells by execution count, fed by IPython's ``post_run_cell`` event."""

    def __init__(self) -> None:
        self.errors: dict[int, str] = {}

    def record(self, result: Any) -> None:
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        count = getattr(result, "execution_count", None)
        if error is not None and isinstance(count, int):
            self.errors[count] = truncate(f"{type(error).__name__}: {error}", 500)


def history_text(
    shell: Any, errors: dict[int, str], last: int, start: int | None = None, end: int | None = None
) -> tuple[str, list[int]]:
    """Executed cells from the input history with their ``Out`` value and recorded error, and
    the execution counts shown."""
    raw = list(getattr(shell.history_manager, "input_hist_raw", None) or shell.user_ns.get("In", []))
    current = len(raw) - 1
    first = start if start is not None else max(1, current - last + 1)
    final = min(end if end is not None else current, current)
    outputs = shell.user_ns.get("Out", {})
    parts, numbers = [], []
    for n in range(max(1, first), final + 1):
        source = raw[n]
        running = n == current and _PI_CELL.search(source) is not None
        lines = [f"In [{n}]:{' (this %%pi cell)' if running else ''}", truncate(source.rstrip(), 2000)]
        if n in outputs:
            lines.append(f"Out[{n}]: {summarize(outputs[n], 800)}")
        if n in errors:
            lines.append(f"Error[{n}]: {errors[n]}")
        parts.append("\n".join(lines))
        numbers.append(n)
    last_error = getattr(sys, "last_value", None)
    if not errors and last_error is not None:
        parts.append(
            f"Last error in this kernel: {type(last_error).__name__}: {truncate(str(last_error), 500)}"
        )
    return ("\n\n".join(parts) or "No executed cells in the history."), numbers


def notebook_path(shell: Any) -> Path | None:
    """The notebook file: ``__session__`` (set by ipykernel from ``JPY_SESSION_NAME``) or the env."""
    name = shell.user_ns.get("__session__") or os.environ.get("JPY_SESSION_NAME") or ""
    if not isinstance(name, str) or not name.endswith(".ipynb"):
        return None
    given = Path(name)
    # The session path is relative to the server root; the kernel's cwd is the notebook's folder.
    for candidate in (given, Path.cwd() / given, Path.cwd() / given.name):
        if candidate.is_file():
            return candidate
    return None


def format_saved_cell(index: int, cell: dict[str, Any], include_outputs: bool) -> str:
    """One cell of a saved ``.ipynb``: header, source and up to five text outputs."""
    source = cell.get("source", "")
    source = "".join(source) if isinstance(source, list) else str(source)
    kind = cell.get("cell_type", "code")
    count = cell.get("execution_count")
    header = f"[{index}] {kind}" + (f" (In [{count}])" if kind == "code" and count else "")
    lines = [header, truncate(source.rstrip(), 2000)]
    if include_outputs and kind == "code":
        for output in cell.get("outputs", [])[:5]:
            lines.append("  -> " + truncate(_saved_output_text(output), 600))
    return "\n".join(lines)


def _saved_output_text(output: dict[str, Any]) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        text = output.get("text", "")
        return "".join(text) if isinstance(text, list) else str(text)
    if kind == "error":
        return f"{output.get('ename')}: {output.get('evalue')}"
    data = output.get("data", {})
    plain = data.get("text/plain", "")
    plain = "".join(plain) if isinstance(plain, list) else str(plain)
    extra = [m for m in data if m != "text/plain"]
    return plain + (f" [{', '.join(extra)}]" if extra else "")
