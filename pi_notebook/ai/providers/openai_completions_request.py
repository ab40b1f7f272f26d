"""Request side of the ``openai-completions`` adapter: compat detection and the
Chat Completions request body (messages, tools, reasoning parameters, caching fields).

Everything here is plain dict building, run once per request; the streaming side lives in
:mod:`.openai_completions`. ``Compat`` is resolved from the provider id and base URL and then
overridden key by key by ``model.compat`` (Pi's camelCase names: ``supportsStore`` sets
``supports_store``; unknown names and ``None`` values are ignored).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..env import is_local_url
from ..text import sanitize_surrogates, short_hash
from ..transform import transform_messages
from ..types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
)
from ..wire_cache import WireMessages, cached_history
from .openai_completions_options import OpenAICompletionsOptions

# Servers that run on the user's machine; they take ``max_tokens``, no ``store``, no developer role.
LOCAL_PROVIDERS = frozenset(
    {"ollama", "vllm", "llama.cpp", "llamacpp", "llama-cpp", "lmstudio", "lm-studio", "local"}
)
# Default ports of Ollama and LM Studio; llama-server (8080) and vLLM (8000) share theirs with
# too many other things to be told apart by port alone, so they are recognised as loopback hosts.
# Provider families: (provider ids, base-URL fragments), as Pi's detectCompat tells them apart.
_FAMILIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "zai": (("zai", "zai-coding-cn"), ("api.z.ai", "open.bigmodel.cn")),
    "together": (("together",), ("api.together.ai", "api.together.xyz")),
    "moonshot": (("moonshotai", "moonshotai-cn"), ("api.moonshot.",)),
    "openrouter": (("openrouter",), ("openrouter.ai",)),
    "cf_workers": (("cloudflare-workers-ai",), ("api.cloudflare.com",)),
    "cf_gateway": (("cloudflare-ai-gateway",), ("gateway.ai.cloudflare.com",)),
    "nvidia": (("nvidia",), ("integrate.api.nvidia.com",)),
    "ant_ling": (("ant-ling",), ("api.ant-ling.com",)),
    "xai": (("xai",), ("api.x.ai",)),
    "deepseek": (("deepseek",), ("deepseek.com",)),
    # Pi tells DeepSeek's endpoint non-standard (no ``store``) by its URL alone, not the id.
    "deepseek_url": ((), ("deepseek.com",)),
    "cerebras": (("cerebras",), ("cerebras.ai",)),
    "chutes": ((), ("chutes.ai",)),
    "opencode": (("opencode",), ("opencode.ai",)),
    "mistral": (("mistral",), ("api.mistral.ai",)),  # not in Pi (it has a Mistral API of its own)
}
# Provider ids whose own rules win over the local-URL heuristic (a cloud provider behind a proxy).
_CLOUD_PROVIDERS = frozenset(
    [pid for ids, _ in _FAMILIES.values() for pid in ids]
    + [
        "openai",
        "groq",
        "fireworks",
        "huggingface",
        "vercel-ai-gateway",
        "github-copilot",
        "opencode-go",
        "xiaomi",
    ]
)
_NON_STANDARD = frozenset({
    "nvidia", "cerebras", "xai", "together", "chutes", "deepseek_url", "zai", "moonshot", "opencode",
    "cf_workers", "cf_gateway", "ant_ling", "mistral", "local",
})  # fmt: skip
_MAX_TOKENS_FIELD = frozenset(
    {"chutes", "moonshot", "cf_gateway", "together", "nvidia", "ant_ling", "zai", "mistral", "local"}
)
_NO_REASONING_EFFORT = frozenset(
    {"xai", "zai", "moonshot", "together", "cf_gateway", "nvidia", "ant_ling", "mistral"}
)
_NO_STRICT = frozenset({"moonshot", "together", "cf_gateway", "nvidia", "local"})
_NO_LONG_CACHE = frozenset({"together", "cf_workers", "cf_gateway", "nvidia", "ant_ling"})
_THINKING_FORMATS = (
    ("deepseek", "deepseek"), ("zai", "zai"), ("together", "together"), ("ant_ling", "ant-ling"),
    ("openrouter", "openrouter"),
)  # fmt: skip

ASSISTANT_BRIDGE = "I have processed the tool results."
# JSON.stringify's layout for replayed tool arguments; built once (json.dumps with options
# builds a new encoder on every call).
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
TOOL_IMAGES_TEXT = "Attached image(s) from tool result:"


@dataclass(slots=True)
class Compat:
    """Resolved ``OpenAICompletionsCompat`` (snake_case twins of Pi's camelCase keys)."""

    supports_store: bool = True
    supports_developer_role: bool = True
    supports_reasoning_effort: bool = True
    supports_usage_in_streaming: bool = True
    max_tokens_field: str = "max_completion_tokens"
    requires_tool_result_name: bool = False
    requires_assistant_after_tool_result: bool = False
    requires_thinking_as_text: bool = False
    requires_reasoning_content_on_assistant_messages: bool = False
    thinking_format: str = "openai"
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    open_router_routing: dict[str, Any] = field(default_factory=dict)
    vercel_gateway_routing: dict[str, Any] = field(default_factory=dict)
    zai_tool_stream: bool = False
    supports_strict_mode: bool = True
    cache_control_format: str | None = None
    send_session_affinity_headers: bool = False
    session_affinity_format: str = "openai"
    supports_long_cache_retention: bool = True
    tool_call_id_format: str | None = None
    """``"mistral"``: replayed foreign tool-call ids become 9 alphanumerics (Mistral rejects others)."""


_COMPAT_KEYS: dict[str, str] = {
    re.sub(r"_([a-z])", lambda m: m.group(1).upper(), f.name): f.name for f in dataclasses.fields(Compat)
}


def _families(model: Model) -> set[str]:
    found = {
        name
        for name, (ids, fragments) in _FAMILIES.items()
        if model.provider in ids or any(fragment in model.base_url for fragment in fragments)
    }
    if model.provider not in _CLOUD_PROVIDERS and (
        model.provider in LOCAL_PROVIDERS or is_local_url(model.base_url)
    ):
        found.add("local")
    return found


def is_local_model(model: Model) -> bool:
    """A model a server on the user's machine serves (a local provider id or a loopback base
    URL). Port 0 names no server: the offline faux model's ``http://localhost:0`` is not one."""
    try:
        no_server = urlsplit(model.base_url).port == 0
    except ValueError:
        no_server = False
    return not no_server and "local" in _families(model)


def detect_compat(model: Model) -> Compat:
    """Pi's ``detectCompat`` plus Mistral and local servers (Ollama, vLLM, llama.cpp, LM Studio)."""
    families = _families(model)
    non_standard = bool(families & _NON_STANDARD)
    openrouter = "openrouter" in families
    anthropic_via_openrouter = model.provider == "openrouter" and model.id.startswith("anthropic/")
    return Compat(
        supports_store=not non_standard,
        supports_developer_role=(openrouter and model.id.startswith(("anthropic/", "openai/")))
        or not (non_standard or openrouter),
        supports_reasoning_effort=not families & _NO_REASONING_EFFORT,
        max_tokens_field="max_tokens" if families & _MAX_TOKENS_FIELD else "max_completion_tokens",
        requires_tool_result_name="mistral" in families,
        requires_reasoning_content_on_assistant_messages="deepseek" in families,
        thinking_format=next((fmt for family, fmt in _THINKING_FORMATS if family in families), "openai"),
        supports_strict_mode=not families & _NO_STRICT,
        cache_control_format="anthropic" if anthropic_via_openrouter else None,
        session_affinity_format="openrouter" if openrouter else "openai",
        supports_long_cache_retention=not families & _NO_LONG_CACHE,
        tool_call_id_format="mistral" if "mistral" in families else None,
    )


_resolved: dict[tuple[str, str, str, str], Compat] = {}


def resolve_compat(model: Model) -> Compat:
    """Detected settings, each overridden by the matching ``model.compat`` key when set.

    Resolved once per model (provider, base URL, id and ``compat`` as they are now) and shared
    by its requests: detection matches the URL against every known family, a cost each request
    paid again. Callers read the result and never change it.
    """
    key = (model.provider, model.base_url, model.id, repr(model.compat) if model.compat else "")
    compat = _resolved.get(key)
    if compat is None:
        compat = detect_compat(model)
        for name, value in (model.compat or {}).items():
            field = _COMPAT_KEYS.get(name)
            if field is not None and value is not None:
                setattr(compat, field, value)
        if len(_resolved) >= 256:  # many throwaway models: start over rather than grow
            _resolved.clear()
        _resolved[key] = compat
    return compat


# --- tool-call ids -----------------------------------------------------------------------


_UNSAFE_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def normalize_tool_call_id(tool_call_id: str, model: Model, compat: Compat) -> str:
    """Make a replayed foreign id acceptable to Chat Completions (at most 40 chars, safe chars)."""
    if compat.tool_call_id_format == "mistral":
        alnum = re.sub(r"[^a-zA-Z0-9]", "", tool_call_id)
        return alnum if len(alnum) == 9 else (short_hash(tool_call_id) + "000000000")[:9]
    if "|" in tool_call_id:
        # Responses-style "call_id|item_id": calls of one turn may share call_id, so keep both.
        call_part, _, item_part = tool_call_id.partition("|")
        call_id = _UNSAFE_ID_CHARS.sub("_", call_part)
        item_id = _UNSAFE_ID_CHARS.sub("_", item_part)
        combined = f"{call_id}_{item_id}" if item_id else call_id
        if len(combined) <= 40:
            return combined
        digest = short_hash(tool_call_id)[:8]
        return f"{call_id[: max(1, 40 - len(digest) - 1)]}_{digest}"
    if model.provider == "openai":
        return tool_call_id[:40]
    return tool_call_id


# --- messages ----------------------------------------------------------------------------


def _image_part(block: ImageContent) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}}


