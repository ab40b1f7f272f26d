"""What a failing cell shows under its traceback when the extension is loaded: Explain and Fix
buttons, or the one line that names ``%pi explain N`` / ``%pi fix N`` where nothing can click.

``%load_ext`` registers ``offer`` as a ``post_run_cell`` hook after the cell log's recorder
(``tools/cell_log.py``), which files the failing cell (``CellErrorLog.failed``); the hook runs
while the failed cell's request is still the kernel's parent, so what it displays goes under
that cell's traceback. Nothing is shown:

* with ``c.PiMagics.error_actions = False``;
* for a cell the log did not file: one that did not fail, a ``%%pi`` / ``%pi`` cell, a
  prompt of the Pi kernel, a silent execution;
* in a headless run (nbconvert, papermill, nbval: ``host/headless.py``): nobody
  reads it there, and the saved notebook keeps what the cell itself printed.

Otherwise one display: where the request names a notebook cell (JupyterLab and Notebook 7
send its id), the buttons (``run/error_buttons.py``) as a widget whose ``text/plain`` is
the line, so a frontend without a widget manager and a saved notebook on GitHub show the line;
where it names none (``jupyter console``, qtconsole), the line alone; a shell without a
kernel (terminal IPython) gets the line printed. Nothing calls a model until someone clicks or
runs the command. This module imports nothing heavy: the widgets load with the first failing
cell.
"""

from __future__ import annotations

from typing import Any

from .host.compat import get_kernel, widgets_available
from .host.headless import detect_headless
from .state import state_for
from .tools.cell_log import UNRECORDED

UNFILED = {UNRECORDED: True}
"""The offer's display metadata: the cell log does not take it for the next cell's output."""

__all__ = ["help_line", "offer"]


def help_line(count: int) -> str:
    """The line that stands for the buttons where nothing can click them."""
    return f"Pi can help with this error: %pi explain {count} (why it failed), %pi fix {count} (a fix)."


def offer(result: Any) -> None:
    """The ``post_run_cell`` hook (see the module docstring)."""
    from IPython import get_ipython

    shell = get_ipython()
    count = getattr(result, "execution_count", None)
    if shell is None or not isinstance(count, int):
        return
    state = state_for(shell)
    if not getattr(state.config, "error_actions", True):
        return
    failed = state.errors.failed.get(count)
    if failed is None or (result.error_in_exec is None and result.error_before_exec is None):
        return
    from IPython.display import display as untyped_display

    if detect_headless(shell).headless:
        return
    display: Any = untyped_display
    line = help_line(count)
    if get_kernel(shell) is None:
        print(line)
        return
    if failed.cell_id is None or not widgets_available():  # no notebook cell: no widget to click
        display({"text/plain": line}, raw=True, metadata=UNFILED)
        return
    from .run.error_buttons import error_buttons

    display(error_buttons(state, failed, line), raw=True, metadata=UNFILED)
