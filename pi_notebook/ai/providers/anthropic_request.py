"""Request building for the ``anthropic-messages`` wire API: headers and the JSON body
(system blocks, messages, tools, thinking, cache markers); the options type is in
:mod:`.anthropic_options`.

Owns the translation of Pi's history into Anthropic's ``/v1/messages`` payload. The
response side lives in :mod:`.anthropic_messages`. Everything here is plain dicts: the
payload is built once per request and handed to ``httpx`` as is.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..http import merge_headers
from ..options import StreamOptions
from ..text import sanitize_surrogates
from ..transform import transform_messages
from ..types import (
    AssistantMessage,
    CacheRetention,
    Context,
    ImageContent,
    Model,
    TextContent,
    Tool,
    ToolResultMessage,
    UserMessage,
)
from ..wire_cache import cached_history
from .anthropic_options import AnthropicOptions

API_VERSION = "2023-06-01"
FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
OAUTH_BETA = "oauth-2025-04-20"
SEE_IMAGE = "(see attached image)"


# --- compat flags ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Compat:
    eager_tool_input: bool
    long_cache_retention: bool
    session_affinity_headers: bool
    cache_control_on_tools: bool
    temperature: bool
    allow_empty_signature: bool
    strict_tools: bool
    adaptive_thinking: bool


def get_compat(model: Model) -> Compat:
    """``model.compat`` with Pi's defaults for anything unset."""
    c = model.compat or {}
    return Compat(
        eager_tool_input=c.get("supportsEagerToolInputStreaming", True) is not False,
        long_cache_retention=c.get("supportsLongCacheRetention", True) is not False,
        session_affinity_headers=c.get("sendSessionAffinityHeaders") is True,
        cache_control_on_tools=c.get("supportsCacheControlOnTools", True) is not False,
        temperature=c.get("supportsTemperature", True) is not False,
        allow_empty_signature=c.get("allowEmptySignature") is True,
        strict_tools=c.get("supportsStrictTools") is True,
        adaptive_thinking=c.get("forceAdaptiveThinking") is True,
    )


# --- auth, cache retention, headers --------------------------------------------------------


def is_oauth_token(api_key: str | None) -> bool:
    return api_key is not None and "sk-ant-oat" in api_key


def has_auth_header(headers: dict[str, str | None] | None) -> bool:
    """Header-owned auth (a gateway's ``authorization``) makes an API key unnecessary."""
    names = {"authorization", "x-api-key", "cf-aig-authorization"}
    return any(k.lower() in names and v and v.strip() for k, v in (headers or {}).items())


def resolve_cache_retention(options: StreamOptions) -> CacheRetention:
    """Explicit option, else ``PI_CACHE_RETENTION=long``, else ``short``."""
    if options.cache_retention:
        return options.cache_retention
    value = (options.env or {}).get("PI_CACHE_RETENTION") or os.environ.get("PI_CACHE_RETENTION")
    return "long" if value == "long" else "short"


def cache_control_for(model: Model, retention: CacheRetention) -> dict[str, str] | None:
    if retention == "none":
        return None
    if retention == "long" and get_compat(model).long_cache_retention:
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def build_headers(model: Model, context: Context, options: AnthropicOptions) -> dict[str, str]:
    """Auth, version and beta headers; then ``model.headers``, then ``options.headers`` win."""
    compat = get_compat(model)
    betas: list[str] = []
    if context.tools and not compat.eager_tool_input:
        betas.append(FINE_GRAINED_TOOL_STREAMING_BETA)
    if options.interleaved_thinking and not compat.adaptive_thinking:
        betas.append(INTERLEAVED_THINKING_BETA)
    headers = {
        "accept": "application/json",
        "content-type": "application/json",
        "anthropic-version": API_VERSION,
        # Pi's Anthropic client always sends it (it lets the same client run in a browser);
        # sent here too so a proxy or the API sees the same request from both.
        "anthropic-dangerous-direct-browser-access": "true",
    }
    key = options.api_key
    if is_oauth_token(key):
        # Bearer auth only; Claude Code identity emulation is deliberately not ported.
        headers["authorization"] = f"Bearer {key}"
        betas.insert(0, OAUTH_BETA)
    elif key:
        headers["x-api-key"] = key
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    retention = resolve_cache_retention(options)
    if options.session_id and retention != "none" and compat.session_affinity_headers:
        headers["x-session-affinity"] = options.session_id
    return merge_headers(headers, model.headers, options.headers)


