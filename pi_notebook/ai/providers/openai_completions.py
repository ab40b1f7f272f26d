"""The ``openai-completions`` provider: OpenAI Chat Completions and every server that speaks it
(OpenRouter, Groq, DeepSeek, xAI, Together, Cerebras, Mistral, Ollama, vLLM, llama.cpp's
``llama-server``, LM Studio ...). ``stream`` and ``stream_simple`` are the shared skeleton of
:class:`._base.Provider` over this module's request and response parts.

This module owns the response side, which is the per-token hot path: raw bytes from
``aiter_raw()``, the data-only fast path of the shared SSE decoder
(:meth:`..sse.SSEDecoder.feed_data`), ``jiter`` for each ``data:`` payload, plain dict access,
in-place block mutation and one slotted event per delta. Request building and compat detection
live in :mod:`.openai_completions_request`, the options type in
:mod:`.openai_completions_options`.

v0.83 block semantics: one text block and one thinking block per message (created on first
delta), tool-call blocks keyed by stream index, and every ``*_end`` event emitted together after
the last chunk, in content order.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
from jiter import from_json

from ..call_ids import fresh_mistral_call_id
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
from ..http import ProviderError, merge_headers, with_error_body
from ..json_parse import parse_streaming_json
from ..models import clamp_thinking_level
from ..options import SimpleStreamOptions
from ..simple_options import build_base_options
from ..sse import SSEDecoder
from ..types import (
    Context,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from ._base import Provider, ProviderRun, StreamError, redact_key
from .openai_completions_options import OpenAICompletionsOptions
from .openai_completions_request import (
    Compat,
    build_params,
    resolve_cache_retention,
    resolve_compat,
    session_headers,
)

__all__ = ["OpenAICompletionsOptions", "parse_usage", "stream", "stream_simple"]

LABEL = "OpenAI Completions"
_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
_STOP_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "end": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}


# --- request ----------------------------------------------------------------------------------


def build_headers(model: Model, options: OpenAICompletionsOptions, compat: Compat) -> dict[str, str]:
    """Defaults, ``model.headers``, cache-affinity headers, then ``options.headers`` (later wins)."""
    base = {"Content-Type": "application/json", "Accept": "application/json"}
    if options.api_key:
        base["Authorization"] = f"Bearer {options.api_key}"
    session = options.session_id if resolve_cache_retention(options) != "none" else None
    headers = merge_headers(base, model.headers, session_headers(session, compat), options.headers)
    if not options.api_key and needs_api_key(model):
        authorized = any(
            k.lower() in ("authorization", "cf-aig-authorization") and v.strip() for k, v in headers.items()
        )
        if not authorized:
            raise StreamError(missing_key_message(model.provider))
    return headers


async def _request(run: ProviderRun, context: Context, options: OpenAICompletionsOptions) -> None:
    model = run.model
    compat = resolve_compat(model)
    if compat.tool_call_id_format == "mistral":  # replayed as it is: Mistral takes only its own form
        run.call_ids.fresh = fresh_mistral_call_id
    headers = build_headers(model, options, compat)
    payload = build_params(model, context, options, compat)
    url = model.base_url.rstrip("/") + "/chat/completions"
    try:
        response = await run.send(url, headers, payload)
    except ProviderError as exc:
        # Pi keeps the status and the provider's error object: "<status>: <error JSON>".
        message = _with_raw_metadata(with_error_body(exc), exc.body)
        raise StreamError(redact_key(message, options.api_key)) from None
    try:
        await _consume(run, response, options.api_key)
    finally:
        await response.aclose()


def _with_raw_metadata(message: str, body: str) -> str:
    """OpenRouter puts the upstream provider's own error text in ``error.metadata.raw``."""
    try:
        raw = json.loads(body)["error"]["metadata"]["raw"]
    except (ValueError, KeyError, TypeError):
        return message
    return message if not raw or str(raw) in message else f"{message}\n{raw}"


# --- entry points ----------------------------------------------------------------------------


