"""The clock of agent code: ``run_code``'s time limit and its "still running" line.

``CodeClock`` runs beside the user code ``run_code`` executes on the main thread (inside
``interruptible``, where SIGINT raises ``KeyboardInterrupt`` in that code) on a daemon thread
of its own:

* every ``TICK_SECONDS`` once ``QUIET_SECONDS`` have passed, it reports the elapsed time and
  the last line the code printed (``report``): the tool card says the code is still running;
* past ``limit`` seconds it interrupts the code the way the kernel's interrupt does, with a
  SIGINT sent to the main thread (``signal.pthread_kill``), which also breaks a ``time.sleep``
  or a blocking read; ``timed_out`` then tells ``run_code`` that the interrupt was the
  clock's, so the run goes on and the model is told.

The interrupt and the end of the code cannot cross: ``finish`` (the last statement of the code's
``try``) and the clock's decision to interrupt take one lock, so either the clock never sends
the signal or it was sent before ``finish`` returned, and ``finish`` then waits (bounded) until
Python runs its handler, so the ``KeyboardInterrupt`` lands inside the code's ``try``, never in
the code after it.

Starting the clock's thread waits for that thread to run, which under load takes a while, so
``run_code`` starts the clock (``deferred``) before it makes SIGINT raise in the code, and calls
``begin`` once it has: the clock counts from there and never signals before it.
"""

from __future__ import annotations

import signal as signals
import threading
import time
from collections.abc import Callable
from types import TracebackType

__all__ = ["QUIET_SECONDS", "TICK_SECONDS", "CodeClock", "still_running", "timed_out"]

QUIET_SECONDS = 3.0
"""How long agent code runs before its card says it is still running."""
TICK_SECONDS = 1.0
_LAST_LINE_CHARS = 120


def still_running(elapsed: float, last_line: str, limit: float | None) -> str:
    """The card's line for code running for ``elapsed`` seconds."""
    of = f" of its {limit:g} s limit" if limit else ""
    line = " ".join(last_line.split())
    if len(line) > _LAST_LINE_CHARS:
        line = line[: _LAST_LINE_CHARS - 1] + "…"
    printed = f" · last printed: {line}" if line else " · nothing printed yet"
    return f"Still running: {elapsed:.0f} s{of}{printed}"


def timed_out(limit: float | None) -> str:
    """What the model is told of code the time limit interrupted (the limit, not the elapsed
    time: the same words in every run, so a notebook's saved output stays comparable)."""
    return (
        f"TimeoutError: run_code was interrupted at its time limit of {limit or 0:g} s "
        "(--code-timeout / c.PiMagics.code_timeout). What it printed until then is above; the kernel "
        "is usable and keeps what the code did before the interrupt. Run shorter steps, or a smaller input."
    )


class CodeClock:
    """See the module docstring. ``output()`` gives what the code printed so far; ``report``
    gets the "still running" line (called on the clock's thread)."""

    def __init__(
        self,
        limit: float | None,
        output: Callable[[], str],
        report: Callable[[str], None] | None,
        *,
        quiet: float = QUIET_SECONDS,
        tick: float = TICK_SECONDS,
        deferred: bool = False,
    ) -> None:
        self.limit = limit if limit and limit > 0 else None
        self.output, self.report = output, report
        self.quiet, self.tick = quiet, tick
        self.timed_out = False
        self.elapsed = 0.0
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._begun = threading.Event()
        self._deferred = deferred
        self._main = threading.main_thread().ident
        self._thread: threading.Thread | None = None
        self._start = time.monotonic()

    @property
    def active(self) -> bool:
        """Only on the main thread: a signal cannot reach code on another one."""
        return threading.current_thread() is threading.main_thread() and (
            self.limit is not None or self.report is not None
        )

    def __enter__(self) -> CodeClock:
        if not self._deferred:
            self.begin()
        if self.active:
            self._thread = threading.Thread(target=self._watch, name="pi-code-clock", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
        if self._thread is not None:
            self._thread.join(timeout=1.0)

    def begin(self) -> None:
        """The code starts now: count from here (``deferred`` clocks wait for this)."""
        self._start = time.monotonic()
        self._begun.set()

    def stop(self) -> bool:
        """Stop the clock; True when it had already fired."""
        with self._lock:
            if not self._done.is_set():
                self._done.set()
                self.elapsed = time.monotonic() - self._start
            return self.timed_out

    def finish(self) -> None:
        """The code ended: stop the clock. When the clock interrupted it just before, the
        interrupt is taken here (``KeyboardInterrupt``), still inside the code's ``try``. (Code
        that caught the ``KeyboardInterrupt`` itself gets here with ``timed_out`` set.)"""
        already = self._done.is_set()
        if self.stop() and not already:
            for _ in range(1000):  # the pending SIGINT's handler runs at the next check
                time.sleep(0.001)

    def _watch(self) -> None:
        while not self._begun.wait(0.05):
            if self._done.is_set():
                return
        deadline = self._start + self.limit if self.limit is not None else None
        next_report = self._start + self.quiet
        while True:
            now = time.monotonic()
            wake = min(next_report, deadline) if deadline is not None else next_report
            if self._done.wait(max(0.0, wake - now)):
                return
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                self._interrupt()
                return
            if now >= next_report:
                next_report = now + self.tick
                self._tell(now - self._start)

    def _tell(self, elapsed: float) -> None:
        if self.report is None:
            return
        try:
            lines = self.output().rstrip().splitlines()
            self.report(still_running(elapsed, lines[-1] if lines else "", self.limit))
        except Exception:  # a view that cannot draw must not end the code or the clock
            pass

    def _interrupt(self) -> None:
        with self._lock:
            if self._done.is_set() or self._main is None:
                return
            self.timed_out = True
            self.elapsed = time.monotonic() - self._start
            signals.pthread_kill(self._main, signals.SIGINT)
