"""Request side of the ``openai-responses`` adapter: Pi history -> Responses input items,
tool definitions, the request body and headers.

Replay rules worth knowing: reasoning items come back verbatim from ``thinkingSignature`` (the
whole item serialized at ``output_item.done``, encrypted content included, because requests use
``store: false``); assistant text keeps its message item id through ``textSignature``; a tool-call
id is ``"<call_id>|<item_id>"`` and the item id must start with ``fc_``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..text import sanitize_surrogates, short_hash
from ..transform import transform_messages
from ..types import AssistantMessage, Context, ImageContent, Model, TextContent, Tool
from ..wire_cache import cached_history
from .openai_responses_options import OpenAIResponsesOptions

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Providers whose Responses tool-call ids carry a "<call_id>|<item_id>" pair worth keeping.
OPENAI_TOOL_CALL_PROVIDERS = frozenset({"openai", "openai-codex", "opencode"})
# OpenAI rejects max_output_tokens below 16.
MIN_OUTPUT_TOKENS = 16
PROMPT_CACHE_KEY_MAX_CHARS = 64
_ID_MAX_CHARS = 64
_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def dumps(value: Any) -> str:
    """``JSON.stringify``: compact, non-ASCII kept as is."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- ids -------------------------------------------------------------------------------


def _normalize_id_part(part: str) -> str:
    # JS replaces each UTF-16 unit, so a character outside the BMP becomes two underscores.
    sanitized = _ID_UNSAFE.sub(lambda m: "__" if ord(m.group()) > 0xFFFF else "_", part)
    return sanitized[:_ID_MAX_CHARS].rstrip("_")


def make_tool_call_id_normalizer(
    model: Model, allowed_providers: frozenset[str] = OPENAI_TOOL_CALL_PROVIDERS
) -> Callable[[str, Model, AssistantMessage], str]:
    """Normalizer for ids of tool calls replayed from another model (see ``transform_messages``)."""

    def normalize(tool_call_id: str, _target: Model, source: AssistantMessage) -> str:
        if model.provider not in allowed_providers or "|" not in tool_call_id:
            return _normalize_id_part(tool_call_id)
        call_id, item_id = tool_call_id.split("|")[:2]
        foreign = source.provider != model.provider or source.api != model.api
        # A foreign item id (another provider's) is not a valid fc_ id: hash it into one.
        item_id = f"fc_{short_hash(item_id)}"[:_ID_MAX_CHARS] if foreign else _normalize_id_part(item_id)
        if not item_id.startswith("fc_"):
            item_id = _normalize_id_part(f"fc_{item_id}")
        return f"{_normalize_id_part(call_id)}|{item_id}"

    return normalize


def encode_text_signature(item_id: str, phase: str | None) -> str:
    """``TextSignatureV1``: ``{"v":1,"id":...,"phase"?:...}``."""
    payload: dict[str, Any] = {"v": 1, "id": item_id}
    if phase:
        payload["phase"] = phase
    return dumps(payload)


def parse_text_signature(signature: str | None) -> tuple[str, str | None] | None:
    """(message item id, phase) from a v1 signature or a legacy bare id."""
    if not signature:
        return None
    if signature.startswith("{"):
        try:
            parsed = json.loads(signature)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("v") == 1 and isinstance(parsed.get("id"), str):
            phase = parsed.get("phase")
            return parsed["id"], phase if phase in ("commentary", "final_answer") else None
    return signature, None


# --- messages --------------------------------------------------------------------------


def convert_messages(
    model: Model,
    context: Context,
    allowed_providers: frozenset[str] = OPENAI_TOOL_CALL_PROVIDERS,
    cache: bool = False,
) -> list[dict[str, Any]]:
    """The ``input`` array: system prompt, then every message of the transformed history. With
    ``cache``, the earlier turns come from the wire cache (shared with later requests: the
    caller must not change them or hand them to user code)."""
    items: list[dict[str, Any]] = []
    if context.system_prompt:
        compat = model.compat or {}
        role = (
            "developer" if model.reasoning and compat.get("supportsDeveloperRole") is not False else "system"
        )
        items.append({"role": role, "content": sanitize_surrogates(context.system_prompt)})
    normalizer = make_tool_call_id_normalizer(model, allowed_providers)

    def counted(messages: Sequence[Any], start: int) -> tuple[list[dict[str, Any]], int]:
        return _convert_history(model, messages, normalizer, start)

    if not cache:
        return items + counted(context.messages, 0)[0]
    key = ("openai-responses", model.provider, model.api, model.id, tuple(model.input), allowed_providers)
    history = cached_history(key, None, context.messages, lambda ms: counted(ms, 0)[0], counted=counted)
    return history.with_head(items) if items else history


