"""``AbortController`` / ``AbortSignal``: cooperative cancellation shared by streams, tools and hooks.

Mirrors the web API Pi relies on: a signal created from an already-aborted controller is
aborted at once, listeners run exactly once (immediately if added after the abort), and the
signal is awaitable (``await signal.wait()``) so asyncio code can race it against work.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

ABORT_MESSAGE = "Request was aborted"


class AbortError(Exception):
    """Raised by helpers that run work under a signal when the signal fires."""

    def __init__(self, message: str = ABORT_MESSAGE) -> None:
        super().__init__(message)


class AbortSignal:
    __slots__ = ("_aborted", "_events", "_listeners", "reason")

    def __init__(self) -> None:
        self._aborted = False
        self.reason: Any = None
        self._listeners: list[Callable[[], Any]] = []
        self._events: list[asyncio.Event] = []

    @property
    def aborted(self) -> bool:
        return self._aborted

    def add_listener(self, listener: Callable[[], Any]) -> Callable[[], None]:
        """Run ``listener`` on abort (now, if already aborted). Returns a remover."""
        if self._aborted:
            listener()
            return lambda: None
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    def throw_if_aborted(self) -> None:
        if self._aborted:
            raise AbortError()

    async def wait(self) -> None:
        """Block until the signal is aborted."""
        if self._aborted:
            return
        event = asyncio.Event()
        self._events.append(event)
        try:
            await event.wait()
        finally:
            if event in self._events:
                self._events.remove(event)

    def _fire(self, reason: Any) -> None:
        if self._aborted:
            return
        self._aborted = True
        self.reason = reason
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            with contextlib.suppress(Exception):  # a broken listener must not stop the others
                listener()
        for event in self._events:
            event.set()

    def __repr__(self) -> str:
        return f"AbortSignal(aborted={self._aborted})"


class AbortController:
    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: Any = None) -> None:
        self.signal._fire(reason)


class CancelScope:
    """Cancels the task it was entered in when asked, and turns that cancellation (and only
    that one) into the exception ``error()`` builds; the pattern of ``asyncio.timeout``.

    Work under a signal or a deadline runs in the caller's own task instead of a task of its
    own: a task costs two event-loop iterations (start, and waking the awaiter), which on a
    request or a tool call is most of what such a wrapper would cost. A cancellation from
    elsewhere (the caller's own) is told apart by the task's ``cancelling()`` count and passes
    through unchanged.
    """

    __slots__ = ("_cancelling", "_error", "_task", "requested")

    def __init__(self, error: Callable[[], BaseException]) -> None:
        self._error = error
        self._task: asyncio.Task[Any] | None = None
        self._cancelling = 0
        self.requested = False

    async def __aenter__(self) -> CancelScope:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("CancelScope must be entered in an asyncio task")
        self._task, self._cancelling = task, task.cancelling()
        return self

    def cancel(self) -> None:
        """Cancel the task (once); safe to call from any callback on the task's loop."""
        if not self.requested and self._task is not None and not self._task.done():
            self.requested = True
            self._task.cancel()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> None:
        task = self._task
        if not self.requested or task is None:
            return
        cancelled = exc_type is asyncio.CancelledError
        pending = False
        if not cancelled:
            # Asked for after the work's last ``await``, the cancellation is still pending; take
            # it here, so that it neither hits the caller's next ``await`` nor goes unreported.
            try:
                await asyncio.sleep(0)
            except asyncio.CancelledError:
                pending = True
        external = task.uncancel() > self._cancelling  # the caller was cancelled too: that wins
        if pending and external:
            raise asyncio.CancelledError
        if (cancelled and not external) or (pending and exc_type is None):
            raise self._error() from None
        # otherwise not ours, or the work caught ours and went on (or raised): that stands


async def run_abortable(awaitable: Awaitable[T], signal: AbortSignal | None) -> T:
    """Await ``awaitable`` in the current task; if ``signal`` fires first, cancel it and raise
    :class:`AbortError`."""
    if signal is None:
        return await awaitable
    if signal.aborted:
        if inspect.iscoroutine(awaitable):
            awaitable.close()  # never started: close it so Python does not warn "never awaited"
        raise AbortError()
    async with CancelScope(AbortError) as scope:
        remove = signal.add_listener(scope.cancel)
        try:
            return await awaitable
        finally:
            remove()
