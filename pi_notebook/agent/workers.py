"""Worker threads for sync tool code: :func:`run_in_worker`, ``asyncio.to_thread`` on a pool of
our own.

Sync code never runs on the event loop (in a notebook that is the kernel's loop, where a
blocking call would freeze the Stop button), so every call of a sync tool is a hop to a worker
thread and back. For a fast tool that hop is most of what the call costs, and it is kept to
the minimum: the job goes on a ``SimpleQueue`` and comes back with one
``call_soon_threadsafe``, and only when the call outlasts ``FAST_WAIT_S``: the loop first
waits that long (half a millisecond) for the result, which a fast tool's call beats, so it
comes back with no trip through the event loop at all. ``loop.run_in_executor`` with a
``ThreadPoolExecutor`` chains a concurrent future (its own lock and condition) to an asyncio
future through two more callbacks; on the 2-vCPU project VM that cost 0.1-0.3 ms more CPU per
tool round trip, and the trip through the loop about 0.1 ms more.

* Up to ``MAX_WORKERS`` threads, started as needed and kept: a batch of blocking tools runs
  truly in parallel (asyncio's default pool has only 6 threads on 2 cores).
* Daemon threads: a tool that never returns (it ignored its abort signal) must not hold up the
  interpreter's exit.
* Context variables are carried over; what the function raises, the ``await`` raises.
* A caller that stops waiting (it was cancelled) cannot stop the thread: the call finishes in
  the background and its result is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

MAX_WORKERS = 32


class _Pool:
    """Threads taking jobs from one queue. ``_idle`` counts threads waiting for a job that no
    submitted job has claimed yet; ``_backlog`` counts jobs queued while every thread was busy
    and no more could start, which the next threads to finish take instead of waiting."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        self._backlog = 0
        self._names = itertools.count(1)

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1
            elif self._threads < MAX_WORKERS:
                self._threads += 1
                name = f"pi-tool_{next(self._names)}"
                threading.Thread(target=self._work, args=(job,), name=name, daemon=True).start()
                return
            else:
                self._backlog += 1
        self._jobs.put(job)

    def _work(self, job: Callable[[], None]) -> None:
        while True:
            job()
            with self._lock:
                if self._backlog:
                    self._backlog -= 1
                else:
                    self._idle += 1
            job = self._jobs.get()


_pool = _Pool()


def _forget_threads() -> None:
    """A forked child has none of the parent's threads: counting them would queue its jobs for
    threads that do not exist."""
    global _pool
    _pool = _Pool()


os.register_at_fork(after_in_child=_forget_threads)


FAST_WAIT_S = 0.0005
"""How long the event loop waits, blocked, for a call to come back before it awaits the call
instead. A fast tool (most are: a lookup, a small computation) then returns without a round
through the event loop (the self-pipe write, the wake-up and two more loop iterations); the
loop is held for at most half a millisecond, which no Stop button or output can notice."""


class _Call:
    """One call's way back. The worker stores ``outcome``, then releases ``returned``, then
    settles ``future`` if the loop has stopped waiting and made one. Under the GIL those steps
    and the loop's (make ``future``, then look at ``outcome``) cannot interleave so that the
    outcome is lost: the loop either finds it or gets it through the future."""

    __slots__ = ("future", "loop", "outcome", "returned")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.returned = threading.Lock()
        self.returned.acquire()
        self.outcome: tuple[Any, BaseException | None] | None = None
        self.future: asyncio.Future[Any] | None = None

    def finish(self, outcome: tuple[Any, BaseException | None]) -> None:
        self.outcome = outcome
        self.returned.release()
        future = self.future
        if future is not None:
            with contextlib.suppress(RuntimeError):  # a closed loop (kernel shutdown): nobody waits
                self.loop.call_soon_threadsafe(_settle, future, *outcome)


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():  # the caller was cancelled, or found the outcome without the future
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


async def run_in_worker(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in a worker thread, with the caller's context variables."""
    call = _Call(asyncio.get_running_loop())
    context = contextvars.copy_context()

    def job() -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (context.run(fn, *args, **kwargs), None)
        except BaseException as exc:  # delivered to the awaiting caller, like any result
            outcome = (None, exc)
        call.finish(outcome)

    _pool.submit(job)
    if not call.returned.acquire(timeout=FAST_WAIT_S):
        call.future = call.loop.create_future()
        if call.outcome is None:  # still running: from here on the loop goes on meanwhile
            value: T = await call.future
            return value
    value, error = call.outcome  # type: ignore[misc]
    if error is not None:
        raise error
    return value
