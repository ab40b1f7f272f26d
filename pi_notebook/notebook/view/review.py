"""The review of a run's changes to the live notebook: the summary a ``%%pi`` output ends with
(cells inserted, edited, deleted, run; edits still waiting for Apply) and what became of it
after Accept all or Undo all.

The data is ``state.Review``; ``run/review.py`` fills it in from the run's journal of changes
and its tool cards. This module only changes and draws it: ``show_review`` / ``settle_review``
(the view state's side, like the reducer's other setters), ``review_text`` and ``review_html``
(the summary as the frozen output and the live row draw it). Pure: no widget, IPython or
renderer imports (the renderers import it), everything escaped.
"""

from __future__ import annotations

import html
from typing import Literal

from .state import Review, ViewState

__all__ = [
    "COMMAND",
    "leave_unanswered",
    "review_html",
    "review_text",
    "settle_review",
    "show_review",
]

COMMAND = "To take them back: %pi undo, alone in a cell."
"""The line a review ends with where nobody can click its buttons (``--text``, the Pi kernel
in a terminal): the command that does what Undo all does."""

_ROW = "font-size:12px;white-space:pre-wrap;word-break:break-word;margin:1px 0 1px 12px;line-height:1.5;"
_STYLE = {
    "box": "border:1px solid rgba(139,124,246,.5);border-radius:6px;padding:4px 8px;margin:6px 0;"
    "font-size:13px;line-height:1.5;",
    "head": "cursor:pointer;font-weight:600;",
    "line": "font-family:var(--jp-code-font-family,ui-monospace,SFMono-Regular,Menlo,monospace);" + _ROW,
    "told": _ROW,
    "command": "font-size:12px;font-style:italic;opacity:.8;margin:2px 0;line-height:1.5;",
}
_EDGE = {"open": "#8b7cf6", "accepted": "#2e7d32", "undone": "#b26a00"}


def show_review(state: ViewState, review: Review | None) -> ViewState:
    """The run's review (``None``: the run changed nothing, no summary)."""
    state.review = review
    state.rev += 1
    return state


def settle_review(
    review: Review, outcome: Literal["accepted", "undone"], heading: str, told: list[str]
) -> Review:
    """Accept all or Undo all happened: the summary says what, line by line in ``told``."""
    review.outcome, review.heading, review.told = outcome, heading, list(told)
    review.rev += 1
    return review


def leave_unanswered(state: ViewState, tool_call_id: str) -> ViewState:
    """A card still asked when the run ended (Stop): nobody applied nor rejected it."""
    card = state.tool_card(tool_call_id)
    if card is not None:
        card.unanswered = True
        card.rev += 1
        state.rev += 1
    return state


def review_text(review: Review | None) -> str:
    """The summary as plain text: the heading, then one line per change while it waits for a
    decision, or what Accept all / Undo all did once one was taken; the command where nobody
    can click."""
    if review is None:
        return ""
    shown = review.lines if review.outcome == "open" else review.told
    lines = [review.heading, *(f"  {line}" for line in shown)]
    if review.actions == "command" and review.outcome == "open":
        lines.append(COMMAND)
    return "\n".join(lines)


def review_html(review: Review | None) -> str:
    """The summary as self-contained HTML: the changes in a fold, open while they wait for a
    decision and closed once taken, then what Accept all / Undo all did."""
    if review is None:
        return ""
    rows = "".join(_row("pi-review-line", line) for line in review.lines)
    fold = " open" if review.outcome == "open" else ""
    body = (
        f'<details class="pi-review-fold"{fold}><summary class="pi-review-head" style="{_STYLE["head"]}">'
        f"{html.escape(review.heading)}</summary>{rows}</details>"
    )
    body += "".join(_row("pi-review-told", line) for line in review.told)
    if review.actions == "command" and review.outcome == "open":
        body += _row("pi-review-command", COMMAND)
    edge = f"border-left:3px solid {_EDGE[review.outcome]};"
    return f'<div class="pi-review pi-review-{review.outcome}" style="{_STYLE["box"]}{edge}">{body}</div>'


def _row(cls: str, text: str) -> str:
    style = _STYLE[cls.removeprefix("pi-review-")]
    return f'<div class="{cls}" style="{style}">{html.escape(text)}</div>'