def _user_message(content: str | list[Any]) -> dict[str, Any] | None:
    if isinstance(content, str):
        return {"role": "user", "content": sanitize_surrogates(content)}
    parts = [
        {"type": "text", "text": sanitize_surrogates(block.text)}
        if block.type == "text"
        else _image_part(block)
        for block in content
    ]
    return {"role": "user", "content": parts} if parts else None


def _tool_call_param(call: ToolCall) -> dict[str, Any]:
    arguments = sanitize_surrogates(_COMPACT_JSON.encode(call.arguments))
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}


def _assistant_message(msg: AssistantMessage, model: Model, compat: Compat) -> dict[str, Any] | None:
    texts: list[str] = []
    thinking: list[ThinkingContent] = []
    calls: list[dict[str, Any]] = []
    details: list[Any] = []
    for block in msg.content:  # one pass: this runs for every assistant turn of every request
        if isinstance(block, TextContent):
            if block.text.strip():
                texts.append(sanitize_surrogates(block.text))
        elif isinstance(block, ThinkingContent):
            if block.thinking.strip():
                thinking.append(block)
        else:
            calls.append(_tool_call_param(block))
            detail = _json_or_none(block.thought_signature)
            if detail:
                details.append(detail)
    out: dict[str, Any] = {
        "role": "assistant",
        "content": "" if compat.requires_assistant_after_tool_result else None,
    }
    if thinking and compat.requires_thinking_as_text:
        joined = "\n\n".join(sanitize_surrogates(b.thinking) for b in thinking)
        out["content"] = [{"type": "text", "text": joined}] + [{"type": "text", "text": t} for t in texts]
    else:
        # A plain string, never parts: some models mirror a parts structure back in their output.
        if texts:
            out["content"] = "".join(texts)
        signature = thinking[0].thinking_signature if thinking else None
        if model.provider == "opencode-go" and signature == "reasoning":
            signature = "reasoning_content"
        if signature:  # replayed under the field name it streamed in (llama.cpp, DeepSeek ...)
            out[signature] = sanitize_surrogates("\n".join(b.thinking for b in thinking))
    if calls:
        out["tool_calls"] = calls
        if details:
            out["reasoning_details"] = details
    if (
        compat.requires_reasoning_content_on_assistant_messages
        and model.reasoning
        and "reasoning_content" not in out
    ):
        out["reasoning_content"] = ""
    # Providers reject assistant messages with neither content nor tool calls (e.g. aborted turns).
    if not out["content"] and not calls:
        return None
    return out


