"""``%pi show [N]``: the frozen output of a recorded ``%%pi`` run, re-rendered from the session
file: the Nth run from the last (default 1, the last) of the conversation, on the branch it
records into now, or, when that has no run yet (after a kernel restart), in the latest recorded
session of this notebook's conversation.

The run's messages go through the same view reducer as a live run (the session layer's replay),
so the output is the static HTML a finished cell shows: the copy to keep of a run whose cell a
reloaded page showed as a widget (``run.runner``), or whose cell lost its output in a reload.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from IPython.core.error import UsageError
from IPython.display import display as _untyped_display

from ..config import DEFAULT_NAME
from ..host.compat import get_kernel
from ..run.reattach import was_attached
from ..sessions.replay import Recording, play, recorded_runs, replayed_notice
from ..state import NotebookState
from ..view.reduce import set_elapsed
from ..view.run_view import StaticView
from .sessions import run_coroutine

_display: Callable[..., Any] = _untyped_display


def _count(rest: str) -> int:
    text = rest.strip() or "1"
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"%pi show takes a run number counted from the last (1, 2, ...), not {text!r}")
    return int(text)


def _elapsed(recording: Recording) -> float | None:
    """From the run entry to the run's last entry, as the live footer counted it (about)."""
    if not recording.entries or not recording.started:
        return None
    try:
        start = datetime.fromisoformat(recording.started.replace("Z", "+00:00"))
        end = datetime.fromisoformat(recording.entries[-1].timestamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0.0, (end - start).total_seconds())


def _runs(state: NotebookState, name: str) -> tuple[list[Recording], str]:
    """The conversation's recorded runs and where they were read (for the error line)."""
    sessions = state.sessions
    found = state.conversations.find(name)
    if found is not None:
        runs = recorded_runs(found.manager)
        if runs:
            return runs, found.manager.session_file or "this kernel's session"
    latest = sessions.latest(name, found.manager.session_file if found is not None else None)
    if latest is None:
        return [], sessions.directory()
    return recorded_runs(sessions.open_manager(latest.info.path)), latest.info.path


def runs_with(state: NotebookState, key: str, command: str, number: int | None) -> list[Recording]:
    """The conversation's recorded runs, at least ``number`` of them (``None``: at least one);
    else a one-line ``UsageError`` for ``command`` (``%pi show``, ``%pi export``) saying where it
    looked and what to try."""
    runs, where = _runs(state, key)
    if not runs:
        raise UsageError(
            f"{command}: conversation {key!r} has no recorded %%pi run in {where}; "
            "run a %%pi cell first (%pi sessions lists the recorded conversations)"
        )
    if number is not None and number > len(runs):
        raise UsageError(
            f"{command} {number}: conversation {key!r} has {len(runs)} recorded run"
            f"{'s' if len(runs) != 1 else ''} in {where}; try {command} {len(runs)}"
        )
    return runs


def _request_id(shell: Any) -> str | None:
    kernel = get_kernel(shell)
    try:
        parent = kernel.get_parent("shell") if kernel is not None else None
    except Exception:
        return None
    header = parent.get("header") if isinstance(parent, dict) else None
    return str(header.get("msg_id")) if isinstance(header, dict) else None


def show_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    count = _count(rest)
    if count == 1 and was_attached(_request_id(state.shell)):
        return  # the run showed itself in this cell while the cell waited (run/reattach.py)
    runs = runs_with(state, name or DEFAULT_NAME, "%pi show", count)
    recording = runs[-count]
    view = StaticView(recording.prompt, [replayed_notice(recording, "%pi show")])
    run_coroutine(lambda: play(recording, view.handle))
    seconds = _elapsed(recording)
    if seconds is not None:
        set_elapsed(view.state, seconds)
    _display(view.static_bundle(), raw=True)