def _simple_options(model: Model, context: Context, simple: SimpleStreamOptions) -> OpenAICompletionsOptions:
    """The provider-neutral ``reasoning`` level, clamped to the model, becomes ``reasoning_effort``."""
    level = clamp_thinking_level(model, simple.reasoning) if simple.reasoning else None
    return OpenAICompletionsOptions(
        **build_base_options(model, context, simple),
        reasoning_effort=None if level is None or level == "off" else level,
    )


PROVIDER = Provider(
    LABEL,
    OpenAICompletionsOptions,
    _request,
    _simple_options,
    simple_passthrough=("tool_choice",),  # stream_simple takes this API's tool_choice too
)
stream = PROVIDER.stream
stream_simple = PROVIDER.stream_simple


# --- response ---------------------------------------------------------------------------------


async def _consume(run: ProviderRun, response: httpx.Response, api_key: str | None) -> None:
    """Decode the body's SSE events and feed their ``data:`` payloads to a :class:`_ChunkParser`."""
    parser = _ChunkParser(run, api_key)
    on_data = parser.on_data
    decoder = SSEDecoder()
    feed = decoder.feed_data
    done = False  # set at ``[DONE]``
    encoded = response.headers.get("content-encoding", "identity").lower() != "identity"
    # raw bytes skip httpx's decoder chain; a proxy that compresses the stream needs it back
    body = response.aiter_bytes() if encoded else response.aiter_raw()
    blocks = run.output.content
    first = True  # no block yet: the first one's first delta is the time to first token
    async for raw in body:
        if done:
            continue  # drain, so the connection goes back to the pool
        # "event:", "id:", "retry:" and ":" comments carry nothing for Chat Completions
        for data in feed(raw):
            if on_data(data):
                done = True
                break
            if first and blocks:
                # One read can hold the whole answer (a fast or local server): hand the first
                # token to the consumer now rather than after the rest of the read is parsed.
                first = False
                await asyncio.sleep(0)
    if not done:
        for event in decoder.flush():  # a body that ends without the final blank line
            if on_data(event.data):
                break
    parser.finish()


class _ToolSlot:
    """Streaming state of one tool-call block; the raw argument text never touches the block."""

    __slots__ = ("block", "index", "raw", "sent_id", "stream_index")

    def __init__(self, block: ToolCall, index: int, stream_index: int | None) -> None:
        self.block = block
        self.index = index
        self.stream_index = stream_index
        self.raw = ""
        self.sent_id = ""
        """The id the server sent (the block may carry a fresh one: ``ai.call_ids``)."""


