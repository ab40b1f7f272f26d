"""Review a run's changes at once: the summary a ``%%pi`` output ends with when the run
changed the live notebook, and what Accept all and Undo all do.

``review_run`` (the runner calls it as the run ends, before the output freezes) reads the
run's journal (``tools/changes.py``: cells inserted, edited, deleted, run) and its edit cards
that still waited for Apply when the run ended (Stop, an interrupt), and puts a ``Review`` in
the run's view state: one compact line per change. Where someone can click, the summary is
drawn under the frozen output with Accept all / Undo all (``show_review_row``); elsewhere it
ends the frozen output, with a line naming ``%pi undo`` (``--text``, controls inactive) or
alone (headless: nobody can act on it).

Undo all is ``%pi undo`` for this run (the same journal, last change first, a cell the user
changed since kept and named). Accept all keeps the changes (``%pi undo`` can still take them
back) and applies the edits that still waited, each only if its cell still holds what the
agent read; an applied one joins the run's journal. Each click is scheduled on the kernel's
loop (the bridge's answers are read between messages) and the summary then says what happened,
its buttons disabled.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..bridge import BridgeRefused, BridgeUnavailable, NotebookBridge
from ..state import NotebookState
from ..tools.changes import Change, RunChanges, undo_lines
from ..tools.previews import EditRefused, edit_text
from ..view.reduce import ToolCard
from ..view.review import settle_review, show_review
from ..view.run_view import RunView
from ..view.state import Review, ReviewActions
from .plan import RunPlan

_RUNNING: set[asyncio.Task[None]] = set()  # the loop keeps only a weak reference to a task
SNIPPET = 60
"""Characters of a cell's first line a summary line quotes."""
CONTEXT = 12
"""Characters before the changed part of a long edited line that its gist keeps."""


class EndedRun(Protocol):
    """What the review reads of a run that ended (``runner.PiRun``)."""

    state: NotebookState
    plan: RunPlan
    view: RunView
    widget: Any
    """The live view's widget (``None``: no widgets, the output is static)."""
    loop: asyncio.AbstractEventLoop | None
    """The loop the run executed on (``None``: it never started)."""


@dataclass
class RunReview:
    """A run's review and what its buttons need: the journal, the edits that waited, and the
    bridge and cell sources of the run (a later run may have none)."""

    review: Review
    changes: RunChanges
    waiting: list[dict[str, Any]]
    bridge: NotebookBridge | None
    no_bridge: str
    known: dict[str, str]
    decided: bool = False
    """Accept all or Undo all was clicked: a second click (in flight before the buttons were
    disabled) does nothing."""


def review_run(run: EndedRun) -> RunReview | None:
    """The review of ``run`` (``None``: it changed nothing and no edit waits), also set on its
    view state so the frozen output ends with it where nobody clicks."""
    if run.loop is None or run.plan.replay is not None:  # no tools ran: the journal is another run's
        return None
    tools = run.state.tools
    waiting = [card.args for card in waiting_edits(run.view.state.items)]
    if not tools.changes and not waiting:
        show_review(run.view.state, None)
        return None
    mode = run.plan.mode
    actions: ReviewActions = "none" if mode.headless.headless else "command"
    if run.widget is not None and mode.can_ask:
        actions = "buttons"
    lines = [*map(change_line, tools.changes.changes), *(waiting_line(args, tools.known) for args in waiting)]
    # a line quotes a cell, which may hold a key: the output is saved with the notebook
    lines = [tools.redact(line) for line in lines]
    review = Review(summary_heading(tools.changes, len(waiting)), lines, actions, waiting=len(waiting))
    show_review(run.view.state, review)
    return RunReview(review, tools.changes, waiting, tools.bridge, tools.no_bridge, tools.known)


def waiting_edits(items: list[Any]) -> list[ToolCard]:
    """The ``edit_cell`` cards nobody answered (the run ended while they asked)."""
    return [
        item
        for item in items
        if isinstance(item, ToolCard)
        and item.name == "edit_cell"
        and item.unanswered
        and isinstance(item.args, dict)
    ]


def summary_heading(changes: RunChanges, waiting: int) -> str:
    edits = f"{waiting} edit{'s' if waiting != 1 else ''} waiting for Apply"
    if not changes:
        return f"This run left {edits}"
    heading = f"This run changed the notebook: {changes.summary()}"
    return f"{heading}; {edits}" if waiting else heading


def change_line(change: Change) -> str:
    """One compact line per change: what, which cell (its id), and its first line."""
    cell = short_id(change.cell_id)
    if change.kind == "insert":
        return f"+ inserted cell {cell}: {first_line(change.after)}"
    if change.kind == "edit":
        return f"~ edited cell {cell}: {edit_gist(str(change.before.get('source', '')), change.after)}"
    if change.kind == "delete":
        gone = change.before.get("cell") or {}
        kind = gone.get("cell_type", "code")
        where = int(change.before.get("index", 0)) + 1
        return f"- deleted {kind} cell {cell} (was cell {where}): {first_line(_source(gone))}"
    return f"> ran cell {cell}: its outputs replaced"


def waiting_line(args: dict[str, Any], known: dict[str, str]) -> str:
    cell_id = str(args.get("cell_id"))
    before = known.get(cell_id)
    try:
        gist = edit_gist(before, _edited(before, args)) if before is not None else "not read by the agent"
    except EditRefused as exc:
        gist = str(exc)
    return f"? edit of cell {short_id(cell_id)} not applied (the run ended before Apply): {gist}"


