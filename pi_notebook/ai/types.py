"""Pi's data model: content blocks, messages, usage, models, tools and context.

Every class accepts Pi's camelCase JSON through ``model_validate`` and dumps it back
with ``model_dump()`` / ``model_dump_json()`` (aliases on, absent optionals left out),
so sessions and fixtures compare one to one with Pi's TypeScript implementation.
Python code uses the snake_case attribute names.

Streaming adapters mutate these objects in place (``block.text += delta``): the models do
not validate on assignment, which keeps the per-token path cheap.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Discriminator, Field, PrivateAttr, Tag
from pydantic.alias_generators import to_camel

from . import levels
from .failures import RequestFailure

ThinkingLevel: TypeAlias = levels.ThinkingLevel  # defined in ``levels.py``, kept importable here
ModelThinkingLevel: TypeAlias = levels.ModelThinkingLevel

StopReason: TypeAlias = Literal["pending", "stop", "length", "toolUse", "error", "aborted"]
CacheRetention: TypeAlias = Literal["none", "short", "long"]
Api: TypeAlias = str
KNOWN_APIS: tuple[str, ...] = (
    "openai-completions",
    "mistral-conversations",
    "openai-responses",
    "azure-openai-responses",
    "openai-codex-responses",
    "anthropic-messages",
    "bedrock-converse-stream",
    "google-generative-ai",
    "google-vertex",
    "pi-messages",
)


def now_ms() -> int:
    """Unix epoch milliseconds, the timestamp unit of every Pi message."""
    return time.time_ns() // 1_000_000


class PiModel(BaseModel):
    """Base class: camelCase aliases, populate by name, Pi's JSON by default on dump."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        arbitrary_types_allowed=True,
        ser_json_inf_nan="constants",
        # Build validators on first use, not at import: keeps `import pi_notebook.ai` cheap.
        defer_build=True,
    )

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        kwargs.setdefault("by_alias", True)
        kwargs.setdefault("exclude_none", True)
        return super().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        kwargs.setdefault("by_alias", True)
        kwargs.setdefault("exclude_none", True)
        return super().model_dump_json(**kwargs)


# --- content blocks -------------------------------------------------------------------


class TextContent(PiModel):
    type: Literal["text"] = "text"
    text: str = ""
    text_signature: str | None = None


class ThinkingContent(PiModel):
    type: Literal["thinking"] = "thinking"
    thinking: str = ""
    thinking_signature: str | None = None
    redacted: bool | None = None


class ImageContent(PiModel):
    type: Literal["image"] = "image"
    data: str
    mime_type: str


class ToolCall(PiModel):
    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    thought_signature: str | None = None


UserContentBlock: TypeAlias = Annotated[TextContent | ImageContent, Field(discriminator="type")]
AssistantContentBlock: TypeAlias = Annotated[
    TextContent | ThinkingContent | ToolCall, Field(discriminator="type")
]
ToolResultContentBlock: TypeAlias = Annotated[TextContent | ImageContent, Field(discriminator="type")]
ContentBlock: TypeAlias = TextContent | ThinkingContent | ImageContent | ToolCall


# --- usage ----------------------------------------------------------------------------


class Cost(PiModel):
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


class Usage(PiModel):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cache_write1h: int | None = Field(default=None, alias="cacheWrite1h")
    reasoning: int | None = None
    total_tokens: int = 0
    cost: Cost = Field(default_factory=Cost)
    estimated: bool | None = None
    """Not Pi's: ``True`` when the session completed this usage with its estimate, the server
    having said nothing (an answer stopped or failed mid-stream, a server reporting none)."""


# --- messages -------------------------------------------------------------------------


class UserMessage(PiModel):
    role: Literal["user"] = "user"
    content: str | list[UserContentBlock] = Field(default_factory=list)
    timestamp: int = Field(default_factory=now_ms)


class AssistantMessageDiagnostic(PiModel):
    type: str
    timestamp: int = Field(default_factory=now_ms)
    error: dict[str, Any] | None = None
    details: dict[str, Any] | None = None


class AssistantMessage(PiModel):
    role: Literal["assistant"] = "assistant"
    content: list[AssistantContentBlock] = Field(default_factory=list)
    api: str = "unknown"
    provider: str = "unknown"
    model: str = "unknown"
    response_model: str | None = None
    response_id: str | None = None
    diagnostics: list[AssistantMessageDiagnostic] | None = None
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    raw_stop_reason: str | None = None
    timestamp: int = Field(default_factory=now_ms)
    _failure: RequestFailure | None = PrivateAttr(default=None)

    @property
    def failure(self) -> RequestFailure | None:
        """What the failed request was (kind, status, the server's Retry-After, URL), when the
        provider that made this message recorded it. Not part of Pi's JSON: a message read back
        from a session file has none."""
        return self._failure

    @failure.setter
    def failure(self, failure: RequestFailure | None) -> None:
        self._failure = failure


class ToolResultMessage(PiModel):
    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[ToolResultContentBlock] = Field(default_factory=list)
    details: Any = None
    usage: Usage | None = None
    added_tool_names: list[str] | None = None
    is_error: bool = False
    timestamp: int = Field(default_factory=now_ms)


def _message_role(value: Any) -> str:
    # runs for every message each time a Context is built: keep it to one lookup
    role = value.get("role", "") if isinstance(value, dict) else getattr(value, "role", "")
    return role if type(role) is str else str(role)


Message: TypeAlias = Annotated[
    Annotated[UserMessage, Tag("user")]
    | Annotated[AssistantMessage, Tag("assistant")]
    | Annotated[ToolResultMessage, Tag("toolResult")],
    Discriminator(_message_role),
]
"""The three roles every provider understands (discriminated by ``role``)."""

LlmMessage: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage


# --- tools, models, context ------------------------------------------------------------


class Tool(PiModel):
    """A tool definition as the provider sees it: name, description, JSON schema."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    constrained_sampling: Any = None


class CostTier(PiModel):
    input_tokens_above: int
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


class ModelCost(PiModel):
    """Prices in USD per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    tiers: list[CostTier] | None = None


class Model(PiModel):
    id: str
    name: str = ""
    api: str
    provider: str
    base_url: str = ""
    reasoning: bool = False
    thinking_level_map: dict[str, str | None] | None = None
    input: list[Literal["text", "image"]] = Field(
        default_factory=lambda: list[Literal["text", "image"]](["text"])
    )
    cost: ModelCost = Field(default_factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 16_384
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None
    tool_mode: Literal["auto", "tools", "code"] | None = None
    """``toolMode`` in a models file (pi_notebook's own key; Pi's readers ignore it): ``code``
    runs the model code-first (Python in fenced blocks, no tool schemas), ``tools`` through
    the tool API; see ``agent.tool_mode.resolve_tool_mode``."""


class Context(PiModel):
    system_prompt: str | None = None
    messages: list[Message] = Field(default_factory=list)
    tools: list[Tool] | None = None


def content_text(content: str | list[Any], separator: str = "\n") -> str:
    """Join the text blocks of a content list (strings pass through), like Pi's ``contentText``."""
    if isinstance(content, str):
        return content
    return separator.join(b.text for b in content if getattr(b, "type", None) == "text")


def message_text(message: Any) -> str:
    """The plain text of any message: text blocks joined by newlines."""
    return content_text(getattr(message, "content", "") or "")
