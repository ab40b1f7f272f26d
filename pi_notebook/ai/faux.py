"""The faux provider: an in-memory, scriptable model used by tests, tutorials and offline
demos. It is product code: it streams real events in Pi's exact order and shapes, estimates
usage from the serialized context (priced with the model's prices, which are zero unless the
model was registered with some), simulates prompt caching per ``session_id`` and honours
abort signals between chunks.

Streaming follows Pi's faux provider event for event, so the conformance suite can compare
traces: the ``start`` partial has no content yet; each block starts bare (``text: ""``,
``thinking: ""``, a tool call with ``arguments: {}`` until its end) in a new content list, so
earlier partials never see later blocks; every string streams at least one delta (an empty
one for an empty block); the partial carries the scripted ``error_message`` from the start;
``done``/``error`` carry the scripted message itself. Every response, including "no more
responses queued", carries the usage estimate.

Chunking is random in ``token_size`` (``{"min": 3, "max": 5}`` tokens of 4 characters) unless
``min == max`` or a ``seed`` is given, which makes every event sequence reproducible. With
``tokens_per_second`` each chunk waits its share of time; without, it only yields to the loop.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import random
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypedDict

from .abort import ABORT_MESSAGE
from .cost import calculate_cost
from .event_stream import AssistantMessageEventStream
from .events import (
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
from .models import register_models, unregister_models
from .options import StreamOptions, coerce_options
from .registry import ApiProvider, register_api_provider, unregister_api_providers
from .types import (
    AssistantContentBlock,
    AssistantMessage,
    Context,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
    now_ms,
)

__all__ = [
    "FauxFactory",
    "FauxRegistration",
    "FauxResponse",
    "FauxState",
    "TokenSize",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "register_faux_provider",
    "serialize_context",
]


class TokenSize(TypedDict):
    min: int
    max: int


@dataclass
class FauxState:
    call_count: int = 0


FauxFactory: TypeAlias = Callable[
    [Context, StreamOptions, FauxState, Model], "AssistantMessage | str | Awaitable[AssistantMessage | str]"
]
FauxResponse: TypeAlias = "AssistantMessage | str | FauxFactory"


# --- helpers ---------------------------------------------------------------------------


def faux_text(text: str) -> TextContent:
    return TextContent(text=text)


def faux_thinking(thinking: str) -> ThinkingContent:
    return ThinkingContent(thinking=thinking)


def faux_tool_call(name: str, arguments: dict[str, Any] | None = None, id: str | None = None) -> ToolCall:
    call_id = id if id is not None else f"tool:{now_ms()}:{secrets.token_hex(4)}"
    return ToolCall(id=call_id, name=name, arguments=dict(arguments or {}))


def faux_assistant_message(
    content: str | AssistantContentBlock | Sequence[AssistantContentBlock],
    stop_reason: StopReason = "stop",
    error_message: str | None = None,
    response_id: str | None = None,
    timestamp: int | None = None,
) -> AssistantMessage:
    if isinstance(content, str):
        blocks: list[AssistantContentBlock] = [TextContent(text=content)]
    elif isinstance(content, TextContent | ThinkingContent | ToolCall):
        blocks = [content]
    else:
        blocks = list(content)
    return AssistantMessage(
        content=blocks,
        api="faux",
        provider="faux",
        model="faux-1",
        usage=Usage(),
        stop_reason=stop_reason,
        error_message=error_message,
        response_id=response_id,
        timestamp=timestamp if timestamp is not None else now_ms(),
    )


# --- usage estimate ----------------------------------------------------------------------


def _blocks_text(blocks: Sequence[Any]) -> str:
    parts: list[str] = []
    for b in blocks:
        if b.type == "text":
            parts.append(b.text)
        elif b.type == "thinking":
            parts.append(b.thinking)
        elif b.type == "image":
            parts.append(f"[image:{b.mime_type}:{len(b.data)}]")
        elif b.type == "toolCall":
            parts.append(f"{b.name}:{_js_json(b.arguments)}")
    return "\n".join(parts)


_compact_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _js_json(value: Any) -> str:
    """``JSON.stringify`` layout: compact separators, non-ASCII kept."""
    return _compact_json(value)


def _message_text(m: Any) -> str:
    if m.role == "user":
        return f"user:{m.content if isinstance(m.content, str) else _blocks_text(m.content)}"
    if m.role == "assistant":
        return f"assistant:{_blocks_text(m.content)}"
    return f"toolResult:{m.tool_name}\n{_blocks_text(m.content)}"


class _SerializedMessages:
    """The serialized messages of the previous call, reused for the same message objects.

    An agent sends its whole transcript on every turn, so serializing every message afresh made
    the estimate of a long faux conversation quadratic in its length. A message object seen at
    the same position in the previous context keeps its text; any other is serialized. (A message
    changed in place after it was sent would keep its old text: transcripts are not edited so.)
    """

    def __init__(self) -> None:
        self._previous: list[tuple[Any, str]] = []

    def texts(self, messages: Sequence[Any]) -> list[str]:
        previous = self._previous
        known = len(previous)
        current = [
            (m, previous[i][1] if i < known and previous[i][0] is m else _message_text(m))
            for i, m in enumerate(messages)
        ]
        self._previous = current
        return [text for _, text in current]


class _SerializedTools:
    """The serialized tools of the previous call, reused while a context holds the same tool
    objects in the same order. An agent's tools are the same objects from turn to turn while
    they do not change (``AgentTool.to_tool`` is cached), so a run's requests serialized every
    schema again for an estimate that could not have changed (about 7 % of a warm faux cell with
    eleven tools). A tool object changed in place would keep its old text, as a message does in
    ``_SerializedMessages``: tools are not edited so once in use."""

    def __init__(self) -> None:
        self._tools: tuple[Any, ...] = ()
        self._text = ""

    def text(self, tools: Sequence[Any]) -> str:
        previous = self._tools
        if len(tools) != len(previous) or any(a is not b for a, b in zip(tools, previous, strict=True)):
            self._tools, self._text = tuple(tools), _tools_text(tools)
        return self._text


def _tools_text(tools: Sequence[Any]) -> str:
    # Pi stringifies the tool objects it is given; from an agent those carry ``label`` and
    # ``executionMode`` too (see ``AgentTool.to_tool``), which count towards the estimate.
    return _js_json([t.model_dump() for t in tools])


def serialize_context(context: Context) -> str:
    """Pi's faux serialization of a context, whose length is the prompt-token estimate."""
    tools = _tools_text(context.tools) if context.tools else ""
    return _serialize(context, [_message_text(m) for m in context.messages], tools)


