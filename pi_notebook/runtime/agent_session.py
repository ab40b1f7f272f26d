"""``AgentSession`` (Pi's ``agent-session.ts``): an ``Agent`` together with its session file,
auto-retry, auto-compaction, the steering / follow-up queues, model and thinking changes, and
one event stream (:mod:`.events`) for whoever shows or drives it: a script, ``%%pi``, a kernel.

What it does with the agent's events, in Pi's order: a user message that starts leaves the queue
it came from (``queue_update``); every event goes to the listeners (``agent_end`` as
``SessionAgentEndEvent`` with ``will_retry``); then ``message_end`` is recorded in the session
file (user / assistant / toolResult as ``message`` entries, custom messages as
``custom_message``), and a successful answer ends a retry episode (``auto_retry_end``).

After each run: a retryable failure is retried (:mod:`.retry`), else compaction is checked
(:mod:`.compaction`); either may continue the agent, and ``agent_settled`` ends it all. A run's
budget and the session's (:mod:`.budget`, an addition to Pi) are held against the usage as it
streams in; reaching one aborts the run and nothing continues it.

The agent is never patched: the session subscribes to it, and per-run settings reach the loop
as ``AgentRunOptions`` (``prompt(..., run=...)``), for the retried calls of that run too.

Resources (``resources=ResourceLoader(cwd)``, :mod:`.resources`): before each run the loader
is asked for what is current (it re-reads only changed files); the run's system prompt is the
agent's own with Pi's ``<project_context>`` and ``<available_skills>`` blocks added, the run gets
the read-only skill-file tool when skills are loaded, and a text prompt, steering or follow-up
message starting with ``/skill:name`` or ``/template`` is expanded as Pi expands it.

With ``extensions`` (an ``ExtensionRunner``) the session calls them where Pi's does
(:mod:`.session_extensions`) and emits ``entry_appended`` for the entries they append.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from ..agent import Agent, AgentRunOptions, AgentTool
from ..agent.agent import AgentState
from ..agent.types import AgentEvent, AgentMessage
from ..ai.abort import AbortController, AbortSignal
from ..ai.types import ImageContent, Model, UserMessage, content_text
from ..session import CompactionResult, CompactionSettings, SessionManager, SessionRecorder, convert_to_llm
from .budget import Budget, SessionBudgets, Spend
from .compaction import Compactor
from .events import (
    AgentSessionEvent,
    AgentSettledEvent,
    AutoRetryEndEvent,
    BudgetReachedEvent,
    SessionAgentEndEvent,
    summary_retry,
)
from .extensions.runner import ExtensionRunner
from .queue import SessionQueue, StreamingBehavior, user_message
from .recording import WriteNotices
from .resources.loader import ResourceLoader, Resources
from .resources.session import SessionResources
from .retry import AutoRetry
from .session_control import SessionControl
from .session_extensions import SessionExtensions, SessionParts
from .settings import AgentSessionSettings
from .tree import FORK_BUSY, NAVIGATE_BUSY, ForkResult, NavigateResult, fork, navigate_tree

__all__ = ["NO_MODEL", "PROMPT_BUSY", "AgentSession", "StreamingBehavior"]

Listener = Callable[[AgentSessionEvent], None]

PROMPT_BUSY = (
    "Agent is already processing. Specify streaming_behavior ('steer' or 'follow_up') to queue the message."
)
NO_MODEL = "No model selected. Pass model= to AgentSession.create(), or call set_model(model) first."


class AgentSession(SessionControl):
    """See the module docstring. The constructor only wires things (no I/O): the session file
    is written as entries are appended, as ``SessionManager`` does."""

    def __init__(
        self,
        agent: Agent,
        session_manager: SessionManager,
        *,
        settings: AgentSessionSettings | None = None,
        cwd: str | None = None,
        resources: ResourceLoader | None = None,
        extensions: ExtensionRunner | None = None,
    ) -> None:
        self.agent = agent
        self._agent_state = agent.state
        """The agent's state object (an ``Agent`` keeps one for its life): read without a call."""
        self.session_manager = session_manager
        self.settings = settings if settings is not None else AgentSessionSettings()
        self.cwd = cwd if cwd is not None else session_manager.cwd
        self._recorder = SessionRecorder(session_manager)
        self._listeners: list[tuple[Listener, frozenset[str] | None]] = []
        self._by_type: dict[str, tuple[Listener, ...]] = {}
        self._queue = SessionQueue(agent, self._emit)
        self._run_active = False
        self._idle: asyncio.Event | None = None
        self._last_assistant: Any = None
        self._run: AgentRunOptions | None = None
        self._branch_summary_abort: AbortController | None = None
        self._default_thinking_level = self.settings.default_thinking_level
        """The level a switch to a reasoning model starts from (Pi's saved default)."""
        self._retry = AutoRetry(agent, lambda: self.settings.retry, self._emit)
        self._budgets = SessionBudgets(lambda reason: self._emit(BudgetReachedEvent(reason)), agent.abort)
        self._ext = SessionExtensions(
            self,
            extensions if extensions is not None else ExtensionRunner(),
            SessionParts(
                self._emit,
                lambda message: self._recorder.record_message(message),  # noqa: PLW0108 - the recorder changes with the file
                lambda messages: self._run_agent(messages, self._budgets.start(None, None)),
            ),
        )
        self._compactor = Compactor(
            agent,
            session_manager,
            lambda: self.settings.compaction,
            self._emit,
            self._summary_timeout_ms,
            lambda: self.settings.retry,
            self._ext.before_compact,
        )
        self._resources = SessionResources(resources, self.cwd)
        self._unsubscribe_agent = agent.subscribe(self._handle_agent_event)
        self._write_notices = WriteNotices(session_manager, self._emit, lambda: self._listeners)

    def _summary_timeout_ms(self) -> int | None:
        run = self._run
        if run is not None and run.timeout_ms is not None:
            return run.timeout_ms
        return self.settings.summary_timeout_ms

    @classmethod
    def create(
        cls,
        *,
        cwd: str | None = None,
        model: Model | None = None,
        tools: Sequence[AgentTool] = (),
        system_prompt: str = "",
        thinking_level: str = "off",
        session_manager: SessionManager | None = None,
        settings: AgentSessionSettings | None = None,
        stream_fn: Any = None,
        resources: ResourceLoader | None = None,
        extensions: ExtensionRunner | None = None,
    ) -> AgentSession:
        """A recorded, retrying, compacting agent for ``cwd`` (default: the working directory),
        its session file where Pi keeps them (``~/.pi/agent/sessions/--<cwd>--/``, or
        ``$PI_CODING_AGENT_DIR``) unless ``session_manager`` is given. The file appears with
        the first answer, as Pi's do."""
        folder = os.path.abspath(cwd) if cwd is not None else os.getcwd()
        manager = session_manager if session_manager is not None else SessionManager.create(folder)
        state: dict[str, Any] = {"system_prompt": system_prompt, "tools": list(tools)}
        if model is not None:
            state["model"] = model
        agent = Agent(initial_state=state, convert_to_llm=convert_to_llm, stream_fn=stream_fn)
        session = cls(
            agent, manager, settings=settings, cwd=folder, resources=resources, extensions=extensions
        )
        agent.state.thinking_level = session._clamped(thinking_level)  # type: ignore[assignment]
        session.record_settings()
        return session

    def record_settings(self) -> None:
        """Record the model and thinking level where they differ from the session file's (a new
        file starts with both, as Pi's do, so a resumed session knows its model)."""
        self._recorder.record_settings(self.model, self.thinking_level)

    # --- state -------------------------------------------------------------------------------

    @property
    def state(self) -> AgentState:
        """The agent's state (Pi's ``session.state``), to read; change the model, thinking
        level or transcript through the session's methods, which record the change."""
        return self._agent_state

    @property
    def model(self) -> Model | None:
        model = self._agent_state.model
        return None if model.provider == "unknown" else model

    @property
    def thinking_level(self) -> str:
        return self._agent_state.thinking_level

    @property
    def extensions(self) -> ExtensionRunner:
        """The session's extensions (an empty ``ExtensionRunner`` unless one was given)."""
        return self._ext.runner

    @property
    def messages(self) -> list[AgentMessage]:
        return self._agent_state.messages

    @property
    def is_streaming(self) -> bool:
        """A run is in progress: the agent streams, or the session waits to retry, compacts or
        continues after it (a prompt now is queued or refused, as while the agent streams)."""
        return self._run_active or self._agent_state.is_streaming

    @property
    def is_idle(self) -> bool:
        return not self.is_streaming

    @property
    def is_retrying(self) -> bool:
        return self._retry.waiting

    @property
    def retry_attempt(self) -> int:
        return self._retry.attempt

    @property
    def is_compacting(self) -> bool:
        return self._compactor.is_compacting

    @property
    def session_file(self) -> str | None:
        return self.session_manager.session_file

    @property
    def session_id(self) -> str:
        return self.session_manager.session_id

    @property
    def session_name(self) -> str | None:
        return self.session_manager.get_session_name()

    @property
    def pending_message_count(self) -> int:
        return len(self._queue)

    @property
    def budget(self) -> Budget | None:
        """The conversation's budget: what every run of this session may spend together
        (``None``: no limit). A run's own goes to ``prompt(..., budget=...)``."""
        return self._budgets.budget

    @budget.setter
    def budget(self, budget: Budget | None) -> None:
        self._budgets.budget = budget

    @property
    def spent(self) -> Spend:
        """What this session's answers have used and cost so far (a copy)."""
        return self._budgets.spent.copy()

    @property
    def budget_reason(self) -> str | None:
        """Why the current or last run stopped at a budget (``"stopped: the run reached its
        budget of $0.50 ($0.52 spent)"``), or ``None``."""
        return self._budgets.reason

    def get_steering_messages(self) -> list[str]:
        return list(self._queue.steering)

    def get_follow_up_messages(self) -> list[str]:
        return list(self._queue.follow_ups)

    # --- events ------------------------------------------------------------------------------

    def subscribe(self, listener: Listener, types: Iterable[str] | None = None) -> Callable[[], None]:
        """Call ``listener(event)`` for every event, or only for those whose ``type`` is in
        ``types`` (a view that draws tokens asks for ``message_update``; a logger that does not
        asks for the rest, and no streamed token reaches it). Returns the unsubscribe function."""
        if inspect.iscoroutinefunction(listener):
            raise TypeError(
                "AgentSession calls its listeners synchronously, as Pi's does, so an async def "
                "listener would never run: subscribe a plain function (it may schedule a task)"
            )
        entry = (listener, None if types is None else frozenset(types))
        self._listeners.append(entry)
        self._by_type = {}

        def unsubscribe() -> None:
            if entry in self._listeners:
                self._listeners.remove(entry)
                self._by_type = {}

        return unsubscribe

    def _emit(self, event: AgentSessionEvent) -> None:
        kind = event.type
        listeners = self._by_type.get(kind)
        if listeners is None:
            listeners = self._by_type[kind] = tuple(
                fn for fn, types in self._listeners if types is None or kind in types
            )
        for listener in listeners:
            listener(event)

    def _handle_agent_event(self, event: AgentEvent, signal: AbortSignal | None = None) -> Any:
        """Extensions first (awaited by the agent, as Pi awaits them), then the listeners."""
        if self._ext.wants(event.type):
            return self._ext.agent_event(event, self._handle_event)
        self._handle_event(event)
        return None

    def _handle_event(self, event: AgentEvent) -> None:
        kind = event.type
        if kind == "message_update":  # per token: straight to whoever asked for it
            self._emit(event)
            # the usage reported so far, or the estimate of what streamed, counts at once
            self._budgets.streamed(event.message.usage, event.assistant_message_event)  # type: ignore[union-attr]
            return
        if kind == "message_start" and event.message.role == "user":  # type: ignore[union-attr]
            self._compactor.overflow_recovery_attempted = False
            self._queue.started(content_text(event.message.content, ""))  # type: ignore[union-attr]
        if kind == "agent_end":
            will_retry = self._retry.will_retry(event.messages, self._agent_state.model)  # type: ignore[union-attr]
            self._emit(SessionAgentEndEvent(event.messages, will_retry))  # type: ignore[union-attr]
            return
        if kind == "message_end" and event.message.role == "assistant":  # type: ignore[union-attr]
            self._budgets.complete(event.message)  # type: ignore[union-attr]
        self._emit(event)
        if kind == "message_end":
            self._message_ended(event.message)  # type: ignore[union-attr]
        elif kind == "message_start" and event.message.role == "assistant":  # type: ignore[union-attr]
            self._budgets.started(event.message.usage)  # type: ignore[union-attr]

    def _message_ended(self, message: Any) -> None:
        self._recorder.record_message(message)
        if getattr(message, "role", None) != "assistant":
            return
        self._last_assistant = message
        self._budgets.ended(message)
        if message.stop_reason != "error":
            self._compactor.overflow_recovery_attempted = False
            attempt = self._retry.succeeded()
            if attempt:
                self._emit(AutoRetryEndEvent(True, attempt))

    # --- prompting ---------------------------------------------------------------------------

    async def prompt(
        self,
        text: str | UserMessage,
        *,
        images: Sequence[ImageContent] | None = None,
        streaming_behavior: StreamingBehavior | None = None,
        run: AgentRunOptions | None = None,
        budget: Budget | None = None,
        skills: bool = True,
        resources: Resources | None = None,
    ) -> None:
        """Send a prompt and run until the session settles (retries and compactions included).

        While the agent streams, ``streaming_behavior`` queues it ("steer": after the current
        turn's tools; "follow_up": when the agent would stop); without it, Pi's error. ``text``
        may be a ready ``UserMessage`` (several text blocks, images). ``run``: settings for this
        run only, its retried and continued calls included. ``budget``: what this run may spend
        (with the conversation's ``budget``); reaching it stops the run as ``abort`` does and
        sets ``budget_reason``. ``skills`` false: no skill ``read`` tool, no skills listed. A
        dollar budget on a model without prices is a ``ValueError``, a conversation whose
        budget is spent a ``RuntimeError``. With extensions, ``/name args`` runs their command
        ``name`` instead, and their ``input`` handlers see the text first; then ``/skill:name``
        and ``/template`` expand as Pi expands them. ``resources``: what the resource loader
        gave the caller for this prompt (a notebook cell reads them once, at its start), used
        as they are; default: the loader's now."""
        self._write_notices.flush()  # a session file problem nobody was told of yet
        prepared = await self._ext.prepare(text, list(images or ()), streaming_behavior)
        if prepared is None:
            return
        text = prepared if isinstance(prepared, UserMessage) else self.expand_input(prepared)
        if self.is_streaming:
            if streaming_behavior is None:
                raise RuntimeError(PROMPT_BUSY)
            queued = text if isinstance(text, str) else content_text(text.content, "")
            self._queue.add(queued, streaming_behavior, images)  # expanded above: not twice
            return
        if self.model is None:
            raise RuntimeError(NO_MODEL)
        self._budgets.check(budget, self._agent_state.model)
        last = self._last_assistant_in_state()
        if last is not None:  # an aborted answer counts here: the new prompt is the "retry"
            self._run = run  # its summary request gets this prompt's timeout
            try:
                await self._compactor.check(last, skip_aborted=False)
            finally:
                self._run = None
        message = text if isinstance(text, UserMessage) else user_message(text, images)
        run = self._resources.run_options(run, self._agent_state, skills=skills, resources=resources)
        messages, run = await self._ext.before_agent_start(message, run)
        await self._run_agent(messages, self._budgets.start(budget, run))

    def queue(
        self, text: str, behavior: StreamingBehavior, images: Sequence[ImageContent] | None = None
    ) -> None:
        """``steer`` / ``follow_up`` for callbacks that cannot await (a Send button); a
        ``/skill:`` or ``/template`` text is expanded first, as Pi expands queued messages."""
        self._queue.add(self.expand_input(text), behavior, images)

    def clear_queue(self) -> tuple[list[str], list[str]]:
        """Empty both queues; returns what was in them (steering, follow-up)."""
        return self._queue.clear()

    # --- resources -----------------------------------------------------------------------------

    @property
    def resource_loader(self) -> ResourceLoader | None:
        """Where the context files, skills and templates come from (``None``: none are used)."""
        return self._resources.loader

    @resource_loader.setter
    def resource_loader(self, loader: ResourceLoader | None) -> None:
        self._resources.loader = loader

    def current_resources(self) -> Resources | None:
        """What the resource loader has now (re-read if a file changed), or ``None``."""
        return self._resources.current()

    def expand_input(self, text: str) -> str:
        """``text`` with ``/skill:name`` and ``/template`` expanded as Pi expands a prompt
        (unchanged without resources, or when no skill or template has that name)."""
        return self._resources.expand(text)

    async def _run_agent(self, messages: Any, run: AgentRunOptions | None) -> None:
        run = self._budgets.with_estimate(self._ext.run_options(run))
        self._run_active = True
        self._run = run
        self._idle_event().clear()
        try:
            await self.agent.prompt(messages, run=run)
            while await self._after_run():
                await self.agent.continue_(run=run)
        finally:
            self._run = None
            self._run_active = False
            self._budgets.finish()
            self._emit(AgentSettledEvent())
            self._idle_event().set()

    async def _after_run(self) -> bool:
        """Pi's post-run handling: retry, else end the retry episode, else compaction; True
        when the agent is to continue."""
        message, self._last_assistant = self._last_assistant, None
        if message is None or self._budgets.stopped:  # a spent budget: nothing continues the run
            return False
        if await self._retry.prepare(message, self._agent_state.model):
            return True
        if message.stop_reason == "error":
            ended = self._retry.failed(message.error_message)
            if ended is not None:
                self._emit(ended)
        if await self._compactor.check(message):
            return True
        return self.agent.has_queued_messages()

    def _last_assistant_in_state(self) -> Any:
        for message in reversed(self._agent_state.messages):
            if getattr(message, "role", None) == "assistant":
                return message
        return None

    # --- stopping ----------------------------------------------------------------------------

    def interrupt(self) -> None:
        """Abort whatever is in progress (a retry wait, a compaction, the agent's run) without
        waiting: for callbacks that cannot await (a Stop button, a signal handler)."""
        self._retry.abort()
        self._compactor.abort()
        self.agent.abort()

    async def abort(self) -> None:
        """Abort the current operation and wait until the session is idle."""
        self._retry.abort()
        self.agent.abort()
        await self.wait_for_idle()

    def abort_retry(self) -> None:
        self._retry.abort()

    def abort_compaction(self) -> None:
        self._compactor.abort()

    async def wait_for_idle(self) -> None:
        if self._run_active:
            await self._idle_event().wait()
        await self.agent.wait_for_idle()

    def _idle_event(self) -> asyncio.Event:
        if self._idle is None:
            self._idle = asyncio.Event()
            self._idle.set()
        return self._idle

    # --- compaction, the tree ----------------------------------------------------------------

    def compaction_settings(self) -> CompactionSettings:
        """The compaction settings in effect for the current model: ``settings.compaction``
        with Pi's defaults fitted to a small window (``compaction.fit_to_window``)."""
        return self._compactor.fitted_settings()

    async def compact(self, custom_instructions: str | None = None) -> CompactionResult:
        """Stop the agent, then summarize the older part of the branch (Pi's ``/compact``)."""
        await self.abort()
        return await self._compactor.compact(custom_instructions)

    async def navigate_tree(
        self,
        target_id: str,
        *,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> NavigateResult:
        """Move to another entry of this session file (``tree.navigate_tree``)."""
        if self.is_streaming:
            raise RuntimeError(NAVIGATE_BUSY)
        controller = self._branch_summary_abort = AbortController()
        try:
            return await navigate_tree(
                self.agent,
                self.session_manager,
                target_id,
                summarize=summarize,
                custom_instructions=custom_instructions,
                replace_instructions=replace_instructions,
                label=label,
                reserve_tokens=self.compaction_settings().reserve_tokens,
                timeout_ms=self._summary_timeout_ms(),
                retry=summary_retry(self.settings.retry, self._emit, "branchSummary"),
                controller=controller,
            )
        finally:
            self._branch_summary_abort = None

    def abort_branch_summary(self) -> None:
        if self._branch_summary_abort is not None:
            self._branch_summary_abort.abort()

    def fork(self, entry_id: str, position: Literal["before", "at"] = "before") -> ForkResult:
        """Continue in a new session file holding the path up to ``entry_id`` (``tree.fork``)."""
        if self.is_streaming:
            raise RuntimeError(FORK_BUSY)
        return fork(self.agent, self.session_manager, entry_id, position)

    # --- what extensions do ---------------------------------------------------------------------

    async def send_custom_message(
        self, message: Any, *, deliver_as: str | None = None, trigger_turn: bool = False
    ) -> None:
        """Pi's ``sendCustomMessage``: with the next prompt (``deliver_as="next_turn"``), queued
        while a run goes on, a new run (``trigger_turn``), else into the conversation at once."""
        await self._ext.send_custom_message(message, deliver_as=deliver_as, trigger_turn=trigger_turn)

    async def shutdown(self, reason: str = "quit") -> None:
        """Tell the extensions the session ends (``session_shutdown``), then stop listening."""
        await self._ext.shutdown(reason)
        self.dispose()

    def dispose(self) -> None:
        """Stop listening to the agent and the session file; the listeners then hear nothing."""
        self._unsubscribe_agent()
        self._write_notices.stop()
