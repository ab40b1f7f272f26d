"""Request side of the ``google-generative-ai`` adapter Pi history -> Gemini
``contents``, function declarations, tool config and thinking config, as the REST body of
``models/<id>:streamGenerateContent?alt=sse``.

Replay rules worth knowing: thought parts and thought signatures go back only to the same
provider+model (a signature is opaque to any other model and must be valid base64); all
function responses of a turn share one user turn; Gemini 3 takes tool-result images inside
``functionResponse.parts``, older models get them in an extra user turn.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from ..text import sanitize_surrogates
from ..transform import transform_messages
from ..types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    TextContent,
    Tool,
    ToolResultMessage,
)
from ..wire_cache import cached_history
from .google_options import GoogleThinking, GoogleThinkingLevel

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
ClampedLevel = Literal["minimal", "low", "medium", "high"]

_BASE64_SIGNATURE = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
_GEMINI_MAJOR = re.compile(r"^gemini(?:-live)?-(\d+)")
_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_BUDGETS: dict[str, dict[str, int]] = {
    "2.5-pro": {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768},
    "2.5-flash-lite": {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576},
    "2.5-flash": {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576},
}


# --- model families --------------------------------------------------------------------


def gemini_major_version(model_id: str) -> int | None:
    match = _GEMINI_MAJOR.match(model_id.lower())
    return int(match.group(1)) if match else None


def is_gemini3_pro(model_id: str) -> bool:
    return re.search(r"gemini-3(?:\.\d+)?-pro", model_id.lower()) is not None


def is_gemini3_flash(model_id: str) -> bool:
    lowered = model_id.lower()
    return re.search(r"gemini-3(?:\.\d+)?-flash", lowered) is not None or lowered in (
        "gemini-flash-latest",
        "gemini-flash-lite-latest",
    )


def is_gemma4(model_id: str) -> bool:
    return re.search(r"gemma-?4", model_id.lower()) is not None


def uses_thinking_level(model_id: str) -> bool:
    """Gemini 3 and Gemma 4 take a ``thinkingLevel``; older models a token budget."""
    return is_gemini3_pro(model_id) or is_gemini3_flash(model_id) or is_gemma4(model_id)


def requires_tool_call_id(model_id: str) -> bool:
    """Non-Gemini models behind the Gemini API need explicit function-call ids."""
    return model_id.startswith(("claude-", "gpt-oss-"))


def _multimodal_function_response(model_id: str) -> bool:
    major = gemini_major_version(model_id)
    return major is None or major >= 3


def supports_strict_tool_sampling(model_id: str) -> bool:
    major = gemini_major_version(model_id)
    return major is not None and major >= 3


# --- thinking --------------------------------------------------------------------------


def thinking_level(effort: ClampedLevel, model_id: str) -> GoogleThinkingLevel:
    if is_gemini3_pro(model_id):
        return "LOW" if effort in ("minimal", "low") else "HIGH"
    if is_gemma4(model_id):
        return "MINIMAL" if effort in ("minimal", "low") else "HIGH"
    levels: dict[str, GoogleThinkingLevel] = {
        "minimal": "MINIMAL",
        "low": "LOW",
        "medium": "MEDIUM",
        "high": "HIGH",
    }
    return levels[effort]


def thinking_budget(model_id: str, effort: ClampedLevel, custom: dict[str, int] | None) -> int:
    if custom and custom.get(effort) is not None:
        return custom[effort]
    for family in ("2.5-pro", "2.5-flash-lite", "2.5-flash"):  # most specific first
        if family in model_id:
            return _BUDGETS[family][effort]
    return -1


def disabled_thinking_config(model_id: str) -> dict[str, Any]:
    # Gemini 3 Pro cannot turn thinking off and 3 Flash / Gemma 4 only down to MINIMAL: use the
    # lowest level without includeThoughts so hidden thinking stays invisible.
    if is_gemini3_pro(model_id):
        return {"thinkingLevel": "LOW"}
    if is_gemini3_flash(model_id) or is_gemma4(model_id):
        return {"thinkingLevel": "MINIMAL"}
    return {"thinkingBudget": 0}


def thinking_config(model: Model, thinking: GoogleThinking | None) -> dict[str, Any] | None:
    if not model.reasoning or thinking is None:
        return None
    if not thinking.enabled:
        return disabled_thinking_config(model.id)
    config: dict[str, Any] = {"includeThoughts": True}
    if thinking.level is not None:
        config["thinkingLevel"] = thinking.level
    elif thinking.budget_tokens is not None:
        config["thinkingBudget"] = thinking.budget_tokens
    return config


# --- contents --------------------------------------------------------------------------


def _valid_signature(signature: str | None) -> bool:
    return bool(signature) and len(signature) % 4 == 0 and _BASE64_SIGNATURE.match(signature) is not None  # type: ignore[arg-type]


def _signature(same_model: bool, signature: str | None) -> str | None:
    return signature if same_model and _valid_signature(signature) else None


def _inline(image: ImageContent) -> dict[str, Any]:
    return {"inlineData": {"mimeType": image.mime_type, "data": image.data}}


def convert_messages(model: Model, context: Context, cache: bool = False) -> list[dict[str, Any]]:
    """Gemini ``contents``: roles ``user``/``model``, function responses merged per turn. With
    ``cache``, the earlier turns come from the wire cache (shared with later requests: the
    caller must not change them or hand them to user code)."""
    if not cache:
        return _convert(model, context.messages)
    key = ("google-generative-ai", model.provider, model.api, model.id, tuple(model.input))
    return cached_history(key, None, context.messages, lambda messages: _convert(model, messages))


def _convert(model: Model, messages: Sequence[Any]) -> list[dict[str, Any]]:
    contents: list[dict[str, Any]] = []
    needs_id = requires_tool_call_id(model.id)

    def normalize(tool_call_id: str, _target: Model, _source: AssistantMessage) -> str:
        return _ID_UNSAFE.sub("_", tool_call_id)[:64] if needs_id else tool_call_id

    for msg in transform_messages(messages, model, normalize):
        if msg.role == "user":
            if isinstance(msg.content, str):
                contents.append({"role": "user", "parts": [{"text": sanitize_surrogates(msg.content)}]})
                continue
            parts = [
                {"text": sanitize_surrogates(b.text)} if b.type == "text" else _inline(b) for b in msg.content
            ]
            if parts:
                contents.append({"role": "user", "parts": parts})
        elif msg.role == "assistant":
            parts = _model_parts(model, msg, needs_id)
            if parts:
                contents.append({"role": "model", "parts": parts})
        else:
            _append_tool_result(contents, model, msg, needs_id)
    return contents


def _model_parts(model: Model, msg: AssistantMessage, needs_id: bool) -> list[dict[str, Any]]:
    same = msg.provider == model.provider and msg.model == model.id
    parts: list[dict[str, Any]] = []
    for block in msg.content:
        if block.type == "text":
            if not block.text.strip():
                continue
            part: dict[str, Any] = {"text": sanitize_surrogates(block.text)}
            signature = _signature(same, block.text_signature)
        elif block.type == "thinking":
            if not block.thinking.strip():
                continue
            if not same:  # plain text, no tags, so the model does not mimic them
                parts.append({"text": sanitize_surrogates(block.thinking)})
                continue
            part = {"thought": True, "text": sanitize_surrogates(block.thinking)}
            signature = _signature(same, block.thinking_signature)
        else:
            call: dict[str, Any] = {"name": block.name, "args": block.arguments or {}}
            if needs_id:
                call["id"] = block.id
            part = {"functionCall": call}
            signature = _signature(same, block.thought_signature)
        if signature:
            part["thoughtSignature"] = signature
        parts.append(part)
    return parts


def _append_tool_result(
    contents: list[dict[str, Any]], model: Model, msg: ToolResultMessage, needs_id: bool
) -> None:
    text = "\n".join(b.text for b in msg.content if isinstance(b, TextContent))
    images = [b for b in msg.content if isinstance(b, ImageContent)] if "image" in model.input else []
    nested = _multimodal_function_response(model.id)
    value = sanitize_surrogates(text) if text else ("(see attached image)" if images else "")
    response: dict[str, Any] = {
        "name": msg.tool_name,
        "response": {"error": value} if msg.is_error else {"output": value},
    }
    if images and nested:
        response["parts"] = [_inline(image) for image in images]
    if needs_id:
        response["id"] = msg.tool_call_id
    part = {"functionResponse": response}
    last = contents[-1] if contents else None
    if last is not None and last["role"] == "user" and any("functionResponse" in p for p in last["parts"]):
        last["parts"].append(part)
    else:
        contents.append({"role": "user", "parts": [part]})
    if images and not nested:
        contents.append({"role": "user", "parts": [{"text": "Tool result image:"}, *map(_inline, images)]})


# --- tools and the request body --------------------------------------------------------


def convert_tools(tools: list[Tool]) -> list[dict[str, Any]] | None:
    if not tools:
        return None
    declarations = [
        {"name": tool.name, "description": tool.description, "parametersJsonSchema": tool.parameters}
        for tool in tools
    ]
    return [{"functionDeclarations": declarations}]


def function_calling_mode(tools: list[Tool], tool_choice: str | None, supports_strict: bool) -> str | None:
    strict = False
    for tool in tools:
        sampling = tool.constrained_sampling
        if not (isinstance(sampling, dict) and sampling.get("type") == "json_schema"):
            continue
        if supports_strict:
            strict = True
        elif sampling.get("strict") == "require":
            raise ValueError(
                f'Tool "{tool.name}" requires JSON-schema constrained sampling, '
                "but strict tools are unsupported."
            )
    modes = {"auto": "AUTO", "none": "NONE", "any": "ANY"}
    if tool_choice in ("none", "any"):
        return modes[tool_choice]
    if strict:
        return "VALIDATED"
    return modes.get(tool_choice, "AUTO") if tool_choice else None


def build_body(
    model: Model,
    context: Context,
    *,
    temperature: float | None,
    max_tokens: int | None,
    tool_choice: str | None,
    thinking: GoogleThinking | None,
    cache: bool = False,
) -> dict[str, Any]:
    """The ``GenerateContentRequest`` (keys in a stable order: it is what ``on_payload`` sees;
    ``cache``: no user code will, see :func:`convert_messages`)."""
    body: dict[str, Any] = {"contents": convert_messages(model, context, cache)}
    if context.system_prompt:
        # The genai SDK turns Pi's string into a Content with role "user"; Gemini accepts both.
        body["systemInstruction"] = {
            "parts": [{"text": sanitize_surrogates(context.system_prompt)}],
            "role": "user",
        }
    if context.tools:
        body["tools"] = convert_tools(context.tools)
        mode = function_calling_mode(context.tools, tool_choice, supports_strict_tool_sampling(model.id))
        if mode is not None:
            body["toolConfig"] = {"functionCallingConfig": {"mode": mode}}
    generation: dict[str, Any] = {}
    if temperature is not None:
        generation["temperature"] = temperature
    if max_tokens is not None:
        generation["maxOutputTokens"] = max_tokens
    config = thinking_config(model, thinking)
    if config is not None:
        generation["thinkingConfig"] = config
    # The genai SDK sends ``generationConfig`` even when empty; so do we, byte for byte.
    body["generationConfig"] = generation
    return body


def stream_url(model: Model) -> str:
    base = (model.base_url or DEFAULT_BASE_URL).rstrip("/")
    return f"{base}/models/{model.id}:streamGenerateContent?alt=sse"
