"""``Agent`` (Pi's ``agent.ts``): the stateful wrapper around the loop. It owns the transcript
and runtime state, the steering/follow-up queues and the abort controller of the active run,
and turns every loop event into a state change followed by awaited listeners.

Semantics are Pi's: one run at a time (``prompt``/``continue_`` raise while one is active),
state is reduced from each event before the listeners see it, listeners are awaited in
subscription order, and a run that raises ends with a failure turn. Python specifics:
* ``prompt`` and ``continue_`` run the loop in a task of their own and await it. When the
  awaiting task is cancelled (a kernel interrupt), the run is aborted and allowed to finish its
  event sequence (aborted turn, ``agent_end``), then ``CancelledError`` is re-raised. A second
  cancellation while waiting stops the run at once; it still closes with a failure turn.
* ``reset()`` aborts the active run before clearing (Pi's leaves it running against the cleared
  state). The run's closing events still reach listeners but no longer touch the cleared
  state; ``is_streaming`` stays true until it has settled, so ``await wait_for_idle()`` before
  prompting again.
* A run stopped by ``abort()`` between turns ends without the extra aborted turn Pi would ask
  the provider for, and still leaves ``state.error_message`` at ``"Request was aborted"``, as
  that turn would have.
* A crash closes the run with a complete failure turn (see ``loop.RunTracker``): events that
  are already open get their ends; nothing is emitted after ``agent_end`` (a crash there only
  sets ``state.error_message``).
* ``should_stop_after_turn`` is an option Pi's ``Agent`` lacks (the notebook's ``--max-turns``).
* ``steer``/``follow_up``/``prompt`` accept a plain string (one text block).
* The runtime fields (``is_streaming``, ``streaming_message``, ``pending_tool_calls``,
  ``error_message``) live in a ``_RunState`` that only the ``Agent`` writes; ``AgentState``
  exposes them read-only.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from ..ai.abort import ABORT_MESSAGE, AbortController, AbortSignal
from ..ai.event_stream import spawn
from ..ai.options import OnPayload, OnResponse, Transport
from ..ai.types import AssistantMessage, ImageContent, Model, ModelCost, TextContent, UserMessage, now_ms
from .loop import RunTracker, get_default_stream_fn, run_agent_loop, run_agent_loop_continue
from .queues import PendingMessageQueue
from .run_options import AgentRunOptions
from .tools import error_text, resolve
from .types import (
    AfterToolCallHook,
    AgentContext,
    AgentEvent,
    AgentListener,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    BeforeToolCallHook,
    ConvertToLlm,
    MessageUpdateEvent,
    QueueMode,
    StreamFn,
    ThinkingLevel,
    ToolExecutionMode,
    TransformContext,
    TurnContext,
    _default_convert_to_llm,
    emit_event,
)

# Pi's error texts, word for word, except that methods are named as Python spells them.
PROMPT_BUSY = "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, or wait for completion."  # noqa: E501
CONTINUE_BUSY = "Agent is already processing. Wait for completion before continuing."


def default_model() -> Model:
    """Pi's placeholder model for an agent created without one."""
    return Model(
        id="unknown",
        name="unknown",
        api="unknown",
        provider="unknown",
        base_url="",
        reasoning=False,
        input=[],
        cost=ModelCost(),
        context_window=0,
        max_tokens=0,
    )


def has_model(agent: Agent) -> bool:
    """False while ``agent`` still has Pi's placeholder model (``default_model``), which no
    provider serves."""
    model = agent.state.model
    return bool(model and model.provider != "unknown" and model.api != "unknown")


class _RunState:
    """The runtime half of ``AgentState``: written only by the ``Agent`` that owns it."""

    __slots__ = ("error_message", "is_streaming", "pending_tool_calls", "streaming_message")

    def __init__(self) -> None:
        self.is_streaming = False
        self.streaming_message: AgentMessage | None = None
        self.pending_tool_calls: frozenset[str] = frozenset()
        self.error_message: str | None = None

    def clear(self) -> None:
        """Forget the streaming message, the pending tool calls and the error."""
        self.streaming_message = None
        self.pending_tool_calls = frozenset()
        self.error_message = None


