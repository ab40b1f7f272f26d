"""Summaries of user values, bounded in time and interruptible.

A summary runs the value's own code (``__repr__``, ``__len__``, a library's formatting), which
may take a minute or never end. Run on the kernel's main thread it would hold the kernel's loop:
no Stop, no kernel interrupt (the run's SIGINT handler only schedules a cancellation on that
loop). So :func:`run_bounded` runs it on a daemon thread of its own while the tool awaits it
on the loop, which stays free (``wait_bounded`` is the same for a caller that is not on the loop,
such as the `` $`expr` `` references of a prompt: it blocks that caller for at most as long):

* the summary ends in time: its result (or its exception) is the tool's;
* ``SUMMARY_SECONDS`` pass, Stop fires the run's signal, or a kernel interrupt cancels the
  cell: the tool stops waiting at once. A thread cannot be killed, so the summary is abandoned:
  it runs to its end in the background and its result is dropped. :class:`SummaryTimedOut`
  says so, and the tool tells the model (and the user, on the card) which value was slow;
* a value whose abandoned summary is still running (past ``SUMMARY_SECONDS``) is not summarised
  again (:class:`SummaryStillRunning`), so asking twice does not pile up threads on it; two
  summaries of one value at once (parallel tool calls) both run.

The threads are kept: one that finished its summary waits (idle) for the next, so a warm tool
call hands its work over instead of starting a thread (a thread start costs several times a
handover). A summary never waits for a busy thread: when none is idle (one is running an
abandoned summary), a new one is started.

Reading the namespace from another thread is safe (dict reads); the summary code is the value's
own, which the user's own cells could be running at the same time once the run has ended: the
same as any background thread of theirs.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TypeVar, cast

from ...ai.abort import AbortSignal, run_abortable

__all__ = [
    "SUMMARY_SECONDS",
    "SummaryStillRunning",
    "SummaryTimedOut",
    "run_bounded",
    "summarising",
    "wait_bounded",
]

T = TypeVar("T")

SUMMARY_SECONDS = 5.0
"""How long one tool call may spend summarising values."""

QUICK_SECONDS = 0.002
"""How long a summary is waited for without giving the loop back (see ``run_bounded``)."""

_running: dict[int, list[Any]] = {}
"""id() of a value being summarised -> [its name, when the oldest summary of it started, how many
run now]. Two summaries of one value at once are fine (parallel tool calls); one running past
``SUMMARY_SECONDS`` was abandoned, and its value is refused until it ends."""
_running_lock = threading.Lock()


_idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()


class _Worker:
    """A daemon thread that runs one job at a time and goes back to ``_idle`` after each."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="pi-summary", daemon=True).start()

    def _serve(self) -> None:
        while True:
            self._jobs.get()()
            _idle.put(self)

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)


def _start(job: Callable[[], None]) -> None:
    """``job`` on an idle summary thread, or on a new one when every thread is busy."""
    try:
        worker = _idle.get_nowait()
    except queue.Empty:
        worker = _Worker()
    worker.submit(job)


class SummaryTimedOut(Exception):
    """A summary did not finish in time and was abandoned."""


class SummaryStillRunning(Exception):
    """An earlier, abandoned summary of the same value is still running."""


@contextmanager
def summarising(value: Any, name: str) -> Iterator[None]:
    """Mark ``value`` as being summarised (as ``name``) while the block runs; refuse with
    :class:`SummaryStillRunning` when an abandoned summary of it has not ended yet."""
    key = id(value)
    with _running_lock:
        entry = _running.get(key)
        if entry is not None and time.monotonic() - entry[1] >= SUMMARY_SECONDS:
            raise SummaryStillRunning(
                f"An earlier summary of {entry[0]} is still running in the background "
                "(its code is slow), so it was not started again. Use run_code for a narrower look."
            )
        if entry is None:
            _running[key] = entry = [name, time.monotonic(), 0]
        entry[2] += 1
    try:
        yield
    finally:
        with _running_lock:
            entry[2] -= 1
            if entry[2] == 0:
                _running.pop(key, None)


async def run_bounded(
    fn: Callable[[], T], *, what: str, seconds: float | None = None, signal: AbortSignal | None = None
) -> T:
    """``fn()`` on its own thread, awaited for at most ``seconds`` (``SUMMARY_SECONDS``) and
    until ``signal`` fires; ``what`` names the summary in the timeout's message.

    A summary that ends within ``QUICK_SECONDS`` (almost all) is waited for on the spot: the
    loop is held that long at most, and the result needs no trip through the loop (a wake-up
    of its selector, a callback, a future). A longer one is awaited on the loop as above."""
    seconds = SUMMARY_SECONDS if seconds is None else seconds
    loop = asyncio.get_running_loop()
    lock = threading.Lock()
    finished = threading.Event()
    handed: list[asyncio.Future[T]] = []  # the future awaited once the quick wait is over
    outcomes: list[tuple[bool, Any]] = []  # (ok, result or exception)

    def settle(future: asyncio.Future[T], ok: bool, outcome: Any) -> None:
        if future.done():
            return  # abandoned: nobody waits any more
        if ok:
            future.set_result(outcome)
        else:
            future.set_exception(outcome)

    def work() -> None:
        outcome: Any
        try:
            ok, outcome = True, fn()
        except BaseException as exc:  # handed to the waiting tool as it is
            ok, outcome = False, exc
        with lock:
            outcomes.append((ok, outcome))
            waiting = handed[0] if handed else None
        finished.set()
        if waiting is not None:
            with suppress(RuntimeError):  # the loop is closed: the kernel is going away
                loop.call_soon_threadsafe(settle, waiting, ok, outcome)

    _start(work)
    quick = signal is None or not signal.aborted
    if quick and finished.wait(min(QUICK_SECONDS, seconds)):
        return cast(T, _outcome(outcomes[0]))
    with lock:
        if outcomes:
            return cast(T, _outcome(outcomes[0]))
        future: asyncio.Future[T] = loop.create_future()
        handed.append(future)
    try:
        return await asyncio.wait_for(run_abortable(asyncio.shield(future), signal), seconds)
    except TimeoutError:
        raise SummaryTimedOut(
            f"The summary of {what} did not finish within {seconds:g} s (its own code, such as "
            "__repr__, is slow), so it was abandoned; it may still finish in the background. "
            "Use run_code for a narrower look, e.g. type(x) or len(x)."
        ) from None


def _outcome(done: tuple[bool, Any]) -> Any:
    """The summary's result, or its exception raised here."""
    ok, outcome = done
    if ok:
        return outcome
    raise outcome


def wait_bounded(fn: Callable[[], T], *, what: str, seconds: float | None = None) -> T:
    """``fn()`` on its own thread, waited for (blocking) at most ``seconds``
    (``SUMMARY_SECONDS``); :class:`SummaryTimedOut` after that, the thread abandoned."""
    seconds = SUMMARY_SECONDS if seconds is None else seconds
    done = threading.Event()
    outcome: list[Any] = []

    def work() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:  # handed to the caller as it is
            outcome.append((False, exc))
        done.set()

    threading.Thread(target=work, name=f"pi-summary {what}", daemon=True).start()
    if not done.wait(seconds):
        raise SummaryTimedOut(
            f"The summary of {what} did not finish within {seconds:g} s (its own code, such as "
            "__repr__, is slow), so it was abandoned; it may still finish in the background."
        )
    ok, result = outcome[0]
    if not ok:
        raise result
    return result  # type: ignore[no-any-return]
