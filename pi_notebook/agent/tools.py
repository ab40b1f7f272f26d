"""Running tools: calling ``execute`` and ``ToolBatch`` (Pi's ``executeToolCalls*``).

* Sync code never runs on the event loop (in a notebook that is the kernel's loop): a sync
  ``execute`` or a sync decorated function runs in a worker thread (``workers.run_in_worker``).
* What a tool returns becomes an ``AgentToolResult`` (``AgentToolResult.of``): a result as is,
  a ``str`` as one text block, content blocks as the content, anything else as JSON text.
* ``ToolBatch`` runs the tool calls of one assistant message (Pi's ``executeToolCalls*``).
  Every settled result is capped (``result_cap``: Pi's 2,000 lines / 50 KB) before its events.
* A tool still running ``ABORT_GRACE_S`` after the run was aborted is cancelled (Pi waits for
  it, however long): a tool that ignores its ``signal`` must not keep a Stop or an interrupt
  from ending the run. Its result says so; a sync tool's thread cannot be stopped and finishes
  in the background, its return value dropped.
Imports ``pi_notebook.ai``, the agent types and the worker threads only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from ..ai.abort import ABORT_MESSAGE, AbortSignal, CancelScope
from ..ai.event_stream import spawn
from ..ai.types import AssistantMessage, ImageContent, TextContent, ToolCall, ToolResultMessage, now_ms
from ..ai.validation import validate_tool_arguments
from .result_cap import cap_result
from .types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentEventSink,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    AgentToolUpdateCallback,
    BeforeToolCallContext,
    BeforeToolCallResult,
    MessageEndEvent,
    MessageStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    emit_event,
)
from .workers import run_in_worker

T = TypeVar("T")

INJECTED_PARAMETERS = frozenset({"tool_call_id", "signal", "on_update"})

def is_async_callable(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


ABORT_GRACE_S = 1.0
"""How long a running tool has, after an abort, to end by itself before it is cancelled."""


async def call_tool_execute(
    tool: AgentTool,
    tool_call_id: str,
    args: Any,
    signal: AbortSignal | None,
    on_update: AgentToolUpdateCallback,
) -> AgentToolResult:
    """Await an async ``execute``; run a sync one in a worker thread. Exceptions propagate; a
    tool still running ``ABORT_GRACE_S`` after ``signal`` fired is cancelled and raises."""
    work = _execute(tool, tool_call_id, args, signal, on_update)
    if signal is None:
        return await work
    loop = asyncio.get_running_loop()
    timers: list[asyncio.TimerHandle] = []

    def overdue() -> RuntimeError:
        return RuntimeError(
            f"{OPERATION_ABORTED}: {tool.name} did not stop within {ABORT_GRACE_S:g} s of the abort "
            "and was cancelled."
        )

    async with CancelScope(overdue) as scope:
        remove = signal.add_listener(lambda: timers.append(loop.call_later(ABORT_GRACE_S, scope.cancel)))
        try:
            return await work
        finally:
            remove()
            for timer in timers:
                timer.cancel()


async def _execute(
    tool: AgentTool,
    tool_call_id: str,
    args: Any,
    signal: AbortSignal | None,
    on_update: AgentToolUpdateCallback,
) -> AgentToolResult:
    execute = tool.execute
    if is_async_callable(execute):
        value = await execute(tool_call_id, args, signal, on_update)  # type: ignore[misc]
    else:
        value = await run_in_worker(execute, tool_call_id, args, signal, on_update)
        if inspect.isawaitable(value):
            value = await value
    return valid_content(AgentToolResult.of(value), tool.name)


_CONTENT: TypeAdapter[list[TextContent | ImageContent]] = TypeAdapter(list[TextContent | ImageContent])


def valid_content(result: AgentToolResult, tool_name: str) -> AgentToolResult:
    """``result`` with content the transcript can hold (block mappings become blocks); other
    content raises ``TypeError``, which the loop turns into an error result for the call
    instead of failing the whole run when the result message is built."""
    content = result.content
    if isinstance(content, list) and all(isinstance(b, TextContent | ImageContent) for b in content):
        return result  # the common case
    try:
        blocks = _CONTENT.validate_python(content if content is not None else [])
    except ValidationError:
        what = type(content).__name__
        if isinstance(content, list | tuple):
            bad = next((b for b in content if not isinstance(b, TextContent | ImageContent)), None)
            what = f"a {what} holding {type(bad).__name__}"
        raise TypeError(
            f"Tool {tool_name} returned an invalid result: content must be a list of TextContent "
            f"or ImageContent blocks, not {what}"
        ) from None
    return dataclasses.replace(result, content=blocks)


# --- tool batches (Pi's executeToolCalls*) -------------------------------------------------------

TRUNCATED_TOOL_CALL = (
    'Tool call "{name}" was not executed: the response hit the output token limit, so its arguments '
    "may be truncated. Re-issue the tool call with complete arguments."
)
OPERATION_ABORTED = "Operation aborted"


def error_text(error: BaseException, aborted: bool = False) -> str:
    if aborted and isinstance(error, asyncio.CancelledError):
        return ABORT_MESSAGE
    return str(error) or type(error).__name__


async def resolve(value: Any) -> Any:
    """Await ``value`` if it is awaitable (hooks may be sync or async)."""
    if value is None:  # the common answer of a sync hook; ``isawaitable`` is an ABC check
        return None
    return await value if inspect.isawaitable(value) else value


def coerce_result(value: Any, cls: type[T]) -> T | None:
    """Hook results may be the dataclass, a mapping of its fields, or None."""
    if value is None or isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        return cls(**value)
    raise TypeError(f"expected {cls.__name__}, a mapping or None, got {type(value).__name__}")


@dataclass(slots=True)
class _Prepared:
    tool_call: ToolCall
    tool: AgentTool
    args: Any


@dataclass(slots=True)
class _Finalized:
    """A call's settled result: every result passes here, so this is where it is capped
    (``result_cap``) before its end event, its result message, the context and the session."""

    tool_call: ToolCall
    result: AgentToolResult
    is_error: bool

    def __post_init__(self) -> None:
        self.result = cap_result(self.result)


def _failed(tool_call: ToolCall, text: str) -> _Finalized:
    return _Finalized(tool_call, AgentToolResult.error(text), True)


def _tool_result_message(final: _Finalized) -> ToolResultMessage:
    result = final.result
    return ToolResultMessage(
        tool_call_id=final.tool_call.id,
        tool_name=final.tool_call.name,
        content=list(result.content or []),
        details=result.details,
        usage=result.usage,
        added_tool_names=list(result.added_tool_names) if result.added_tool_names else None,
        is_error=final.is_error,
        timestamp=now_ms(),
    )


class ToolBatch:
    """Runs the tool calls of one assistant message: preparation (arguments, validation,
    ``before_tool_call``), execution, ``after_tool_call``, and the events, in sequential or
    parallel mode. Parallel mode prepares the calls strictly in order (each gets its
    ``tool_execution_start`` first), runs them concurrently, emits ``tool_execution_end`` in
    completion order and the result messages in source order. A call an abort kept from running
    still gets an ``Operation aborted`` error result, so every tool call has a result."""

    def __init__(
        self, context: AgentContext, config: AgentLoopConfig, signal: AbortSignal | None, emit: AgentEventSink
    ) -> None:
        self.context, self.config, self.signal, self.sink = context, config, signal, emit

    def aborted(self) -> bool:
        return self.signal is not None and self.signal.aborted

    async def fail_truncated(self, calls: list[ToolCall]) -> tuple[list[ToolResultMessage], bool]:
        results = []
        for call in calls:
            await emit_event(self.sink, ToolExecutionStartEvent(call.id, call.name, call.arguments))
            results.append(await self._settle(_failed(call, TRUNCATED_TOOL_CALL.format(name=call.name))))
        return results, False

    async def _settle(self, final: _Finalized) -> ToolResultMessage:
        """``tool_execution_end`` then the result message's start/end."""
        await self._emit_end(final)
        return await self._emit_result_message(final)

    async def _emit_end(self, final: _Finalized) -> None:
        call = final.tool_call
        await emit_event(self.sink, ToolExecutionEndEvent(call.id, call.name, final.result, final.is_error))

    async def _emit_result_message(self, final: _Finalized) -> ToolResultMessage:
        message = _tool_result_message(final)
        await emit_event(self.sink, MessageStartEvent(message))
        await emit_event(self.sink, MessageEndEvent(message))
        return message

    async def execute(
        self, message: AssistantMessage, calls: list[ToolCall]
    ) -> tuple[list[ToolResultMessage], bool]:
        tools = self.context.tools or []
        sequential = self.config.tool_execution == "sequential" or any(
            tool.execution_mode == "sequential" for call in calls for tool in tools if tool.name == call.name
        )
        if sequential:
            finals, results = await self._execute_sequential(message, calls)
        else:
            finals = await self._execute_parallel(message, calls)
            results = [await self._emit_result_message(final) for final in finals]
        terminate = bool(finals) and all(final.result.terminate is True for final in finals)
        return results, terminate

    async def _execute_sequential(
        self, message: AssistantMessage, calls: list[ToolCall]
    ) -> tuple[list[_Finalized], list[ToolResultMessage]]:
        finals: list[_Finalized] = []
        results: list[ToolResultMessage] = []
        for index, call in enumerate(calls):
            await emit_event(self.sink, ToolExecutionStartEvent(call.id, call.name, call.arguments))
            prepared = await self._prepare(message, call)
            final = (
                prepared if isinstance(prepared, _Finalized) else await self._execute_one(message, prepared)
            )
            finals.append(final)
            results.append(await self._settle(final))
            if self.aborted():
                for aborted in await self._skip_aborted(calls[index + 1 :]):
                    finals.append(aborted)
                    results.append(await self._emit_result_message(aborted))
                break
        return finals, results

    async def _skip_aborted(self, calls: list[ToolCall]) -> list[_Finalized]:
        """Calls an abort kept from running still get start/end and an error result, so that
        the transcript replays to any provider (they reject a tool call without a result)."""
        skipped = []
        for call in calls:
            await emit_event(self.sink, ToolExecutionStartEvent(call.id, call.name, call.arguments))
            skipped.append(_failed(call, OPERATION_ABORTED))
            await self._emit_end(skipped[-1])
        return skipped

    async def _execute_parallel(self, message: AssistantMessage, calls: list[ToolCall]) -> list[_Finalized]:
        entries: list[_Prepared | _Finalized] = []
        for index, call in enumerate(calls):  # preflight, strictly in order
            await emit_event(self.sink, ToolExecutionStartEvent(call.id, call.name, call.arguments))
            prepared = await self._prepare(message, call)
            if isinstance(prepared, _Finalized):
                await self._emit_end(prepared)
            entries.append(prepared)
            if self.aborted():
                entries += await self._skip_aborted(calls[index + 1 :])
                break
        runnable = [(i, entry) for i, entry in enumerate(entries) if isinstance(entry, _Prepared)]
        finals = [entry if isinstance(entry, _Finalized) else None for entry in entries]
        if len(runnable) == 1:  # a lone call needs no task
            index, prepared = runnable[0]
            finals[index] = await self._execute_one(message, prepared, emit_end=True)
        elif runnable:
            tasks = [
                asyncio.ensure_future(self._execute_one(message, prepared, emit_end=True, interleave=True))
                for _, prepared in runnable
            ]
            try:
                done = await asyncio.gather(*tasks)
            except BaseException:  # a crashed emit must not leave sibling tools running
                for task in tasks:
                    task.cancel()
                raise
            for (index, _), final in zip(runnable, done, strict=True):
                finals[index] = final
        return [final for final in finals if final is not None]

    def _find_tool(self, name: str) -> AgentTool | None:
        for tool in self.context.tools or ():
            if tool.name == name:
                return tool
        return None

    async def _prepare(self, message: AssistantMessage, call: ToolCall) -> _Prepared | _Finalized:
        tool = self._find_tool(call.name)
        if tool is None:
            return _failed(call, f"Tool {call.name} not found")
        try:
            prepared_call = call
            if tool.prepare_arguments is not None:
                arguments = tool.prepare_arguments(call.arguments)
                if arguments is not call.arguments:  # the assistant message keeps the original
                    prepared_call = call.model_copy(update={"arguments": arguments})
            args = validate_tool_arguments(tool, prepared_call)
            hook = self.config.before_tool_call
            if hook is not None:
                context = BeforeToolCallContext(
                    assistant_message=message, tool_call=call, args=args, context=self.context
                )
                before = coerce_result(await resolve(hook(context, self.signal)), BeforeToolCallResult)
                if self.aborted():
                    return _failed(call, OPERATION_ABORTED)
                if before is not None and before.block:
                    return _failed(call, before.reason or "Tool execution was blocked")
            if self.aborted():
                return _failed(call, OPERATION_ABORTED)
            # ``args`` are not re-validated: in-place changes by the hook reach ``execute``.
            return _Prepared(call, tool, args)
        except Exception as exc:
            return _failed(call, error_text(exc))

    async def _execute_one(
        self, message: AssistantMessage, prepared: _Prepared, emit_end: bool = False, interleave: bool = False
    ) -> _Finalized:
        result, is_error = await self._run_tool(prepared, interleave)
        hook = self.config.after_tool_call
        if hook is not None:
            context = AfterToolCallContext(
                assistant_message=message,
                tool_call=prepared.tool_call,
                args=prepared.args,
                result=result,
                is_error=is_error,
                context=self.context,
            )
            try:
                after = coerce_result(await resolve(hook(context, self.signal)), AfterToolCallResult)
                if after is not None:  # each given field replaces the value wholesale
                    fields = ("content", "details", "usage", "terminate")
                    overrides = {k: getattr(after, k) for k in fields if getattr(after, k) is not None}
                    result = valid_content(dataclasses.replace(result, **overrides), prepared.tool.name)
                    is_error = after.is_error if after.is_error is not None else is_error
            except Exception as exc:
                result, is_error = AgentToolResult.error(error_text(exc)), True
        final = _Finalized(prepared.tool_call, result, is_error)
        if emit_end:
            await self._emit_end(final)
        return final

    async def _run_tool(self, prepared: _Prepared, interleave: bool = False) -> tuple[AgentToolResult, bool]:
        """Run ``execute``; its update emits start at once and are drained before returning.
        ``on_update`` may be called from a worker thread; calls after settling are dropped.

        ``interleave`` (parallel batches) yields once after ``execute`` settles: in Pi every tool
        of a batch runs to its first ``await`` before any of them finishes (so a batch's updates
        precede its ends), while a Python coroutine that never suspends would run its whole
        task, end event included, before the next tool starts. A tool that sent updates yields
        once more: Pi always awaits the update emits, which takes extra ticks, so among tools
        that settle at once those without updates end first, in call order."""
        call = prepared.tool_call
        updates = _UpdateRelay(call, self.sink)
        try:
            result: AgentToolResult = await call_tool_execute(
                prepared.tool, call.id, prepared.args, self.signal, updates.on_update
            )
            is_error = False
        except Exception as exc:
            result, is_error = AgentToolResult.error(error_text(exc)), True
        except BaseException:
            updates.accepting = False
            raise
        await updates.close()
        if interleave:
            await asyncio.sleep(0)
            if updates.sent:
                await asyncio.sleep(0)
        await updates.drain()
        return result, is_error