def _json_or_none(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _tool_result(msg: ToolResultMessage, compat: Compat) -> dict[str, Any]:
    text = "\n".join(b.text for b in msg.content if b.type == "text")
    has_images = any(b.type == "image" for b in msg.content)
    if not text:
        text = "(see attached image)" if has_images else "(no tool output)"
    out: dict[str, Any] = {
        "role": "tool",
        "content": sanitize_surrogates(text),
        "tool_call_id": msg.tool_call_id,
    }
    if compat.requires_tool_result_name and msg.tool_name:
        out["name"] = msg.tool_name
    return out


def convert_messages(
    model: Model, context: Context, compat: Compat, cache: bool = False
) -> list[dict[str, Any]]:
    """Pi's ``convertMessages``: the transformed history as Chat Completions messages. With
    ``cache``, the earlier turns' dicts come from :func:`.wire_cache.cached_history` (shared
    with later requests: the caller must not change them or hand them to user code)."""
    params: list[dict[str, Any]] = []
    if context.system_prompt:
        role = "developer" if model.reasoning and compat.supports_developer_role else "system"
        params.append({"role": role, "content": sanitize_surrogates(context.system_prompt)})
    if not cache:
        return params + _convert_history(model, context.messages, compat)
    key = ("openai-completions", model.provider, model.id, tuple(model.input), model.reasoning, id(compat))
    history = cached_history(
        key, compat, context.messages, lambda ms: _convert_history(model, ms, compat), flag=_is_tool_history
    )
    return history.with_head(params) if params else history


def _convert_history(model: Model, messages: Sequence[Any], compat: Compat) -> list[dict[str, Any]]:
    history = transform_messages(
        messages,
        model,
        lambda tool_call_id, _m, _src: normalize_tool_call_id(tool_call_id, model, compat),
    )
    params: list[dict[str, Any]] = []
    last_role: str | None = None
    i = 0
    while i < len(history):
        msg = history[i]
        i += 1
        if compat.requires_assistant_after_tool_result and last_role == "toolResult" and msg.role == "user":
            params.append({"role": "assistant", "content": ASSISTANT_BRIDGE})
        if isinstance(msg, ToolResultMessage):
            # Consecutive results become consecutive tool messages; their images go into one user message.
            images: list[dict[str, Any]] = []
            group = [msg]
            while i < len(history) and isinstance(history[i], ToolResultMessage):
                group.append(history[i])
                i += 1
            for result in group:
                params.append(_tool_result(result, compat))
                if "image" in model.input:
                    images += [_image_part(b) for b in result.content if isinstance(b, ImageContent)]
            if images:
                if compat.requires_assistant_after_tool_result:
                    params.append({"role": "assistant", "content": ASSISTANT_BRIDGE})
                params.append(
                    {"role": "user", "content": [{"type": "text", "text": TOOL_IMAGES_TEXT}, *images]}
                )
            last_role = "user" if images else "toolResult"
            continue
        converted = (
            _assistant_message(msg, model, compat)
            if isinstance(msg, AssistantMessage)
            else _user_message(msg.content)
        )
        if converted is not None:  # a skipped message does not count as the last role (as in Pi)
            params.append(converted)
            last_role = msg.role
    return params


# --- tools, caching, reasoning ----------------------------------------------------------------


def convert_tools(tools: list[Tool], compat: Compat) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool in tools:
        function: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }
        constrained = tool.constrained_sampling
        json_schema = isinstance(constrained, Mapping) and constrained.get("type") == "json_schema"
        if compat.supports_strict_mode:
            function["strict"] = json_schema
        elif json_schema and constrained.get("strict") == "require":
            raise ValueError(
                f'Tool "{tool.name}" requires JSON-schema constrained sampling, '
                "but strict tools are unsupported."
            )
        out.append({"type": "function", "function": function})
    return out


