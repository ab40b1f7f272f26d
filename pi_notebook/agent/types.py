"""Types of the agent layer (Pi's ``packages/agent/src/types.ts``): transcript messages, tools
and their results, hook contexts, the loop config, the ten ``AgentEvent`` types, and
:func:`emit_event`, the one way the layer hands an event to a sink.

Contracts written on the types, as in Pi:
* ``AgentTool.execute`` raises on failure; the loop turns the exception into an error result.
* Hooks (``before_tool_call`` / ``after_tool_call``) may be sync or async; an
  ``AfterToolCallResult`` field that is not ``None`` replaces the executed value wholesale.
* Events are plain slotted dataclasses; ``to_dict()`` gives Pi's camelCase JSON.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from inspect import isawaitable
from typing import Any, Literal, Protocol, TypeAlias, cast

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from ..ai.abort import AbortSignal
from ..ai.event_stream import AssistantMessageEventStream
from ..ai.events import AssistantMessageEvent
from ..ai.levels import ModelThinkingLevel
from ..ai.options import SimpleStreamOptions
from ..ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    LlmMessage,
    Model,
    TextContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

ThinkingLevel: TypeAlias = ModelThinkingLevel
"""The agent's reasoning setting: ``"off"`` or one of the model levels. It is the same type as
``pi_notebook.ai.ModelThinkingLevel``; ``pi_notebook.ai.ThinkingLevel`` is the narrower
request-level type without ``"off"`` (the agent sends ``reasoning=None`` for ``"off"``)."""
ToolExecutionMode: TypeAlias = Literal["sequential", "parallel"]
QueueMode: TypeAlias = Literal["all", "one-at-a-time"]


class CustomAgentMessage(Protocol):
    """A transcript entry of the application's own: any object with a ``role`` outside
    ``user``/``assistant``/``toolResult`` (in practice a pydantic model, so that it dumps to
    JSON). The model never sees it directly, only what ``convert_to_llm`` makes of it."""

    @property
    def role(self) -> str: ...


AgentMessage: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage | CustomAgentMessage
"""A transcript entry: one of the three roles every provider understands, or a custom message."""

ConvertToLlm: TypeAlias = Callable[
    [list[AgentMessage]], "Sequence[LlmMessage] | Awaitable[Sequence[LlmMessage]]"
]
"""Maps the transcript to what the provider sees (custom roles converted or dropped)."""
TransformContext: TypeAlias = Callable[
    [list[AgentMessage], AbortSignal | None], "list[AgentMessage] | Awaitable[list[AgentMessage]]"
]
"""Prunes or extends the transcript before every model call; runs before ``ConvertToLlm``."""
MessageSource: TypeAlias = Callable[[], "Sequence[AgentMessage] | Awaitable[Sequence[AgentMessage]]"]
"""A queue poll: the steering or follow-up messages to inject now (empty when none)."""


class StreamFn(Protocol):
    def __call__(
        self, model: Model, context: Context, options: SimpleStreamOptions, /
    ) -> AssistantMessageEventStream | Awaitable[AssistantMessageEventStream]: ...


# --- tools ---------------------------------------------------------------------------------


@dataclass(kw_only=True)
class AgentToolResult:
    content: list[TextContent | ImageContent] = field(default_factory=list)
    details: Any = None
    usage: Usage | None = None
    added_tool_names: list[str] | None = None
    terminate: bool | None = None

    @classmethod
    def error(cls, text: str) -> AgentToolResult:
        """The loop's error result: one text block and empty details, as Pi's."""
        return cls(content=[TextContent(text=text)], details={})

    @classmethod
    def of(cls, value: Any) -> AgentToolResult:
        """Coerce what a tool returned: a result as is; a ``str`` as one text block; a text or
        image block, or a non-empty list of them, as the content; anything else as JSON text
        (pydantic models via ``model_dump_json``), or ``repr`` when not JSON-serialisable (so
        ``None`` reads ``null``)."""
        if isinstance(value, AgentToolResult):
            return value
        if isinstance(value, str):
            return cls(content=[TextContent(text=value)])
        if isinstance(value, TextContent | ImageContent):
            return cls(content=[value])
        if (
            isinstance(value, list | tuple)
            and value
            and all(isinstance(v, TextContent | ImageContent) for v in value)
        ):
            return cls(content=list(value))
        if isinstance(value, BaseModel):
            return cls(content=[TextContent(text=value.model_dump_json())])
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            text = repr(value)
        return cls(content=[TextContent(text=text)])

    def to_dict(self) -> dict[str, Any]:
        """Pi's JSON: absent (``None``) fields are left out, as ``JSON.stringify`` drops
        ``undefined``."""
        out: dict[str, Any] = {"content": [b.model_dump() for b in self.content]}
        if self.details is not None:
            out["details"] = _plain(self.details)
        if self.usage is not None:
            out["usage"] = self.usage.model_dump()
        if self.added_tool_names:
            out["addedToolNames"] = list(self.added_tool_names)
        if self.terminate is not None:
            out["terminate"] = self.terminate
        return out


AgentToolUpdateCallback: TypeAlias = Callable[[AgentToolResult], None]
ToolExecute: TypeAlias = Callable[
    [str, Any, AbortSignal | None, AgentToolUpdateCallback | None],
    "Awaitable[AgentToolResult] | AgentToolResult",
]


class UntitledJsonSchema(GenerateJsonSchema):
    """pydantic's JSON schema without the ``title`` keys it derives from field, model and enum
    names. Pi's tool schemas carry none, and a model that sees ``"title": "City"`` next to
    every property may copy the titles into its arguments. Every ``description`` stays, and
    so do titles set explicitly (``Field(title=...)``; a model's ``ConfigDict(title=...)``
    unless it equals the class name)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def generate(self, schema: core_schema.CoreSchema, mode: Any = "validation") -> JsonSchemaValue:
        result = super().generate(schema, mode)
        # a nested model or enum is a definition named after its class, with that as its title
        for name, definition in result.get("$defs", {}).items():
            if isinstance(definition, dict) and definition.get("title") == name:
                del definition["title"]
        return result


