"""``EventStream``: a single-consumer async queue of events plus a separate result future.

``push`` is synchronous and cheap (a deque append, and waking the consumer only when it is
blocked), so producers can call it from any code running on the loop. The completing event
(``isComplete``) resolves ``result()`` and is still delivered; iteration stops after it or
after ``end()``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, Generic, Literal, TypeVar

from .events import AssistantMessageEvent, DoneEvent, ErrorEvent
from .types import AssistantMessage, Model, Usage

E = TypeVar("E")
R = TypeVar("R")

_background_tasks: set[asyncio.Task[Any]] = set()


def spawn(coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
    """Start a background task and keep a strong reference until it finishes."""
    task = asyncio.get_running_loop().create_task(coro)
    _background_tasks.add(task)
    task.add_done_callback(_background_tasks.discard)
    return task


class EventStream(Generic[E, R]):
    __slots__ = (
        "_done",
        "_extract",
        "_final",
        "_has_final",
        "_is_complete",
        "_pending_start",
        "_queue",
        "_result_waiters",
        "_waiter",
    )

    def __init__(self, is_complete: Callable[[E], bool], extract_result: Callable[[E], R]) -> None:
        self._is_complete = is_complete
        self._extract = extract_result
        self._queue: deque[E] = deque()
        self._done = False
        self._waiter: asyncio.Future[None] | None = None
        self._final: R | None = None
        self._has_final = False
        self._result_waiters: list[asyncio.Future[None]] = []
        self._pending_start: Callable[[], Coroutine[Any, Any, Any]] | None = None

    # -- producer side -----------------------------------------------------------------

    def start(self, producer: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Run ``producer()`` as a task now, or on first use when no loop is running yet."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._pending_start = producer
            return
        spawn(producer())

    def _ensure_started(self) -> None:
        if self._pending_start is not None:
            producer, self._pending_start = self._pending_start, None
            spawn(producer())

    def push(self, event: E) -> None:
        if self._done:
            return
        if self._is_complete(event):
            self._done = True
            self._resolve(self._extract(event))
        self._queue.append(event)
        self._wake()

    def end(self, result: R | None = None) -> None:
        self._done = True
        if result is not None:
            self._resolve(result)
        self._wake()

    def _resolve(self, value: R) -> None:
        if self._has_final:  # the first resolution wins
            return
        self._final, self._has_final = value, True
        waiters, self._result_waiters = self._result_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    @property
    def done(self) -> bool:
        return self._done

    # -- consumer side -----------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[E]:
        self._ensure_started()
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[E]:
        queue = self._queue
        while True:
            if queue:
                yield queue.popleft()
                continue
            if self._done:
                return
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
            self._waiter = None

    async def result(self) -> R:
        """The final result; waits until the completing event or ``end(result)``."""
        self._ensure_started()
        while not self._has_final:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._result_waiters.append(fut)
            await fut
        return self._final  # type: ignore[return-value]


def _is_terminal(event: AssistantMessageEvent) -> bool:
    return event.type in ("done", "error")


def _extract_message(event: AssistantMessageEvent) -> AssistantMessage:
    if isinstance(event, DoneEvent):
        return event.message
    if isinstance(event, ErrorEvent):
        return event.error
    raise TypeError(f"not a terminal event: {event.type}")


class AssistantMessageEventStream(EventStream[AssistantMessageEvent, AssistantMessage]):
    """The stream every provider returns; ``result()`` is the final ``AssistantMessage``."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_is_terminal, _extract_message)


def error_stream(model: Model, message: str, aborted: bool = False) -> AssistantMessageEventStream:
    """A stream holding one terminal ``error`` event with an empty assistant message."""
    s = AssistantMessageEventStream()
    reason: Literal["aborted", "error"] = "aborted" if aborted else "error"
    msg = AssistantMessage(
        content=[],
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=Usage(),
        stop_reason=reason,
        error_message=message,
    )
    s.push(ErrorEvent(reason=reason, error=msg))
    s.end()
    return s
