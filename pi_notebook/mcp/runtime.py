"""The one background event loop that every MCP connection of the process lives on.

The SDK's transports and sessions are anyio task groups and cancel scopes, which must be
entered and left by the same task. A connection therefore cannot live on the kernel's loop
between cells (each cell is a different task, and a kernel restart of the loop would kill it):
it lives in its own long-lived task on this loop, in a daemon thread started on first use.

Callers on another loop (the kernel's) hand coroutines over with :func:`run_coroutine_threadsafe`
and await the result through :func:`asyncio.wrap_future`, so they never block their own loop.
At interpreter exit every registered cleanup runs (closing servers, so no child process is
left behind) before the loop stops.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["BackgroundLoop", "background_loop"]

T = TypeVar("T")

EXIT_TIMEOUT = 15.0
"""Seconds the exit hook waits for servers to close (a stubborn stdio server is killed within
about five: stdin closed, two seconds' grace, SIGTERM, two more, SIGKILL)."""


class BackgroundLoop:
    """An asyncio loop running forever in a daemon thread, started lazily."""

    def __init__(self, name: str = "pi-mcp") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            return loop
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                self._start()
            assert self._loop is not None
            return self._loop

    def _start(self) -> None:
        loop = asyncio.new_event_loop()
        started = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(started.set)
            loop.run_forever()

        thread = threading.Thread(target=run, name=self._name, daemon=True)
        thread.start()
        started.wait()
        self._loop, self._thread = loop, thread

    def in_loop_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; cancelling the returned future cancels its task."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the background loop from any loop without blocking it."""
        if self.in_loop_thread():
            return await coro
        return await asyncio.wrap_future(self.submit(coro))

    def run_sync(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Block this thread (never the background loop's) until ``coro`` is done."""
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError("run_sync cannot be called on the MCP loop itself; await the coroutine.")
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"gave up after {timeout} s") from None

    def call_soon(self, callback: Callable[[], object]) -> None:
        self.loop.call_soon_threadsafe(callback)

    def stop(self) -> None:
        """Stop the loop and join its thread (used at interpreter exit)."""
        loop, thread = self._loop, self._thread
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)


_loop = BackgroundLoop()
_exit_hooks: list[Callable[[], Coroutine[Any, Any, None]]] = []


def background_loop() -> BackgroundLoop:
    """The process-wide loop all MCP connections share."""
    return _loop


def on_exit(hook: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``hook()`` on the background loop at interpreter exit (before the loop stops)."""
    _exit_hooks.append(hook)


def remove_exit_hook(hook: Callable[[], Coroutine[Any, Any, None]]) -> None:
    if hook in _exit_hooks:
        _exit_hooks.remove(hook)


async def _run_exit_hooks() -> None:
    hooks, _exit_hooks[:] = list(_exit_hooks), []
    await asyncio.gather(*(hook() for hook in hooks), return_exceptions=True)


def _at_exit() -> None:
    if not _exit_hooks or _loop._loop is None or _loop._loop.is_closed():
        return
    # exiting anyway: a failed cleanup must not mask the program's own status
    with contextlib.suppress(Exception):
        _loop.run_sync(_run_exit_hooks(), timeout=EXIT_TIMEOUT)
    _loop.stop()


atexit.register(_at_exit)