def model_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a pydantic model as a tool's ``parameters``: no derived titles."""
    schema = model.model_json_schema(schema_generator=UntitledJsonSchema)
    if schema.get("title") == model.__name__:
        del schema["title"]
    return schema


@dataclass(kw_only=True)
class AgentTool:
    """A tool the agent can run. ``parameters`` is a JSON-schema dict (validated with Pi's
    lenient coercion) or a pydantic model class (validated by pydantic; ``execute`` then gets
    the model instance). ``execute`` may be async or sync; sync runs in a worker thread.

    ``requires_approval``: a host that asks the user before state-changing tools run (the
    notebook's ``%%pi``) asks before this one too; the agent loop itself ignores it."""

    name: str
    description: str
    parameters: dict[str, Any] | type[BaseModel]
    execute: ToolExecute
    label: str = ""
    prepare_arguments: Callable[[Any], Any] | None = None
    execution_mode: ToolExecutionMode | None = None
    requires_approval: bool = False
    _tool_cache: tuple[tuple[Any, ...], Tool] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not self.label:
            self.label = self.name

    def json_schema(self) -> dict[str, Any]:
        params = self.parameters
        if isinstance(params, dict):
            return params
        return model_json_schema(params)

    def to_tool(self) -> Tool:
        """The provider-facing definition: name, description, JSON schema, plus ``label`` and
        ``executionMode`` as extra fields. Pi hands the tool objects themselves to the stream
        function, so everything on them that is not a function is part of the request
        context (the faux provider's usage estimate counts it); providers read only the
        first three.

        The loop asks for it on every LLM call and a pydantic schema costs ~100 µs to build,
        so the result is cached while these fields and the ``parameters`` object stay the
        same (a schema dict is treated as immutable once the tool is in use)."""
        key = (self.name, self.description, self.label, self.execution_mode, id(self.parameters))
        cached = self._tool_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        extra: dict[str, Any] = {"label": self.label}
        if self.execution_mode is not None:
            extra["executionMode"] = self.execution_mode
        tool = Tool(name=self.name, description=self.description, parameters=self.json_schema(), **extra)
        self._tool_cache = (key, tool)
        return tool


# --- context and hooks ---------------------------------------------------------------------


@dataclass(kw_only=True)
class AgentContext:
    system_prompt: str = ""
    messages: list[AgentMessage] = field(default_factory=list)
    tools: list[AgentTool] | None = None


@dataclass(kw_only=True)
class BeforeToolCallContext:
    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: Any
    context: AgentContext


@dataclass(kw_only=True)
class BeforeToolCallResult:
    block: bool = False
    reason: str | None = None


@dataclass(kw_only=True)
class AfterToolCallContext:
    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: Any
    result: AgentToolResult
    is_error: bool
    context: AgentContext


@dataclass(kw_only=True)
class AfterToolCallResult:
    content: list[TextContent | ImageContent] | None = None
    details: Any = None
    is_error: bool | None = None
    usage: Usage | None = None
    terminate: bool | None = None


