"""The events an extension hears and the results its handlers may return: Pi's
``ExtensionEvent`` types (``core/extensions/types.d.ts``) in snake_case.

A handler may return one of the result classes here, a ``dict`` with the same (snake_case)
keys, or ``None``; :func:`result_field` reads either. The agent's own events (``agent_start``,
``turn_start``, ``message_start``, ``message_update``, ``tool_execution_*`` ...) reach
extensions as the agent emits them (``pi_notebook.agent.types``); ``message_end`` and
``agent_end`` are the classes below so that a handler can tell them apart from a listener's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ...ai.abort import AbortSignal
from ...ai.types import ImageContent, Model

__all__ = [
    "EVENT_TYPES",
    "AgentEndEvent",
    "BeforeAgentStartEvent",
    "BeforeAgentStartResult",
    "ContextEvent",
    "ContextResult",
    "InputEvent",
    "InputResult",
    "MessageEndEvent",
    "MessageEndResult",
    "ModelSelectEvent",
    "SessionBeforeCompactEvent",
    "SessionBeforeCompactResult",
    "SessionShutdownEvent",
    "SessionStartEvent",
    "ToolCallEvent",
    "ToolCallResult",
    "ToolResultEvent",
    "ToolResultResult",
    "result_field",
]

EVENT_TYPES = frozenset(
    {
        "session_start",
        "session_shutdown",
        "session_before_compact",
        "session_compact",
        "session_info_changed",
        "before_agent_start",
        "context",
        "input",
        "tool_call",
        "tool_result",
        "agent_start",
        "agent_end",
        "agent_settled",
        "turn_start",
        "turn_end",
        "message_start",
        "message_update",
        "message_end",
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
        "model_select",
    }
)
"""The events ``pi.on`` accepts here (Pi's others are listed in docs/design.md)."""


def result_field(result: Any, name: str) -> Any:
    """``name`` of a handler's result: an attribute, a ``dict`` key, or ``None``."""
    if result is None:
        return None
    if isinstance(result, dict):
        return result.get(name)
    return getattr(result, name, None)


@dataclass
class SessionStartEvent:
    reason: Literal["startup", "reload", "new", "resume", "fork"] = "startup"
    previous_session_file: str | None = None
    type: Literal["session_start"] = "session_start"


@dataclass
class SessionShutdownEvent:
    reason: Literal["quit", "reload", "new", "resume", "fork"] = "quit"
    target_session_file: str | None = None
    type: Literal["session_shutdown"] = "session_shutdown"


@dataclass
class InputEvent:
    """The prompt as the user wrote it, before templates are expanded."""

    text: str
    images: list[ImageContent] | None = None
    source: Literal["interactive", "rpc", "extension"] = "interactive"
    streaming_behavior: Literal["steer", "follow_up"] | None = None
    type: Literal["input"] = "input"


@dataclass
class InputResult:
    """``continue`` (the default), ``transform`` (use ``text`` / ``images``) or ``handled``
    (nothing is sent to the model)."""

    action: Literal["continue", "transform", "handled"] = "continue"
    text: str = ""
    images: list[ImageContent] | None = None


@dataclass
class BeforeAgentStartEvent:
    prompt: str
    images: list[ImageContent] | None
    system_prompt: str
    type: Literal["before_agent_start"] = "before_agent_start"


@dataclass
class BeforeAgentStartResult:
    """``message``: a custom message (``custom_type``, ``content``, ``display``, ``details``)
    sent after the prompt; ``system_prompt``: the system prompt of this run (chained)."""

    message: Any = None
    system_prompt: str | None = None


@dataclass
class ContextEvent:
    """The messages of the next model request (a copy: handlers may change them)."""

    messages: list[Any]
    type: Literal["context"] = "context"


@dataclass
class ContextResult:
    messages: list[Any] | None = None


@dataclass
class ToolCallEvent:
    """Before a tool runs. Change ``input`` in place to change the arguments."""

    tool_name: str
    tool_call_id: str
    input: Any
    type: Literal["tool_call"] = "tool_call"


@dataclass
class ToolCallResult:
    block: bool = False
    reason: str | None = None


@dataclass
class ToolResultEvent:
    tool_name: str
    tool_call_id: str
    input: Any
    content: list[Any]
    details: Any
    is_error: bool
    type: Literal["tool_result"] = "tool_result"


@dataclass
class ToolResultResult:
    """Each field given replaces the result's (later handlers see the replaced values)."""

    content: list[Any] | None = None
    details: Any = None
    is_error: bool | None = None


@dataclass
class MessageEndEvent:
    message: Any
    type: Literal["message_end"] = "message_end"


@dataclass
class MessageEndResult:
    """A replacement for the finished message; it must keep the message's role."""

    message: Any = None


@dataclass
class AgentEndEvent:
    messages: list[Any]
    type: Literal["agent_end"] = "agent_end"


@dataclass
class ModelSelectEvent:
    model: Model
    previous_model: Model | None
    source: Literal["set", "cycle", "restore"] = "set"
    type: Literal["model_select"] = "model_select"


@dataclass
class SessionBeforeCompactEvent:
    preparation: Any
    branch_entries: list[Any]
    custom_instructions: str | None
    reason: Literal["manual", "threshold", "overflow"]
    will_retry: bool
    signal: AbortSignal | None = None
    type: Literal["session_before_compact"] = "session_before_compact"


@dataclass
class SessionBeforeCompactResult:
    """``cancel``: no compaction; ``compaction``: a ``CompactionResult`` used in place of the
    model's summary."""

    cancel: bool = False
    compaction: Any = None

