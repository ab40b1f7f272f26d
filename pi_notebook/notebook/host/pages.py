"""Pages that connect to the kernel: a count of the widget frontends that opened the
``jupyter.widget.control`` comm, which every page (a JupyterLab or Notebook 7 tab, a reloaded
one too) opens once when it connects, to fetch the state of every widget.

A ``%%pi`` run reads the count when its view is shown and when it ends. A page that connected
in between may show the live widget from the saved notebook (the view comes back and keeps
working), but it never gets the output's ``update_display_data``: the frontend delivers it only
to the page whose request made the output. The run then also makes the widget itself look
frozen (``LiveView.show_frozen``). A run that ended before any other page connected asks to be
told of the next one (``on_next_page``): that page may load a notebook saved during the run.

The count is kept by wrapping the comm target ipywidgets registers; nothing here imports
ipywidgets at module import time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

CONTROL_TARGET = "jupyter.widget.control"
_MARKER = "__pi_notebook_page_counter__"


class _Count:
    opened = 0
    waiting: list[Callable[[], None]] = []  # noqa: RUF012  (one list for the process)


def _comm_manager() -> Any | None:
    try:
        from ipywidgets import comm
    except ImportError:
        return None
    try:
        return comm.get_comm_manager()
    except Exception:  # no kernel (a terminal IPython): no pages either
        return None


def watch_pages() -> bool:
    """Count control comm opens from now on (idempotent); False when there is no comm manager
    or no ipywidgets target to wrap."""
    manager = _comm_manager()
    targets = getattr(manager, "targets", None)
    if not isinstance(targets, dict):
        return False
    original = targets.get(CONTROL_TARGET)
    if original is None:
        return False
    if getattr(original, _MARKER, False):
        return True

    def opened(comm: Any, msg: Any) -> Any:
        _Count.opened += 1
        waiting, _Count.waiting = _Count.waiting, []
        for callback in waiting:
            try:
                callback()
            except Exception:
                log.exception("pi_notebook: a page-connect callback failed")
        return original(comm, msg)

    setattr(opened, _MARKER, True)
    opened.__wrapped__ = original  # type: ignore[attr-defined]
    targets[CONTROL_TARGET] = opened
    return True


def on_next_page(callback: Callable[[], None]) -> None:
    """Call ``callback`` once, when the next page connects (on the thread that handles the
    comm: the callback must hand widget work to the loop that owns the widgets)."""
    _Count.waiting.append(callback)


def pages_connected() -> int:
    """How many times a page connected since ``watch_pages`` first ran."""
    return _Count.opened
