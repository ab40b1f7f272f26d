"""Asking about project trust before a ``%%pi`` run, the first time it matters.

It matters when the notebook's folder has project resources (``.pi`` skills, templates,
settings; ``.agents/skills``) and nobody has decided about it in Pi's trust store. A run where
someone can click shows Pi's question with buttons (``view/trust_card.py``) and waits for the
answer, which is saved in Pi's trust store (the card then becomes one line of text, so a saved
notebook shows what was decided); a run that cannot ask goes on untrusted (or trusted,
``c.PiMagics.trust_headless``), and its notice says how to decide. The answer is asked before
the cell is planned, because a trusted folder's templates change what the prompt expands to.
"""

from __future__ import annotations

import asyncio
import html
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.display import display as _untyped_display

from ...runtime.resources.trust import TrustStoreError, trust_options
from ..host.compat import cell_running, get_kernel, install_comm_ack
from ..host.interrupts import watch_sigint
from .context import CellContext

if TYPE_CHECKING:
    from ..resources import NotebookResources

__all__ = ["ask_trust", "should_ask"]

_display: Callable[..., Any] = _untyped_display


def should_ask(where: CellContext) -> bool:
    """Whether the cell asks about its folder's trust now: someone can click and nobody has
    decided (``cell_context`` told the resources whether anybody can answer)."""
    return where.mode.can_ask and where.resources.trust.undecided


def _nothing() -> None:
    return None


def relative(path: str, folder: str) -> str:
    return os.path.relpath(path, folder)


async def ask_trust(resources: NotebookResources, shell: Any, where: CellContext) -> CellContext:
    """Ask about the folder's trust in the cell when it is undecided and someone can click
    (the answer goes to Pi's trust store through ``resources``); the cell's context as the
    answer leaves it."""
    if not should_ask(where):
        return where
    from ..view.trust_card import TrustCard

    folder = where.folder
    found = [relative(p, folder) for p, _ in where.loader.load().skipped]
    card = TrustCard(folder, [o.label for o in trust_options(folder)], found)
    kernel = get_kernel(shell)
    done = _nothing
    if kernel is not None:
        install_comm_ack(kernel)
        done = cell_running(kernel)
    handle = _display(card.widget, display_id=True)
    try:
        with watch_sigint():  # an interrupt cancels the wait at once (only while it waits)
            label = await card.answer
    except asyncio.CancelledError:  # an interrupt while the question waits: nothing is decided
        _settle(card, handle, "Not answered (the cell was interrupted): the folder is still undecided.")
        raise
    finally:
        done()
    try:
        line = resources.apply(label)
    except TrustStoreError as exc:
        line = f"{exc}; this run goes on untrusted"
    _settle(card, handle, line)
    return where.after_trust()


def _settle(card: Any, handle: Any, line: str) -> None:
    """The card's buttons go; a saved notebook keeps a line, not a widget it cannot show."""
    card.decided(line)
    if handle is not None:
        handle.update({"text/plain": line, "text/html": f"<pre>{html.escape(line)}</pre>"}, raw=True)
