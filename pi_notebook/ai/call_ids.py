"""Tool-call ids unique within a transcript, whatever the server sent.

Everything downstream keys a tool call by its id: the tool result that answers it, the approval
gate, the notebook's tool cards, the agent's pending calls. Servers do not all give unique ids:
an OpenAI-compatible server may send none (``""``) or number the calls of each response
(``call_0`` on every turn), a Gemini call may come without one. A call whose id is missing, or
already used by an earlier call or tool result of the conversation (or earlier in the same
response), gets a fresh one when the provider parses it: before any event shows it, or, for
an OpenAI-compatible call whose id comes in a later chunk or never, when it comes or at the
call's end. A Responses id ``<call_id>|<item_id>`` is checked and replaced by its call part.
That id is the call's id from then on: its tool result references it and the next request replays both
(a server accepts any id string that matches between a call and its result). Ids a server
made unique pass unchanged.

Pi does this for Gemini only, within one response (``<name>_<ms>_<counter>``); the other three
wire APIs keep the server's id there.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["CallIds", "fresh_call_id", "fresh_mistral_call_id"]


def fresh_call_id() -> str:
    """A new id every wire API accepts on replay (``[A-Za-z0-9_]``, 29 characters)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def fresh_mistral_call_id() -> str:
    """A new id in Mistral's format (exactly nine characters ``[a-zA-Z0-9]``)."""
    return uuid.uuid4().hex[:9]


def _keys(call_id: str) -> tuple[str, ...]:
    """What an id occupies: itself and, for a Responses id ``<call_id>|<item_id>``, its call part
    (a tool result references only that part, and other APIs replay that part)."""
    head = call_id.split("|", 1)[0]
    return (call_id, head) if head != call_id else (call_id,)


class CallIds:
    """The ids taken in one request's transcript, read lazily from its messages."""

    __slots__ = ("_messages", "_taken", "fresh")

    def __init__(self, messages: Iterable[Any] = (), fresh: Callable[[], str] = fresh_call_id) -> None:
        self._messages: Iterable[Any] | None = messages
        self._taken: set[str] = set()
        self.fresh = fresh
        """Makes a new id (a server with its own id format sets its maker)."""

    def _load(self) -> set[str]:
        if self._messages is not None:
            messages, self._messages = self._messages, None
            for message in messages:
                for call_id in _message_ids(message):
                    self._taken.update(_keys(call_id))
        return self._taken

    def taken(self, call_id: str) -> bool:
        """``call_id`` is empty or already used in the transcript."""
        return not call_id or any(key in self._load() for key in _keys(call_id))

    def claim(self, provided: Any, fresh: Callable[[], str] | None = None) -> str:
        """``provided`` when it is a new, non-empty string; else a fresh id (from ``fresh``,
        else the maker of this transcript's ids)."""
        call_id = provided if isinstance(provided, str) else ""
        make = fresh or self.fresh
        while self.taken(call_id):
            call_id = make()
        self._taken.update(_keys(call_id))
        return call_id


def _message_ids(message: Any) -> list[str]:
    """The tool-call ids a message uses."""
    role = getattr(message, "role", None)
    if role == "toolResult":
        return [message.tool_call_id]
    if role != "assistant":
        return []
    return [block.id for block in message.content if getattr(block, "type", None) == "toolCall"]
