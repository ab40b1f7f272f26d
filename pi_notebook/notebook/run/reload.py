"""What a ``%%pi`` run does for pages that connect while it runs or after it ends (a reloaded
tab, the notebook opened again).

Such a page never gets the run's output messages: the frontend delivers them only to the page
whose request made them. Two ways back:

* With the notebook bridge (the pi-notebook-bridge labextension, ``rewrite.py``), the run's own
  cell is written in the new page's document, its source included (inserted at the end when
  that document never had it): the live widget while the run goes on, so a pending Approve is
  clickable again, the frozen view when it ends, so the notebook saved from that page keeps
  the static output.
* Without it, a page showing the live widget
  from a notebook saved during the run sees the widget itself take the frozen look, with a line
  saying how to keep an output that survives a kernel restart (``%pi show``, then clear).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from ..config import DEFAULT_NAME
from ..host.compat import execute_request_cell_id, execute_request_code
from ..host.pages import on_next_page, pages_connected, watch_pages
from ..view.reduce import add_notice
from ..view.render import render_html
from .rewrite import ATTEMPTS, write_cell_output

__all__ = ["RELOADED_NOTICE", "PageWatch"]

RELOADED_NOTICE = (
    "This notebook was saved during the run and opened again, so this output is a widget, which "
    'shows "model not found" after a kernel restart. To keep it: run {command} in a new cell '
    "(a static copy), then clear this output (Clear Cell Output in the cell's context menu)."
)


class PageWatch:
    """The pages of one run's live view. The constructor only stores."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._pages_at: int | None = None
        """Pages connected when the live view was shown; ``None``: not counted."""
        self._kernel: Any = None
        self._cell_id: str | None = None
        self._source: str | None = None
        """The run's cell source, written back with the run to a page that connects."""
        self._count: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._live: Callable[[], dict[str, Any]] | None = None
        self._tasks: set[asyncio.Future[Any]] = set()
        """Writes under way (kept, so none is collected before it ends)."""

    def start(self, kernel: Any, execution_count: int | None, bridge: bool) -> None:
        """Count pages from now on (main thread, as the live view is shown); with ``bridge``
        (the kernel answers comms while the cell awaits) a reloaded page will get the run in
        its own cell."""
        if not watch_pages():
            return
        self._pages_at = pages_connected()
        if bridge and kernel is not None:
            self._kernel, self._count = kernel, execution_count
            self._cell_id = execute_request_cell_id(kernel)
            self._source = execute_request_code(kernel)

    def running(self, loop: asyncio.AbstractEventLoop, live: Callable[[], dict[str, Any]]) -> None:
        """The run began on ``loop``: a page that connects from now on gets the live widget in
        the run's cell (``live()``: the widget's bundle)."""
        self._loop, self._live = loop, live
        if self._cell_id is not None:
            on_next_page(self._page_connected)

    def _page_connected(self) -> None:  # the comm's thread
        loop, live = self._loop, self._live
        if loop is None or live is None or loop.is_closed():
            return
        on_next_page(self._page_connected)  # and the one after, while the run goes on
        loop.call_soon_threadsafe(lambda: self._spawn(self._write(live(), restore=True)))

    def _spawn(self, write: Any) -> None:  # on the run's loop
        task = asyncio.ensure_future(write)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(
        self, bundle: dict[str, Any], attempts: int = ATTEMPTS, *, restore: bool = False
    ) -> bool:
        """Write ``bundle`` in the run's cell of the newest page; ``restore``: the first write
        to that page, which also puts the run's source back (or inserts the cell)."""
        if self._cell_id is None:
            return False
        source = self._source if restore else None
        return await write_cell_output(
            self._kernel, self._cell_id, bundle, self._count, source=source, attempts=attempts
        )

    def finish(self, view: Any, bundle: dict[str, Any]) -> None:
        """The run ended with ``bundle`` as its output (main thread): a page that connected
        during the run, or connects later, gets it (``view``: the ``LiveView``)."""
        self._live = None
        if self._pages_at is None:
            return
        loop = self._loop
        named = "" if self.name == DEFAULT_NAME else f" --name {self.name}"
        notice = RELOADED_NOTICE.format(command=f"%pi{named} show")

        def look_frozen() -> None:
            add_notice(view.state, notice, "reloaded")
            view.show_frozen(render_html(view.state))

        async def freeze(attempts: int = ATTEMPTS, restore: bool = True) -> None:
            if not await self._write(bundle, attempts, restore=restore):
                look_frozen()

        if pages_connected() != self._pages_at:
            if loop is not None and self._cell_id is not None and not loop.is_closed():
                self._spawn(freeze(attempts=1, restore=False))  # connected a while ago: restored then
            else:
                look_frozen()
        elif loop is not None:

            def later() -> None:
                if not loop.is_closed():
                    loop.call_soon_threadsafe(lambda: self._spawn(freeze()))

            on_next_page(later)
