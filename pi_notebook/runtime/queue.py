"""The session's steering and follow-up queues as Pi keeps them: the texts waiting (for
``queue_update`` and ``pending_message_count``) beside the agent's own queues of messages, and
a text leaves its list when the agent starts the message made of it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from ..agent import Agent
from ..ai.types import ImageContent, TextContent, UserMessage, now_ms
from .events import AgentSessionEvent, QueueUpdateEvent

__all__ = ["SessionQueue", "StreamingBehavior", "user_message"]

StreamingBehavior = Literal["steer", "follow_up"]


def user_message(text: str, images: Sequence[ImageContent] | None = None) -> UserMessage:
    """A user message of ``text`` and ``images``, stamped now."""
    return UserMessage(content=[TextContent(text=text), *(images or ())], timestamp=now_ms())


class SessionQueue:
    """The texts queued to steer or follow up, for one session's agent."""

    def __init__(self, agent: Agent, emit: Callable[[AgentSessionEvent], None]) -> None:
        self._agent = agent
        self._emit = emit
        self.steering: list[str] = []
        self.follow_ups: list[str] = []

    def __len__(self) -> int:
        return len(self.steering) + len(self.follow_ups)

    def add(self, text: str, behavior: StreamingBehavior, images: Sequence[ImageContent] | None) -> None:
        """Queue ``text`` (already expanded) for after the turn's tools or for the end."""
        later = behavior == "follow_up"
        texts = self.follow_ups if later else self.steering
        enqueue = self._agent.follow_up if later else self._agent.steer
        texts.append(text)
        self.emit_update()
        enqueue(user_message(text, images))

    def started(self, text: str) -> None:
        """The agent started a user message of ``text``: it is no longer waiting."""
        if not text:
            return
        for queue in (self.steering, self.follow_ups):
            if text in queue:
                queue.remove(text)
                self.emit_update()
                return

    def clear(self) -> tuple[list[str], list[str]]:
        """Empty both queues; returns what was in them (steering, follow-up)."""
        steering, follow_ups = list(self.steering), list(self.follow_ups)
        self.steering.clear()
        self.follow_ups.clear()
        self._agent.clear_all_queues()
        self.emit_update()
        return steering, follow_ups

    def emit_update(self) -> None:
        self._emit(QueueUpdateEvent(list(self.steering), list(self.follow_ups)))