class AgentState:
    """The live state (``agent.state`` is always the same object; the ``Agent`` makes it).
    ``tools``/``messages`` store a shallow copy when assigned and return the stored list when
    read; the runtime fields are read-only views of the agent's run state, and
    ``pending_tool_calls`` is a new frozenset on every change."""

    __slots__ = ("_messages", "_run", "_tools", "model", "system_prompt", "thinking_level")

    def __init__(
        self,
        run: _RunState,
        *,
        system_prompt: str = "",
        model: Model | None = None,
        thinking_level: ThinkingLevel = "off",
        tools: Sequence[AgentTool] = (),
        messages: Sequence[AgentMessage] = (),
    ) -> None:
        self.system_prompt = system_prompt
        self.model = model if model is not None else default_model()
        self.thinking_level: ThinkingLevel = thinking_level
        self._tools = list(tools)
        self._messages = list(messages)
        self._run = run

    @property
    def tools(self) -> list[AgentTool]:
        return self._tools

    @tools.setter
    def tools(self, tools: Sequence[AgentTool]) -> None:
        self._tools = list(tools)

    @property
    def messages(self) -> list[AgentMessage]:
        return self._messages

    @messages.setter
    def messages(self, messages: Sequence[AgentMessage]) -> None:
        self._messages = list(messages)

    @property
    def is_streaming(self) -> bool:
        return self._run.is_streaming

    @property
    def streaming_message(self) -> AgentMessage | None:
        return self._run.streaming_message

    @property
    def pending_tool_calls(self) -> frozenset[str]:
        return self._run.pending_tool_calls

    @property
    def error_message(self) -> str | None:
        return self._run.error_message

    def __repr__(self) -> str:
        return (
            f"AgentState(model={self.model.provider}:{self.model.id}, messages={len(self._messages)}, "
            f"tools={[t.name for t in self._tools]}, is_streaming={self._run.is_streaming})"
        )


