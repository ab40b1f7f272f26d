"""The ``AssistantMessageEvent`` protocol: the twelve events a stream function emits.

Events are slotted dataclasses, not pydantic models: one is built per streamed token and
the hot path must stay close to raw ``json.loads`` cost. ``to_dict()`` gives Pi's JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from .types import AssistantMessage, ToolCall


def _dump(value: Any) -> Any:
    return value.model_dump() if hasattr(value, "model_dump") else value


_CAMEL = {"content_index": "contentIndex", "tool_call": "toolCall"}


@dataclass(slots=True)
class _Event:
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": getattr(self, "type")}
        slots: tuple[str, ...] = getattr(self, "__slots__", ())
        for name in slots:
            if name == "type":
                continue
            out[_CAMEL.get(name, name)] = _dump(getattr(self, name))
        return out


@dataclass(slots=True)
class StartEvent(_Event):
    partial: AssistantMessage
    type: Literal["start"] = "start"


@dataclass(slots=True)
class TextStartEvent(_Event):
    content_index: int
    partial: AssistantMessage
    type: Literal["text_start"] = "text_start"


@dataclass(slots=True)
class TextDeltaEvent(_Event):
    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["text_delta"] = "text_delta"


@dataclass(slots=True)
class TextEndEvent(_Event):
    content_index: int
    content: str
    partial: AssistantMessage
    type: Literal["text_end"] = "text_end"


@dataclass(slots=True)
class ThinkingStartEvent(_Event):
    content_index: int
    partial: AssistantMessage
    type: Literal["thinking_start"] = "thinking_start"


@dataclass(slots=True)
class ThinkingDeltaEvent(_Event):
    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["thinking_delta"] = "thinking_delta"


@dataclass(slots=True)
class ThinkingEndEvent(_Event):
    content_index: int
    content: str
    partial: AssistantMessage
    type: Literal["thinking_end"] = "thinking_end"


@dataclass(slots=True)
class ToolCallStartEvent(_Event):
    content_index: int
    partial: AssistantMessage
    type: Literal["toolcall_start"] = "toolcall_start"


@dataclass(slots=True)
class ToolCallDeltaEvent(_Event):
    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["toolcall_delta"] = "toolcall_delta"


@dataclass(slots=True)
class ToolCallEndEvent(_Event):
    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage
    type: Literal["toolcall_end"] = "toolcall_end"


DoneReason: TypeAlias = Literal["stop", "length", "toolUse"]


@dataclass(slots=True)
class DoneEvent(_Event):
    reason: DoneReason
    message: AssistantMessage
    type: Literal["done"] = "done"


@dataclass(slots=True)
class ErrorEvent(_Event):
    reason: Literal["aborted", "error"]
    error: AssistantMessage
    type: Literal["error"] = "error"


AssistantMessageEvent: TypeAlias = (
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent
)

BLOCK_EVENT_TYPES: frozenset[str] = frozenset(
    {
        "text_start",
        "text_delta",
        "text_end",
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
    }
)
