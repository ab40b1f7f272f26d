"""``pi_notebook.ai``: the provider-neutral LLM layer (Pi's ``pi-ai``).

Typed messages and usage, the ``AssistantMessageEvent`` streaming protocol, entry points
whose streams never raise, providers over ``httpx``, a model catalogue and the faux provider.
Names resolve lazily so ``import pi_notebook.ai`` stays cheap; providers load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    # types
    **{
        name: "types"
        for name in (
            "TextContent", "ThinkingContent", "ImageContent", "ToolCall", "UserMessage", "AssistantMessage",
            "ToolResultMessage", "AssistantMessageDiagnostic", "Message", "LlmMessage", "Usage", "Cost",
            "Model", "ModelCost", "CostTier", "Context", "Tool", "StopReason", "ThinkingLevel",
            "ModelThinkingLevel", "CacheRetention", "content_text", "message_text", "now_ms",
        )
    },
    # events
    **{
        name: "events"
        for name in (
            "AssistantMessageEvent", "StartEvent", "TextStartEvent", "TextDeltaEvent", "TextEndEvent",
            "ThinkingStartEvent", "ThinkingDeltaEvent", "ThinkingEndEvent", "ToolCallStartEvent",
            "ToolCallDeltaEvent", "ToolCallEndEvent", "DoneEvent", "ErrorEvent",
        )
    },
    "EventStream": "event_stream",
    "AssistantMessageEventStream": "event_stream",
    "AbortController": "abort",
    "AbortSignal": "abort",
    "AbortError": "abort",
    "StreamOptions": "options",
    "SimpleStreamOptions": "options",
    "stream": "entry",
    "complete": "entry",
    "stream_simple": "entry",
    "complete_simple": "entry",
    "ApiProvider": "registry",
    "register_api_provider": "registry",
    "unregister_api_providers": "registry",
    "get_api_provider": "registry",
    "get_model": "models",
    "get_models": "models",
    "get_providers": "models",
    "register_models": "models",
    "openai_compatible_model": "models",
    "get_supported_thinking_levels": "models",
    "clamp_thinking_level": "models",
    "models_are_equal": "models",
    "calculate_cost": "cost",
    "validate_tool_arguments": "validation",
    "validate_tool_call": "validation",
    "parse_streaming_json": "json_parse",
    "transform_messages": "transform",
    "is_context_overflow": "overflow",
    "get_env_api_key": "env",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'pi_notebook.ai' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from .abort import AbortController, AbortError, AbortSignal
    from .cost import calculate_cost
    from .env import get_env_api_key
    from .event_stream import AssistantMessageEventStream, EventStream
    from .events import (
        AssistantMessageEvent, DoneEvent, ErrorEvent, StartEvent, TextDeltaEvent, TextEndEvent, TextStartEvent,
        ThinkingDeltaEvent, ThinkingEndEvent, ThinkingStartEvent, ToolCallDeltaEvent, ToolCallEndEvent,
        ToolCallStartEvent,
    )
    from .json_parse import parse_streaming_json
    from .models import (
        clamp_thinking_level, get_model, get_models, get_providers, get_supported_thinking_levels,
        models_are_equal, openai_compatible_model, register_models,
    )
    from .options import SimpleStreamOptions, StreamOptions
    from .overflow import is_context_overflow
    from .registry import ApiProvider, get_api_provider, register_api_provider, unregister_api_providers
    from .entry import complete, complete_simple, stream, stream_simple
    from .transform import transform_messages
    from .types import (
        AssistantMessage, AssistantMessageDiagnostic, CacheRetention, Context, Cost, CostTier, ImageContent,
        LlmMessage, Message, Model, ModelCost, ModelThinkingLevel, StopReason, TextContent, ThinkingContent,
        ThinkingLevel, Tool, ToolCall, ToolResultMessage, Usage, UserMessage, content_text, message_text, now_ms,
    )
    from .validation import validate_tool_arguments, validate_tool_call
