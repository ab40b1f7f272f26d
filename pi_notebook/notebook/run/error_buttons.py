"""The Explain and Fix buttons under a failing cell's traceback (``error_actions.py`` decides
when they show).

A click comes in as a widget message while the kernel is idle; the run has to wait for the
model and for the notebook's answers, which the kernel reads between messages, so the click
schedules it as a task on the kernel's loop (``run/error_help.help_clicked``), as the Undo
button does. Both buttons are disabled while a run of theirs goes on, and enabled again after
it (Explain first, then Fix). ``ErrorPlace`` is where that run shows: under the buttons, or
in a cell of its own below the failing one (Fix, through the bridge).
"""

from __future__ import annotations

import asyncio
import html
from typing import Any

import ipywidgets as W

from ..state import NotebookState
from ..tools.cell_log import FailedCell

__all__ = ["WIDGET_MIME", "ErrorPlace", "error_buttons"]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
LABELS = {"explain": "Explain", "fix": "Fix"}
ICONS = {"explain": "question-circle", "fix": "wrench"}
TIPS = {
    "explain": "Ask Pi why this cell failed (%pi explain {n}); nothing is changed.",
    "fix": "Ask Pi for a fix (%pi fix {n}): you see the diff and apply it, then the cell runs again.",
}
_RUNNING: set[asyncio.Task[None]] = set()  # the loop keeps only a weak reference to a task


def widget_output(widget: Any, text: str) -> dict[str, Any]:
    """A display of ``widget`` whose ``text/plain`` is ``text`` (what shows without widgets)."""
    view = widget._repr_mimebundle_()[WIDGET_MIME]
    return {"text/plain": text, WIDGET_MIME: view}


class ErrorPlace:
    """Where a button's run shows (``run/error_help.RunPlace``)."""

    display_id: str | None = None

    def __init__(self, panel: Any, note: Any) -> None:
        self.panel = panel
        self._note = note
        self.area = W.VBox(layout=W.Layout(width="100%"))
        self.bundle: dict[str, Any] | None = None
        self.failed = False
        self._view: Any = None

    def live(self, run: Any) -> None:
        self._view = run.view
        if run.widget is not None:
            self.area.children = (run.widget,)

    def under_buttons(self) -> None:
        self.panel.children = (self.area,)

    def output(self) -> dict[str, Any]:
        bundle = widget_output(self.area, "The run of Pi's Fix button (it needs the kernel that ran it).")
        return {"output_type": "display_data", "data": bundle, "metadata": {}}

    def update(self, bundle: dict[str, Any], raw: bool = True) -> None:
        self.bundle = bundle
        frozen = getattr(self._view, "show_frozen", None)
        if frozen is not None and "text/html" in bundle and self.area.children:
            frozen(bundle["text/html"])
        else:
            shown = {"output_type": "display_data", "data": bundle, "metadata": {}}
            self.area.children = (W.Output(outputs=(shown,)),)

    def told(self, line: str, failed: bool = False) -> None:
        self.failed = self.failed or failed
        self._note.value = html.escape(line)


def error_buttons(state: NotebookState, failed: FailedCell, line: str) -> dict[str, Any]:
    """The display under the traceback of ``failed``: the buttons, or ``line`` without widgets."""
    note = W.HTML(layout=W.Layout(margin="0 0 0 8px"))
    note.add_class("pi-error-note")
    panel = W.VBox(layout=W.Layout(width="100%"))
    buttons: dict[str, Any] = {}

    def clicked(kind: str) -> None:
        from .error_help import help_clicked  # the run machinery loads with the first click

        for button in buttons.values():
            button.disabled = True
        doing = "explaining" if kind == "explain" else "fixing"
        note.value = html.escape(f"Pi is {doing} cell [{failed.count}]…")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop in this handler (an old kernel): the command still works
            note.value = html.escape(f"Run %pi {kind} {failed.count} in a cell instead.")
            return
        task = loop.create_task(help_clicked(state, kind, failed, ErrorPlace(panel, note)))
        _RUNNING.add(task)
        task.add_done_callback(lambda done: _ended(done, buttons, note))

    for kind in ("explain", "fix"):
        button = W.Button(
            description=LABELS[kind],
            icon=ICONS[kind],
            tooltip=TIPS[kind].format(n=failed.count),
            layout=W.Layout(width="auto", height="26px"),
        )
        button.add_class("pi-error-" + kind)
        button.on_click(lambda _b, kind=kind: clicked(kind))
        buttons[kind] = button
    row = W.HBox([*buttons.values(), note], layout=W.Layout(align_items="center"))
    box = W.VBox([row, panel])
    box.add_class("pi-error-actions")
    return widget_output(box, line)


def _ended(task: asyncio.Task[None], buttons: dict[str, Any], note: Any) -> None:
    _RUNNING.discard(task)
    failure = None if task.cancelled() else task.exception()
    if failure is not None:  # help_clicked tells its own failures; this is a bug's last word
        note.value = html.escape(f"Pi could not run: {type(failure).__name__}: {failure}")
    for button in buttons.values():
        button.disabled = False
