"""The notice lines under a run, and what the session's own events (``AgentSession``: auto-retry,
compaction) do to the view.

Notices are a list of keyed lines (``ViewState.notices``): the approval policy, a resumed
conversation, the retry in progress, each compaction, how the run stopped. ``add_notice``
replaces the line of the same key in place or appends one, so the retry rewriting its line never
touches the others (and nothing else rebuilds the list).

Retry lines, as the session reports it:

* ``auto_retry_start``: the failed call's output is reopened (running again, no error shown) and
  the line says ``Retrying in 2 s, 1 of 3: <error>``; when the call starts again
  (``agent_start``), ``Retry 1 of 3 after: <error>``;
* ``auto_retry_end``: ``Recovered on retry 1 of 3 after: <error>``, ``Retry failed after 3
  attempts.`` (the error itself is shown above), or, stopped during the wait, ``Retry 1 of 3
  cancelled after: <error>`` with the run ended as aborted.

The retried call's ``turn_start`` is the failed turn again: the footer's turn count does not
grow (``_retried_call``).

Compaction lines: ``Compacting the context…`` while it runs, then ``Context compacted (context
near the model's window): 12,345 tokens summarized.`` or the session's error line.

A budget that stops the run (``budget_reached``): the session's one line, ``stopped: the run
reached its budget of $0.50 ($0.52 spent)``, from the moment it stops.

The session file (``session_write``): it cannot be written (the session's line and what to do,
``PI_NOTEBOOK_RECORD=0`` included, once until it is written again), it is written again, or
another kernel writes it too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..tools.references import truncate
from .state import Notice, RetryNote, ViewState

__all__ = [
    "SESSION_HANDLERS",
    "add_notice",
    "compaction_text",
    "drop_notice",
    "on_agent_start",
    "reopen",
    "rerun_turn",
]

MAX_ERROR_CHARS = 200
_WHY = {"threshold": " (context near the model's window)", "overflow": " (context overflow)"}


def add_notice(state: ViewState, text: str, key: str | None = None) -> ViewState:
    """Show ``text`` under the run: in place of the line with the same ``key`` (default: the
    text itself, so the same line is never shown twice), else as a new last line."""
    key = text if key is None else key
    for notice in state.notices:
        if notice.key == key:
            notice.text = text
            break
    else:
        state.notices.append(Notice(key, text))
    state.rev += 1
    return state


def drop_notice(state: ViewState, key: str) -> ViewState:
    state.notices = [n for n in state.notices if n.key != key]
    state.rev += 1
    return state


def reopen(state: ViewState) -> None:
    """A failed call that will be retried: running again, no error shown (the notice says what
    failed); the retried call's events then draw as usual."""
    state.finished = False
    state.stop_reason = None
    state.error_message = None
    state.rev += 1


def rerun_turn(state: ViewState) -> None:
    """The failed turn goes on after all (the user chose to run its tool calls): running
    again, and its next ``turn_start`` is that turn, not a new one."""
    reopen(state)
    state._retried_call = True


def compaction_text(reason: str, tokens_before: int) -> str:
    return f"Context compacted{_WHY.get(reason, '')}: {tokens_before:,} tokens summarized."


def first_line(text: str) -> str:
    """An error's first line, cut to ``MAX_ERROR_CHARS`` (the line under the run stays one line)."""
    lines = text.strip().splitlines()
    return truncate(lines[0], MAX_ERROR_CHARS) if lines else "unknown error"


def _seconds(delay_ms: int) -> str:
    return f"{delay_ms / 1000:.3g} s"


def _on_retry_start(state: ViewState, event: Any) -> None:
    note = state._retry = RetryNote(event.attempt, event.max_attempts, first_line(event.error_message))
    reopen(state)
    state._retried_call = True
    add_notice(
        state,
        f"Retrying in {_seconds(event.delay_ms)}, {note.attempt} of {note.max_attempts}: {note.error}",
        "retry",
    )


def on_agent_start(state: ViewState, event: Any) -> None:
    note = state._retry
    if note is not None and note.waiting:
        note.waiting = False
        add_notice(state, f"Retry {note.attempt} of {note.max_attempts} after: {note.error}", "retry")


def _on_retry_end(state: ViewState, event: Any) -> None:
    note, state._retry = state._retry, None
    if note is None:
        return
    if event.success:
        text = f"Recovered on retry {event.attempt} of {note.max_attempts} after: {note.error}"
    elif event.final_error == "Retry cancelled":
        state.stop_reason, state.finished = "aborted", True
        text = f"Retry {event.attempt} of {note.max_attempts} cancelled after: {note.error}"
    else:
        noun = "attempt" if event.attempt == 1 else "attempts"
        text = f"Retry failed after {event.attempt} {noun}."  # the error itself is shown above
    add_notice(state, text, "retry")


def _on_compaction_start(state: ViewState, event: Any) -> None:
    state._compactions += 1
    add_notice(state, "Compacting the context…", f"compaction-{state._compactions}")


def _on_compaction_end(state: ViewState, event: Any) -> None:
    key = f"compaction-{state._compactions}"
    if event.result is not None:
        add_notice(state, compaction_text(event.reason, int(event.result["tokensBefore"])), key)
    elif event.error_message:
        add_notice(state, event.error_message, key)
    elif event.aborted:
        add_notice(state, "Compaction cancelled.", key)
    else:
        drop_notice(state, key)


def _on_budget_reached(state: ViewState, event: Any) -> None:
    add_notice(state, event.reason, "budget")


RECORD_HINT = "free space or fix the folder's permissions, or set PI_NOTEBOOK_RECORD=0 to stop recording"


def _on_session_write(state: ViewState, event: Any) -> None:
    """The session file cannot be written (once, with what to do), is written again, or is
    shared with another kernel: one line, the answer shown as usual."""
    text = f"{event.text}; {RECORD_HINT}." if event.kind == "write_failed" else event.text
    add_notice(state, text, f"session-{event.kind}")


SESSION_HANDLERS: dict[str, Callable[[ViewState, Any], None]] = {
    "auto_retry_start": _on_retry_start,
    "auto_retry_end": _on_retry_end,
    "budget_reached": _on_budget_reached,
    "compaction_start": _on_compaction_start,
    "compaction_end": _on_compaction_end,
    "session_write": _on_session_write,
}
"""The session's own events the view draws (``on_agent_start`` is the reducer's ``agent_start``)."""
