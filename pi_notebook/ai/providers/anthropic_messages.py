"""The ``anthropic-messages`` provider: Anthropic's Messages API. ``stream`` and ``stream_simple``
are the shared skeleton of :class:`._base.Provider` over this module's request and response parts.

Owns the response side: decoding Anthropic's SSE (``event:`` + ``data:``), turning the six
message events into Pi's block events on one mutable :class:`AssistantMessage`, usage and
cost, stop reasons. Request building is in :mod:`.anthropic_request`, the options type in
:mod:`.anthropic_options`; the "never raise" wrapper, retries and ``on_payload``/``on_response``
are in :mod:`._base`.

Hot path: one ``jiter.from_json`` per ``data:`` line straight from the bytes, a dict lookup
for the block, an in-place string append and one slotted event object. No pydantic model is
built per chunk.

Servers that speak this API besides Anthropic (llama.cpp's ``llama-server``, gateways) are
tolerated where they differ: a ``tool_use`` start without ``input``, ``data:`` lines without
an ``event:`` line, and an ``{"error": ...}`` object inside a 200 stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

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
from ..http import ProviderError, format_error_body
from ..json_parse import parse_json_with_repair, parse_streaming_json
from ..options import SimpleStreamOptions
from ..simple_options import adjust_max_tokens_for_thinking, build_base_options, clamp_max_tokens_to_context
from ..sse import SSEDecoder, SSEEvent
from ..types import (
    Context,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from ._base import Provider, ProviderRun, StreamError
from .anthropic_options import AnthropicEffort, AnthropicOptions
from .anthropic_request import (
    build_headers,
    build_params,
    get_compat,
    has_auth_header,
    messages_url,
)

__all__ = ["AnthropicOptions", "stream", "stream_simple"]

LABEL = "Anthropic"
MESSAGE_EVENTS = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    }
)
REDACTED_THINKING = "[Reasoning redacted]"
_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "pause_turn": "stop",  # a server tool paused the turn; resubmitting continues it
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
}
_DEFAULT_EFFORT: dict[str, AnthropicEffort] = {"minimal": "low", "low": "low", "medium": "medium"}


def simple_to_anthropic(model: Model, context: Context, options: SimpleStreamOptions) -> AnthropicOptions:
    """No ``reasoning`` level: thinking off. Models that force adaptive thinking: an ``effort``.
    Others: a thinking budget, ``max_tokens`` raised for it and clamped to the context window,
    leaving at least 1024 tokens for the answer."""
    base = build_base_options(model, context, options)
    level = options.reasoning
    if not level:
        return AnthropicOptions(**base, thinking_enabled=False)
    if get_compat(model).adaptive_thinking:
        return AnthropicOptions(**base, thinking_enabled=True, effort=_effort(model, level))
    max_tokens, budget = adjust_max_tokens_for_thinking(
        base.get("max_tokens"), model.max_tokens, level, options.thinking_budgets
    )
    max_tokens = clamp_max_tokens_to_context(model, context, max_tokens)
    base["max_tokens"] = max_tokens
    return AnthropicOptions(
        **base, thinking_enabled=True, thinking_budget_tokens=min(budget, max(0, max_tokens - 1024))
    )


def _effort(model: Model, level: str) -> AnthropicEffort:
    """``thinkingLevelMap[level]`` when the model names one, else Pi's default mapping."""
    mapped = (model.thinking_level_map or {}).get(level)
    if isinstance(mapped, str):
        return cast(AnthropicEffort, mapped)
    return _DEFAULT_EFFORT.get(level, "high")


async def _run(run: ProviderRun, context: Context, options: AnthropicOptions) -> None:
    model = run.model
    if not options.api_key and not has_auth_header(options.headers) and needs_api_key(model):
        raise StreamError(missing_key_message(model.provider))
    payload = build_params(model, context, options)
    try:
        response = await run.send(messages_url(model), build_headers(model, context, options), payload)
    except ProviderError as exc:
        if exc.status is None:
            raise
        # The Anthropic SDK's wording, which Pi keeps: the status and the whole JSON body.
        raise StreamError(exc.retry_note + format_error_body(exc.status, exc.body, whole_body=True)) from None
    parser = _Parser(run)
    decoder = SSEDecoder()
    try:
        async for chunk in response.aiter_bytes():
            for event in decoder.feed(chunk):
                parser.handle(event)
        for event in decoder.flush():
            parser.handle(event)
    finally:
        await response.aclose()
    if parser.started and not parser.stopped:
        raise StreamError("Anthropic stream ended before message_stop")


