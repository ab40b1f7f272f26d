"""The agent loop (Pi's ``agent-loop.ts``): prompt -> stream an assistant turn -> run its tool
calls -> repeat while tools were called or queued messages wait, emitting a flat
``AgentEvent`` sequence. Stateless: the caller owns the transcript (``Agent`` does that).

Python mapping of Pi's contract:
* ``emit`` may be sync or async; an awaitable result is awaited for every event (listener
  back-pressure), except ``tool_execution_update``, whose emits start at once and are drained
  before that tool's ``tool_execution_end``.
* Hooks (``convert_to_llm``, ``transform_context``, ``get_api_key``, ``before_tool_call``,
  ``after_tool_call``, ``prepare_next_turn``, ``should_stop_after_turn``, the queue polls) may be
  sync or async; sync ones run on the loop thread, so they must be quick.
* ``AgentTool.execute`` may be async or sync; sync ones run in a worker thread (see ``tools``).
* The stream function receives the loop config itself as its options, with ``api_key`` and
  ``signal`` replaced. Without one, the process default applies (:func:`set_default_stream_fn`),
  which is ``pi_notebook.ai.stream_simple`` unless another was installed.
* ``message_update.message`` is the provider's partial itself, not Pi's shallow copy: the copy
  shares the content blocks anyway (so it protects only top-level fields), and
  ``bench.bench_agent`` measures it at 1.4-2.8 µs per token, two to three times the agent
  layer's own per-token cost. ``message_start`` still gets a copy, as in Pi. Copy a partial if
  you keep it past the event.

Where this loop deliberately differs from Pi's (each is tested):
1. ``agent_loop``/``agent_loop_continue`` always end their stream (Pi's stays open forever when
   the run throws). When the run raises, the stream gets a failure ending (:class:`RunTracker`):
   ``tool_execution_end`` (error) for open tool executions, a result message for every call of
   the last assistant message still without one (the result its execution ended with, else the
   error; so the transcript replays to any provider), then ``message_start`` (unless a message
   is open) and ``message_end`` of an assistant message with empty text, ``stop_reason``
   ``"error"`` (``"aborted"`` if the signal fired) and the exception text, ``turn_end`` and
   ``agent_end`` whose messages are every message that reached ``message_end`` plus the failure
   message; ``turn_start``/``agent_start`` are emitted first when none is open, so every start
   has its end.
2. The signal is checked between turns: after an abort the run ends at the turn boundary with
   ``agent_end`` instead of asking the provider for an aborted empty turn, as Pi does.
3. When an abort stops a tool batch, every tool call of that message that would get no result
   gets ``tool_execution_start``/``tool_execution_end`` and an ``Operation aborted`` error
   result, so the transcript replays to any provider (providers reject a tool call without a
   result).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from ..ai.abort import AbortSignal
from ..ai.event_stream import AssistantMessageEventStream, EventStream
from ..ai.events import BLOCK_EVENT_TYPES
from ..ai.types import (
    AssistantMessage,
    Context,
    LlmMessage,
    Model,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    now_ms,
)
from .tools import ToolBatch, coerce_result, error_text, resolve
from .types import (
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentEventSink,
    AgentLoopConfig,
    AgentLoopTurnUpdate,
    AgentMessage,
    AgentStartEvent,
    AgentToolResult,
    MessageEndEvent,
    MessageSource,
    MessageStartEvent,
    MessageUpdateEvent,
    StreamFn,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnContext,
    TurnEndEvent,
    TurnStartEvent,
    emit_event,
)

_LLM_MESSAGE_TYPES = frozenset({UserMessage, AssistantMessage, ToolResultMessage})
_TERMINAL = frozenset({"done", "error"})
_isawaitable = inspect.isawaitable

# --- default stream function ---------------------------------------------------------------

_default_stream_fn: StreamFn | None = None


def set_default_stream_fn(stream_fn: StreamFn | None) -> None:
    """Install the stream function used when a caller passes none; ``None`` restores the
    built-in default, ``pi_notebook.ai.stream_simple`` (Pi has no built-in default and raises;
    in Python the provider layer is always importable, so it is the natural fallback)."""
    global _default_stream_fn
    _default_stream_fn = stream_fn


def get_default_stream_fn() -> StreamFn:
    if _default_stream_fn is not None:
        return _default_stream_fn
    from ..ai.entry import stream_simple

    return stream_simple


# --- public entry points -------------------------------------------------------------------


def agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> EventStream[AgentEvent, list[AgentMessage]]:
    """Run :func:`run_agent_loop` in the background and stream its events; ``result()`` is the
    run's new messages. The stream always ends, with a failure turn if the run raises (see the
    module docstring)."""
    return _streamed(
        config, signal, lambda emit: run_agent_loop(prompts, context, config, emit, signal, stream_fn)
    )


def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> EventStream[AgentEvent, list[AgentMessage]]:
    """Like :func:`agent_loop` from the existing context; raises ``ValueError`` at once when there
    is nothing to continue from. The last message must convert to a user or tool result
    message through ``convert_to_llm`` (custom roles are the caller's responsibility)."""
    _check_continuable(context)
    return _streamed(
        config, signal, lambda emit: run_agent_loop_continue(context, config, emit, signal, stream_fn)
    )


async def run_agent_loop(  # noqa: PLR0917 (Pi's call shape)
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: AgentEventSink,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> list[AgentMessage]:
    """Run the loop with new prompt messages, awaiting ``emit`` for every event; returns the
    run's new messages (the prompts first). Exceptions from hooks and ``emit`` propagate."""
    new_messages = list(prompts)
    current = AgentContext(
        system_prompt=context.system_prompt, tools=context.tools, messages=[*context.messages, *prompts]
    )
    await emit_event(emit, AgentStartEvent())
    await emit_event(emit, TurnStartEvent())
    for prompt in prompts:
        await emit_event(emit, MessageStartEvent(prompt))
        await emit_event(emit, MessageEndEvent(prompt))
    await _Run(
        current,
        new_messages=new_messages,
        config=config,
        signal=signal,
        emit=emit,
        stream_fn=stream_fn or get_default_stream_fn(),
    ).run()
    return new_messages


async def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: AgentEventSink,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> list[AgentMessage]:
    """Continue from ``context`` without new prompts. As in Pi, the working context shares the
    caller's ``messages`` list, which therefore receives the run's messages (``Agent`` passes a
    copy)."""
    _check_continuable(context)
    new_messages: list[AgentMessage] = []
    current = dataclasses.replace(context)
    await emit_event(emit, AgentStartEvent())
    await emit_event(emit, TurnStartEvent())
    await _Run(
        current,
        new_messages=new_messages,
        config=config,
        signal=signal,
        emit=emit,
        stream_fn=stream_fn or get_default_stream_fn(),
    ).run()
    return new_messages


def _check_continuable(context: AgentContext) -> None:
    if not context.messages:
        raise ValueError("Cannot continue: no messages in context")
    if _role(context.messages[-1]) == "assistant":
        raise ValueError("Cannot continue from message role: assistant")


def _streamed(
    config: AgentLoopConfig,
    signal: AbortSignal | None,
    run: Callable[[AgentEventSink], Awaitable[list[AgentMessage]]],
) -> EventStream[AgentEvent, list[AgentMessage]]:
    stream: EventStream[AgentEvent, list[AgentMessage]] = EventStream(_is_agent_end, _agent_end_messages)

    async def produce() -> None:
        tracker = RunTracker()

        def emit(event: AgentEvent) -> None:
            tracker.observe(event)
            stream.push(event)

        try:
            messages = await run(emit)
        except BaseException as exc:
            aborted = signal is not None and signal.aborted
            for event in tracker.failure_events(exc, config.model, aborted, with_run_messages=True):
                stream.push(event)
            stream.end()
            if not isinstance(exc, Exception):
                raise
            return
        stream.end(messages)

    stream.start(produce)
    return stream


def _is_agent_end(event: AgentEvent) -> bool:
    return event.type == "agent_end"


def _agent_end_messages(event: AgentEvent) -> list[AgentMessage]:
    return event.messages if isinstance(event, AgentEndEvent) else []


# --- failure endings (a raising run still closes every event it opened) -----------------------


def failure_message(model: Model, error: BaseException, aborted: bool) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text="")],
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=Usage(),
        stop_reason="aborted" if aborted else "error",
        error_message=error_text(error, aborted),
        timestamp=now_ms(),
    )


