"""What changes a conversation without running it: ``AgentSession``'s model, thinking level,
name and retry / compaction switches, which session file it records into (Pi's
``newSession`` / ``switchSession``), a message added between runs, and one continuation whose
first answer is already known.

A mixin of ``AgentSession`` (``agent_session.py``), kept apart so each module stays readable.
A host (the notebook) changes a conversation only through these methods: the session records
what changed (``model_change``, ``thinking_level_change``) and tells its extensions
(``model_select``), which an assignment to the agent's state would skip. So that such an
assignment is not made by mistake through the session, an ``Agent``-only attribute read or
written on the session fails with a line that names ``session.agent.<name>``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..agent import Agent, AgentRunOptions
from ..ai.models import clamp_thinking_level, get_supported_thinking_levels, models_are_equal
from ..ai.types import Model
from ..session import SessionManager, SessionRecorder, resume
from .events import SessionInfoChangedEvent, ThinkingLevelChangedEvent

if TYPE_CHECKING:
    from ..agent.agent import AgentState
    from .compaction import Compactor
    from .events import AgentSessionEvent
    from .queue import SessionQueue
    from .recording import WriteNotices
    from .session_extensions import SessionExtensions
    from .settings import AgentSessionSettings

__all__ = ["AGENT_ONLY", "THINKING_LEVELS", "SessionControl"]

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high")
SWITCH_BUSY = "The session is running: wait for it (or abort it) before switching its session file."

AGENT_ONLY = frozenset({
    "stream_fn", "convert_to_llm", "transform_context", "get_api_key", "before_tool_call",
    "after_tool_call", "prepare_next_turn", "prepare_next_turn_with_context",
    "should_stop_after_turn", "thinking_budgets", "transport", "max_retry_delay_ms",
    "tool_execution", "on_payload", "on_response", "steering_mode", "follow_up_mode",
    "clear_steering_queue", "clear_follow_up_queue", "clear_all_queues", "has_queued_messages",
    "signal", "reset", "continue_",
})
"""The ``Agent``'s own hooks and methods that an ``AgentSession`` does not have."""


def _agent_only(name: str) -> str:
    return f"AgentSession has no {name!r}: it is the Agent's, session.agent.{name}"