PROVIDER = Provider(LABEL, AnthropicOptions, _run, simple_to_anthropic)
stream = PROVIDER.stream
stream_simple = PROVIDER.stream_simple


def _parse(event: SSEEvent) -> Any:
    try:
        return jiter.from_json(event.data, cache_mode="keys")
    except ValueError:
        pass
    text = event.data.decode("utf-8", "replace")
    try:
        return parse_json_with_repair(text)
    except Exception as exc:
        raise StreamError(f"Could not parse Anthropic SSE event {event.event}: {exc}; data={text}") from None


def error_text(data: Any) -> str:
    """``"<type>: <message>"`` from ``{"type": "error", "error": {...}}`` or ``{"error": ...}``."""
    err = data.get("error", data) if isinstance(data, Mapping) else data
    if isinstance(err, Mapping):
        message = str(err.get("message") or "")
        kind = str(err.get("type") or err.get("code") or "")
        if not message:
            return kind or "Anthropic stream error"
        return message if not kind or kind in message else f"{kind}: {message}"
    return str(err)


def _error_event_text(data: bytes) -> str:
    # Pi throws the event's data as it came: the raw JSON text of the error event.
    return data.decode("utf-8", "replace") or "Anthropic stream error"


class _Open:
    """Streaming state of one content block, keyed by Anthropic's block ``index``."""

    __slots__ = ("block", "content_index", "partial_json")

    def __init__(self, content_index: int, block: TextContent | ThinkingContent | ToolCall) -> None:
        self.content_index = content_index
        self.block = block
        self.partial_json = ""