class _UpdateRelay:
    """A running tool's ``on_update``: each update becomes a ``tool_execution_update`` at once
    (from a worker thread, by way of the loop); updates after the call settled are dropped;
    what a listener's emit awaits (or raises) is collected for :meth:`drain`."""

    __slots__ = ("accepting", "call", "loop", "loop_thread", "pending", "relayed", "sent", "sink")

    def __init__(self, call: ToolCall, sink: AgentEventSink) -> None:
        self.call, self.sink = call, sink
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()
        self.pending: list[asyncio.Future[Any]] = []
        self.relayed: list[None] = []  # updates a worker thread queued on the loop, not yet run
        self.accepting = True
        self.sent = False

    def on_update(self, partial: AgentToolResult) -> None:
        if threading.get_ident() != self.loop_thread:
            self.relayed.append(None)  # list appends are atomic: several threads may report
            self.loop.call_soon_threadsafe(self._relay, partial)
            return
        if not self.accepting:
            return
        self.sent = True
        call = self.call
        try:
            result = self.sink(ToolExecutionUpdateEvent(call.id, call.name, call.arguments, partial))
        except Exception as exc:  # surfaces at the drain, like a rejected emit in Pi
            failed: asyncio.Future[Any] = self.loop.create_future()
            failed.set_exception(exc)
            self.pending.append(failed)
            return
        if result is not None and inspect.isawaitable(result):
            self.pending.append(spawn(resolve(result)))

    def _relay(self, partial: AgentToolResult) -> None:
        self.relayed.pop()
        self.on_update(partial)

    async def close(self) -> None:
        """Stop accepting updates once those the tool sent before it returned are in: a sync
        tool that returned quickly can come back before the updates it sent from its thread
        have run, and they are queued on the loop ahead of this task's next step."""
        if self.relayed:
            await asyncio.sleep(0)
        self.accepting = False

    async def drain(self) -> None:
        if self.pending:
            await asyncio.gather(*self.pending)
