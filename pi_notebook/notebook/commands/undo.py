"""``%pi undo`` and the Undo button under a run: take back what an agent's run changed in the
live notebook (inserted cells removed, edits and deletions restored, outputs of ``run_cell``
put back).

Undo talks to the notebook through the bridge and waits for its answers, which the kernel
reads only while a cell awaits: the input transformer (``extension.py``) rewrites a cell that
is exactly ``%pi undo`` into ``await _pi_undo()``; ``%pi undo`` anywhere else is a
``UsageError`` saying so. Each call takes back one run; a second call the run before it. The
button takes back its own run: its click schedules the undo on the kernel's event loop, which
reads the notebook's answers between messages, and shows the outcome next to it.
"""

from __future__ import annotations

import asyncio
import html
from typing import Any

from IPython.core.error import UsageError

from ..state import NotebookState, state_for
from ..tools.changes import RunChanges, undo

AWAIT_ONLY = (
    "%pi undo waits for the notebook to answer: run it alone in its own cell (autoawait on, "
    "as in JupyterLab and Notebook 7)"
)


async def undo_last(shell: Any) -> None:
    """Print one line per change taken back (or why it was kept)."""
    for line in await undo_lines(state_for(shell)):
        print(line)


async def undo_lines(state: NotebookState) -> list[str]:
    tools = state.tools
    run = tools.last_changes()
    if run is None:
        return ["Nothing to undo: no %%pi run has changed this notebook since the kernel started."]
    return await _undo_run(state, run)


async def _undo_run(state: NotebookState, run: RunChanges) -> list[str]:
    tools = state.tools
    bridge = tools.bridge
    if bridge is None:
        return [f"Cannot undo: {tools.no_bridge}."]
    if not run:
        return ["Nothing left to undo for this run."]
    what = run.summary()
    try:
        lines = await undo(bridge, run)
    except Exception as exc:  # the bridge is gone: say so, keep nothing half-done silently
        return [f"Undo stopped: {exc}. Use the notebook's own undo (Ctrl+Z) for what remains."]
    return [f"Undid the run ({what}):", *(f"  {line}" for line in lines)]


_RUNNING: set[asyncio.Task[None]] = set()


def undo_button(state: NotebookState, run: RunChanges) -> Any:
    """An Undo button for ``run``'s notebook changes, with the outcome shown beside it."""
    import ipywidgets as W

    label = "Undo this run's notebook changes"
    button = W.Button(description=label, icon="undo", layout=W.Layout(width="auto"))
    button.add_class("pi-undo")
    told = W.HTML()

    async def take_back() -> None:
        lines = await _undo_run(state, run)
        told.value = "<br>".join(html.escape(line) for line in lines)

    def clicked(_button: Any) -> None:
        button.disabled = True
        try:
            task = asyncio.get_running_loop().create_task(take_back())
        except RuntimeError:  # no loop in this handler (an old kernel): the command still works
            told.value = html.escape("Run %pi undo alone in a cell instead.")
            return
        _RUNNING.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(_RUNNING.discard)

    button.on_click(clicked)
    return W.HBox([button, told])


def undo_command(state: NotebookState, name: str | None, rest: str) -> None:
    raise UsageError(AWAIT_ONLY)