class RunTracker:
    """Follows a run's events so a crash can be closed with a complete failure turn."""

    __slots__ = (
        "ended",
        "message_open",
        "messages",
        "open_message",
        "started",
        "tools",
        "turn_open",
        "unanswered",
    )

    def __init__(self) -> None:
        self.started = self.turn_open = self.message_open = self.ended = False
        self.tools: dict[str, str] = {}
        self.messages: list[AgentMessage] = []
        self.open_message: Any = None
        # calls of the last completed assistant message that have no result message yet, with
        # whether their execution started and the result their tool_execution_end carried
        self.unanswered: dict[str, tuple[ToolCall, bool, ToolExecutionEndEvent | None]] = {}

    def observe(self, event: AgentEvent) -> None:
        # Told apart by the ``type`` tag: an ``isinstance`` chain over union types rebuilds the
        # unions on every call, and this runs for every event of every run.
        if event.type == "message_update":
            return
        if event.type == "message_start":
            self.message_open, self.open_message = True, event.message
        elif event.type == "message_end":
            self.message_open, self.open_message = False, None
            self.messages.append(event.message)
            self._answer(event.message)
        elif event.type == "tool_execution_start":
            self.tools[event.tool_call_id] = event.tool_name
            if event.tool_call_id in self.unanswered:
                self.unanswered[event.tool_call_id] = (self.unanswered[event.tool_call_id][0], True, None)
        elif event.type == "tool_execution_end":
            self.tools.pop(event.tool_call_id, None)
            if event.tool_call_id in self.unanswered:
                self.unanswered[event.tool_call_id] = (self.unanswered[event.tool_call_id][0], True, event)
        elif event.type in ("turn_start", "turn_end"):
            self.turn_open = event.type == "turn_start"
        elif event.type == "agent_start":
            self.started = True
        elif event.type == "agent_end":
            self.ended = True

    def failure_events(
        self, error: BaseException, model: Model, aborted: bool, with_run_messages: bool
    ) -> list[AgentEvent]:
        """The events that close the run after ``error``; none once ``agent_end`` went out
        (a second ``agent_end`` would break every consumer's pairing)."""
        if self.ended:
            return []
        failure = failure_message(model, error, aborted)
        events: list[AgentEvent] = []
        if not self.started:
            events.append(AgentStartEvent())
        if not self.turn_open:
            events.append(TurnStartEvent())
        text = failure.error_message or ""
        events += [
            ToolExecutionEndEvent(cid, name, AgentToolResult.error(text), True)
            for cid, name in self.tools.items()
        ]
        message_open, results = self.message_open, []
        if message_open and isinstance(self.open_message, ToolResultMessage):
            events.append(MessageEndEvent(self.open_message))  # a result already built: keep it
            results.append(self.open_message)
            message_open = False
        if not message_open:
            results += self._close_unanswered(events, text, skip={m.tool_call_id for m in results})
            events.append(MessageStartEvent(failure))
        events.append(MessageEndEvent(failure))
        events.append(TurnEndEvent(failure, []))
        events.append(AgentEndEvent([*self.messages, *results, failure] if with_run_messages else [failure]))
        return events

    def _answer(self, message: Any) -> None:
        if isinstance(message, AssistantMessage):
            calls = [] if message.stop_reason in ("error", "aborted") else message.content
            self.unanswered = {b.id: (b, False, None) for b in calls if isinstance(b, ToolCall)}
        elif isinstance(message, ToolResultMessage):
            self.unanswered.pop(message.tool_call_id, None)

    def _close_unanswered(self, events: list[AgentEvent], text: str, skip: set[str]) -> list[Any]:
        """A result message for every call of the last assistant message the crash left without
        one (the result its execution ended with, else an error), so the transcript replays."""
        results = []
        for call_id, (call, started, end) in self.unanswered.items():
            if call_id in skip:
                continue
            if not started:
                events.append(ToolExecutionStartEvent(call_id, call.name, call.arguments))
                events.append(ToolExecutionEndEvent(call_id, call.name, AgentToolResult.error(text), True))
            result, is_error = (
                (end.result, end.is_error) if end is not None else (AgentToolResult.error(text), True)
            )
            message = ToolResultMessage(
                tool_call_id=call_id,
                tool_name=call.name,
                content=list(result.content or []),
                details=result.details,
                is_error=is_error,
                timestamp=now_ms(),
            )
            events += [MessageStartEvent(message), MessageEndEvent(message)]
            results.append(message)
        return results


