"""What an edit or insert card shows while it asks (what Apply would do: the diff, the cells),
and the ``edit_cell`` arguments refused before anyone is asked: contradictory ones (a whole
``source`` and ``old`` / ``new``), missing ones, and an edit that changes nothing (``old ==
new``, or the source as it is). The refusal is the tool's error, which the model sees."""

from __future__ import annotations

from typing import Any

from .references import truncate

__all__ = ["APPLY_TOOLS", "EditRefused", "approval_labels", "check_edit", "edit_text", "insert_preview"]

APPLY_TOOLS = frozenset({"edit_cell", "insert_cells", "insert_cell"})
"""Tools whose approval applies a change the card shows (a diff, the cells): Apply / Reject."""
CELL_CHARS = 1_500
"""Characters of one inserted cell the card shows (the rest is counted)."""


class EditRefused(ValueError):
    """``edit_cell`` arguments that cannot make a change; the message says what to send."""


def approval_labels(name: str) -> tuple[str, str]:
    """The words on a card's two buttons for a call of ``name``."""
    return ("Apply", "Reject") if name in APPLY_TOOLS else ("Approve", "Deny")


def check_edit(source: Any, old: Any, new: Any) -> None:
    """Refuse ``edit_cell`` arguments that contradict each other or change nothing, whatever
    the cell holds."""
    if source is not None:
        if old is not None or new is not None:
            raise EditRefused("give either source, or old and new, not both")
        return
    if old is None or new is None:
        raise EditRefused("give the new source, or the part to replace (old) and its replacement (new)")
    if old == new:
        raise EditRefused(
            "old and new are the same text, so the edit changes nothing; send in new what the part "
            "should become"
        )


def edit_text(before: str, source: str | None, old: str | None, new: str | None) -> str:
    """The new source of an ``edit_cell`` call; ``EditRefused`` saying what to send instead."""
    check_edit(source, old, new)
    if source is not None:
        after = source
    else:
        assert old is not None
        assert new is not None
        count = before.count(old) if old else 0
        if count != 1:
            where = "does not occur" if count == 0 else f"occurs {count} times"
            raise EditRefused(
                f"old {where} in the cell as you read it; quote a part that occurs exactly once"
            )
        after = before.replace(old, new, 1)
    if after == before:
        raise EditRefused("the new source is the cell's source as you read it, so the edit changes nothing")
    return after


def insert_preview(name: str, args: dict[str, Any], current_cell: str | None) -> str:
    """What Apply inserts: each cell's type and source (bounded), and where."""
    if name == "insert_cell":
        cells: list[Any] = [{"source": args.get("code", ""), "cell_type": "code"}]
        where = "below this %%pi cell"
    else:
        cells = list(args.get("cells") or [])
        after = args.get("after")
        where = f"after cell {after}" if after else ("after this %%pi cell" if current_cell else "at the end")
    count = f"{len(cells)} cell{'s' if len(cells) != 1 else ''}"
    shown = [f"Apply inserts {count} {where}; Reject leaves the notebook as it is."]
    for number, cell in enumerate(cells, 1):
        data = cell if isinstance(cell, dict) else {}
        kind = data.get("cell_type", "code")
        source = str(data.get("source", ""))
        shown.append(f"[{number}] {kind} cell:\n{truncate(source, CELL_CHARS) if source else '(empty)'}")
    return "\n".join(shown)
