"""``pi_notebook.ai``: the provider-neutral LLM layer (Pi's ``pi-ai``).

Typed messages and usage, the ``AssistantMessageEvent`` streaming protocol, entry points
whose streams never raise, providers over ``httpx``, a model catalogue and the faux provider
(``pi_notebook.ai.faux``). Provider modules load on first use, so importing this package
stays cheap (no httpx until a request is made).
"""

from __future__ import annotations

from .abort import AbortController, AbortError, AbortSignal
from .cost import calculate_cost
from .entry import complete, complete_simple, stream, stream_simple
from .env import get_env_api_key
from .event_stream import AssistantMessageEventStream, EventStream
from .events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from .json_parse import parse_streaming_json
from .models import (
    ModelNotFoundError,
    clamp_thinking_level,
    get_model,
    get_models,
    get_providers,
    get_supported_thinking_levels,
    models_are_equal,
    openai_compatible_model,
    register_models,
    resolve_model,
)
from .options import SimpleStreamOptions, StreamOptions
from .overflow import is_context_overflow
from .registry import ApiProvider, get_api_provider, register_api_provider, unregister_api_providers
from .retry import RetryPolicy, is_retryable_assistant_error, retry_assistant_call
from .text import sanitize_surrogates
from .transform import transform_messages
from .types import (
    AssistantMessage,
    AssistantMessageDiagnostic,
    CacheRetention,
    Context,
    Cost,
    CostTier,
    ImageContent,
    LlmMessage,
    Message,
    Model,
    ModelCost,
    ModelThinkingLevel,
    StopReason,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    content_text,
    message_text,
    now_ms,
)
from .validation import TypeBoxSchema, validate_tool_arguments, validate_tool_call

__all__ = [
    "AbortController",
    "AbortError",
    "AbortSignal",
    "ApiProvider",
    "AssistantMessage",
    "AssistantMessageDiagnostic",
    "AssistantMessageEvent",
    "AssistantMessageEventStream",
    "CacheRetention",
    "Context",
    "Cost",
    "CostTier",
    "DoneEvent",
    "ErrorEvent",
    "EventStream",
    "ImageContent",
    "LlmMessage",
    "Message",
    "Model",
    "ModelCost",
    "ModelNotFoundError",
    "ModelThinkingLevel",
    "RetryPolicy",
    "SimpleStreamOptions",
    "StartEvent",
    "StopReason",
    "StreamOptions",
    "TextContent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingContent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingLevel",
    "ThinkingStartEvent",
    "Tool",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolResultMessage",
    "TypeBoxSchema",
    "Usage",
    "UserMessage",
    "calculate_cost",
    "clamp_thinking_level",
    "complete",
    "complete_simple",
    "content_text",
    "get_api_provider",
    "get_env_api_key",
    "get_model",
    "get_models",
    "get_providers",
    "get_supported_thinking_levels",
    "is_context_overflow",
    "is_retryable_assistant_error",
    "message_text",
    "models_are_equal",
    "now_ms",
    "openai_compatible_model",
    "parse_streaming_json",
    "register_api_provider",
    "register_models",
    "resolve_model",
    "retry_assistant_call",
    "sanitize_surrogates",
    "stream",
    "stream_simple",
    "transform_messages",
    "unregister_api_providers",
    "validate_tool_arguments",
    "validate_tool_call",
]
