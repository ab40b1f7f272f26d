"""What the notebook tools read about cells: the kernel's input history (with ``Out`` values,
the display outputs and the errors recorded per execution count), and the notebook file as
last saved, found where the frontend says it is (``notebook_path``, which the session
recorder uses too).

Display outputs: IPython keeps no display history a kernel can rely on (ipykernel stores none
by default), so ``CellErrorLog.watch`` (``cell_log.py``) records the bundles published through
the shell's display publisher while a cell runs (``display()``, a matplotlib figure the inline
backend shows after the cell, rich reprs) and files them under the cell's execution count when
it ends. Output
captured by ``%%capture`` or ``run_code`` never reaches that publisher and is not recorded.
The record is bounded (``cell_log.py``).

Everything returned is bounded (``references.truncate``, ``outputs.ImageBudget``); the callers
redact secrets.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from .cell_log import CellErrorLog
from .outputs import ImageBudget, bundle_text
from .references import summarize, truncate

_PI_CELL = re.compile(r"^\s*%%pi(\s|$)", re.MULTILINE)
OUTPUT_CHARS = 800


def history_text(
    shell: Any,
    log: CellErrorLog,
    last: int,
    start: int | None = None,
    end: int | None = None,
    *,
    images: ImageBudget | None = None,
) -> tuple[str, list[int]]:
    """Executed cells from the input history with their display outputs, ``Out`` value and
    recorded error, and the execution counts shown. Images go to ``images`` when given."""
    raw = list(getattr(shell.history_manager, "input_hist_raw", None) or shell.user_ns.get("In", []))
    current = len(raw) - 1
    first = start if start is not None else max(1, current - last + 1)
    final = min(end if end is not None else current, current)
    outputs = shell.user_ns.get("Out", {})
    parts, numbers = [], []
    for n in range(max(1, first), final + 1):
        source = raw[n]
        pi_cell = _PI_CELL.search(source) is not None
        running = n == current and pi_cell
        lines = [f"In [{n}]:{' (this %%pi cell)' if running else ''}", truncate(source.rstrip(), 2000)]
        if not pi_cell:  # a %%pi cell's output is its conversation, which the model has
            lines += _display_lines(n, log.outputs.get(n, []), images)
        if n in outputs:
            lines.append(f"Out[{n}]: {summarize(outputs[n], OUTPUT_CHARS)}")
            if images is not None:
                lines += images.add_bundle(_image_formats(shell, outputs[n]))
        if n in log.errors:
            lines.append(f"Error[{n}]: {log.errors[n]}")
        parts.append("\n".join(lines))
        numbers.append(n)
    last_error = getattr(sys, "last_value", None)
    if not log.errors and last_error is not None:
        parts.append(
            f"Last error in this kernel: {type(last_error).__name__}: {truncate(str(last_error), 500)}"
        )
    return ("\n\n".join(parts) or "No executed cells in the history."), numbers


def _display_lines(n: int, bundles: list[dict[str, Any]], images: ImageBudget | None) -> list[str]:
    lines = []
    for bundle in bundles:
        labels = images.add_bundle(bundle, "image") if images is not None else []
        text = bundle_text(bundle, OUTPUT_CHARS)
        shown = " ".join([*labels, text]).strip()
        if shown:
            lines.append(f"Display[{n}]: {shown}")
    return lines


def _image_formats(shell: Any, value: Any) -> dict[str, Any]:
    """The PNG/JPEG formats of an ``Out`` value (only those formatters run: cheap)."""
    try:
        data, _ = shell.display_formatter.format(value, include={"image/png", "image/jpeg"})
    except Exception:
        return {}
    return data if isinstance(data, dict) else {}


def notebook_path(shell: Any) -> str | None:
    """The notebook's file as the frontend reports it: VS Code's ``__vsc_ipynb_file__``,
    JupyterLab's ``__session__`` / ``$JPY_SESSION_NAME`` (ipykernel); ``None`` when unknown."""
    ns = getattr(shell, "user_ns", None) or {}
    for value in (ns.get("__vsc_ipynb_file__"), ns.get("__session__"), os.environ.get("JPY_SESSION_NAME")):
        if isinstance(value, str) and value.strip():
            return _absolute(value.strip())
    return None


def _absolute(path: str) -> str:
    """A frontend's path may be relative to the server's root, not to the kernel's cwd (the
    notebook's folder): keep it when it exists from here, else take its file name here."""
    if os.path.isabs(path):
        return os.path.normpath(path)
    here = os.path.abspath(path)
    return here if os.path.exists(here) else os.path.join(os.getcwd(), os.path.basename(path))


def saved_notebook(shell: Any) -> Path | None:
    """The notebook's ``.ipynb`` file when it exists where ``notebook_path`` puts it."""
    path = notebook_path(shell)
    return Path(path) if path is not None and path.endswith(".ipynb") and os.path.isfile(path) else None


def format_saved_cell(
    index: int, cell: dict[str, Any], include_outputs: bool, images: ImageBudget | None = None, note: str = ""
) -> str:
    """One cell of a saved ``.ipynb`` (or of the live document, which has the same shape):
    header with the cell's id, source and up to five outputs (rich ones as text, images to
    ``images`` when given). ``note`` ends the header (``this %%pi cell``)."""
    source = cell.get("source", "")
    source = "".join(source) if isinstance(source, list) else str(source)
    kind = cell.get("cell_type", "code")
    count = cell.get("execution_count")
    header = f"[{index}] {kind}" + (f" id={cell['id']}" if cell.get("id") else "")
    header += (f" (In [{count}])" if kind == "code" and count else "") + (f" ({note})" if note else "")
    lines = [header, truncate(source.rstrip(), 2000)]
    if include_outputs and kind == "code" and _PI_CELL.search(source) is None:
        for output in cell.get("outputs", [])[:5]:
            lines.append("  -> " + truncate(_saved_output_text(output, images), 600))
    return "\n".join(lines)


def _saved_output_text(output: dict[str, Any], images: ImageBudget | None) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        text = output.get("text", "")
        return "".join(text) if isinstance(text, list) else str(text)
    if kind == "error":
        return f"{output.get('ename')}: {output.get('evalue')}"
    data = output.get("data", {})
    labels = images.add_bundle(data) if images is not None and isinstance(data, dict) else []
    return " ".join([*labels, bundle_text(data, 600) if isinstance(data, dict) else ""]).strip()
