"""Retrying a ``%%pi`` run's failed provider call after a transient error, as Pi's coding agent
does, and the notice line that says so.

The rules (Pi's auto-retry):

* Only a run whose last message is the failed assistant message is retried: the provider call
  failed, nothing of that turn ran. Tools of earlier turns are not run again; the retry
  continues the conversation from the message before the failed call.
* Only transient errors: overloaded, rate limited, 5xx, dropped connections, timeouts
  (``is_retryable_assistant_error``); never quota, billing or a context overflow.
* Up to ``max_retries`` retries (Pi: 3) after ``base_delay * 2**(n - 1)`` seconds (Pi: 2 s,
  4 s, 8 s), or longer when the error text carries the server's own ``retry-after``; a server
  asking for more than a minute is not retried (it is a limit, not a hiccup).
* A successful assistant message resets the count, so each failing call of a long run gets the
  whole budget.
* The failed message leaves the agent's transcript before the wait (the live view keeps it),
  then ``agent.continue_()`` runs the call again. Stop or a kernel interrupt during the wait
  ends the run as aborted at once.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ...agent import Agent
from ...ai.abort import AbortController
from ...ai.overflow import is_context_overflow
from ...ai.retry import is_retryable_assistant_error, sleep_unless_aborted
from ..tools.references import truncate
from ..view.run_view import RunView

MAX_REQUESTED_DELAY_S = 60.0
"""A server asking to wait longer than this has hit a limit; its error stands."""

# "Server requested 30s retry delay", "retry after 5 seconds", "Please retry in 26.2s",
# "try again in 20s", Google's "retryDelay": "26s".
_REQUESTED = (
    re.compile(r"requested (\d+(?:\.\d+)?)s retry delay", re.IGNORECASE),
    re.compile(
        r"(?:retry|try again)(?:[- ]after)?:?\s+(?:in\s+)?(\d+(?:\.\d+)?)\s*"
        r"(ms|s|secs?|seconds?|m|mins?|minutes?|h|hours?)\b",
        re.IGNORECASE,
    ),
    re.compile(r"\"retryDelay\"\s*:\s*\"(\d+(?:\.\d+)?)s\"", re.IGNORECASE),
)


_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True, slots=True)
class RetrySettings:
    max_retries: int = 3
    """Retries after the failed call (0: off)."""
    base_delay: float = 2.0
    """Seconds before the first retry; doubled for each further one."""


def silent_server_bound(timeout: float, settings: RetrySettings) -> float | None:
    """The longest one model call can wait on a server that accepts the request and never
    answers: each attempt ends at the idle ``timeout`` and is retried (a timeout is transient),
    plus the waits between attempts; ``None`` without a timeout (it waits until Stop or an
    interrupt). A server that trickles bytes slower than the timeout is not bounded by it."""
    if timeout <= 0:
        return None
    waits = sum(settings.base_delay * 2.0**n for n in range(settings.max_retries))
    return (settings.max_retries + 1) * timeout + waits


def requested_delay(error: str) -> float | None:
    """The wait in seconds the server asked for, when the error text says so."""
    for pattern in _REQUESTED:
        found = pattern.search(error)
        if found is not None:
            value = float(found.group(1))
            unit = (found.group(2) if found.re.groups > 1 else "s").lower()
            return value * _UNIT_SECONDS.get(unit, _UNIT_SECONDS.get(unit[:1], 1.0))
    return None


def first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "unknown error"
    return truncate(line, 200)


def _seconds(delay: float) -> str:
    return f"{delay:.3g} s"


class RunRetry:
    """Runs ``agent.prompt(message)`` and retries its failed provider calls; shows one notice line
    (kept in ``notices``, the runner's list of notice lines, so the frozen output keeps it)."""

    def __init__(self, agent: Agent, settings: RetrySettings, view: RunView, notices: list[str]) -> None:
        self.agent = agent
        self.settings = settings
        self.view = view
        self.notices = notices
        self.attempt = 0
        self.cancelled = False
        self._controller = AbortController()
        self._line: str | None = None
        self._error = ""

    def cancel(self) -> None:
        """Stop, interrupt: end a wait at once and retry nothing more."""
        self.cancelled = True
        self._controller.abort()

    async def run(self, prompt: Callable[[], Awaitable[None]]) -> None:
        unsubscribe = self.agent.subscribe(self._on_event)
        try:
            await prompt()
            while await self._prepare():
                await self.agent.continue_()
        finally:
            unsubscribe()

    def _on_event(self, event: Any, signal: Any = None) -> None:
        message = getattr(event, "message", None)
        if event.type != "message_end" or getattr(message, "role", None) != "assistant":
            return
        if getattr(message, "stop_reason", None) != "error" and self.attempt > 0:
            max_retries = self.settings.max_retries
            self._show(f"Recovered on retry {self.attempt} of {max_retries} after: {self._error}")
            self.attempt = 0

    def _retryable(self) -> Any:
        """The failed assistant message ending the transcript, when it may be retried."""
        messages = self.agent.state.messages
        last = messages[-1] if messages else None
        if self.cancelled or getattr(last, "role", None) != "assistant":
            return None
        model = self.agent.state.model
        if not is_retryable_assistant_error(last) or is_context_overflow(last, model.context_window):
            return None
        return last

    async def _prepare(self) -> bool:
        """After a run ended: wait and drop the failed message when a retry is due (True)."""
        failed = self._retryable()
        if failed is None:
            self._give_up()
            return False
        error = failed.error_message or "Unknown error"
        requested = requested_delay(error)
        if self.attempt >= self.settings.max_retries or (requested or 0) > MAX_REQUESTED_DELAY_S:
            self._give_up()
            return False
        self.attempt += 1
        self._error = first_line(error)
        max_retries = self.settings.max_retries
        delay = max(self.settings.base_delay * 2 ** (self.attempt - 1), requested or 0.0)
        self.agent.state.messages = self.agent.state.messages[:-1]
        reopen(self.view)
        self._show(f"Retrying in {_seconds(delay)}, {self.attempt} of {max_retries}: {self._error}")
        try:
            woke = await self._sleep(delay)
        except asyncio.CancelledError:  # a kernel interrupt cancels the cell: the runner records it
            self._end_waiting()
            raise
        if not woke:
            self._end_waiting()
            return False
        self._show(f"Retry {self.attempt} of {max_retries} after: {self._error}")
        return True

    def _end_waiting(self) -> None:
        """Stopped during the wait: the run ends here, shown as a stopped stream is."""
        self.view.state.stop_reason = "aborted"
        self.view.state.finished = True
        max_retries = self.settings.max_retries
        self._show(f"Retry {self.attempt} of {max_retries} cancelled after: {self._error}")

    def _give_up(self) -> None:
        messages = self.agent.state.messages
        last = messages[-1] if messages else None
        if self.attempt > 0 and getattr(last, "stop_reason", None) == "error":
            noun = "attempt" if self.attempt == 1 else "attempts"
            self._show(f"Retry failed after {self.attempt} {noun}.")  # the error is shown above
        self.attempt = 0

    async def _sleep(self, seconds: float) -> bool:
        """Wait unless cancelled first; False when cancelled."""
        return await sleep_unless_aborted(seconds, self._controller.signal)

    def _show(self, line: str) -> None:
        if self._line is not None and self._line in self.notices:
            self.notices[self.notices.index(self._line)] = line
        else:
            self.notices.append(line)
        self._line = line
        self.view.set_notice("\n".join(self.notices))


def reopen(view: RunView) -> None:
    """The view after a failed call that will be retried: running again, no error shown (the
    notice says what failed); the retried call's events then draw as usual."""
    state = view.state
    state.finished = False
    state.stop_reason = None
    state.error_message = None
    state.rev += 1
