"""Cross-provider replay of a transcript (Pi's ``transformMessages``).

Every adapter runs the history through :func:`transform_messages` before serializing it:

1. ``content`` that is ``None`` or missing becomes ``[]`` (hand-built and old histories);
2. for a model without image input, images become text placeholders;
3. assistant messages from another model lose what only their own model can replay:
   redacted thinking is dropped, other thinking becomes plain text, text loses its
   signature, tool calls lose ``thought_signature`` and may get a normalized id (tool
   results follow the renaming);
4. errored and aborted assistant turns are dropped, and tool calls left without a result
   get a synthetic ``"No result provided"`` error result.

Inputs are never mutated. Messages that need no change are returned as they are (shared,
as in Pi), so treat the result as read-only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import TypeAdapter

from .text import js_trim
from .types import (
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    TextContent,
    ToolCall,
    ToolResultMessage,
    now_ms,
)

__all__ = [
    "NON_VISION_TOOL_IMAGE_PLACEHOLDER",
    "NON_VISION_USER_IMAGE_PLACEHOLDER",
    "ToolCallIdNormalizer",
    "transform_messages",
]

NON_VISION_USER_IMAGE_PLACEHOLDER = "(image omitted: model does not support images)"
NON_VISION_TOOL_IMAGE_PLACEHOLDER = "(tool image omitted: model does not support images)"

ToolCallIdNormalizer = Callable[[str, Model, AssistantMessage], str]

_ROLES = ("user", "assistant", "toolResult")
_message_adapter: TypeAdapter[Any] | None = None


def _coerce_message(message: Any) -> Any:
    """Pydantic messages pass through; Pi-JSON dicts of the three roles become models."""
    global _message_adapter
    if not isinstance(message, Mapping):
        if getattr(message, "role", None) in _ROLES and getattr(message, "content", None) is None:
            return message.model_copy(update={"content": []})
        return message
    if message.get("content") is None:
        message = {**message, "content": []}
    if message.get("role") not in _ROLES:
        return message  # a role only the caller knows: passed through, as in Pi
    if _message_adapter is None:
        _message_adapter = TypeAdapter(Message)
    return _message_adapter.validate_python(message)


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, Mapping) else getattr(message, "role", None)


def _replace_images(content: list[Any], placeholder: str) -> list[Any] | None:
    """Images become one placeholder per run; ``None`` when there is no image."""
    if not any(getattr(block, "type", None) == "image" for block in content):
        return None
    out: list[Any] = []
    previous_was_placeholder = False
    for block in content:
        if isinstance(block, ImageContent) or getattr(block, "type", None) == "image":
            if not previous_was_placeholder:
                out.append(TextContent(text=placeholder))
            previous_was_placeholder = True
            continue
        out.append(block)
        previous_was_placeholder = getattr(block, "text", None) == placeholder
    return out


def _downgrade_images(message: Any) -> Any:
    role = _role(message)
    if role == "user" and isinstance(message.content, list):
        content = _replace_images(message.content, NON_VISION_USER_IMAGE_PLACEHOLDER)
    elif role == "toolResult":
        content = _replace_images(message.content, NON_VISION_TOOL_IMAGE_PLACEHOLDER)
    else:
        return message
    return message if content is None else message.model_copy(update={"content": content})


class _Replay:
    """First pass: per-message rewrites, remembering renamed tool-call ids for the results."""

    __slots__ = ("id_map", "model", "normalize")

    def __init__(self, model: Model, normalize: ToolCallIdNormalizer | None) -> None:
        self.model = model
        self.normalize = normalize
        self.id_map: dict[str, str] = {}

    def message(self, raw: Any) -> Any:
        message = _coerce_message(raw)
        if "image" not in self.model.input:
            message = _downgrade_images(message)
        role = _role(message)
        if role == "toolResult":
            new_id = self.id_map.get(message.tool_call_id)
            if new_id and new_id != message.tool_call_id:
                return message.model_copy(update={"tool_call_id": new_id})
        elif role == "assistant":
            return self.assistant(message)
        return message

    def assistant(self, message: AssistantMessage) -> AssistantMessage:
        model = self.model
        same = message.provider == model.provider and message.api == model.api and message.model == model.id
        content = [out for block in message.content if (out := self.block(block, same, message)) is not None]
        unchanged = len(content) == len(message.content) and all(
            a is b for a, b in zip(content, message.content, strict=True)
        )
        return message if unchanged else message.model_copy(update={"content": content})

    def block(self, block: Any, same_model: bool, source: AssistantMessage) -> Any | None:
        """The replayable form of one assistant block, or ``None`` to drop it."""
        kind = getattr(block, "type", None)
        if kind == "thinking":
            if block.redacted:
                return block if same_model else None
            if same_model and block.thinking_signature:
                return block  # encrypted reasoning replays even when its text is empty
            if not block.thinking or not js_trim(block.thinking):
                return None
            return block if same_model else TextContent(text=block.thinking)
        if kind == "text":
            return block if same_model else TextContent(text=block.text)
        if kind == "toolCall" and not same_model:
            call: ToolCall = block
            if call.thought_signature:
                call = call.model_copy(update={"thought_signature": None})
            if self.normalize is not None:
                new_id = self.normalize(block.id, self.model, source)
                if new_id != block.id:
                    self.id_map[block.id] = new_id
                    call = call.model_copy(update={"id": new_id})
            return call
        return block


def _missing_results(pending: list[ToolCall], answered: set[str]) -> list[ToolResultMessage]:
    return [
        ToolResultMessage(
            tool_call_id=call.id,
            tool_name=call.name,
            content=[TextContent(text="No result provided")],
            is_error=True,
            timestamp=now_ms(),
        )
        for call in pending
        if call.id not in answered
    ]


def transform_messages(
    messages: Iterable[Any], model: Model, normalize_tool_call_id: ToolCallIdNormalizer | None = None
) -> list[Any]:
    """The history ``model`` can replay (see the module docstring for the rules).

    ``messages`` are pydantic messages or Pi-JSON dicts; ``normalize_tool_call_id(id,
    model, source_message)`` rewrites tool-call ids coming from other models.
    """
    result: list[Any] = []
    pending: list[ToolCall] = []
    answered: set[str] = set()
    replay = _Replay(model, normalize_tool_call_id)
    for message in [replay.message(raw) for raw in messages]:
        role = _role(message)
        if role == "assistant":
            result.extend(_missing_results(pending, answered))
            pending, answered = [], set()
            if message.stop_reason in ("error", "aborted"):
                continue  # incomplete turns are never replayed
            pending = [block for block in message.content if getattr(block, "type", None) == "toolCall"]
        elif role == "toolResult":
            answered.add(message.tool_call_id)
        elif role == "user":
            result.extend(_missing_results(pending, answered))
            pending, answered = [], set()
        result.append(message)
    result.extend(_missing_results(pending, answered))
    return result