class _AgentOnly:
    """A name of the ``Agent`` on the session: reading or setting it fails with where it is (a
    descriptor per name, so the session's own attributes cost nothing extra)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        raise AttributeError(_agent_only(self.name))

    def __set__(self, instance: Any, value: Any) -> None:
        raise AttributeError(_agent_only(self.name))


class _Queued:
    """What ``steer`` / ``follow_up`` return: the message is queued already; awaiting it (as
    Pi's callers do) returns at once, and a caller that does not await loses nothing."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield


class SessionControl:
    """See the module docstring."""

    if TYPE_CHECKING:
        agent: Agent
        _agent_state: AgentState
        session_manager: SessionManager
        settings: AgentSessionSettings
        _default_thinking_level: str
        _recorder: SessionRecorder
        _write_notices: WriteNotices
        _compactor: Compactor
        _queue: SessionQueue
        _ext: SessionExtensions
        _last_assistant: Any
        _emit: Callable[[AgentSessionEvent], None]

        @property
        def model(self) -> Model | None: ...

        @property
        def thinking_level(self) -> str: ...

        @property
        def is_streaming(self) -> bool: ...

        def queue(self, text: str, behavior: Any, images: Any = None) -> None: ...

        def record_settings(self) -> None: ...

    # --- state -------------------------------------------------------------------------------

    def steer(self, text: str, images: Any = None) -> _Queued:
        """Queue a message for after the current turn's tool calls (before the next model call);
        ``/skill:`` and ``/template`` expand first. Queued at the call; awaiting is optional."""
        self.queue(text, "steer", images)
        return _Queued()

    def follow_up(self, text: str, images: Any = None) -> _Queued:
        """Queue a message for when the agent has nothing else to do (as ``steer``)."""
        self.queue(text, "follow_up", images)
        return _Queued()

    # --- settings ----------------------------------------------------------------------------

    def set_model(self, model: Model) -> None:
        """Switch the model, record a ``model_change`` entry and clamp the thinking level to
        what the new model supports (a model without reasoning keeps "off")."""
        previous = self.model
        supported_before = previous is not None and bool(self._agent_state.model.reasoning)
        level = self.thinking_level if supported_before else self._default_thinking_level
        self._agent_state.model = model
        self.session_manager.append_model_change(model.provider, model.id)
        self.set_thinking_level(level)
        if not models_are_equal(previous, model):
            self._ext.model_selected(model, previous)

    def available_thinking_levels(self) -> list[str]:
        model = self.model
        return list(THINKING_LEVELS) if model is None else list(get_supported_thinking_levels(model))

    def set_thinking_level(self, level: str) -> None:
        """Set the thinking level, clamped to the model; a change is recorded and emitted."""
        effective = self._clamped(level)
        previous = self._agent_state.thinking_level
        self._agent_state.thinking_level = effective  # type: ignore[assignment]
        if effective != previous:
            self.session_manager.append_thinking_level_change(effective)
            if (self.model is not None and self.model.reasoning) or effective != "off":
                self._default_thinking_level = effective  # Pi saves it as the settings' default
            self._emit(ThinkingLevelChangedEvent(effective))

    def _clamped(self, level: str) -> str:
        if level in self.available_thinking_levels():
            return level
        model = self.model
        return clamp_thinking_level(model, level) if model is not None else "off"  # type: ignore[arg-type]

    def set_system_prompt(self, prompt: str) -> None:
        """The conversation's own system prompt (a run adds Pi's context and skills to it)."""
        self._agent_state.system_prompt = prompt

    def set_session_name(self, name: str) -> None:
        self.session_manager.append_session_info(name)
        self._emit(SessionInfoChangedEvent(self.session_manager.get_session_name()))

    def set_auto_retry_enabled(self, enabled: bool) -> None:
        self.settings = replace(self.settings, retry=replace(self.settings.retry, enabled=enabled))

    def set_auto_compaction_enabled(self, enabled: bool) -> None:
        self.settings = replace(self.settings, compaction=replace(self.settings.compaction, enabled=enabled))

    # --- which session file ------------------------------------------------------------------

    def _use_manager(self, manager: SessionManager) -> None:
        if self.is_streaming:
            raise RuntimeError(SWITCH_BUSY)
        self.session_manager = manager
        self._recorder = SessionRecorder(manager)
        self._write_notices.use(manager)  # what the new file says about itself
        self._compactor.manager = manager
        self._last_assistant = None
        self._queue.clear()

    def new_session(self, manager: SessionManager) -> None:
        """Pi's ``newSession``: an empty conversation (same model, thinking level, tools and
        hooks) recorded into ``manager`` from now on."""
        self._use_manager(manager)
        self.agent.reset()
        self.record_settings()

    def switch_session(
        self, manager: SessionManager, resolve_model: Callable[[str, str], Model | None] | None = None
    ) -> None:
        """Pi's ``switchSession``: continue the conversation recorded in ``manager`` (its
        messages, thinking level and, when ``resolve_model`` knows it, its model)."""
        self._use_manager(manager)
        resume(self.agent, manager, resolve_model=resolve_model)

    def append_message(self, message: Any) -> None:
        """Add ``message`` (a custom message: a note for the model) to the conversation and its
        session file between runs, without a run and without events."""
        if self.is_streaming:
            raise RuntimeError("The session is running: queue the message with steer / follow_up")
        self._agent_state.messages = [*self._agent_state.messages, message]
        self._recorder.record_message(message)

    def truncate(self, count: int) -> None:
        """Keep the first ``count`` messages of the transcript (the session file keeps all:
        the next message continues from its current leaf)."""
        self._agent_state.messages = self._agent_state.messages[:count]

    async def continue_with(self, answer: Any, run: AgentRunOptions | None = None) -> None:
        """Continue the agent with ``answer`` (an assistant message) as the model's next
        response, without a request; the calls after it are the model's again."""
        original = self.agent.stream_fn
        first: list[Any] = [answer]

        def stream(model: Any, context: Any, options: Any = None) -> Any:
            if not first:
                return original(model, context, options)
            from ..ai.event_stream import AssistantMessageEventStream
            from ..ai.events import DoneEvent, StartEvent

            message = first.pop()
            events = AssistantMessageEventStream()
            events.push(StartEvent(partial=message.model_copy()))
            events.push(DoneEvent(reason="toolUse", message=message))
            events.end()
            return events

        self.agent.stream_fn = stream
        try:
            await self.agent.continue_(run=run)
        finally:
            self.agent.stream_fn = original

    def refresh_model(self, model: Model) -> None:
        """The same model (provider and id) with what its server reports now (a local
        server's context window): nothing to record, nobody to tell."""
        if not models_are_equal(self.model, model):
            raise ValueError("refresh_model takes the same model; set_model changes it")
        self._agent_state.model = model


for _name in AGENT_ONLY:
    setattr(SessionControl, _name, _AgentOnly(_name))