def short_id(cell_id: str) -> str:
    """A cell id as a line shows it: JupyterLab's are 36-character UUIDs, their start is enough."""
    return cell_id if len(cell_id) <= 12 else cell_id[:8] + "…"


def first_line(source: str) -> str:
    lines = [line.strip() for line in source.splitlines() if line.strip()]
    if not lines:
        return "(empty)"
    shown = lines[0] if len(lines[0]) <= SNIPPET else lines[0][: SNIPPET - 1] + "…"
    return shown + (f" (+{len(lines) - 1} lines)" if len(lines) > 1 else "")


def edit_gist(before: str, after: str) -> str:
    """An edit in a few words: ``old → new`` for a one-line change, else the lines' counts."""
    removed: list[str] = []
    added: list[str] = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0):
        if line.startswith(("---", "+++", "@@")):
            continue
        (added if line.startswith("+") else removed).append(line[1:])
    if len(removed) == 1 and len(added) == 1:
        return _one_line_gist(removed[0].strip(), added[0].strip())
    return f"+{len(added)} −{len(removed)} lines"


def _one_line_gist(old: str, new: str) -> str:
    """``old → new``; for long lines only the part that changed, with a little of what precedes
    it (``…sum(data) / 2… → …sum(data) / len(data)…``)."""
    if max(len(old), len(new)) <= SNIPPET // 2:
        return f"{old or '(empty)'} → {new or '(empty)'}"
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    lead = ("…" + old[max(0, start - CONTEXT) : start]) if start > CONTEXT else old[:start]
    tail = "…" if end else ""

    def part(line: str) -> str:
        middle = line[start : len(line) - end]
        return lead + (middle if len(middle) <= SNIPPET // 2 else middle[: SNIPPET // 2 - 1] + "…") + tail

    return f"{part(old)} → {part(new)}"


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _edited(before: str, args: dict[str, Any]) -> str:
    return edit_text(before, args.get("source"), args.get("old"), args.get("new"))


# --- the buttons ---------------------------------------------------------------------------


async def undo_all(run: RunReview) -> tuple[str, list[str]]:
    """Take back the run's changes (``%pi undo`` for this run): the heading and one line per
    change restored or kept."""
    lines = await undo_lines(run.bridge, run.no_bridge, run.changes)
    heading, told = lines[0].rstrip(":"), [line.strip() for line in lines[1:]]
    kept = sum(line.startswith("kept ") for line in told)
    if kept:
        heading += f", except {kept} change{'s' if kept != 1 else ''} kept"
    if run.waiting:
        count = len(run.waiting)
        told.append(f"{count} waiting edit{'s' if count != 1 else ''} left unapplied")
    return heading, told


async def accept_all(run: RunReview) -> tuple[str, list[str]]:
    """Keep the run's changes and apply the edits that waited: the heading and a line for
    each waiting edit."""
    kept = run.changes.summary()
    told = [await apply_waiting(run, args) for args in run.waiting]
    applied = sum(line.startswith("applied ") for line in told)
    heading = f"Accepted: kept {kept}" if kept else "Accepted"
    if run.waiting:
        heading += f"{';' if kept else ':'} applied {applied} of {len(run.waiting)} waiting edit"
        heading += "s" if len(run.waiting) != 1 else ""
    if kept or applied:
        heading += " (%pi undo can still take them back)"
    return heading, told


async def apply_waiting(run: RunReview, args: dict[str, Any]) -> str:
    """Apply one edit that waited, if its cell still holds what the agent read; journaled."""
    cell_id = str(args.get("cell_id"))
    before = run.known.get(cell_id)
    if run.bridge is None:
        return f"not applied: the edit of cell {cell_id} ({run.no_bridge})"
    if before is None:
        return f"not applied: the edit of cell {cell_id} (the agent never read that cell)"
    try:
        after = _edited(before, args)
        await run.bridge.request("edit", id=cell_id, expect=before, source=after)
    except EditRefused as exc:
        return f"not applied: the edit of cell {cell_id} ({exc})"
    except (BridgeRefused, BridgeUnavailable) as exc:
        return f"not applied: the edit of cell {cell_id} ({exc}; nothing overwritten)"
    run.known[cell_id] = after
    run.changes.add(Change("edit", cell_id, before={"source": before}, after=after))
    return f"applied the edit of cell {cell_id}"


def decide(run: RunReview, outcome: Literal["accepted", "undone"]) -> Callable[[Callable[[], None]], bool]:
    """A button's handler: ``start(drawn)`` schedules Accept all or Undo all on the kernel's
    loop, which settles the review with what it did and calls ``drawn``; ``False`` where there
    is no loop to run on."""
    work: Callable[[RunReview], Awaitable[tuple[str, list[str]]]]
    work = accept_all if outcome == "accepted" else undo_all

    def start(drawn: Callable[[], None]) -> bool:
        if run.decided:
            return True
        run.decided = True

        async def act() -> None:
            heading, told = await work(run)
            settle_review(run.review, outcome, heading, told)
            drawn()

        try:
            task = asyncio.get_running_loop().create_task(act())
        except RuntimeError:  # no loop in this handler (an old kernel): the command still works
            run.decided = False
            return False
        _RUNNING.add(task)
        task.add_done_callback(_RUNNING.discard)
        return True

    return start