def _serialize(context: Context, message_texts: list[str], tools_text: str) -> str:
    parts: list[str] = []
    if context.system_prompt:
        parts.append(f"system:{context.system_prompt}")
    parts += message_texts
    if context.tools:
        parts.append(f"tools:{tools_text}")
    return "\n\n".join(parts)


def _tokens(text_len: int) -> int:
    return math.ceil(text_len / 4)


def _common_prefix(a: str, b: str) -> int:
    """The length of the common prefix, by halving with slice comparisons (done in C)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n  # a[:low] == b[:low] and a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle
    return low


# --- the core ------------------------------------------------------------------------------


@dataclass
class _FauxCore:
    api: str
    provider: str
    models: list[Model]
    tokens_per_second: float | None
    token_size: TokenSize
    rng: random.Random
    state: FauxState = field(default_factory=FauxState)
    queue: list[FauxResponse] = field(default_factory=list)
    sessions: dict[str, str] = field(default_factory=dict)
    serialized: _SerializedMessages = field(default_factory=_SerializedMessages)
    serialized_tools: _SerializedTools = field(default_factory=_SerializedTools)

    def usage_for(
        self, context: Context, message: AssistantMessage, options: StreamOptions, model: Model | None = None
    ) -> Usage:
        tools = self.serialized_tools.text(context.tools) if context.tools else ""
        prompt = _serialize(context, self.serialized.texts(context.messages), tools)
        prompt_tokens = _tokens(len(prompt))
        output = _tokens(len(_blocks_text(message.content)))
        usage = Usage(input=prompt_tokens, output=output)
        if options.session_id and options.cache_retention != "none":
            previous = self.sessions.get(options.session_id)
            if previous is None:
                usage.cache_write = prompt_tokens
            else:
                prefix = _common_prefix(previous, prompt)
                usage.cache_read = _tokens(prefix)
                usage.cache_write = _tokens(len(prompt) - prefix)
                usage.input = max(0, prompt_tokens - usage.cache_read)
            self.sessions[options.session_id] = prompt
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
        if model is not None:  # priced as any provider prices it (zero for the default models)
            calculate_cost(model, usage)
        return usage

    def chunks(self, text: str) -> list[str]:
        """Pieces of ``min..max`` tokens of 4 characters; an empty text is one empty piece."""
        out: list[str] = []
        i = 0
        while i < len(text):
            size = self.rng.randint(self.token_size["min"], self.token_size["max"]) * 4
            out.append(text[i : i + size])
            i += size
        return out or [""]

    def stream(self, model: Model, context: Context, options: Any = None) -> AssistantMessageEventStream:
        opts = coerce_options(options, StreamOptions)
        out = AssistantMessageEventStream()
        self.state.call_count += 1
        out.start(lambda: self._produce(out, model, context, opts))
        return out

    async def _resolve_step(self, model: Model, context: Context, opts: StreamOptions) -> AssistantMessage:
        step = self.queue.pop(0)
        if callable(step) and not isinstance(step, AssistantMessage):
            produced = step(context, opts, self.state, model)
            step = await produced if inspect.isawaitable(produced) else produced
        if isinstance(step, str):
            step = faux_assistant_message(step)
        if not isinstance(step, AssistantMessage):
            raise TypeError(f"a faux response must be an AssistantMessage or str, not {type(step).__name__}")
        return step.model_copy(deep=True)

    async def _produce(
        self, out: AssistantMessageEventStream, model: Model, context: Context, opts: StreamOptions
    ) -> None:
        await asyncio.sleep(0)
        if opts.on_response is not None:
            result = opts.on_response({"status": 200, "headers": {}}, model)
            if inspect.isawaitable(result):
                await result
        if not self.queue:
            message = self._bare(model.id, "error", "No more faux responses queued")
            message.usage = self.usage_for(context, message, opts, model)
            out.push(ErrorEvent(reason="error", error=message))
            out.end()
            return
        try:
            message = await self._resolve_step(model, context, opts)
        except Exception as exc:
            out.push(
                ErrorEvent(
                    reason="error", error=self._bare(model.id, "error", str(exc) or type(exc).__name__)
                )
            )
            out.end()
            return
        message.api, message.provider, message.model = self.api, self.provider, model.id
        message.usage = self.usage_for(context, message, opts, model)
        await _FauxPlayback(self, out, message, opts).run()

    def _bare(self, model_id: str, reason: StopReason, text: str) -> AssistantMessage:
        return AssistantMessage(
            content=[],
            api=self.api,
            provider=self.provider,
            model=model_id,
            usage=Usage(),
            stop_reason=reason,
            error_message=text,
        )


class _Aborted(Exception):
    pass


class _FauxPlayback:
    """Streams one scripted message as events, chunk by chunk, honouring pacing and abort."""

    def __init__(
        self, core: _FauxCore, out: AssistantMessageEventStream, final: AssistantMessage, opts: StreamOptions
    ) -> None:
        self.core, self.out, self.final, self.opts = core, out, final, opts
        # As Pi: the scripted message without content, ``pending``, its error message kept.
        self.partial = final.model_copy(update={"content": [], "stop_reason": "pending"})

    def _snapshot(self) -> AssistantMessage:
        return self.partial.model_copy()

    def _check_abort(self) -> None:
        if self.opts.signal is not None and self.opts.signal.aborted:
            raise _Aborted()

    async def _pace(self, chunk: str) -> None:
        tps = self.core.tokens_per_second
        if tps:
            await asyncio.sleep(math.ceil(len(chunk) / 4) / tps)
        else:
            await asyncio.sleep(0)
        self._check_abort()

    def _open(self, block: AssistantContentBlock) -> int:
        """Append a bare block to a *new* content list: partials already handed out keep theirs."""
        self.partial.content = [*self.partial.content, block]
        return len(self.partial.content) - 1

    async def run(self) -> None:
        try:
            self._check_abort()
            self.out.push(StartEvent(partial=self._snapshot()))
            for block in self.final.content:
                self._check_abort()
                await self._play_block(block)
        except _Aborted:
            aborted = self.partial.model_copy(
                update={"stop_reason": "aborted", "error_message": ABORT_MESSAGE, "timestamp": now_ms()}
            )
            self.out.push(ErrorEvent(reason="aborted", error=aborted))
            self.out.end()
            return
        self._finish()

    async def _play_block(self, block: AssistantContentBlock) -> None:
        if isinstance(block, ToolCall):
            live_call = ToolCall(id=block.id, name=block.name, arguments={})
            index = self._open(live_call)
            self.out.push(ToolCallStartEvent(content_index=index, partial=self._snapshot()))
            for chunk in self.core.chunks(_js_json(block.arguments)):
                await self._pace(chunk)
                self.out.push(ToolCallDeltaEvent(content_index=index, delta=chunk, partial=self._snapshot()))
            live_call.arguments = block.arguments
            self.out.push(ToolCallEndEvent(content_index=index, tool_call=block, partial=self._snapshot()))
        elif isinstance(block, ThinkingContent):
            live_thinking = ThinkingContent(thinking="")
            index = self._open(live_thinking)
            self.out.push(ThinkingStartEvent(content_index=index, partial=self._snapshot()))
            for chunk in self.core.chunks(block.thinking):
                await self._pace(chunk)
                live_thinking.thinking += chunk
                self.out.push(ThinkingDeltaEvent(content_index=index, delta=chunk, partial=self._snapshot()))
            self.out.push(
                ThinkingEndEvent(content_index=index, content=block.thinking, partial=self._snapshot())
            )
        else:
            live_text = TextContent(text="")
            index = self._open(live_text)
            self.out.push(TextStartEvent(content_index=index, partial=self._snapshot()))
            for chunk in self.core.chunks(block.text):
                await self._pace(chunk)
                live_text.text += chunk
                self.out.push(TextDeltaEvent(content_index=index, delta=chunk, partial=self._snapshot()))
            self.out.push(TextEndEvent(content_index=index, content=block.text, partial=self._snapshot()))

    def _finish(self) -> None:
        """The terminal event carries the scripted message itself, as in Pi."""
        final = self.final
        if final.stop_reason == "pending":
            # Pi throws here and reports the bare error message (no content, no usage).
            error = self.core._bare(final.model, "error", "Faux response ended without a stop reason")
            self.out.push(ErrorEvent(reason="error", error=error))
        elif final.stop_reason == "error" or final.stop_reason == "aborted":  # noqa: PLR1714 (narrows)
            self.out.push(ErrorEvent(reason=final.stop_reason, error=final))
        else:
            self.out.push(DoneEvent(reason=final.stop_reason, message=final))
        self.out.end()


# --- registration ----------------------------------------------------------------------------

_MODEL_DEFAULTS: dict[str, Any] = {
    "name": "Faux Model",
    "reasoning": False,
    "input": ["text", "image"],
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    "contextWindow": 128_000,
    "maxTokens": 16_384,
    "baseUrl": "http://localhost:0",
}


class FauxRegistration:
    """What :func:`register_faux_provider` returns: the models and the response queue."""

    def __init__(self, core: _FauxCore, source_id: str) -> None:
        self._core = core
        self._source_id = source_id

    @property
    def api(self) -> str:
        return self._core.api

    @property
    def provider(self) -> str:
        return self._core.provider

    @property
    def models(self) -> list[Model]:
        return list(self._core.models)

    @property
    def state(self) -> FauxState:
        return self._core.state

    def get_model(self, model_id: str | None = None) -> Model:
        if model_id is None:
            return self._core.models[0]
        for model in self._core.models:
            if model.id == model_id:
                return model
        raise KeyError(f"Unknown faux model {model_id!r}")

    def set_responses(self, responses: Sequence[FauxResponse]) -> None:
        self._core.queue[:] = list(responses)

    def append_responses(self, responses: Sequence[FauxResponse]) -> None:
        self._core.queue.extend(responses)

    def get_pending_response_count(self) -> int:
        return len(self._core.queue)

    def stream(self, model: Model, context: Context, options: Any = None) -> AssistantMessageEventStream:
        return self._core.stream(model, context, options)

    def unregister(self) -> None:
        unregister_api_providers(self._source_id)
        unregister_models(self._core.provider, [m.id for m in self._core.models])


def register_faux_provider(
    *,
    api: str | None = None,
    provider: str = "faux",
    models: Sequence[dict[str, Any] | Model] | None = None,
    tokens_per_second: float | None = None,
    token_size: TokenSize | dict[str, int] | None = None,
    seed: int | None = None,
) -> FauxRegistration:
    """Register a faux API and its models (default ``faux:faux-1``); see module docstring."""
    api_id = api or f"faux:{now_ms()}:{secrets.token_hex(4)}"
    size = token_size or {}
    # Pi's clamping: min is at least 1 and at most max; max is at least min (defaults 3 and 5).
    high_given = int(size.get("max", 5))
    low = max(1, min(int(size.get("min", 3)), high_given))
    high = max(low, high_given)
    definitions = list(models) if models else [{"id": "faux-1"}]
    built: list[Model] = []
    for definition in definitions:
        data = definition.model_dump() if isinstance(definition, Model) else dict(definition)
        merged = {**_MODEL_DEFAULTS, **data, "api": api_id, "provider": provider}
        built.append(Model.model_validate(merged))
    core = _FauxCore(
        api=api_id,
        provider=provider,
        models=built,
        tokens_per_second=tokens_per_second,
        token_size={"min": low, "max": high},
        rng=random.Random(seed),
    )
    source_id = f"faux-source:{secrets.token_hex(6)}"
    register_api_provider(ApiProvider(api=api_id, stream=core.stream, stream_simple=core.stream), source_id)
    register_models(built)
    return FauxRegistration(core, source_id)