def _convert_history(
    model: Model, messages: Sequence[Any], normalizer: Any, msg_index: int
) -> tuple[list[dict[str, Any]], int]:
    """The items of ``messages``, numbered from ``msg_index`` (Pi counts the messages that
    give items), and the number after them."""
    items: list[dict[str, Any]] = []
    for msg in transform_messages(messages, model, normalizer):
        if msg.role == "user":
            content = _user_content(msg.content)
            if not content:
                continue  # Pi skips the index too
            items.append({"role": "user", "content": content})
        elif msg.role == "assistant":
            converted = _assistant_items(model, msg, msg_index)
            if not converted:
                continue
            items.extend(converted)
        else:
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": msg.tool_call_id.split("|")[0],
                    "output": _tool_result_output(model, msg.content),
                }
            )
        msg_index += 1
    return items, msg_index


def _image_item(image: ImageContent) -> dict[str, Any]:
    return {
        "type": "input_image",
        "detail": "auto",
        "image_url": f"data:{image.mime_type};base64,{image.data}",
    }


def _user_content(content: str | list[TextContent | ImageContent]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": sanitize_surrogates(content)}]
    return [
        {"type": "input_text", "text": sanitize_surrogates(block.text)}
        if block.type == "text"
        else _image_item(block)
        for block in content
    ]


def _assistant_items(model: Model, msg: AssistantMessage, msg_index: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    # Another model of the same provider+api: its fc_ ids were paired with its own reasoning
    # items, which OpenAI validates, so they are sent without an item id.
    different_model = msg.model != model.id and msg.provider == model.provider and msg.api == model.api
    text_index = 0
    for block in msg.content:
        if block.type == "thinking":
            # not a reasoning item we wrote (corrupt signature): it cannot be replayed
            with contextlib.suppress(ValueError):
                if block.thinking_signature:
                    out.append(json.loads(block.thinking_signature))
        elif block.type == "text":
            parsed = parse_text_signature(block.text_signature)
            msg_id = parsed[0] if parsed else ""
            if not msg_id:
                msg_id = f"msg_pi_{msg_index}" if text_index == 0 else f"msg_pi_{msg_index}_{text_index}"
            elif len(msg_id) > _ID_MAX_CHARS:
                msg_id = f"msg_{short_hash(msg_id)}"
            text_index += 1
            item: dict[str, Any] = {
                "type": "message",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": sanitize_surrogates(block.text), "annotations": []}
                ],
                "status": "completed",
                "id": msg_id,
            }
            if parsed and parsed[1]:
                item["phase"] = parsed[1]
            out.append(item)
        elif block.type == "toolCall":
            parts = block.id.split("|")
            item_id: str | None = parts[1] if len(parts) > 1 else None
            if (different_model and item_id and item_id.startswith("fc_")) or not (
                item_id and item_id.startswith("fc_")
            ):
                item_id = None
            call: dict[str, Any] = {"type": "function_call"}
            if item_id is not None:
                call["id"] = item_id
            call.update(call_id=parts[0], name=block.name, arguments=dumps(block.arguments))
            out.append(call)
    return out


def _tool_result_output(
    model: Model, content: list[TextContent | ImageContent]
) -> str | list[dict[str, Any]]:
    text = "\n".join(block.text for block in content if block.type == "text")
    images = [block for block in content if block.type == "image"]
    if not images or "image" not in model.input:
        placeholder = "(see attached image)" if images else "(no tool output)"
        return sanitize_surrogates(text or placeholder)
    output: list[dict[str, Any]] = []
    if text:
        output.append({"type": "input_text", "text": sanitize_surrogates(text)})
    output.extend(_image_item(image) for image in images)
    return output


# --- tools and the request body --------------------------------------------------------


def supports_strict_mode(model: Model) -> bool:
    # Pi's rule: only models whose compat says so (the catalogue marks OpenAI's own models)
    # get a ``strict`` flag on their tools; a custom model without compat sends none.
    return bool((model.compat or {}).get("supportsStrictMode", False))


def convert_tools(tools: list[Tool], supports_strict: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for tool in tools:
        definition: dict[str, Any] = {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        }
        sampling = tool.constrained_sampling
        json_schema = isinstance(sampling, dict) and sampling.get("type") == "json_schema"
        if json_schema and not supports_strict and sampling.get("strict") == "require":
            raise ValueError(
                f'Tool "{tool.name}" requires JSON-schema constrained sampling, '
                "but strict tools are unsupported."
            )
        if supports_strict:
            definition["strict"] = json_schema
        out.append(definition)
    return out


def resolve_cache_retention(options: OpenAIResponsesOptions) -> str:
    if options.cache_retention:
        return options.cache_retention
    env_value = (options.env or {}).get("PI_CACHE_RETENTION") or os.environ.get("PI_CACHE_RETENTION")
    return "long" if env_value == "long" else "short"


def build_params(model: Model, context: Context, options: OpenAIResponsesOptions) -> dict[str, Any]:
    """The request body, keys in Pi's order (it is what ``on_payload`` sees)."""
    compat = model.compat or {}
    retention = resolve_cache_retention(options)
    cache = options.on_payload is None
    params: dict[str, Any] = {
        "model": model.id,
        "input": convert_messages(model, context, cache=cache),
        "stream": True,
    }
    if retention != "none" and options.session_id is not None:
        params["prompt_cache_key"] = options.session_id[:PROMPT_CACHE_KEY_MAX_CHARS]
    if retention == "long" and compat.get("supportsLongCacheRetention", True) is not False:
        params["prompt_cache_retention"] = "24h"
    if retention == "none" and compat.get("supportsExplicitPromptCacheMode"):
        params["prompt_cache_options"] = {"mode": "explicit"}
    params["store"] = False
    if options.max_tokens:
        params["max_output_tokens"] = max(options.max_tokens, MIN_OUTPUT_TOKENS)
    if options.temperature is not None:
        params["temperature"] = options.temperature
    if options.service_tier is not None:
        params["service_tier"] = options.service_tier
    if context.tools:
        params["tools"] = convert_tools(context.tools, supports_strict_mode(model))
    if options.tool_choice is not None:
        params["tool_choice"] = options.tool_choice
    if model.reasoning:
        _add_reasoning(params, model, options)
    return params


def _add_reasoning(params: dict[str, Any], model: Model, options: OpenAIResponsesOptions) -> None:
    level_map = model.thinking_level_map or {}
    if options.reasoning_effort or options.reasoning_summary:
        effort = "medium"
        if options.reasoning_effort:
            mapped = level_map.get(options.reasoning_effort)
            effort = mapped if mapped is not None else options.reasoning_effort
        params["reasoning"] = {"effort": effort, "summary": options.reasoning_summary or "auto"}
        params["include"] = ["reasoning.encrypted_content"]
    elif model.provider != "github-copilot" and not ("off" in level_map and level_map["off"] is None):
        # Reasoning models reason by default; "off" maps to the lowest effort the model allows
        # (a map value of None means the model cannot turn reasoning off: send nothing).
        off = level_map.get("off")
        params["reasoning"] = {"effort": off if off is not None else "none"}
    if model.provider == "xai":
        params["include"] = ["reasoning.encrypted_content"]


def build_headers(api_key: str | None) -> dict[str, str]:
    """Content negotiation and auth; the caller merges affinity, model and option headers over them."""
    # The OpenAI SDK's defaults (Pi's requests): the server streams SSE because of ``stream: true``.
    headers = {"content-type": "application/json", "accept": "application/json"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


def session_headers(model: Model, options: OpenAIResponsesOptions) -> dict[str, str]:
    session_id = options.session_id
    if not session_id or resolve_cache_retention(options) == "none":
        return {}
    compat_format = (model.compat or {}).get("sessionAffinityFormat")
    if compat_format is None:
        openrouter = model.provider == "openrouter" or "openrouter.ai" in model.base_url
        compat_format = "openrouter" if openrouter else "openai"
    if compat_format == "openrouter":
        return {"x-session-id": session_id}
    headers = {"session_id": session_id} if compat_format == "openai" else {}
    headers["x-client-request-id"] = session_id
    return headers
