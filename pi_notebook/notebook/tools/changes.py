"""What an agent's run changed in the live notebook, and how to take it back (``%pi undo`` and
the Undo button of a run).

Each change keeps what undoing it needs: the ids of inserted cells, a cell's source before
and after an edit, deleted cells whole (id, source, outputs, metadata) with their position,
a cell's outputs before ``run_cell`` replaced them. Undo walks the changes last first; a
step whose cell the user changed since is skipped and reported, never overwritten, so undo
loses nothing either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..bridge import BridgeRefused, BridgeUnavailable, NotebookBridge

ChangeKind = Literal["insert", "edit", "delete", "outputs"]


@dataclass(slots=True)
class Change:
    kind: ChangeKind
    cell_id: str
    before: dict[str, Any] = field(default_factory=dict)
    """What undo restores: ``source`` (edit), ``cell`` and ``index`` (delete), ``outputs`` and
    ``execution_count`` (outputs)."""
    after: str = ""
    """The cell's source once the change was made (undo checks the cell still has it)."""


@dataclass(slots=True)
class RunChanges:
    """The changes of one run, in order."""

    changes: list[Change] = field(default_factory=list)

    def add(self, change: Change) -> None:
        self.changes.append(change)

    def __bool__(self) -> bool:
        return bool(self.changes)

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for change in self.changes:
            counts[change.kind] = counts.get(change.kind, 0) + 1
        names = {"insert": "inserted", "edit": "edited", "delete": "deleted", "outputs": "ran"}
        return ", ".join(f"{names[kind]} {n} cell{'s' if n != 1 else ''}" for kind, n in counts.items())


async def undo_lines(bridge: NotebookBridge | None, no_bridge: str, run: RunChanges) -> list[str]:
    """What ``%pi undo`` and the Undo button print: a heading line, then one line per change
    taken back or kept; ``no_bridge`` says why there is no bridge when ``bridge`` is None."""
    if bridge is None:
        return [f"Cannot undo: {no_bridge}."]
    if not run:
        return ["Nothing left to undo for this run."]
    what = run.summary()
    try:
        lines = await undo(bridge, run)
    except BridgeUnavailable as exc:  # the bridge is gone: say so, nothing half-done silently
        return [f"Undo stopped: {exc}. Use the notebook's own undo (Ctrl+Z) for what remains."]
    return [f"Undid the run ({what}):", *(f"  {line}" for line in lines)]


async def undo(bridge: NotebookBridge, run: RunChanges) -> list[str]:
    """Take back ``run``'s changes, last first; one line per change (what was restored or why
    not). ``BridgeUnavailable`` when the notebook cannot be reached at all."""
    lines = []
    for change in reversed(run.changes):
        try:
            lines.append(await _undo_one(bridge, change))
        except BridgeRefused as exc:
            lines.append(f"kept {change.kind} of cell {change.cell_id}: {exc} (nothing overwritten)")
    run.changes.clear()
    return lines


async def _undo_one(bridge: NotebookBridge, change: Change) -> str:
    if change.kind == "insert":
        await bridge.request("delete", ids=[change.cell_id], expect={change.cell_id: change.after})
        return f"removed inserted cell {change.cell_id}"
    if change.kind == "edit":
        await bridge.request("edit", id=change.cell_id, expect=change.after, source=change.before["source"])
        return f"restored the source of cell {change.cell_id}"
    if change.kind == "delete":
        await bridge.request("insert", index=change.before["index"], cells=[change.before["cell"]])
        return f"restored deleted cell {change.cell_id}"
    await bridge.request(
        "set_outputs",
        id=change.cell_id,
        expect=change.after,
        outputs=change.before.get("outputs", []),
        execution_count=change.before.get("execution_count"),
    )
    return f"restored the outputs of cell {change.cell_id}"


__all__ = ["Change", "RunChanges", "undo", "undo_lines"]