class _ChunkParser:
    """Applies decoded chunks to ``run.output`` and pushes the block events."""

    __slots__ = (
        "api_key",
        "blocks",
        "by_id",
        "by_index",
        "call_ids",
        "model",
        "need_id",
        "need_model",
        "output",
        "pending_details",
        "push",
        "saw_finish",
        "slots",
        "text_index",
        "text_state",
        "thinking_index",
        "thinking_state",
    )

    def __init__(self, run: ProviderRun, api_key: str | None) -> None:
        self.model = run.model
        self.output = run.output
        self.blocks: list[Any] = run.output.content
        self.push: Callable[[Any], None] = run.stream.push
        self.api_key = api_key
        self.need_id = True
        self.need_model = True
        self.saw_finish = False
        # Blocks are grown through their ``__dict__``: the string is detached while it is extended
        # so CPython appends in place instead of copying the whole text for every token.
        self.text_state: dict[str, Any] | None = None
        self.text_index = -1
        self.thinking_state: dict[str, Any] | None = None
        self.thinking_index = -1
        self.by_index: dict[int, _ToolSlot] = {}
        self.by_id: dict[str, _ToolSlot] = {}
        self.slots: dict[int, _ToolSlot] = {}
        self.pending_details: dict[str, str] = {}
        self.call_ids = run.call_ids

    def on_data(self, data: bytes) -> bool:
        """Handle one ``data:`` payload; ``True`` at ``[DONE]``."""
        if data == b"[DONE]":
            return True
        if not data.strip():  # an empty ``data:`` (a keep-alive) carries no chunk
            return False
        try:
            chunk = from_json(data)
        except ValueError as exc:
            raise StreamError(f"Could not parse stream chunk as JSON: {exc}") from None
        if type(chunk) is dict:
            self.on_chunk(chunk)
        return False

    def on_chunk(self, chunk: dict[str, Any]) -> None:
        if chunk.get("error"):
            self.stream_error(chunk["error"])
        output = self.output
        if self.need_id and chunk.get("id"):
            output.response_id = str(chunk["id"])
            self.need_id = False
        if self.need_model:
            name = chunk.get("model")
            if type(name) is str and name and name != self.model.id:
                output.response_model = name
                self.need_model = False
        usage = chunk.get("usage")
        if type(usage) is dict:
            output.usage = parse_usage(usage, self.model)
        choices = chunk.get("choices")
        if not choices or type(choices) is not list:
            return
        choice = choices[0]
        if type(choice) is not dict:
            return
        if type(usage) is not dict and type(choice.get("usage")) is dict:
            # Moonshot-style servers report usage on the choice
            output.usage = parse_usage(choice["usage"], self.model)
        if choice.get("finish_reason"):
            self.finish_reason(str(choice["finish_reason"]))
        delta = choice.get("delta")
        if not delta:
            return
        content = delta.get("content")
        if content and type(content) is str:
            self.on_text(content)
            if len(delta) == 1:
                return
        for field in _REASONING_FIELDS:
            value = delta.get(field)
            if value and type(value) is str:
                self.on_thinking(value, field)
                break
        tool_calls = delta.get("tool_calls")
        if tool_calls and type(tool_calls) is list:
            for tool_call in tool_calls:
                if type(tool_call) is dict:
                    self.on_tool_call(tool_call)
        details = delta.get("reasoning_details")
        if details and type(details) is list:
            self.on_reasoning_details(details)

    def on_text(self, text: str) -> None:
        state = self.text_state
        if state is None:
            block = TextContent(text="")
            self.text_index = len(self.blocks)
            self.blocks.append(block)
            state = self.text_state = block.__dict__
            self.push(TextStartEvent(self.text_index, self.output))
        current = state["text"]
        state["text"] = ""
        current += text
        state["text"] = current
        self.push(TextDeltaEvent(self.text_index, text, self.output))

    def on_thinking(self, text: str, field: str) -> None:
        state = self.thinking_state
        if state is None:
            signature = (
                "reasoning_content"
                if self.model.provider == "opencode-go" and field == "reasoning"
                else field
            )
            block = ThinkingContent(thinking="", thinking_signature=signature)
            self.thinking_index = len(self.blocks)
            self.blocks.append(block)
            state = self.thinking_state = block.__dict__
            self.push(ThinkingStartEvent(self.thinking_index, self.output))
        current = state["thinking"]
        state["thinking"] = ""
        current += text
        state["thinking"] = current
        self.push(ThinkingDeltaEvent(self.thinking_index, text, self.output))

    def on_tool_call(self, delta: dict[str, Any]) -> None:
        index, call_id = delta.get("index"), delta.get("id")
        function = delta.get("function")
        if type(function) is not dict:
            function = {}
        name = function.get("name") or ""
        stream_index = index if type(index) is int else None
        slot = self.by_index.get(stream_index) if stream_index is not None else None
        if slot is None and call_id:
            known = self.by_id.get(call_id)
            # a call at another stream index is another call, even under the same id
            if known is not None and (stream_index is None or known.stream_index is None):
                slot = known
        if slot is None:
            # a reused id becomes a fresh one before any event shows the call (servers that
            # number calls per response send call_0 every turn); none yet: it may come later
            block = ToolCall(id=self.call_ids.claim(call_id) if call_id else "", name=name, arguments={})
            slot = _ToolSlot(block, len(self.blocks), stream_index)
            self.blocks.append(block)
            self.slots[slot.index] = slot
            self.push(ToolCallStartEvent(slot.index, self.output))
        block = slot.block
        if stream_index is not None and slot.stream_index is None:
            slot.stream_index = stream_index
        if stream_index is not None:
            self.by_index[stream_index] = slot
        if call_id and type(call_id) is str:
            if not block.id:
                block.id = self.call_ids.claim(call_id)
            slot.sent_id = slot.sent_id or call_id
            self.by_id[call_id] = slot
        if not block.name and name:
            block.name = name
        if slot.sent_id and self.pending_details:
            detail = self.pending_details.pop(slot.sent_id, None)
            if detail:
                block.thought_signature = detail
        fragment = function.get("arguments")
        if fragment and type(fragment) is str:
            slot.raw += fragment
            block.arguments = parse_streaming_json(slot.raw)
        else:
            fragment = ""
        self.push(ToolCallDeltaEvent(slot.index, fragment, self.output))

    def on_reasoning_details(self, details: list[Any]) -> None:
        """Encrypted reasoning (OpenRouter) travels with the tool call it belongs to."""
        for detail in details:
            if not (
                type(detail) is dict
                and detail.get("type") == "reasoning.encrypted"
                and isinstance(detail.get("id"), str)
                and detail["id"]
                and isinstance(detail.get("data"), str)
                and detail["data"]
            ):
                continue
            serialized = json.dumps(detail, separators=(",", ":"), ensure_ascii=False)
            slot = self.by_id.get(detail["id"])
            if slot is not None:
                slot.block.thought_signature = serialized
            else:
                self.pending_details[detail["id"]] = serialized

    def finish_reason(self, reason: str) -> None:
        output = self.output
        output.raw_stop_reason = reason
        mapped = _STOP_REASONS.get(reason)
        if mapped is None:
            output.stop_reason = "error"
            output.error_message = f"Provider finish_reason: {reason}"
        else:
            output.stop_reason = mapped
        self.saw_finish = True

    def stream_error(self, error: Any) -> None:
        """An ``{"error": {...}}`` object after HTTP 200 (llama-server, OpenRouter mid-stream)."""
        message = error.get("message") if isinstance(error, dict) else None
        if isinstance(error, str):
            text = error
        elif isinstance(message, str) and message:
            text = message
        else:
            text = json.dumps(message or error, ensure_ascii=False)
        raw = (error.get("metadata") or {}).get("raw") if isinstance(error, dict) else None
        if raw and str(raw) not in text:
            text = f"{text}\n{raw}"
        raise StreamError(redact_key(text, self.api_key))

    def finish(self) -> None:
        """After the last chunk: every ``*_end`` in content order, then the stop-reason checks."""
        output, push = self.output, self.push
        for index, block in enumerate(self.blocks):
            if block.type == "text":
                push(TextEndEvent(index, block.text, output))
            elif block.type == "thinking":
                push(ThinkingEndEvent(index, block.thinking, output))
            else:
                block.arguments = parse_streaming_json(self.slots[index].raw)
                if not block.id:  # the server never sent one ("" would key every such call)
                    block.id = self.call_ids.claim("")
                push(ToolCallEndEvent(index, block, output))
        if output.stop_reason == "error":
            raise StreamError(output.error_message or "Provider returned an error stop reason")
        if not self.saw_finish or output.stop_reason == "pending":
            raise StreamError("Stream ended without finish_reason")


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def parse_usage(raw: Any, model: Model) -> Usage:
    """Chat Completions usage -> Pi's ``Usage`` (``input`` excludes cached tokens), priced."""
    if not isinstance(raw, dict):
        return Usage()
    prompt_details = raw.get("prompt_tokens_details")
    prompt_details = prompt_details if isinstance(prompt_details, dict) else {}
    completion_details = raw.get("completion_tokens_details")
    completion_details = completion_details if isinstance(completion_details, dict) else {}
    cached = prompt_details.get("cached_tokens")
    if cached is None:
        cached = raw.get("prompt_cache_hit_tokens")  # DeepSeek
    cache_read = _count(cached)
    cache_write = _count(prompt_details.get("cache_write_tokens"))
    uncached = max(0, _count(raw.get("prompt_tokens")) - cache_read - cache_write)
    produced = _count(raw.get("completion_tokens"))  # already includes reasoning tokens
    usage = Usage(
        input=uncached,
        output=produced,
        cache_read=cache_read,
        cache_write=cache_write,
        reasoning=_count(completion_details.get("reasoning_tokens")),
        total_tokens=uncached + produced + cache_read + cache_write,
    )
    calculate_cost(model, usage)
    return usage
