"""A reloaded page gets the run back in the run's own cell, through the notebook bridge (the
pi-notebook-bridge labextension): while the run goes on, the cell's output becomes the live
widget again (streaming, its approvals clickable); when it ends, the frozen view, so the
notebook saved from that page holds the static output whatever happened to the page.

The frontend drops every output message of a request whose page is gone, so the kernel cannot
reach that cell through the request; the bridge writes the cell's outputs in the document
itself (an ordinary document edit). The first write to a page also restores the cell's input
(the run's source: the reloaded document holds what was last saved, maybe an empty cell) and,
when the document has no such cell (it was never saved with it), the bridge inserts it at the
end with its id and tells the user where it is. Where nothing can be written (no extension, a
frontend that ignores comms), the caller falls back (``%pi show``, the widget's own frozen
look)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..bridge import BridgeRefused, BridgeUnavailable, NotebookBridge

log = logging.getLogger(__name__)

__all__ = ["write_cell_output"]

ATTEMPTS = 5
"""A page that just connected registers the bridge's comm target when its notebook's session is
ready, which may be after its widget manager connected: try a few times, a second apart."""


async def write_cell_output(
    kernel: Any,
    cell_id: str,
    bundle: dict[str, Any],
    execution_count: int | None,
    *,
    source: str | None = None,
    attempts: int = ATTEMPTS,
    wait: float = 1.0,
) -> bool:
    """Set the outputs of the cell ``cell_id`` to one display of ``bundle``; True when the
    frontend wrote it. ``source``: the run's cell source, written back with the output (the
    reloaded document may hold an older or empty input, or no such cell: the bridge then
    inserts it, at the end). ``attempts``: for a page that has just connected (one is enough
    for a page connected long ago)."""
    output = {"output_type": "display_data", "data": bundle, "metadata": {}}
    fields: dict[str, Any] = {"id": cell_id, "outputs": [output], "execution_count": execution_count}
    if source is not None:
        fields.update(source=source, create=True)
    bridge = NotebookBridge(kernel)  # its own comm: the one the tools hold may be the old page's
    for attempt in range(attempts):
        try:
            await bridge.request("set_outputs", **fields)
        except BridgeRefused as exc:  # the reloaded document has no such cell
            log.debug("pi_notebook: the reloaded page cannot take the run's output: %s", exc)
            return False
        except BridgeUnavailable:
            bridge = NotebookBridge(kernel)
            if attempt + 1 < attempts:
                await asyncio.sleep(wait)
        else:
            return True
    return False
