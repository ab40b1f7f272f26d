"""The ``google-generative-ai`` provider: the Gemini API over plain HTTP, no SDK. ``stream`` and
``stream_simple`` are the shared skeleton of :class:`._base.Provider` over this module's parts.

Owns the response side: every SSE ``data:`` of ``streamGenerateContent?alt=sse`` is a whole
``GenerateContentResponse``; its parts become Pi's block events on one mutable
:class:`AssistantMessage` (a text or thought block stays open while parts of the same kind keep
coming; a function call arrives whole), plus usage, cost and the finish reason. Request
building lives in :mod:`.google_request`, the options type in :mod:`.google_options`; the
"never raise" wrapper, retries and ``on_payload``/``on_response`` in :mod:`._base`.

The API key travels in the ``x-goog-api-key`` header, never in the URL, so it cannot leak
into an error message or a log line that quotes the request.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Mapping
from http import HTTPStatus
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
from ..models import clamp_thinking_level
from ..options import SimpleStreamOptions
from ..simple_options import build_base_options
from ..sse import SSEDecoder
from ..types import Context, Model, StopReason, TextContent, ThinkingContent, ToolCall, Usage, now_ms
from ._base import Provider, ProviderRun, StreamError
from .google_options import GoogleOptions, GoogleThinking
from .google_request import (
    ClampedLevel,
    build_body,
    stream_url,
    thinking_budget,
    thinking_level,
    uses_thinking_level,
)

__all__ = ["GoogleOptions", "GoogleThinking", "stream", "stream_simple"]

LABEL = "Google"
# Ids for function calls that arrive without one (or with a duplicate); process-wide like Pi's.
_tool_call_counter = itertools.count(1)
_EFFORT: dict[str, ClampedLevel] = {"minimal": "minimal", "low": "low", "medium": "medium"}


def _simple_options(model: Model, context: Context, simple: SimpleStreamOptions) -> GoogleOptions:
    """The provider-neutral ``reasoning`` level becomes a thinking level or budget (see below)."""
    base = build_base_options(model, context, simple)
    return GoogleOptions(**base, thinking=simple_thinking(model, simple))


def simple_thinking(model: Model, options: SimpleStreamOptions) -> GoogleThinking:
    """A Gemini thinking level for Gemini 3 and Gemma 4, a token budget for older models."""
    if not options.reasoning:
        return GoogleThinking(enabled=False)
    # Budget and level tables stop at "high": xhigh/max clamp to it, and so does "off" (a
    # model without reasoning gets no thinking config at all, whatever the effort).
    effort = _EFFORT.get(clamp_thinking_level(model, options.reasoning), "high")
    if uses_thinking_level(model.id):
        return GoogleThinking(enabled=True, level=thinking_level(effort, model.id))
    return GoogleThinking(
        enabled=True, budget_tokens=thinking_budget(model.id, effort, options.thinking_budgets)
    )


def _thinking(value: GoogleThinking | Mapping[str, Any] | None) -> GoogleThinking | None:
    if value is None or isinstance(value, GoogleThinking):
        return value
    return GoogleThinking(**dict(value))


async def _run(run: ProviderRun, context: Context, options: GoogleOptions) -> None:
    model = run.model
    if not options.api_key and needs_api_key(model):
        raise StreamError(missing_key_message(model.provider))
    # Pi never retries Gemini requests at the HTTP level: its Google provider ignores
    # ``maxRetries`` (the genai SDK does not retry), so a 429 or 5xx ends the stream at once.
    run.options = dataclasses.replace(run.options, max_retries=0)
    body = build_body(
        model,
        context,
        temperature=options.temperature,
        max_tokens=options.max_tokens,
        tool_choice=options.tool_choice,
        thinking=_thinking(options.thinking),
    )
    # What the genai SDK sends: Gemini streams SSE for ``alt=sse`` whatever ``accept`` says.
    base_headers = {"content-type": "application/json", "accept": "*/*"}
    if options.api_key:
        base_headers["x-goog-api-key"] = options.api_key
    headers = merge_headers(base_headers, model.headers, options.headers)
    try:
        response = await run.send(stream_url(model), headers, body)
    except ProviderError as exc:
        raise StreamError(format_http_error(exc)) from exc
    parser = _GeminiParser(run)
    try:
        await parser.consume(response)
    finally:
        await response.aclose()
    output = run.output
    if output.stop_reason == "pending":
        raise StreamError("Google stream ended without a finish reason")
    if output.stop_reason in ("error", "aborted"):
        raw = output.raw_stop_reason
        raise StreamError(f"Provider stopped with: {raw}" if raw else "An unknown error occurred")


PROVIDER = Provider(LABEL, GoogleOptions, _run, _simple_options)
stream = PROVIDER.stream
stream_simple = PROVIDER.stream_simple


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def format_http_error(exc: ProviderError) -> str:
    """Pi's text for an HTTP error (the ``@google/genai`` SDK's): the JSON error body, compact;
    a non-JSON body is wrapped as ``{"error":{"message","code","status"}}``."""
    if exc.status is None or str(exc).startswith("Server requested "):
        return str(exc)  # a transport error, or the retry-delay cap (already complete)
    content_type = next((v for k, v in exc.headers.items() if k.lower() == "content-type"), "")
    if "application/json" in content_type:
        try:
            return _dumps(json.loads(exc.body))
        except ValueError:
            pass
    # The SDK's ``status`` is the response's own reason phrase (``statusText``).
    reason = exc.reason
    if reason is None:
        try:
            reason = HTTPStatus(exc.status).phrase
        except ValueError:
            reason = ""
    return _dumps({"error": {"message": exc.body, "code": exc.status, "status": reason}})


def _chunk_error(chunk: dict[str, Any]) -> str | None:
    """An ``{"error": {...}}`` chunk inside a 200 stream, worded like the SDK's ``ApiError``."""
    error = chunk.get("error")
    if not isinstance(error, dict):
        return None
    code = error.get("code")
    if isinstance(code, int) and 400 <= code < 600:
        status = error.get("status")
        return f"got status: {'undefined' if status is None else status}. {_dumps(chunk)}"
    return None


