"""The Undo button shown under a ``%%pi`` run that changed the live notebook.

Its click comes in as a widget message while the kernel is idle; the undo has to wait for the
notebook's answers, which the kernel reads between messages, so the click schedules it as a
task on the kernel's event loop and the outcome appears beside the button when it ends.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Awaitable, Callable
from typing import Any

import ipywidgets as W

LABEL = "Undo this run's notebook changes"
_RUNNING: set[asyncio.Task[None]] = set()  # the loop keeps only a weak reference to a task


def undo_button(take_back: Callable[[], Awaitable[list[str]]]) -> Any:
    """A button that runs ``take_back`` once and shows the lines it returns."""
    button = W.Button(description=LABEL, icon="undo", layout=W.Layout(width="auto"))
    button.add_class("pi-undo")
    told = W.HTML()

    async def run() -> None:
        lines = await take_back()
        told.value = "<br>".join(html.escape(line) for line in lines)

    def clicked(_button: Any) -> None:
        button.disabled = True
        try:
            task = asyncio.get_running_loop().create_task(run())
        except RuntimeError:  # no loop in this handler (an old kernel): the command still works
            told.value = html.escape("Run %pi undo alone in a cell instead.")
            return
        _RUNNING.add(task)
        task.add_done_callback(_RUNNING.discard)

    button.on_click(clicked)
    return W.HBox([button, told])
