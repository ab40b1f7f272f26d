"""What a live ``%%pi`` run leaves under its frozen output: an "Insert as cell" button per
successful ``run_code`` call (the run executed code the notebook should keep), then the review of
the run's changes to the notebook with Accept all / Undo all (``review.py``,
``view/review_card.py``), which the output ends with.

The run's output becomes static HTML when it ends, so the tool cards cannot hold buttons; the
row under the run names each call as its card does (``run_code, call 2``). A click comes in as
a widget message while the kernel is idle: the insert is scheduled on the kernel's loop (the
bridge's answers are read between messages), the cell goes below the ``%%pi`` cell (or below
the cell the previous click inserted) with the marker line, tag and metadata of
``%pi export``, and the outcome appears beside the buttons. Where the bridge is unavailable
the click says why and that ``%pi export`` prints the code instead.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Callable
from typing import Any

from IPython.display import display as _untyped_display

from ..bridge import BridgeRefused, BridgeUnavailable
from ..host.compat import get_kernel, running_cell_id
from ..result import ExportedCell, PiResult, executed_calls
from ..sessions.replay import recorded_runs
from ..state import NotebookState
from .review import EndedRun, RunReview, decide, review_run

_display: Callable[..., Any] = _untyped_display
_RUNNING: set[asyncio.Task[None]] = set()  # the loop keeps only a weak reference to a task
LABEL = "Insert as cell"
__all__ = ["review_run", "show_after_run"]


def show_after_run(run: EndedRun, result: PiResult, review: RunReview | None) -> None:
    """Display, under a live run (widgets), the Insert as cell row that applies to it and the
    review of its changes with its buttons (``review``: ``review_run``'s)."""
    if run.widget is None:
        return
    state = run.state
    calls = [call for call in executed_calls(result.messages)[0] if call.tool == "run_code"]
    if calls:
        number = run_number(state, run.plan.name)
        cells = [ExportedCell(number, call.tool, call.call, call.code) for call in calls]
        _display(insert_row(state, cells, running_cell_id(get_kernel(state.shell))))
    if review is not None and review.review.actions == "buttons":
        from ..view.review_card import review_bundle, review_card

        widget = review_card(review.review, decide(review, "accepted"), decide(review, "undone"))
        _display(review_bundle(widget, review.review), raw=True)


def run_number(state: NotebookState, name: str) -> int:
    """The run's number in its conversation, as ``%pi export`` counts it (1: the first)."""
    found = state.conversations.find(name)
    return max(1, len(recorded_runs(found.manager)) if found is not None else 1)


def insert_row(state: NotebookState, cells: list[ExportedCell], anchor: str | None) -> Any:
    import ipywidgets as W

    told = W.HTML()
    after = [anchor]  # each insert goes below the previous one: the cells keep the run's order

    async def insert(cell: ExportedCell) -> str:
        tools = state.tools
        if tools.bridge is None:
            return f"Not inserted: {tools.no_bridge}. %pi export prints the code to copy."
        where: dict[str, Any] = {"after": after[0]} if after[0] else {"index": 1 << 30}
        payload = [{"cell_type": "code", "source": cell.source, "metadata": cell.metadata}]
        try:
            made = await tools.bridge.request("insert", cells=payload, **where)
        except (BridgeUnavailable, BridgeRefused) as exc:
            return f"Not inserted: {exc}. %pi export prints the code to copy."
        ids = made.get("ids") or []
        after[0] = str(ids[0]) if ids else after[0]
        return f"Inserted the code of {cell.tool}, call {cell.call} as a cell."

    def button(cell: ExportedCell) -> Any:
        made = W.Button(
            description=f"{LABEL} ({cell.tool}, call {cell.call})", icon="plus", layout=W.Layout(width="auto")
        )
        made.add_class("pi-insert-cell")

        async def run() -> None:
            told.value = html.escape(await insert(cell))

        def clicked(_button: Any) -> None:
            made.disabled = True
            try:
                task = asyncio.get_running_loop().create_task(run())
            except RuntimeError:  # no loop in this handler (an old kernel): the command still works
                told.value = html.escape("Run %pi export alone in a cell instead.")
                return
            _RUNNING.add(task)
            task.add_done_callback(_RUNNING.discard)

        made.on_click(clicked)
        return made

    return W.VBox([W.HBox([button(cell) for cell in cells]), told])