def messages_url(model: Model) -> str:
    return model.base_url.rstrip("/") + "/v1/messages"


# --- body ----------------------------------------------------------------------------------

_ID_INVALID = re.compile(r"[^a-zA-Z0-9_-]")


def normalize_tool_call_id(tool_call_id: str, model: Model, source: AssistantMessage) -> str:
    """Anthropic requires ``^[a-zA-Z0-9_-]{1,64}$`` for ``tool_use.id``."""
    return _ID_INVALID.sub("_", tool_call_id)[:64]


def build_params(model: Model, context: Context, options: AnthropicOptions) -> dict[str, Any]:
    compat = get_compat(model)
    cache_control = cache_control_for(model, resolve_cache_retention(options))
    params: dict[str, Any] = {
        "model": model.id,
        "messages": _messages(model, context, cache_control, compat, options.on_payload is None),
        "max_tokens": options.max_tokens if options.max_tokens is not None else model.max_tokens,
        "stream": True,
    }
    if context.system_prompt:
        system: dict[str, Any] = {"type": "text", "text": sanitize_surrogates(context.system_prompt)}
        if cache_control:
            system["cache_control"] = cache_control
        params["system"] = [system]
    # Temperature is rejected alongside extended thinking and by some models (Opus 4.7+).
    if options.temperature is not None and not options.thinking_enabled and compat.temperature:
        params["temperature"] = options.temperature
    if context.tools:
        params["tools"] = convert_tools(
            context.tools, compat, cache_control if compat.cache_control_on_tools else None
        )
    _apply_thinking(params, model, options, compat)
    user_id = (options.metadata or {}).get("user_id")
    if isinstance(user_id, str):
        params["metadata"] = {"user_id": user_id}
    if options.tool_choice:
        choice = options.tool_choice
        params["tool_choice"] = {"type": choice} if isinstance(choice, str) else choice
    return params


def _messages(
    model: Model, context: Context, cache_control: dict[str, str] | None, compat: Compat, cache: bool
) -> list[dict[str, Any]]:
    """The converted history; with ``cache``, the earlier turns from the wire cache (the caller
    hands the body to no user code), the last user block marked on a copy of its own."""

    def convert(messages: Sequence[Any], marker: dict[str, str] | None = None) -> list[dict[str, Any]]:
        history = transform_messages(list(messages), model, normalize_tool_call_id)
        return convert_messages(history, marker, compat.allow_empty_signature)

    if not cache:
        return convert(context.messages, cache_control)
    key = ("anthropic-messages", model.provider, model.api, model.id, tuple(model.input), compat)
    out = cached_history(key, None, context.messages, convert)
    if cache_control and out and out[-1]["role"] == "user":
        if len(out) == out.head + len(out.prefix_items):  # the last one is cached: never mark it
            out[-1] = copy.deepcopy(out[-1])
        _mark_last_block(out[-1], cache_control)
    return out


def _apply_thinking(params: dict[str, Any], model: Model, options: AnthropicOptions, compat: Compat) -> None:
    if not model.reasoning:
        return
    if options.thinking_enabled:
        display = options.thinking_display or "summarized"
        if compat.adaptive_thinking:
            params["thinking"] = {"type": "adaptive", "display": display}
            if options.effort:
                params["output_config"] = {"effort": options.effort}
        else:
            budget = options.thinking_budget_tokens or 1024
            params["thinking"] = {"type": "enabled", "budget_tokens": budget, "display": display}
    elif options.thinking_enabled is False and (model.thinking_level_map or {}).get("off", "") is not None:
        # a map entry ``off: None`` means the model cannot turn thinking off: send nothing
        params["thinking"] = {"type": "disabled"}


def _image_block(image: ImageContent) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.mime_type, "data": image.data}}


def _tool_result_content(blocks: Sequence[TextContent | ImageContent]) -> str | list[dict[str, Any]]:
    """A string when the result is text only; blocks otherwise, with a text lead for images."""
    if not any(b.type == "image" for b in blocks):
        return sanitize_surrogates("\n".join(b.text for b in blocks if isinstance(b, TextContent)))
    out = [
        {"type": "text", "text": sanitize_surrogates(b.text)}
        if isinstance(b, TextContent)
        else _image_block(b)
        for b in blocks
    ]
    if not any(b["type"] == "text" for b in out):
        out.insert(0, {"type": "text", "text": SEE_IMAGE})
    return out


