"""``%pi show`` run while a ``%%pi`` run is still going: the run's live view is shown in that
cell at once, before the cell gets its turn.

A page reloaded during a run, from a notebook not saved since the run began, has no output
for it (``docs/ui.md``, "Reloading the page"), and a cell that page runs waits until the
running one ends. But its request is the new page's own, so output published under it reaches
that cell at once (``kernel.queued`` shows the run the waiting request): the run publishes its
live widget there with the run's display id. The widget is live (the new page fetched every
widget's state when it connected), so a pending Approve can be clicked, and the
``update_display_data`` that freezes the run reaches this cell too. When the ``%pi show``
itself runs, after the run, its output is already there: it shows nothing more.
"""

from __future__ import annotations

from typing import Any

from ..config import DEFAULT_NAME

_attached: set[str] = set()


def shows_run(code: str, name: str) -> bool:
    """Whether ``code`` is ``%pi show`` (or ``%pi show 1``) of conversation ``name``, with
    ``--name`` before the subcommand as ``%pi`` takes it."""
    words = code.split()
    if "\n" in code.strip() or words[:1] != ["%pi"]:
        return False
    words = words[1:]
    conversation = DEFAULT_NAME
    if words[:1] == ["--name"] and len(words) > 1:
        conversation, words = words[1], words[2:]
    return words in (["show"], ["show", "1"]) and conversation == name


def attach(kernel: Any, request: dict[str, Any], bundle: dict[str, Any], display_id: str) -> None:
    """Publish ``bundle`` (the live widget) as output of the waiting ``request``."""
    content = {"data": bundle, "metadata": {}, "transient": {"display_id": display_id}}
    kernel.session.send(kernel.iopub_socket, "display_data", content, parent=request, ident=b"display_data")
    _attached.add(str(request["header"]["msg_id"]))


def was_attached(request_id: str | None) -> bool:
    """True (once) when the run showed itself in the output of request ``request_id``."""
    if request_id is None or request_id not in _attached:
        return False
    _attached.discard(request_id)
    return True
