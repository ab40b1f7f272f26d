"""The live row of a run's review: the summary (``review.py``) with Accept all and Undo all,
shown under the frozen output of a run that changed the notebook.

The output a run freezes into cannot change after the cell ends (JupyterLab applies a display
update only while its cell's request runs), so the summary lives in this widget, which can: a
click disables both buttons, and when the work is done the summary says what happened. The
displayed bundle carries the summary as ``text/html`` and ``text/plain`` too, for a page or a
viewer without the widget (a reopened notebook, nbconvert).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as W

from .review import review_html, review_text
from .state import Review

ACCEPT = "Accept all"
UNDO = "Undo all"


Start = Callable[[Callable[[], None]], bool]
"""Starts a button's work, which calls the given function when done; ``False``: it could not
start (no loop in the click's handler)."""


def review_card(review: Review, accept: Start, undo: Start) -> Any:
    """The summary of ``review`` with its buttons; redrawn from ``review`` once a click's work
    is done."""
    summary = W.HTML(review_html(review))
    accept_button = W.Button(description=ACCEPT, icon="check", layout=W.Layout(width="auto"))
    undo_button = W.Button(description=UNDO, icon="undo", layout=W.Layout(width="auto"))
    accept_button.add_class("pi-review-accept")
    undo_button.add_class("pi-review-undo")
    told = W.HTML()

    def redraw() -> None:
        summary.value = review_html(review)

    def on(start: Start, instead: str) -> Callable[[Any], None]:
        def clicked(_button: Any) -> None:
            accept_button.disabled = undo_button.disabled = True
            if not start(redraw):  # no loop in this handler (an old kernel)
                told.value = html.escape(instead)

        return clicked

    accept_button.on_click(on(accept, "Nothing to do here: the changes stay as they are."))
    undo_button.on_click(on(undo, "Run %pi undo alone in a cell instead."))
    box = W.VBox([summary, W.HBox([accept_button, undo_button]), told])
    box.add_class("pi-review-row")
    return box


def review_bundle(widget: Any, review: Review) -> dict[str, Any]:
    """The widget's display bundle with the summary as HTML and text beside it."""
    return {**widget._repr_mimebundle_(), "text/plain": review_text(review), "text/html": review_html(review)}