@dataclass(eq=False)
class _ActiveRun:
    controller: AbortController
    tracker: RunTracker = field(default_factory=RunTracker)
    detached: bool = False  # set by reset(): the run's remaining events leave the state alone
    task: asyncio.Task[Any] | None = None
    waiters: list[asyncio.Future[None]] = field(default_factory=list)  # callers' own waits
    done: bool = False
    failure: Exception | None = None  # the failure path itself raised: the caller gets it

    def finished(self) -> asyncio.Future[None]:
        """A future of the caller's own that the end of the run resolves (done now if over)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.done:
            waiter.set_result(None)
        else:
            self.waiters.append(waiter)
        return waiter

    def release(self) -> None:
        self.done = True
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


_INITIAL_STATE_KEYS = frozenset({"system_prompt", "model", "thinking_level", "tools", "messages"})


def _user_message(text: str, images: Sequence[ImageContent] | None = None) -> UserMessage:
    return UserMessage(content=[TextContent(text=text), *(images or ())], timestamp=now_ms())


class Agent:
    """See the module docstring; options are Pi's ``AgentOptions`` in snake_case."""

    def __init__(
        self,
        *,
        stream_fn: StreamFn | None = None,
        initial_state: dict[str, Any] | None = None,
        convert_to_llm: ConvertToLlm | None = None,
        transform_context: TransformContext | None = None,
        get_api_key: Callable[[str], Any] | None = None,
        before_tool_call: BeforeToolCallHook | None = None,
        after_tool_call: AfterToolCallHook | None = None,
        prepare_next_turn: Callable[[AbortSignal | None], Any] | None = None,
        prepare_next_turn_with_context: Callable[[TurnContext, AbortSignal | None], Any] | None = None,
        should_stop_after_turn: Callable[[TurnContext], Any] | None = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        session_id: str | None = None,
        thinking_budgets: dict[str, int] | None = None,
        transport: Transport = "auto",
        max_retry_delay_ms: int | None = None,
        tool_execution: ToolExecutionMode = "parallel",
        on_payload: OnPayload | None = None,
        on_response: OnResponse | None = None,
    ) -> None:
        unknown = set(initial_state or {}) - _INITIAL_STATE_KEYS
        if unknown:
            raise TypeError(f"unknown initial_state key(s): {', '.join(sorted(unknown))}")
        self._run_state = _RunState()
        self._state = AgentState(self._run_state, **(initial_state or {}))
        self.stream_fn: StreamFn = stream_fn if stream_fn is not None else get_default_stream_fn()
        self.convert_to_llm: ConvertToLlm = convert_to_llm or _default_convert_to_llm
        self.transform_context = transform_context
        self.get_api_key = get_api_key
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self.prepare_next_turn = prepare_next_turn
        self.prepare_next_turn_with_context = prepare_next_turn_with_context
        self.should_stop_after_turn = should_stop_after_turn
        self.session_id = session_id
        self.thinking_budgets = thinking_budgets
        self.transport: Transport = transport
        self.max_retry_delay_ms = max_retry_delay_ms
        self.tool_execution: ToolExecutionMode = tool_execution
        self.on_payload = on_payload
        self.on_response = on_response
        self._steering = PendingMessageQueue(steering_mode)
        self._follow_ups = PendingMessageQueue(follow_up_mode)
        self._listeners: dict[AgentListener, None] = {}  # an ordered set
        self._listener_list: tuple[AgentListener, ...] = ()
        self._active_run: _ActiveRun | None = None

    # -- state, listeners, queues ---------------------------------------------------------------

    @property
    def state(self) -> AgentState:
        return self._state

    def subscribe(self, listener: AgentListener) -> Callable[[], None]:
        """Listeners get ``(event, signal)``, may be async, and are awaited in order."""
        self._listeners[listener] = None
        self._listener_list = tuple(self._listeners)

        def unsubscribe() -> None:
            self._listeners.pop(listener, None)
            self._listener_list = tuple(self._listeners)

        return unsubscribe

    @property
    def steering_mode(self) -> QueueMode:
        return self._steering.mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        self._steering.mode = mode

    @property
    def follow_up_mode(self) -> QueueMode:
        return self._follow_ups.mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        self._follow_ups.mode = mode

    def steer(self, message: AgentMessage | str) -> None:
        """Queue a message for injection after the current turn (a str becomes a user message)."""
        self._steering.enqueue(_user_message(message) if isinstance(message, str) else message)

    def follow_up(self, message: AgentMessage | str) -> None:
        """Queue a message for when the agent would otherwise stop."""
        self._follow_ups.enqueue(_user_message(message) if isinstance(message, str) else message)

    def clear_steering_queue(self) -> None:
        self._steering.clear()

    def clear_follow_up_queue(self) -> None:
        self._follow_ups.clear()

    def clear_all_queues(self) -> None:
        self._steering.clear()
        self._follow_ups.clear()

    def has_queued_messages(self) -> bool:
        return self._steering.has_items() or self._follow_ups.has_items()

    @property
    def signal(self) -> AbortSignal | None:
        """The active run's abort signal, or None when idle."""
        return self._active_run.controller.signal if self._active_run is not None else None

    def abort(self) -> None:
        if self._active_run is not None:
            self._active_run.controller.abort()

    async def wait_for_idle(self) -> None:
        """Return once the active run and all its awaited listeners have finished."""
        if self._active_run is not None:
            await self._active_run.finished()

    def reset(self) -> None:
        """Abort the active run, then clear the transcript, runtime state and queues. (Pi's
        ``reset`` leaves a run going, whose remaining events then land in the cleared state.)"""
        run = self._active_run
        if run is not None:
            run.controller.abort()
            run.detached = True
        self._state.messages = []
        self._run_state.clear()
        self.clear_all_queues()

    # -- running ------------------------------------------------------------------------------------

    async def prompt(
        self,
        input: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] | None = None,
        *,
        run: AgentRunOptions | None = None,
    ) -> None:
        """Run from text (plus images), one message or a list of messages; ``run``: settings
        for this run only (``AgentRunOptions``)."""
        if self._active_run is not None:
            raise RuntimeError(PROMPT_BUSY)
        messages: list[AgentMessage]
        if isinstance(input, str):
            messages = [_user_message(input, images)]
        elif isinstance(input, list | tuple):
            messages = list(input)
        else:
            messages = [cast("AgentMessage", input)]
        await self._run_prompt_messages(messages, run=run)

    async def continue_(self, *, run: AgentRunOptions | None = None) -> None:
        """Continue from the transcript; from an assistant tail, run queued steering (then
        follow-up) messages instead. ``run`` as for ``prompt``."""
        if self._active_run is not None:
            raise RuntimeError(CONTINUE_BUSY)
        messages = self._state.messages
        if not messages:
            raise RuntimeError("No messages to continue from")
        if getattr(messages[-1], "role", None) == "assistant":
            steering = self._steering.drain()
            if steering:
                await self._run_prompt_messages(steering, skip_initial_steering_poll=True, run=run)
                return
            follow_ups = self._follow_ups.drain()
            if follow_ups:
                await self._run_prompt_messages(follow_ups, run=run)
                return
            raise RuntimeError("Cannot continue from message role: assistant")

        async def continuation(active: _ActiveRun) -> None:
            await run_agent_loop_continue(
                self._context_snapshot(run),
                self._loop_config(run=run),
                lambda event: self._process_event(active, event),
                active.controller.signal,
                self.stream_fn if run is None else run.stream_fn(self.stream_fn),
            )

        await self._await_run(self._start_run(continuation))

    async def _run_prompt_messages(
        self,
        messages: list[AgentMessage],
        skip_initial_steering_poll: bool = False,
        *,
        run: AgentRunOptions | None = None,
    ) -> None:
        async def execute(active: _ActiveRun) -> None:
            await run_agent_loop(
                messages,
                self._context_snapshot(run),
                self._loop_config(skip_initial_steering_poll, run=run),
                lambda event: self._process_event(active, event),
                active.controller.signal,
                self.stream_fn if run is None else run.stream_fn(self.stream_fn),
            )

        await self._await_run(self._start_run(execute))

    def _context_snapshot(self, run: AgentRunOptions | None = None) -> AgentContext:
        state = self._state
        tools = state.tools if run is None or run.tools is None else run.tools
        system = state.system_prompt if run is None or run.system_prompt is None else run.system_prompt
        return AgentContext(system_prompt=system, messages=list(state.messages), tools=list(tools))

    def _loop_config(
        self, skip_initial_steering_poll: bool = False, *, run: AgentRunOptions | None = None
    ) -> AgentLoopConfig:
        state = self._state
        skip = [skip_initial_steering_poll]

        def get_steering_messages() -> list[AgentMessage]:
            if skip[0]:
                skip[0] = False
                return []
            return self._steering.drain()

        config = AgentLoopConfig(
            model=state.model,
            reasoning=None if state.thinking_level == "off" else state.thinking_level,
            session_id=self.session_id,
            on_payload=self.on_payload,
            on_response=self.on_response,
            transport=self.transport,
            thinking_budgets=self.thinking_budgets,
            max_retry_delay_ms=self.max_retry_delay_ms,
            tool_execution=self.tool_execution,
            before_tool_call=self.before_tool_call,
            after_tool_call=self.after_tool_call,
            prepare_next_turn=self._prepare_next_turn if self._has_prepare_hook() else None,
            should_stop_after_turn=self.should_stop_after_turn,
            convert_to_llm=self.convert_to_llm,
            transform_context=self.transform_context,
            get_api_key=self.get_api_key,
            get_steering_messages=get_steering_messages,
            get_follow_up_messages=self._follow_ups.drain,
        )
        return config if run is None else run.apply(config)

    def _has_prepare_hook(self) -> bool:
        return self.prepare_next_turn_with_context is not None or self.prepare_next_turn is not None

    async def _prepare_next_turn(self, context: TurnContext) -> Any:
        if self.prepare_next_turn_with_context is not None:
            result = self.prepare_next_turn_with_context(context, self.signal)
        elif self.prepare_next_turn is not None:
            result = self.prepare_next_turn(self.signal)
        else:
            return None
        return await resolve(result)

    # -- run lifecycle --------------------------------------------------------------------------------

    def _start_run(self, executor: Callable[[_ActiveRun], Awaitable[None]]) -> _ActiveRun:
        """Claim the agent synchronously (so a second ``prompt`` fails at once) and start the run."""
        if self._active_run is not None:
            raise RuntimeError("Agent is already processing.")
        run = _ActiveRun(AbortController())
        self._active_run = run
        live = self._run_state
        live.is_streaming = True
        live.streaming_message = None
        live.error_message = None
        run.task = spawn(self._lifecycle(run, executor))
        # normally ``_finish_run`` releases the waiters; this covers a task cancelled unstarted
        run.task.add_done_callback(lambda _: run.release())
        return run

    async def _lifecycle(self, run: _ActiveRun, executor: Callable[[_ActiveRun], Awaitable[None]]) -> None:
        try:
            await executor(run)
        except BaseException as exc:
            # Exceptions and our own hard stop (CancelledError) close the run with a failure turn.
            aborted = run.controller.signal.aborted
            events = run.tracker.failure_events(exc, self._state.model, aborted, with_run_messages=False)
            if not events and not run.detached:
                # A crash after agent_end (a listener of it) emits nothing more, but still
                # reaches state.error_message, as Pi's failure turn would set it.
                self._run_state.error_message = error_text(exc, aborted)
            try:
                for event in events:
                    await emit_event(lambda e: self._process_event(run, e), event)
            except Exception as again:  # a listener raised on the failure turn too (Pi: prompt rejects)
                run.failure = again
            if not isinstance(exc, Exception | asyncio.CancelledError):
                raise
        finally:
            self._finish_run(run)

    def _finish_run(self, run: _ActiveRun) -> None:
        live = self._run_state
        live.is_streaming = False
        live.streaming_message = None
        live.pending_tool_calls = frozenset()
        if run.controller.signal.aborted and live.error_message is None and not run.detached:
            live.error_message = ABORT_MESSAGE
        self._active_run = None
        run.release()

    async def _await_run(self, run: _ActiveRun) -> None:
        """Await the run; on cancellation abort it, let it close its events, then re-raise.

        The wait is on a future of the caller's own that ``_finish_run`` resolves, which a
        cancelled caller may cancel without touching the run; ``asyncio.shield(task)`` would do
        the same through two relayed callbacks, an event-loop iteration more per prompt."""
        try:
            await run.finished()
            if run.failure is not None:
                raise run.failure
        except asyncio.CancelledError:
            if run.done:
                raise
            self.abort()
            while not run.done:
                try:
                    await run.finished()
                except asyncio.CancelledError:
                    if run.task is not None:
                        run.task.cancel()  # cancelled again while waiting: stop the run now
            raise

    # -- events -------------------------------------------------------------------------------------------

    def _process_event(self, run: _ActiveRun, event: AgentEvent) -> Awaitable[None] | None:
        """Reduce the state, then call listeners in order. Sync listeners run right here; from
        the first one that returns an awaitable on, the rest run in the returned coroutine."""
        if type(event) is MessageUpdateEvent:  # the per-token event: only the streaming message changes
            if not run.detached:
                self._run_state.streaming_message = event.message
        else:
            run.tracker.observe(event)
            if not run.detached:
                self._reduce(event)
        if self._active_run is None:
            raise RuntimeError("Agent listener invoked outside active run")
        signal = run.controller.signal
        listeners = self._listener_list
        for index, listener in enumerate(listeners):
            result = listener(event, signal)
            if result is not None and inspect.isawaitable(result):
                return self._finish_listeners(result, listeners[index + 1 :], event, signal)
        return None

    @staticmethod
    async def _finish_listeners(
        pending: Awaitable[Any], rest: tuple[AgentListener, ...], event: AgentEvent, signal: AbortSignal
    ) -> None:
        await pending
        for listener in rest:
            await resolve(listener(event, signal))

    def _reduce(self, event: AgentEvent) -> None:
        live = self._run_state
        # told apart by the tag, not an ``isinstance`` chain: this runs for every event
        if event.type in ("message_update", "message_start"):
            live.streaming_message = event.message
        elif event.type == "message_end":
            live.streaming_message = None
            self._state.messages.append(event.message)
        elif event.type == "tool_execution_start":
            live.pending_tool_calls = live.pending_tool_calls | {event.tool_call_id}
        elif event.type == "tool_execution_end":
            live.pending_tool_calls = live.pending_tool_calls - {event.tool_call_id}
        elif event.type == "turn_end":
            message = event.message
            if isinstance(message, AssistantMessage) and message.error_message:
                live.error_message = message.error_message
        elif event.type == "agent_end":
            live.streaming_message = None
