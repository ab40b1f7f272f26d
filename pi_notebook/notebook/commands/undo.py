"""``%pi undo``: take back what the agent's last run changed in the live notebook (inserted
cells removed, edits and deletions restored, outputs of ``run_cell`` put back).

Undo talks to the notebook through the bridge and waits for its answers, which the kernel
reads only while a cell awaits: the input transformer (``load.py``) rewrites a cell that
is exactly ``%pi undo`` into ``await _pi_undo()``; ``%pi undo`` anywhere else is a
``UsageError`` saying so. Each call takes back one run; a second call the run before it. (Undo
all, in the review under a run, ``run/review.py``, takes back its own run.)
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from ..state import NotebookState, state_for
from ..tools.changes import undo_lines

AWAIT_ONLY = (
    "%pi undo waits for the notebook to answer: run it alone in its own cell (autoawait on, "
    "as in JupyterLab and Notebook 7)"
)


async def undo_last(shell: Any) -> None:
    """Print one line per change taken back (or why it was kept)."""
    for line in await last_run_lines(state_for(shell)):
        print(line)


async def last_run_lines(state: NotebookState) -> list[str]:
    tools = state.tools
    run = tools.last_changes()
    if run is None:
        return ["Nothing to undo: no %%pi run has changed this notebook since the kernel started."]
    return await undo_lines(tools.bridge, tools.no_bridge, run)


def undo_command(state: NotebookState, name: str | None, rest: str) -> None:
    raise UsageError(AWAIT_ONLY)