def _bare_json_error(chunk: bytes) -> str | None:
    """The genai SDK tries every network chunk as bare JSON (not SSE) and throws on an error
    object; that is how an error after the headers reaches Pi."""
    try:
        data = json.loads(chunk)
    except ValueError:
        return None
    return _chunk_error(data) if isinstance(data, dict) else None


_FINISH: dict[str, StopReason] = {"STOP": "stop", "MAX_TOKENS": "length"}
# The genai SDK's FinishReason values; all but STOP and MAX_TOKENS are error stops. Pi ends
# the stream at once on any other value (before that chunk's usage is read).
_KNOWN_FINISH = frozenset({
    "FINISH_REASON_UNSPECIFIED", "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "LANGUAGE", "OTHER",
    "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "MALFORMED_FUNCTION_CALL", "IMAGE_SAFETY",
    "UNEXPECTED_TOOL_CALL", "IMAGE_PROHIBITED_CONTENT", "NO_IMAGE", "IMAGE_RECITATION", "IMAGE_OTHER",
})  # fmt: skip


class _GeminiParser:
    """Applies decoded ``GenerateContentResponse`` chunks to ``run.output``."""

    __slots__ = ("call_ids", "current", "model", "output", "push")

    def __init__(self, run: ProviderRun) -> None:
        self.call_ids = run.call_ids
        self.model = run.model
        self.output = run.output
        self.push = run.stream.push
        self.current: TextContent | ThinkingContent | None = None

    async def consume(self, response: httpx.Response) -> None:
        decoder = SSEDecoder()
        async for chunk in response.aiter_bytes():
            if chunk[:1] == b"{" and (error := _bare_json_error(chunk)) is not None:
                raise StreamError(error)
            for event in decoder.feed(chunk):
                self.handle(event.data)
        for event in decoder.flush():
            self.handle(event.data)
        self._close_block()

    def handle(self, data: bytes) -> None:
        if not data:
            return
        try:
            chunk = jiter.from_json(data, cache_mode="keys")
        except ValueError as exc:
            text = data[:200].decode("utf-8", "replace")
            raise StreamError(f"Could not parse Gemini SSE chunk as JSON: {exc}; data={text}") from None
        if not isinstance(chunk, dict):
            return
        error = _chunk_error(chunk)
        if error is not None:
            raise StreamError(error)
        output = self.output
        if not output.response_id and chunk.get("responseId"):
            output.response_id = chunk["responseId"]
        candidates = chunk.get("candidates")
        candidate = candidates[0] if candidates else None
        if isinstance(candidate, dict):
            for part in (candidate.get("content") or {}).get("parts") or ():
                self._part(part)
            finish = candidate.get("finishReason")
            if finish:
                output.raw_stop_reason = finish
                if finish not in _KNOWN_FINISH:
                    raise StreamError(f"Unhandled stop reason: {finish}")
                output.stop_reason = _FINISH.get(finish, "error")
                if any(block.type == "toolCall" for block in output.content):
                    output.stop_reason = "toolUse"
        usage = chunk.get("usageMetadata")
        if usage:
            output.usage = _usage(usage)
            calculate_cost(self.model, output.usage)

    def _part(self, part: dict[str, Any]) -> None:
        text = part.get("text")
        if text is not None:
            self._text(text, part.get("thought") is True, part.get("thoughtSignature"))
        call = part.get("functionCall")
        if call:
            self._function_call(call, part.get("thoughtSignature"))

    def _text(self, text: str, thinking: bool, signature: str | None) -> None:
        block, output = self.current, self.output
        if block is None or (block.type == "thinking") != thinking:
            self._close_block()
            block = ThinkingContent(thinking="") if thinking else TextContent(text="")
            output.content.append(block)
            self.current = block
            start = ThinkingStartEvent if thinking else TextStartEvent
            self.push(start(len(output.content) - 1, output))
        index = len(output.content) - 1
        # Keep the last non-empty signature: later deltas of one part may omit it.
        if isinstance(block, ThinkingContent):
            block.thinking += text
            if signature:
                block.thinking_signature = signature
            self.push(ThinkingDeltaEvent(index, text, output))
        else:
            block.text += text
            if signature:
                block.text_signature = signature
            self.push(TextDeltaEvent(index, text, output))

    def _close_block(self) -> None:
        block, output = self.current, self.output
        if block is None:
            return
        index = len(output.content) - 1
        if isinstance(block, ThinkingContent):
            self.push(ThinkingEndEvent(index, block.thinking, output))
        else:
            self.push(TextEndEvent(index, block.text, output))
        self.current = None

    def _function_call(self, call: dict[str, Any], signature: str | None) -> None:
        self._close_block()
        output = self.output
        name = call.get("name") or ""
        # missing, or used before in this response or the transcript: Pi's generated id
        tool_id = self.call_ids.claim(call.get("id"), lambda: f"{name}_{now_ms()}_{next(_tool_call_counter)}")
        args = call.get("args")
        tool_call = ToolCall(id=tool_id, name=name, arguments=args if isinstance(args, dict) else {})
        if signature:
            tool_call.thought_signature = signature
        output.content.append(tool_call)
        index = len(output.content) - 1
        self.push(ToolCallStartEvent(index, output))
        self.push(ToolCallDeltaEvent(index, _dumps(tool_call.arguments), output))
        self.push(ToolCallEndEvent(index, tool_call, output))


def _usage(raw: dict[str, Any]) -> Usage:
    cached = raw.get("cachedContentTokenCount") or 0
    thoughts = raw.get("thoughtsTokenCount") or 0
    return Usage(
        input=(raw.get("promptTokenCount") or 0) - cached,
        output=(raw.get("candidatesTokenCount") or 0) + thoughts,
        cache_read=cached,
        cache_write=0,
        reasoning=thoughts,
        total_tokens=raw.get("totalTokenCount") or 0,
    )