# --- helpers -------------------------------------------------------------------------------


def _with(config: AgentLoopConfig, **changes: Any) -> AgentLoopConfig:
    """``dataclasses.replace`` without re-running ``__init__`` over ~30 fields on every request
    (nor ``copy.copy``'s pickling protocol): the config is a plain dataclass, its state is its
    ``__dict__``."""
    if type(config) is not AgentLoopConfig:  # a subclass may keep state elsewhere (slots)
        return dataclasses.replace(config, **changes)
    changed = object.__new__(AgentLoopConfig)
    changed.__dict__.update(config.__dict__, **changes)
    return changed


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, Mapping) else getattr(message, "role", None)


# --- one run -------------------------------------------------------------------------------


class _Run:
    """The mutable state of one run: working context, new messages, config (a turn update may
    replace both context and config)."""

    def __init__(
        self,
        ctx: AgentContext,
        *,
        new_messages: list[AgentMessage],
        config: AgentLoopConfig,
        signal: AbortSignal | None,
        emit: AgentEventSink,
        stream_fn: StreamFn,
    ) -> None:
        self.ctx, self.new_messages, self.config = ctx, new_messages, config
        self.signal, self.sink, self.stream_fn = signal, emit, stream_fn

    def aborted(self) -> bool:
        return self.signal is not None and self.signal.aborted

    # -- turns ------------------------------------------------------------------------------

    async def run(self) -> None:
        first_turn = True
        pending: list[AgentMessage] = await self._poll(self.config.get_steering_messages)
        while True:
            has_more_tool_calls = True
            while has_more_tool_calls or pending:
                if first_turn:
                    first_turn = False
                else:
                    await emit_event(self.sink, TurnStartEvent())
                outcome = await self._turn(pending)
                if outcome is None:
                    return
                has_more_tool_calls = outcome
                if self.aborted():  # no further turn (and no queue drained) after an abort
                    await emit_event(self.sink, AgentEndEvent(self.new_messages))
                    return
                pending = await self._poll(self.config.get_steering_messages)
            if self.aborted():
                break
            follow_ups = await self._poll(self.config.get_follow_up_messages)
            if not follow_ups:
                break
            pending = follow_ups
        await emit_event(self.sink, AgentEndEvent(self.new_messages))

    async def _turn(self, pending: list[AgentMessage]) -> bool | None:
        """One turn; returns whether tool calls ask for another, or None when the run ended."""
        for message in pending:
            await emit_event(self.sink, MessageStartEvent(message))
            await emit_event(self.sink, MessageEndEvent(message))
            self.ctx.messages.append(message)
            self.new_messages.append(message)
        message = await self._stream_assistant_response()
        self.new_messages.append(message)
        if message.stop_reason in ("error", "aborted"):
            await emit_event(self.sink, TurnEndEvent(message, []))
            await emit_event(self.sink, AgentEndEvent(self.new_messages))
            return None
        tool_results: list[ToolResultMessage] = []
        has_more_tool_calls = False
        calls = [block for block in message.content if isinstance(block, ToolCall)]
        if calls:
            batch = ToolBatch(self.ctx, self.config, self.signal, self.sink)
            if message.stop_reason == "length":
                tool_results, terminate = await batch.fail_truncated(calls)
            else:
                tool_results, terminate = await batch.execute(message, calls)
            has_more_tool_calls = not terminate
            self.ctx.messages.extend(tool_results)
            self.new_messages.extend(tool_results)
        await emit_event(self.sink, TurnEndEvent(message, tool_results))
        if self.aborted():
            return has_more_tool_calls
        if await self._after_turn(message, tool_results):
            await emit_event(self.sink, AgentEndEvent(self.new_messages))
            return None
        return has_more_tool_calls

    async def _after_turn(self, message: AssistantMessage, tool_results: list[ToolResultMessage]) -> bool:
        """``prepare_next_turn`` then ``should_stop_after_turn``; True means stop now."""
        config = self.config
        if config.prepare_next_turn is not None:
            turn = TurnContext(
                message=message, tool_results=tool_results, context=self.ctx, new_messages=self.new_messages
            )
            update = coerce_result(await resolve(config.prepare_next_turn(turn)), AgentLoopTurnUpdate)
            if update is not None:
                self.ctx = update.context if update.context is not None else self.ctx
                level = update.thinking_level
                reasoning = config.reasoning if level is None else None if level == "off" else level
                model = update.model if update.model is not None else config.model
                self.config = config = _with(config, model=model, reasoning=reasoning)
        if config.should_stop_after_turn is None:
            return False
        turn = TurnContext(
            message=message, tool_results=tool_results, context=self.ctx, new_messages=self.new_messages
        )
        return bool(await resolve(config.should_stop_after_turn(turn)))

    @staticmethod
    async def _poll(source: MessageSource | None) -> list[AgentMessage]:
        if source is None:
            return []
        return list(await resolve(source()) or [])

    # -- streaming one response -----------------------------------------------------------------

    async def _stream_assistant_response(self) -> AssistantMessage:
        ctx, config = self.ctx, self.config
        messages = ctx.messages
        if config.transform_context is not None:
            messages = await resolve(config.transform_context(messages, self.signal))
        llm_messages = list(await resolve(config.convert_to_llm(messages)))
        api_key = None
        if config.get_api_key is not None:
            api_key = await resolve(config.get_api_key(config.model.provider))
        options = _with(config, api_key=api_key or config.api_key, signal=self.signal)
        response = self.stream_fn(config.model, self._llm_context(ctx, llm_messages), options)
        if _isawaitable(response):
            response = await response
        return await self._consume(response, ctx.messages)

    async def _consume(
        self, response: AssistantMessageEventStream, messages: list[AgentMessage]
    ) -> AssistantMessage:
        """The per-token path: one ``message_update`` per block event, no copies, no validation."""
        sink = self.sink
        partial: AssistantMessage | None = None
        # Typed loosely: events are told apart by their ``type`` string (one set lookup per
        # token), which the type checker cannot narrow the event union by.
        events: AsyncIterator[Any] = response.__aiter__()
        try:
            async for event in events:
                kind = event.type
                if kind in BLOCK_EVENT_TYPES:
                    if partial is not None:  # block events before ``start`` are ignored, as in Pi
                        partial = event.partial
                        messages[-1] = partial
                        # ``emit_event`` inlined: this runs once per token, and the extra coroutine
                        # (~0.15 µs) would be a tenth of the agent layer's own per-token cost.
                        result = sink(MessageUpdateEvent(partial, event))
                        if result is not None and _isawaitable(result):
                            await result
                elif kind == "start":
                    partial = event.partial
                    messages.append(partial)
                    await emit_event(self.sink, MessageStartEvent(partial.model_copy()))
                elif kind in _TERMINAL:
                    break
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:  # as Pi's ``return`` from ``for await``: release the iterator now
                await aclose()
        final: AssistantMessage = await response.result()
        if partial is not None:
            messages[-1] = final
        else:
            messages.append(final)
            await emit_event(self.sink, MessageStartEvent(final.model_copy()))
        await emit_event(self.sink, MessageEndEvent(final))
        return final

    @staticmethod
    def _llm_context(ctx: AgentContext, llm_messages: list[LlmMessage]) -> Context:
        tools = None if ctx.tools is None else [tool.to_tool() for tool in ctx.tools]
        if set(map(type, llm_messages)) <= _LLM_MESSAGE_TYPES:
            # Already typed messages: skip re-validating the whole history on every call.
            return Context.model_construct(
                system_prompt=ctx.system_prompt, messages=llm_messages, tools=tools
            )
        return Context.model_validate(
            {"system_prompt": ctx.system_prompt, "messages": llm_messages, "tools": tools}
        )