def _is_tool_history(m: Any) -> bool:
    return m.role == "toolResult" or (m.role == "assistant" and any(b.type == "toolCall" for b in m.content))


def _has_tool_history(context: Context, messages: list[dict[str, Any]]) -> bool:
    if isinstance(messages, WireMessages):
        return messages.flag
    return any(_is_tool_history(m) for m in context.messages)


def resolve_cache_retention(options: OpenAICompletionsOptions) -> str:
    if options.cache_retention:
        return options.cache_retention
    env_value = (options.env or {}).get("PI_CACHE_RETENTION") or os.environ.get("PI_CACHE_RETENTION")
    return "long" if env_value == "long" else "short"


def session_headers(session_id: str | None, compat: Compat) -> dict[str, str]:
    """Cache-affinity headers, only when the compat asks for them and retention is not ``none``."""
    if not session_id or not compat.send_session_affinity_headers:
        return {}
    if compat.session_affinity_format == "openrouter":
        return {"x-session-id": session_id}
    headers = {"session_id": session_id} if compat.session_affinity_format == "openai" else {}
    return {**headers, "x-client-request-id": session_id, "x-session-affinity": session_id}


def _apply_cache_control(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, marker: dict[str, str]
) -> None:
    """Anthropic-style breakpoints (OpenRouter ``anthropic/*``): system prompt, last tool, last turn."""
    for message in messages:
        if message["role"] in ("system", "developer"):
            _mark_text(message, marker)
            break
    if tools:
        tools[-1]["cache_control"] = marker
    for message in reversed(messages):
        if message["role"] in ("user", "assistant", "tool") and _mark_text(message, marker):
            break


