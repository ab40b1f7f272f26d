"""The ``Agent``'s steering and follow-up queues (Pi's ``PendingMessageQueue``).

``"one-at-a-time"`` drains the oldest message only, so each queued message gets its own turn;
``"all"`` drains everything at once. The mode may change at any time, even mid-run.
"""

from __future__ import annotations

from .types import AgentMessage, QueueMode


class PendingMessageQueue:
    __slots__ = ("_messages", "mode")

    def __init__(self, mode: QueueMode = "one-at-a-time") -> None:
        self.mode: QueueMode = mode
        self._messages: list[AgentMessage] = []

    def enqueue(self, message: AgentMessage) -> None:
        self._messages.append(message)

    def has_items(self) -> bool:
        return bool(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def drain(self) -> list[AgentMessage]:
        if self.mode == "all":
            drained, self._messages = self._messages, []
            return drained
        if not self._messages:
            return []
        return [self._messages.pop(0)]

    def clear(self) -> None:
        self._messages = []