def _user_message(msg: UserMessage) -> dict[str, Any] | None:
    if isinstance(msg.content, str):
        return {"role": "user", "content": sanitize_surrogates(msg.content)} if msg.content.strip() else None
    blocks: list[dict[str, Any]] = []
    for item in msg.content:
        if isinstance(item, TextContent):
            if item.text.strip():
                blocks.append({"type": "text", "text": sanitize_surrogates(item.text)})
        else:
            blocks.append(_image_block(item))
    return {"role": "user", "content": blocks} if blocks else None


def _assistant_message(msg: AssistantMessage, allow_empty_signature: bool) -> dict[str, Any] | None:
    blocks: list[dict[str, Any]] = []
    for block in msg.content:
        if block.type == "text":
            if block.text.strip():
                blocks.append({"type": "text", "text": sanitize_surrogates(block.text)})
        elif block.type == "thinking":
            if block.redacted:
                blocks.append({"type": "redacted_thinking", "data": block.thinking_signature or ""})
                continue
            signature = block.thinking_signature
            signed = bool(signature and signature.strip())
            if not block.thinking.strip() and not signed:
                continue
            text = sanitize_surrogates(block.thinking)
            if signed:
                blocks.append({"type": "thinking", "thinking": text, "signature": signature})
            elif allow_empty_signature:
                blocks.append({"type": "thinking", "thinking": text, "signature": ""})
            else:
                # an unsigned thinking block (e.g. from an aborted stream) would be rejected
                blocks.append({"type": "text", "text": text})
        else:
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments or {}}
            )
    return {"role": "assistant", "content": blocks} if blocks else None


def _tool_result(msg: ToolResultMessage) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": msg.tool_call_id,
        "content": _tool_result_content(msg.content),
        "is_error": msg.is_error,
    }


def convert_messages(
    messages: Sequence[Any], cache_control: dict[str, str] | None, allow_empty_signature: bool = False
) -> list[dict[str, Any]]:
    """Pi messages (already transformed) to Anthropic ``messages``."""
    out: list[dict[str, Any]] = []
    previous_role = ""
    for msg in messages:
        if msg.role == "toolResult":
            # consecutive results share one user turn (z.ai's endpoint requires it)
            if previous_role == "toolResult":
                out[-1]["content"].append(_tool_result(msg))
            else:
                out.append({"role": "user", "content": [_tool_result(msg)]})
        else:
            converted = (
                _user_message(msg) if msg.role == "user" else _assistant_message(msg, allow_empty_signature)
            )
            if converted is not None:
                out.append(converted)
        previous_role = msg.role
    if cache_control and out and out[-1]["role"] == "user":
        _mark_last_block(out[-1], cache_control)
    return out


def _mark_last_block(message: dict[str, Any], cache_control: dict[str, str]) -> None:
    """Cache the whole conversation prefix by marking the last user block."""
    content = message["content"]
    if isinstance(content, str):
        message["content"] = [{"type": "text", "text": content, "cache_control": cache_control}]
    elif content and content[-1]["type"] in ("text", "image", "tool_result"):
        content[-1]["cache_control"] = cache_control


def _strict_sampling(tool: Tool, supports_strict: bool) -> bool:
    config = tool.constrained_sampling
    if not isinstance(config, dict) or config.get("type") != "json_schema":
        return False
    if supports_strict:
        return True
    if config.get("strict") == "require":
        raise ValueError(
            f'Tool "{tool.name}" requires JSON-schema constrained sampling, but strict tools are unsupported.'
        )
    return False


def convert_tools(
    tools: Sequence[Tool], compat: Compat, cache_control: dict[str, str] | None
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool in tools:
        schema = tool.parameters or {}
        input_schema: dict[str, Any] = {
            "type": "object",
            "properties": schema.get("properties", {}),
            "required": schema.get("required", []),
        }
        # Pydantic schemas reference shared definitions through ``$defs``; Pi's TypeBox
        # schemas inline them, so keeping ``$defs`` is needed for ``$ref`` to resolve.
        if "$defs" in schema:
            input_schema["$defs"] = schema["$defs"]
        strict = _strict_sampling(tool, compat.strict_tools)
        if strict:
            input_schema = {**schema, **input_schema}
        entry: dict[str, Any] = {"name": tool.name, "description": tool.description}
        if compat.eager_tool_input:
            entry["eager_input_streaming"] = True
        if strict:
            entry["strict"] = True
        entry["input_schema"] = input_schema
        out.append(entry)
    if cache_control and out:
        out[-1]["cache_control"] = cache_control
    return out