class _Parser:
    """Applies decoded SSE events to ``run.output`` and pushes Pi's block events."""

    __slots__ = ("call_ids", "model", "open", "output", "push", "started", "stopped")

    def __init__(self, run: ProviderRun) -> None:
        self.call_ids = run.call_ids
        self.model = run.model
        self.output = run.output
        self.push = run.stream.push
        self.open: dict[int, _Open] = {}
        self.started = False
        self.stopped = False

    def handle(self, event: SSEEvent) -> None:
        name = event.event
        if name == "error":
            raise StreamError(_error_event_text(event.data))
        # Of the other events only data-only ones (no ``event:`` line) can matter: some
        # compatible servers omit the line, or put an ``{"error": ...}`` object in a 200 stream.
        if name not in MESSAGE_EVENTS and (
            name != "message" or self.stopped or not event.data.startswith(b"{")
        ):
            return
        data = _parse(event)
        if not isinstance(data, dict):
            return
        kind = data.get("type", name)
        if kind == "error" or "error" in data:
            raise StreamError(error_text(data))
        if kind == "content_block_delta":
            self._delta(data)
        elif kind == "content_block_start":
            self._block_start(data)
        elif kind == "content_block_stop":
            self._block_stop(data)
        elif kind == "message_start":
            self._message_start(data)
        elif kind == "message_delta":
            self._message_delta(data)
        elif kind == "message_stop":
            self.stopped = True

    # -- message events ----------------------------------------------------------------

    def _message_start(self, data: dict[str, Any]) -> None:
        self.started = True
        message = data.get("message") or {}
        if message.get("id"):
            self.output.response_id = message["id"]
        raw = message.get("usage") or {}
        usage = self.output.usage
        # Reported up front, so even an aborted message keeps its input usage.
        usage.input = raw.get("input_tokens") or 0
        usage.output = raw.get("output_tokens") or 0
        usage.cache_read = raw.get("cache_read_input_tokens") or 0
        usage.cache_write = raw.get("cache_creation_input_tokens") or 0
        usage.cache_write1h = (raw.get("cache_creation") or {}).get("ephemeral_1h_input_tokens") or 0
        self._totals(usage)

    def _message_delta(self, data: dict[str, Any]) -> None:
        delta = data.get("delta") or {}
        reason = delta.get("stop_reason")
        output = self.output
        if reason:
            output.raw_stop_reason = reason
            mapped = _STOP_REASONS.get(reason)
            if mapped is not None:
                output.stop_reason = mapped
            elif reason == "refusal":
                details = delta.get("stop_details") or {}
                output.stop_reason = "error"
                output.error_message = (
                    details.get("explanation") or "The model refused to complete the request"
                )
            elif reason == "sensitive":
                output.stop_reason = "error"
                output.error_message = "Provider stopped with: sensitive"
            else:
                raise StreamError(f"Unhandled stop reason: {reason}")
        raw = data.get("usage")
        usage = output.usage
        # Only fields present and non-null: proxies often omit input_tokens here.
        if raw:
            if raw.get("input_tokens") is not None:
                usage.input = raw["input_tokens"]
            if raw.get("output_tokens") is not None:
                usage.output = raw["output_tokens"]
            if raw.get("cache_read_input_tokens") is not None:
                usage.cache_read = raw["cache_read_input_tokens"]
            if raw.get("cache_creation_input_tokens") is not None:
                usage.cache_write = raw["cache_creation_input_tokens"]
            thinking = (raw.get("output_tokens_details") or {}).get("thinking_tokens")
            if thinking is not None:
                usage.reasoning = thinking
        self._totals(usage)

    def _totals(self, usage: Usage) -> None:
        # Anthropic reports no total; it is the sum of the parts.
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
        calculate_cost(self.model, usage)

    # -- content blocks ----------------------------------------------------------------

    def _block_start(self, data: dict[str, Any]) -> None:
        raw = data.get("content_block") or {}
        kind = raw.get("type")
        output, index = self.output, data.get("index", 0)
        block: TextContent | ThinkingContent | ToolCall
        if kind == "text":
            block = TextContent(text="")
        elif kind == "thinking":
            block = ThinkingContent(thinking="", thinking_signature="")
        elif kind == "redacted_thinking":
            block = ThinkingContent(
                thinking=REDACTED_THINKING, thinking_signature=raw.get("data"), redacted=True
            )
        elif kind == "tool_use":
            # llama.cpp omits ``input`` here; the arguments then arrive only as deltas
            block = ToolCall(
                id=self.call_ids.claim(raw.get("id")),  # none or a reused one: a fresh id
                name=raw.get("name") or "",
                arguments=raw.get("input") or {},
            )
        else:
            return  # server-side tool blocks (web search results, ...) are not Pi content
        output.content.append(block)
        content_index = len(output.content) - 1
        self.open[index] = _Open(content_index, block)
        if kind == "tool_use":
            self.push(ToolCallStartEvent(content_index, output))
        elif kind == "text":
            self.push(TextStartEvent(content_index, output))
        else:
            self.push(ThinkingStartEvent(content_index, output))

    def _delta(self, data: dict[str, Any]) -> None:
        state = self.open.get(data.get("index", 0))
        if state is None:
            return
        delta = data.get("delta") or {}
        kind = delta.get("type")
        block = state.block
        if kind == "text_delta":
            if block.type == "text":
                text = delta.get("text") or ""
                block.text += text
                self.push(TextDeltaEvent(state.content_index, text, self.output))
        elif kind == "thinking_delta":
            if block.type == "thinking":
                text = delta.get("thinking") or ""
                block.thinking += text
                self.push(ThinkingDeltaEvent(state.content_index, text, self.output))
        elif kind == "input_json_delta":
            if block.type == "toolCall":
                fragment = delta.get("partial_json") or ""
                state.partial_json += fragment
                block.arguments = parse_streaming_json(state.partial_json)
                self.push(ToolCallDeltaEvent(state.content_index, fragment, self.output))
        elif kind == "signature_delta" and block.type == "thinking":
            block.thinking_signature = (block.thinking_signature or "") + (delta.get("signature") or "")

    def _block_stop(self, data: dict[str, Any]) -> None:
        state = self.open.pop(data.get("index", 0), None)
        if state is None:
            return
        block, content_index = state.block, state.content_index
        if block.type == "text":
            self.push(TextEndEvent(content_index, block.text, self.output))
        elif block.type == "thinking":
            self.push(ThinkingEndEvent(content_index, block.thinking, self.output))
        else:
            # Pi re-parses even when no delta came, which drops an ``input`` sent whole at
            # the start (some gateways do that); keep it instead.
            if state.partial_json:
                block.arguments = parse_streaming_json(state.partial_json)
            self.push(ToolCallEndEvent(content_index, block, self.output))
