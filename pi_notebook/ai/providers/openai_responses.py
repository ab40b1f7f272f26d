"""The ``openai-responses`` provider: OpenAI's Responses API. ``stream`` and ``stream_simple``
are the shared skeleton of :class:`._base.Provider` over this module's request and response parts.

Owns the response side: decoding the Responses API's SSE (one JSON event per ``data:`` line,
discriminated by ``type``), keyed by ``output_index`` into Pi's block events on one mutable
:class:`AssistantMessage`; usage, cost and the status -> stop reason mapping. Request building
lives in :mod:`.openai_responses_request`, the options type in :mod:`.openai_responses_options`;
the "never raise" wrapper, retries and ``on_payload``/``on_response`` in :mod:`._base`.

Hot path: one ``jiter.from_json`` per ``data:`` line straight from the bytes, a dict lookup for
the handler and for the output slot, an in-place string append, one slotted event object.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import jiter

from ..cost import calculate_cost
from ..env import missing_key_message, needs_api_key
from ..events import (
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
from ..http import ProviderError, merge_headers
from ..json_parse import parse_streaming_json
from ..models import clamp_thinking_level
from ..options import SimpleStreamOptions, StreamOptions
from ..simple_options import build_base_options
from ..sse import SSEDecoder
from ..types import Context, Model, StopReason, TextContent, ThinkingContent, ToolCall, Usage
from ._base import Provider, ProviderRun, StreamError
from .openai_responses_options import OpenAIResponsesOptions
from .openai_responses_request import (
    DEFAULT_BASE_URL,
    build_headers,
    build_params,
    dumps,
    encode_text_signature,
    session_headers,
)

__all__ = ["OpenAIResponsesOptions", "stream", "stream_simple"]

LABEL = "OpenAI Responses"
NO_TERMINAL_EVENT = "OpenAI Responses stream ended before a terminal response event"
MAX_ERROR_BODY_CHARS = 4000
_STATUS_STOP: dict[str, StopReason] = {
    "completed": "stop",
    "incomplete": "length",
    "failed": "error",
    "cancelled": "error",
    "in_progress": "stop",
    "queued": "stop",
}


async def _run(run: ProviderRun, context: Context, options: OpenAIResponsesOptions) -> None:
    model = run.model
    if not options.api_key and not _has_auth_header(model, options) and needs_api_key(model):
        raise StreamError(missing_key_message(model.provider))
    params = build_params(model, context, options)
    headers = merge_headers(
        build_headers(options.api_key), model.headers, session_headers(model, options), options.headers
    )
    url = (model.base_url or DEFAULT_BASE_URL).rstrip("/") + "/responses"
    try:
        response = await run.send(url, headers, params)
    except ProviderError as exc:
        raise StreamError(format_http_error(exc)) from exc
    try:
        await _ResponsesParser(run, options.service_tier).consume(response)
    finally:
        await response.aclose()
    if run.output.stop_reason in ("error", "aborted"):
        raise StreamError("An unknown error occurred")


def _simple_options(model: Model, context: Context, simple: SimpleStreamOptions) -> OpenAIResponsesOptions:
    """The provider-neutral ``reasoning`` level, clamped to the model's levels, becomes the effort."""
    level = clamp_thinking_level(model, simple.reasoning) if simple.reasoning else None
    effort = None if level is None or level == "off" else level
    return OpenAIResponsesOptions(**build_base_options(model, context, simple), reasoning_effort=effort)


PROVIDER = Provider(LABEL, OpenAIResponsesOptions, _run, _simple_options)
stream = PROVIDER.stream
stream_simple = PROVIDER.stream_simple


def _has_auth_header(model: Model, options: StreamOptions) -> bool:
    for headers in (model.headers, options.headers):
        for key, value in (headers or {}).items():
            if key.lower() in ("authorization", "cf-aig-authorization") and value and value.strip():
                return True
    return False


