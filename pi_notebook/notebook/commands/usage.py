"""``%pi usage``: tokens and cost per run, per conversation and for the notebook's session
files, in three small tables.

* Runs: every ``%%pi`` run of this shell (``usage_log.py``), with the line of a budget that
  stopped it.
* Conversations: what each conversation's session has spent since it started in this kernel
  (the count its ``PiMagics.max_conversation_*`` budget is held against), and that budget.
* Session files: this notebook's recorded conversations (``%pi sessions``), every answer on
  every branch added up: what the recorded requests cost, earlier kernels included.

Tokens are input (cached or not) plus output, as budgets count them; the cost is the usage
priced with the model's catalogue prices (a model without prices shows $0.00).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence

from IPython.core.error import UsageError

from ...ai.types import AssistantMessage
from ...runtime import Budget, Spend
from ...runtime.budget import format_usd
from ...session import MessageEntry, SessionManager
from ..config import DEFAULT_NAME
from ..state import NotebookState

__all__ = ["usage_command"]

_RIGHT = frozenset({"run", "cell", "input", "output", "cached", "tokens", "cost", "answers"})


_ESTIMATED = re.compile(r"(^|\s)~\d", re.MULTILINE)
"""A token count marked estimated in the tables."""


def usage_command(state: NotebookState, name: str | None, rest: str) -> None:
    """Print the three tables (only conversation ``name``'s rows with ``--name``)."""
    if rest:
        raise UsageError(f"usage takes no arguments (%pi --name NAME usage: one conversation), not {rest!r}")
    blocks = [_runs(state, name), _conversations(state, name), _files(state, name)]
    text = "\n\n".join(blocks)
    if _ESTIMATED.search(text):
        text += "\n\n~ estimated: a stopped or failed answer, or a server that reported no usage, counts"
        text += " the tokens sent and streamed as the session estimated them"
    print(text)


def _runs(state: NotebookState, name: str | None) -> str:
    runs = [r for r in state.usage.runs if name is None or r.conversation == name]
    if not runs:
        return "runs: none yet in this kernel"
    rows = [
        [
            str(r.number),
            f"[{r.cell}]" if r.cell is not None else "",
            r.conversation,
            r.model,
            f"{r.input:,}",
            f"{r.output:,}",
            f"{r.cached:,}",
            f"~{r.tokens:,}" if r.estimated else f"{r.tokens:,}",
            format_usd(r.cost),
            r.budget_reason or "",
        ]
        for r in runs
    ]
    head = ["run", "cell", "conversation", "model", "input", "output", "cached", "tokens", "cost", "budget"]
    return "runs (this kernel)\n" + table(head, rows)


def _conversations(state: NotebookState, name: str | None) -> str:
    rows = []
    for conversation, found in state.conversations.items():
        if name is not None and conversation != name:
            continue
        session = found.session
        rows.append([conversation, *_spend_cells(session.spent), budget_text(session.budget)])
    if not rows:
        return "conversations: none has run yet in this kernel"
    head = ["conversation", "answers", "input", "output", "cached", "tokens", "cost", "budget"]
    return "conversations (since they started in this kernel)\n" + table(head, rows)


def _files(state: NotebookState, name: str | None) -> str:
    sessions = state.sessions
    listed = [row for row in sessions.listed() if name is None or (row.conversation or DEFAULT_NAME) == name]
    if not listed:
        return "session files: none recorded for this notebook"
    rows = []
    for row in listed:
        file = row.info.path.rsplit("/", 1)[-1]
        try:
            spend = file_spend(sessions.open_manager(row.info.path))
        except Exception as exc:  # a damaged file is reported, not a reason to fail the table
            rows.append([file, row.conversation or "", f"unreadable: {exc}", "", "", "", "", ""])
            continue
        rows.append([file, row.conversation or "", *_spend_cells(spend)])
    head = ["file", "conversation", "answers", "input", "output", "cached", "tokens", "cost"]
    return "session files (this notebook, every branch)\n" + table(head, rows)


def file_spend(manager: SessionManager) -> Spend:
    """Every assistant answer recorded in a session file (``SessionManager``), added up."""
    spend = Spend()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a newer format version: still count what is there
        entries = manager.get_entries()
    for entry in entries:
        message = entry.message if isinstance(entry, MessageEntry) else None
        if isinstance(message, AssistantMessage):
            spend.add(message.usage)
    return spend


def _spend_cells(spend: Spend) -> list[str]:
    cached = spend.cache_read + spend.cache_write
    return [
        str(spend.answers),
        f"{spend.input:,}",
        f"{spend.output:,}",
        f"{cached:,}",
        f"~{spend.tokens:,}" if spend.estimated else f"{spend.tokens:,}",
        format_usd(spend.cost),
    ]


def budget_text(budget: Budget | None) -> str:
    """``$1.00``, ``20,000 tokens``, both joined by " or ", or ``none``."""
    if budget is None:
        return "none"
    parts = [format_usd(budget.max_cost)] if budget.max_cost is not None else []
    if budget.max_total_tokens is not None:
        parts.append(f"{budget.max_total_tokens:,} tokens")
    return " or ".join(parts) or "none"


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Plain-text columns: numbers right-aligned, text left-aligned, two spaces apart; an
    empty last column is left out of the widths (and the line is not padded)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    lines = []
    for cells in (head, *rows):
        out = [c.rjust(w) if h in _RIGHT else c.ljust(w) for c, w, h in zip(cells, widths, head, strict=True)]
        lines.append("  ".join(out).rstrip())
    return "\n".join(lines)
