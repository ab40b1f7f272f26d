"""What a ``%%pi`` run draws into: the ``RunView`` protocol, and ``StaticView``, the view
without widgets (headless runs, ``--text``, no kernel, the non-awaited fallback).

``widgets.LiveView`` is the other implementation; the runner only uses what is declared here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any, Protocol

from .reduce import ViewState, add_notice, mark_approval, reduce, set_elapsed
from .render import static_bundle


class RunView(Protocol):
    """The runner's view of a view: events in, approvals, notices, the frozen output out."""

    state: ViewState

    def handle(self, event: Any) -> None:
        """Take one agent or session event (on the loop that runs the agent)."""

    def request_approval(self, tool_call_id: str) -> asyncio.Future[bool]:
        """Ask the user to approve a tool call; the future resolves with the answer."""
        ...

    def resolve_approval(self, tool_call_id: str, approved: bool) -> None:
        """Show a decision the approval policy took without asking."""

    def add_notice(self, text: str, key: str | None = None) -> None:
        """Show a line under the run, in place of the line of the same ``key`` if there is one."""

    def close(self) -> None:
        """The run ended: stop drawing and disable the controls."""

    def static_bundle(self) -> dict[str, str]:
        """The frozen output (``text/plain`` and ``text/html``)."""
        ...


class StaticView:
    """The view without widgets: reduce events, draw once at the end. ``close`` sets the
    footer's elapsed time from the view's creation (a replay, which never closes the view,
    sets its own from the recording)."""

    def __init__(self, prompt: str, notices: Sequence[str] = ()) -> None:
        self.state = ViewState(prompt=prompt)
        self._started = time.monotonic()
        for line in notices:
            add_notice(self.state, line)

    def handle(self, event: Any) -> None:
        reduce(self.state, event)

    def request_approval(self, tool_call_id: str) -> asyncio.Future[bool]:
        """Nobody can click here: every request is denied (the policy never asks a static view)."""
        mark_approval(self.state, tool_call_id, "denied")
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        future.set_result(False)
        return future

    def resolve_approval(self, tool_call_id: str, approved: bool) -> None:
        mark_approval(self.state, tool_call_id, "running" if approved else "denied")

    def add_notice(self, text: str, key: str | None = None) -> None:
        add_notice(self.state, text, key)

    def close(self) -> None:
        set_elapsed(self.state, time.monotonic() - self._started)

    def static_bundle(self) -> dict[str, str]:
        return static_bundle(self.state)
