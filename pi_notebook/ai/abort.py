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


async def run_abortable(awaitable: Awaitable[T], signal: AbortSignal | None) -> T:
    """Await ``awaitable``; if ``signal`` fires first, cancel it and raise :class:`AbortError`."""
    if signal is None:
        return await awaitable
    if signal.aborted:
        if inspect.iscoroutine(awaitable):
            awaitable.close()  # never started: close it so Python does not warn "never awaited"
        raise AbortError()
    task: asyncio.Future[T] = asyncio.ensure_future(awaitable)
    remove = signal.add_listener(task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        if signal.aborted and task.cancelled():
            raise AbortError() from None
        raise
    finally:
        remove()
