"""Kernel interrupts (SIGINT) during a ``%%pi`` run, and the fallback's main-thread bridge.

A kernel interrupt must stop the run cleanly wherever it lands:

* in the awaited path, ipykernel's handler cancels the cell's task, and the agent closes its
  run with ``stopReason "aborted"``; ``watch_sigint`` wakes the kernel's loop so that the
  cancellation runs at once, and remembers the interrupt so that
  ``run_code``, which runs synchronous user code, notices one that came just before it
  swapped in Python's own handler (``interruptible``), which turns SIGINT into
  ``KeyboardInterrupt`` inside the user code;
* in the fallback (``run_pi_sync``), the agent runs on a worker thread and the main thread
  waits in ``MainThreadBridge.serve``, running the tools that must run there; a
  ``KeyboardInterrupt`` there is turned into an abort of the run.

Signals live on the main thread: every helper here does nothing on another thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import signal as signals
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["MainThreadBridge", "interruptible", "raise_if_interrupted", "watch_sigint"]

T = TypeVar("T")

_sigint_pending = threading.Event()


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def watch_sigint() -> Iterator[None]:
    """For a whole awaited run: remember every SIGINT, then pass it on to ipykernel's handler.

    ipykernel's handler only schedules a callback on the loop, which synchronous user code in
    ``run_code`` would not yield to. An interrupt that lands after the tool card shows
    "running" but before ``run_code`` swaps in Python's handler would otherwise be lost until
    the user code ends; ``run_code`` checks this flag instead.
    """
    if not _on_main_thread():
        yield
        return
    previous = signals.getsignal(signals.SIGINT)
    loop = _running_loop()

    def record(signum: int, frame: Any) -> None:
        _sigint_pending.set()
        if callable(previous):
            previous(signum, frame)
        elif previous == signals.SIG_DFL:
            raise KeyboardInterrupt
        if loop is not None and not loop.is_closed():
            # ipykernel's handler schedules the cancellation with tornado's add_callback, which
            # from inside the running loop is a plain call_soon: it does not wake a loop asleep
            # in select(). A headless run waiting for a silent server has nothing else to wake
            # it, so the interrupt would land only when the server answered or the request
            # timed out. Wake the loop so the cancellation runs now.
            loop.call_soon_threadsafe(_wake)

    _sigint_pending.clear()
    signals.signal(signals.SIGINT, record)
    try:
        yield
    finally:
        signals.signal(signals.SIGINT, previous)
        _sigint_pending.clear()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _wake() -> None:
    """Nothing: scheduling it thread-safely wakes the loop."""


@contextmanager
def interruptible() -> Iterator[None]:
    """Let a kernel interrupt raise ``KeyboardInterrupt`` in user code run by ``run_code``.

    In an awaiting cell ipykernel replaces the SIGINT handler with one that only cancels the
    cell's task, which cannot stop synchronous code.

    The ``KeyboardInterrupt`` may come at any bytecode from the swap on, this function's own
    included, so the caller must enter this inside the ``try`` that catches it, and keep
    anything that may wait (starting or joining a thread) out of it: a ``KeyboardInterrupt``
    that escapes into the kernel's event loop stops the loop, and ipykernel then exits.
    """
    if not _on_main_thread():
        yield
        return
    saved = signals.getsignal(signals.SIGINT)
    try:  # the swap inside the try: an interrupt right after it still restores the handler
        signals.signal(signals.SIGINT, signals.default_int_handler)
        yield
    finally:
        signals.signal(signals.SIGINT, saved)


def raise_if_interrupted() -> None:
    """Raise ``KeyboardInterrupt`` if a SIGINT arrived since ``watch_sigint`` began."""
    if _sigint_pending.is_set():
        raise KeyboardInterrupt


class MainThreadBridge:
    """Runs callables from the agent's worker thread on the main thread, which waits in ``serve``."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]] | None] = (
            queue.SimpleQueue()
        )

    async def dispatch(self, fn: Callable[[], T]) -> T:
        if _on_main_thread():
            return fn()
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._jobs.put((fn, future))
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        self._jobs.put(None)

    def serve(self) -> None:
        """Run jobs until ``close``. A ``KeyboardInterrupt`` propagates; call again to resume."""
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except KeyboardInterrupt:
                # The tool fails like any tool; the caller turns the interrupt into an abort.
                future.set_exception(RuntimeError("interrupted"))
                raise
            except BaseException as exc:
                future.set_exception(exc)