def _mark_text(message: dict[str, Any], marker: dict[str, str]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return False
        message["content"] = [{"type": "text", "text": content, "cache_control": marker}]
        return True
    for part in reversed(content or []):
        if part.get("type") == "text":
            part["cache_control"] = marker
            return True
    return False


def _effort(model: Model, level: str) -> str | None:
    """``thinkingLevelMap[level] ?? level`` (a ``None`` map entry means the level is unsupported)."""
    mapping = model.thinking_level_map or {}
    value = mapping.get(level, level)
    return value if value is not None else level


def _off_value(model: Model, default: str | None) -> tuple[bool, str | None]:
    """(send, value) for thinking off: not sent when ``thinkingLevelMap.off`` is explicitly null."""
    mapping = model.thinking_level_map or {}
    if "off" in mapping and mapping["off"] is None:
        return False, None
    off = mapping.get("off")
    return True, off if off is not None else default


def _chat_template_kwargs(model: Model, effort: str | None, compat: Compat) -> dict[str, Any]:
    out: dict[str, Any] = {}
    mapping = model.thinking_level_map or {}
    for key, value in compat.chat_template_kwargs.items():
        if not isinstance(value, Mapping):
            out[key] = value
            continue
        if not effort and value.get("omitWhenOff"):
            continue
        if value.get("$var") == "thinking.enabled":
            out[key] = bool(effort)
            continue
        level = effort or "off"
        if level not in mapping:
            if effort:
                out[key] = effort
        elif isinstance(mapping[level], str):
            out[key] = mapping[level]
    return out


def apply_reasoning(params: dict[str, Any], model: Model, effort: str | None, compat: Compat) -> None:
    """Reasoning parameters by ``compat.thinking_format`` (only for reasoning models)."""
    if not model.reasoning:
        return
    fmt = compat.thinking_format
    send_effort = bool(effort) and compat.supports_reasoning_effort
    if fmt in ("zai", "deepseek", "together", "qwen"):
        if fmt == "zai":
            params["thinking"] = (
                {"type": "enabled", "clear_thinking": False} if effort else {"type": "disabled"}
            )
        elif fmt == "deepseek":
            if effort:
                params["thinking"] = {"type": "enabled"}
            elif _off_value(model, None)[0]:
                params["thinking"] = {"type": "disabled"}
        elif fmt == "together":
            params["reasoning"] = {"enabled": bool(effort)}
        else:
            params["enable_thinking"] = bool(effort)
        if send_effort and effort:
            # z.ai drops the parameter for a level mapped to null; the others fall back to the level
            mapped = (
                (model.thinking_level_map or {}).get(effort, effort)
                if fmt == "zai"
                else _effort(model, effort)
            )
            if isinstance(mapped, str):
                params["reasoning_effort"] = mapped
    elif fmt == "qwen-chat-template":
        params["chat_template_kwargs"] = {"enable_thinking": bool(effort), "preserve_thinking": True}
    elif fmt == "chat-template":
        kwargs = _chat_template_kwargs(model, effort, compat)
        if kwargs:
            params["chat_template_kwargs"] = kwargs
    elif fmt in ("openrouter", "string-thinking"):
        send, value = (True, _effort(model, effort)) if effort else _off_value(model, "none")
        if send:
            params["reasoning" if fmt == "openrouter" else "thinking"] = (
                {"effort": value} if fmt == "openrouter" else value
            )
    elif fmt == "ant-ling":
        mapped = (model.thinking_level_map or {}).get(effort) if effort else None
        if isinstance(mapped, str):
            params["reasoning"] = {"effort": mapped}
    elif send_effort and effort:
        params["reasoning_effort"] = _effort(model, effort)
    elif not effort and compat.supports_reasoning_effort:
        off = (model.thinking_level_map or {}).get("off")
        if isinstance(off, str):
            params["reasoning_effort"] = off


def build_params(
    model: Model, context: Context, options: OpenAICompletionsOptions, compat: Compat
) -> dict[str, Any]:
    """The complete request body (before ``on_payload``). Its earlier turns come from the wire
    cache unless ``on_payload`` will see the body or cache markers will be written into it."""
    retention = resolve_cache_retention(options)
    cache = options.on_payload is None and compat.cache_control_format != "anthropic"
    messages = convert_messages(model, context, compat, cache)
    params: dict[str, Any] = {"model": model.id, "messages": messages, "stream": True}
    long_cache = retention == "long" and compat.supports_long_cache_retention
    if options.session_id and ((("api.openai.com" in model.base_url) and retention != "none") or long_cache):
        params["prompt_cache_key"] = options.session_id[:64]
    if long_cache:
        params["prompt_cache_retention"] = "24h"
    if compat.supports_usage_in_streaming:
        params["stream_options"] = {"include_usage": True}
    if compat.supports_store:
        params["store"] = False
    if options.max_tokens:
        params[compat.max_tokens_field] = options.max_tokens
    if options.temperature is not None:
        params["temperature"] = options.temperature
    if context.tools:
        params["tools"] = convert_tools(context.tools, compat)
        if compat.zai_tool_stream:
            params["tool_stream"] = True
    elif _has_tool_history(context, messages):
        params["tools"] = []  # proxies (LiteLLM -> Anthropic) reject tool history without a tools field
    if compat.cache_control_format == "anthropic" and retention != "none":
        marker = {"type": "ephemeral", **({"ttl": "1h"} if long_cache else {})}
        _apply_cache_control(messages, params.get("tools"), marker)
    if options.tool_choice:
        params["tool_choice"] = options.tool_choice
    apply_reasoning(params, model, options.reasoning_effort, compat)
    if compat.open_router_routing:
        params["provider"] = compat.open_router_routing
    gateway = {k: v for k, v in compat.vercel_gateway_routing.items() if k in ("only", "order") and v}
    if gateway:
        params["providerOptions"] = {"gateway": gateway}
    return params