def format_http_error(exc: ProviderError) -> str:
    """Pi's text for an HTTP error: ``OpenAI API error (<status>): <error object JSON>``, or the
    SDK-style ``<status> <message>`` when the body has no JSON ``error`` object."""
    message = str(exc)
    if exc.status is None or message.startswith("Server requested "):
        return message  # a transport error, or the retry-delay cap (already complete)
    text = exc.body.strip()
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        parsed = None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and error:
        body = dumps(error)
        if len(body) > MAX_ERROR_BODY_CHARS:
            body = f"{body[:MAX_ERROR_BODY_CHARS]}... [truncated {len(body) - MAX_ERROR_BODY_CHARS} chars]"
        return f"OpenAI API error ({exc.status}): {body}"
    detail = None if parsed is not None else text
    if error is not None:
        detail = dumps(error)
    sdk_message = f"{exc.status} {detail}" if detail else f"{exc.status} status code (no body)"
    return f"OpenAI API error ({exc.status}): {sdk_message}"


def _js(value: Any) -> str:
    """How a template literal prints a JSON value (Pi's error strings are built that way)."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    return dumps(value)


class _Slot:
    """Streaming state of one output item, keyed by ``output_index``."""

    __slots__ = ("block", "index", "kind", "partial_json")

    def __init__(self, kind: str, block: TextContent | ThinkingContent | ToolCall, index: int) -> None:
        self.kind = kind
        self.block = block
        self.index = index
        self.partial_json: str | None = None


class _ResponsesParser:
    """Applies decoded Responses events to ``run.output`` and pushes Pi's block events."""

    __slots__ = (
        "call_ids",
        "handlers",
        "model",
        "output",
        "push",
        "reasoning_by_id",
        "service_tier",
        "slots",
        "terminal",
    )

    def __init__(self, run: ProviderRun, service_tier: str | None) -> None:
        self.call_ids = run.call_ids
        self.model = run.model
        self.output = run.output
        self.push = run.stream.push
        self.service_tier = service_tier
        self.slots: dict[Any, _Slot] = {}
        self.reasoning_by_id: dict[str, ThinkingContent] = {}
        self.terminal = False
        self.handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "response.output_text.delta": self._on_text_delta,
            "response.refusal.delta": self._on_text_delta,
            "response.reasoning_summary_text.delta": self._on_thinking_delta,
            "response.reasoning_text.delta": self._on_thinking_delta,
            "response.reasoning_summary_part.done": self._on_summary_part_done,
            "response.function_call_arguments.delta": self._on_arguments_delta,
            "response.function_call_arguments.done": self._on_arguments_done,
            "response.output_item.added": self._on_item_added,
            "response.output_item.done": self._on_item_done,
            "response.created": self._on_created,
            "response.completed": self._on_terminal,
            "response.incomplete": self._on_terminal,
            "response.failed": self._on_failed,
            "error": self._on_error,
        }

    async def consume(self, response: httpx.Response) -> None:
        decoder = SSEDecoder()
        async for chunk in response.aiter_bytes():
            for event in decoder.feed(chunk):
                self.handle(event.data)
        for event in decoder.flush():
            self.handle(event.data)
        if not self.terminal:
            raise StreamError(NO_TERMINAL_EVENT)

    def handle(self, data: bytes) -> None:
        if not data or data.startswith(b"[DONE]"):
            return
        try:
            event = jiter.from_json(data, cache_mode="keys")
        except ValueError as exc:
            text = data[:200].decode("utf-8", "replace")
            raise StreamError(
                f"Could not parse OpenAI Responses SSE event as JSON: {exc}; data={text}"
            ) from None
        if not isinstance(event, dict):
            return
        if event.get("error"):  # the SDK raises on any event carrying an error object
            raise StreamError(_sdk_error_text(event["error"]))
        handler = self.handlers.get(event.get("type"))  # type: ignore[arg-type]
        if handler is not None:
            handler(event)

    # -- deltas (the per-token path) -----------------------------------------------------

    def _on_text_delta(self, event: dict[str, Any]) -> None:
        slot = self.slots.get(event.get("output_index"))
        if slot is None or slot.kind != "text":
            return
        delta = event.get("delta") or ""
        slot.block.text += delta  # type: ignore[union-attr]
        self.push(TextDeltaEvent(slot.index, delta, self.output))

    def _on_thinking_delta(self, event: dict[str, Any]) -> None:
        slot = self.slots.get(event.get("output_index"))
        if slot is None or slot.kind != "thinking":
            return
        delta = event.get("delta") or ""
        slot.block.thinking += delta  # type: ignore[union-attr]
        self.push(ThinkingDeltaEvent(slot.index, delta, self.output))

    def _on_summary_part_done(self, event: dict[str, Any]) -> None:
        # Summary parts are separate paragraphs; the final text joins them the same way.
        self._on_thinking_delta({"output_index": event.get("output_index"), "delta": "\n\n"})

    def _on_arguments_delta(self, event: dict[str, Any]) -> None:
        slot = self.slots.get(event.get("output_index"))
        if slot is None or slot.kind != "toolCall" or slot.partial_json is None:
            return
        delta = event.get("delta") or ""
        slot.partial_json += delta
        slot.block.arguments = parse_streaming_json(slot.partial_json)  # type: ignore[union-attr]
        self.push(ToolCallDeltaEvent(slot.index, delta, self.output))

    def _on_arguments_done(self, event: dict[str, Any]) -> None:
        slot = self.slots.get(event.get("output_index"))
        if slot is None or slot.kind != "toolCall" or slot.partial_json is None:
            return
        previous = slot.partial_json
        final = event.get("arguments") or ""
        slot.partial_json = final
        slot.block.arguments = parse_streaming_json(final)  # type: ignore[union-attr]
        # Emit what the deltas did not carry, so concatenated deltas always equal the arguments.
        if final.startswith(previous) and len(final) > len(previous):
            self.push(ToolCallDeltaEvent(slot.index, final[len(previous) :], self.output))

    # -- output items -------------------------------------------------------------------

    def _on_created(self, event: dict[str, Any]) -> None:
        response = event.get("response") or {}
        self.output.response_id = response.get("id")

    def _on_item_added(self, event: dict[str, Any]) -> None:
        self._create_slot(event.get("output_index"), event.get("item") or {})

    def _create_slot(self, output_index: Any, item: dict[str, Any]) -> _Slot | None:
        kind = item.get("type")
        output = self.output
        index = len(output.content)
        if kind == "reasoning":
            thinking = ThinkingContent(thinking="")
            output.content.append(thinking)
            slot = self.slots[output_index] = _Slot("thinking", thinking, index)
            self.push(ThinkingStartEvent(index, output))
        elif kind == "message":
            self._apply_phase(item)
            text = TextContent(text="")
            output.content.append(text)
            slot = self.slots[output_index] = _Slot("text", text, index)
            self.push(TextStartEvent(index, output))
        elif kind == "function_call":
            # the call part is what a tool result references: none or a reused one gets a fresh id
            call_id = self.call_ids.claim(item.get("call_id"))
            call = ToolCall(id=f"{call_id}|{item.get('id')}", name=item.get("name") or "")
            output.content.append(call)
            slot = self.slots[output_index] = _Slot("toolCall", call, index)
            slot.partial_json = item.get("arguments") or ""
            self.push(ToolCallStartEvent(index, output))
        else:
            return None
        return slot

    def _apply_phase(self, item: dict[str, Any]) -> None:
        # A final-answer message means the turn is ending; the terminal status may still override.
        if item.get("type") == "message" and item.get("phase") == "final_answer":
            self.output.stop_reason = "stop"

    def _on_item_done(self, event: dict[str, Any]) -> None:
        item = event.get("item") or {}
        output_index = event.get("output_index")
        self._apply_phase(item)
        slot = self.slots.get(output_index) or self._create_slot(output_index, item)
        if slot is None:
            return
        kind, block = item.get("type"), slot.block
        if kind == "reasoning" and isinstance(block, ThinkingContent):
            summary = "\n\n".join(part.get("text") or "" for part in item.get("summary") or [])
            content = "\n\n".join(part.get("text") or "" for part in item.get("content") or [])
            block.thinking = summary or content or block.thinking
            block.thinking_signature = dumps(item)
            if isinstance(item.get("id"), str):
                self.reasoning_by_id[item["id"]] = block
            self.push(ThinkingEndEvent(slot.index, block.thinking, self.output))
        elif kind == "message" and isinstance(block, TextContent):
            parts = item.get("content") or []
            block.text = "".join(
                (part.get("text") if part.get("type") == "output_text" else part.get("refusal")) or ""
                for part in parts
            )
            block.text_signature = encode_text_signature(str(item.get("id")), item.get("phase"))
            self.push(TextEndEvent(slot.index, block.text, self.output))
        elif kind == "function_call" and isinstance(block, ToolCall) and slot.partial_json is not None:
            block.arguments = parse_streaming_json(item.get("arguments") or slot.partial_json or "{}")
            slot.partial_json = None
            self.push(ToolCallEndEvent(slot.index, block, self.output))
        else:
            return
        del self.slots[output_index]

    # -- terminal events ----------------------------------------------------------------

    def _on_terminal(self, event: dict[str, Any]) -> None:
        self.terminal = True
        response = event.get("response") or {}
        output = self.output
        self._backfill_reasoning(response.get("output") or [])
        if response.get("id"):
            output.response_id = response["id"]
        if response.get("usage"):
            output.usage = _usage(response["usage"])
        calculate_cost(self.model, output.usage)
        tier = response.get("service_tier")
        _apply_service_tier(output.usage, tier if tier is not None else self.service_tier, self.model)
        status = response.get("status")
        output.raw_stop_reason = status
        if status is None:
            output.stop_reason = "stop"
        elif status in _STATUS_STOP:
            output.stop_reason = _STATUS_STOP[status]
        else:
            raise StreamError(f"Unhandled stop reason: {status}")
        if output.stop_reason == "stop" and any(block.type == "toolCall" for block in output.content):
            output.stop_reason = "toolUse"

    def _backfill_reasoning(self, items: list[Any]) -> None:
        # Azure may leave encrypted_content out of output_item.done and send it only here;
        # replay with store=false needs it in the signature.
        for item in items:
            if (
                not isinstance(item, dict)
                or item.get("type") != "reasoning"
                or not item.get("encrypted_content")
            ):
                continue
            block = self.reasoning_by_id.get(item.get("id"))  # type: ignore[arg-type]
            if block is None or not block.thinking_signature:
                continue
            stored = json.loads(block.thinking_signature)
            if not stored.get("encrypted_content"):
                stored["encrypted_content"] = item["encrypted_content"]
                block.thinking_signature = dumps(stored)

    def _on_failed(self, event: dict[str, Any]) -> None:
        self.terminal = True
        response = event.get("response") or {}
        self.output.raw_stop_reason = response.get("status")
        error = response.get("error")
        details = response.get("incomplete_details")
        if error:
            message = f"{error.get('code') or 'unknown'}: {error.get('message') or 'no message'}"
        elif details and details.get("reason"):
            message = f"incomplete: {details['reason']}"
        else:
            message = "Unknown error (no error details in response)"
        raise StreamError(message)

    def _on_error(self, event: dict[str, Any]) -> None:
        code = _js(event.get("code")) if "code" in event else "undefined"
        message = _js(event.get("message")) if "message" in event else "undefined"
        raise StreamError(f"Error Code {code}: {message}")


def _sdk_error_text(error: Any) -> str:
    """The OpenAI SDK's message for an ``{"error": ...}`` object inside a 200 stream."""
    if isinstance(error, dict) and error.get("message"):
        return _js(error["message"])
    return _js(error)


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("input_tokens_details") or {}
    cached = details.get("cached_tokens") or 0
    cache_write = details.get("cache_write_tokens") or 0
    return Usage(
        # input_tokens includes cached and cache-write tokens; Pi's input is the uncached rest.
        input=max(0, (raw.get("input_tokens") or 0) - cached - cache_write),
        output=raw.get("output_tokens") or 0,
        cache_read=cached,
        cache_write=cache_write,
        reasoning=(raw.get("output_tokens_details") or {}).get("reasoning_tokens") or 0,
        total_tokens=raw.get("total_tokens") or 0,
    )


def _apply_service_tier(usage: Usage, tier: str | None, model: Model) -> None:
    if tier == "flex":
        multiplier = 0.5
    elif tier == "priority":
        multiplier = 2.5 if model.id == "gpt-5.5" else 2.0
    else:
        return
    cost = usage.cost
    cost.input *= multiplier
    cost.output *= multiplier
    cost.cache_read *= multiplier
    cost.cache_write *= multiplier
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