@dataclass(kw_only=True)
class TurnContext:
    """Passed to ``should_stop_after_turn`` and ``prepare_next_turn``."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    context: AgentContext
    new_messages: list[AgentMessage]


ShouldStopAfterTurnContext = TurnContext
PrepareNextTurnContext = TurnContext


@dataclass(kw_only=True)
class AgentLoopTurnUpdate:
    context: AgentContext | None = None
    model: Model | None = None
    thinking_level: ThinkingLevel | None = None


# A hook may also return a mapping of the result's fields (``{"block": True}``).
_BeforeResult: TypeAlias = "BeforeToolCallResult | Mapping[str, Any] | None"
_AfterResult: TypeAlias = "AfterToolCallResult | Mapping[str, Any] | None"
BeforeToolCallHook: TypeAlias = Callable[
    [BeforeToolCallContext, AbortSignal | None], "Awaitable[_BeforeResult] | _BeforeResult"
]
AfterToolCallHook: TypeAlias = Callable[
    [AfterToolCallContext, AbortSignal | None], "Awaitable[_AfterResult] | _AfterResult"
]


_LLM_TYPES = frozenset({UserMessage, AssistantMessage, ToolResultMessage})
_LLM_ROLES = frozenset({"user", "assistant", "toolResult"})


def _default_convert_to_llm(messages: Sequence[AgentMessage]) -> list[LlmMessage]:
    """Pi's default: keep the user, assistant and toolResult messages."""
    if set(map(type, messages)) <= _LLM_TYPES:  # the common case, checked at C speed
        return cast("list[LlmMessage]", list(messages))
    return [m for m in messages if isinstance(m, UserMessage | AssistantMessage | ToolResultMessage)]


@dataclass(kw_only=True)
class AgentLoopConfig(SimpleStreamOptions):
    """Loop configuration; it *is* the stream options handed to the stream function."""

    model: Model
    convert_to_llm: ConvertToLlm = _default_convert_to_llm
    transform_context: TransformContext | None = None
    get_api_key: Callable[[str], Any] | None = None
    should_stop_after_turn: Callable[[TurnContext], Any] | None = None
    prepare_next_turn: Callable[[TurnContext], Any] | None = None
    get_steering_messages: MessageSource | None = None
    get_follow_up_messages: MessageSource | None = None
    tool_execution: ToolExecutionMode = "parallel"
    before_tool_call: BeforeToolCallHook | None = None
    after_tool_call: AfterToolCallHook | None = None


# --- events --------------------------------------------------------------------------------

_CAMEL = {
    "tool_results": "toolResults",
    "assistant_message_event": "assistantMessageEvent",
    "tool_call_id": "toolCallId",
    "tool_name": "toolName",
    "partial_result": "partialResult",
    "is_error": "isError",
}


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump()
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(slots=True)
class _AgentEvent:
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": getattr(self, "type")}
        for f in dataclasses.fields(self):
            if f.name != "type":
                out[_CAMEL.get(f.name, f.name)] = _plain(getattr(self, f.name))
        return out


@dataclass(slots=True)
class AgentStartEvent(_AgentEvent):
    type: Literal["agent_start"] = "agent_start"


@dataclass(slots=True)
class AgentEndEvent(_AgentEvent):
    messages: list[AgentMessage]
    type: Literal["agent_end"] = "agent_end"


@dataclass(slots=True)
class TurnStartEvent(_AgentEvent):
    type: Literal["turn_start"] = "turn_start"


@dataclass(slots=True)
class TurnEndEvent(_AgentEvent):
    message: AgentMessage
    tool_results: list[ToolResultMessage]
    type: Literal["turn_end"] = "turn_end"


@dataclass(slots=True)
class MessageStartEvent(_AgentEvent):
    message: AgentMessage
    type: Literal["message_start"] = "message_start"


@dataclass(slots=True)
class MessageUpdateEvent(_AgentEvent):
    message: AssistantMessage
    assistant_message_event: AssistantMessageEvent
    type: Literal["message_update"] = "message_update"


@dataclass(slots=True)
class MessageEndEvent(_AgentEvent):
    message: AgentMessage
    type: Literal["message_end"] = "message_end"


@dataclass(slots=True)
class ToolExecutionStartEvent(_AgentEvent):
    tool_call_id: str
    tool_name: str
    args: Any
    type: Literal["tool_execution_start"] = "tool_execution_start"


@dataclass(slots=True)
class ToolExecutionUpdateEvent(_AgentEvent):
    tool_call_id: str
    tool_name: str
    args: Any
    partial_result: AgentToolResult
    type: Literal["tool_execution_update"] = "tool_execution_update"


@dataclass(slots=True)
class ToolExecutionEndEvent(_AgentEvent):
    tool_call_id: str
    tool_name: str
    result: AgentToolResult
    is_error: bool
    type: Literal["tool_execution_end"] = "tool_execution_end"


AgentEvent: TypeAlias = (
    AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
)

AgentListener: TypeAlias = Callable[[AgentEvent, AbortSignal], "Awaitable[None] | None"]

AgentEventSink: TypeAlias = Callable[[AgentEvent], "Awaitable[None] | None"]
"""The loop's ``emit``: sync or async; an awaitable result is awaited before the loop goes on."""


async def emit_event(sink: AgentEventSink, event: AgentEvent) -> None:
    """Hand ``event`` to ``sink`` and await what it returns, if anything: an async sink (a slow
    listener) thereby holds the run back until it is done with the event."""
    result = sink(event)
    if result is not None and isawaitable(result):
        await result
