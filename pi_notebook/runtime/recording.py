"""What an ``AgentSession`` says about its session file: the manager's ``WriteNotice`` lines
(the file cannot be written and the conversation goes on in memory, it is written again,
another process writes it too) become ``session_write`` events. A notice that comes while no
listener hears ``session_write`` (say, an entry appended between two runs) waits and is
emitted when the next prompt starts, so whoever watches a run is told, once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..session import SessionManager, WriteNotice
from .events import AgentSessionEvent, SessionWriteEvent

Listeners = Callable[[], Sequence[tuple[object, frozenset[str] | None]]]


class WriteNotices:
    """See the module docstring; ``stop()`` stops listening to the manager."""

    def __init__(
        self, manager: SessionManager, emit: Callable[[AgentSessionEvent], None], listeners: Listeners
    ) -> None:
        self._emit = emit
        self._listeners = listeners
        self._waiting: list[SessionWriteEvent] = []
        self.stop = manager.on_write_notice(self._notice)

    def use(self, manager: SessionManager) -> None:
        """Listen to ``manager`` instead (the session switched files); nothing waiting is kept."""
        self.stop()
        self._waiting = []
        self.stop = manager.on_write_notice(self._notice)

    def _heard(self) -> bool:
        return any(types is None or "session_write" in types for _, types in self._listeners())

    def _notice(self, notice: WriteNotice) -> None:
        event = SessionWriteEvent(notice.kind, notice.text)
        if self._heard():
            self._emit(event)
        else:
            self._waiting.append(event)

    def flush(self) -> None:
        """Emit the notices nobody heard yet (a ``write_recovered`` after a ``write_failed``
        nobody heard says nothing new: both are dropped)."""
        waiting, self._waiting = self._waiting, []
        kinds = [e.kind for e in waiting]
        if "write_failed" in kinds and kinds[-1] == "write_recovered":
            waiting = [e for e in waiting if e.kind == "shared"]
        for event in waiting:
            self._emit(event)
