"""Connecting an :class:`~pi_notebook.agent.Agent` to a session: record, resume, replay.

* :class:`SessionRecorder` is an agent listener that persists what Pi's coding agent
  persists: on every ``message_end``, a user / assistant / toolResult message becomes a
  ``message`` entry and a ``custom`` message a ``custom_message`` entry; model and thinking
  level changes become their own entries (:meth:`SessionRecorder.record_settings`).
* :func:`resume` loads the context at the session's leaf into an agent (messages, thinking
  level, and the model when a resolver finds it) and gives it :func:`convert_to_llm`, which
  turns summaries and custom messages into user text.
* :func:`replay` feeds the context at the leaf to an event sink as ``message_start`` /
  ``message_end`` pairs, so a view that renders live runs can render a resumed one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..agent.agent import has_model
from ..agent.types import AgentEvent, MessageEndEvent, MessageStartEvent
from ..ai.abort import AbortSignal
from ..ai.types import Model
from .context import SessionContext
from .manager import SessionManager
from .messages import convert_to_llm

_LLM_ROLES = ("user", "assistant", "toolResult")


class SessionRecorder:
    """Persists an agent's messages into ``manager`` as the agent produces them.

    Use it as a listener: ``unsubscribe = recorder.attach(agent)`` (or
    ``agent.subscribe(recorder)``). Returned entry ids let the caller label or branch later.
    """

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager

    def __call__(self, event: AgentEvent, signal: AbortSignal | None = None) -> None:
        if isinstance(event, MessageEndEvent):
            self.record_message(event.message)

    def record_message(self, message: Any) -> str | None:
        """Append ``message`` as Pi does on ``message_end``; other roles (bash executions,
        summaries) have their own entries and are skipped. Returns the entry id."""
        role = getattr(message, "role", None)
        if role == "custom":
            return self.manager.append_custom_message_entry(
                message.custom_type, message.content, message.display, message.details
            )
        if role in _LLM_ROLES:
            return self.manager.append_message(message)
        return None

    def record_settings(self, model: Model | None = None, thinking_level: str | None = None) -> list[str]:
        """Append a ``model_change`` / ``thinking_level_change`` for whichever differs from the
        context at the leaf. Returns the new entry ids."""
        context = self.manager.build_session_context()
        fresh = not self.manager.get_entries()
        added: list[str] = []
        current = context.model
        if model is not None and (
            current is None or (current.provider, current.model_id) != (model.provider, model.id)
        ):
            added.append(self.manager.append_model_change(model.provider, model.id))
        if thinking_level is not None and (fresh or thinking_level != context.thinking_level):
            added.append(self.manager.append_thinking_level_change(thinking_level))
        return added

    def attach(self, agent: Any) -> Callable[[], None]:
        """Record the agent's current model and thinking level, then every message it ends.

        A new session starts with both settings written, as Pi's do, so a resumed session
        knows its model. Returns the unsubscribe function.
        """
        state = agent.state
        model = state.model if has_model(agent) else None
        self.record_settings(model, state.thinking_level)
        unsubscribe: Callable[[], None] = agent.subscribe(self)
        return unsubscribe


def resume(
    agent: Any,
    manager: SessionManager,
    resolve_model: Callable[[str, str], Model | None] | None = None,
) -> SessionContext:
    """Load the context at ``manager``'s leaf into ``agent``; returns that context.

    ``resolve_model(provider, model_id)`` turns the session's model reference into a
    :class:`Model` (e.g. ``pi_notebook.ai.get_model``); when it is omitted or returns
    ``None`` the agent keeps its model. The agent's ``convert_to_llm`` becomes the session's
    unless the caller had set one of its own.
    """
    context = manager.build_session_context()
    agent.state.messages = context.messages
    agent.state.thinking_level = context.thinking_level
    if resolve_model is not None and context.model is not None:
        try:
            model = resolve_model(context.model.provider, context.model.model_id)
        except Exception:  # an unknown model id: keep the agent's model
            model = None
        if model is not None:
            agent.state.model = model
    if getattr(agent.convert_to_llm, "__module__", "") == "pi_notebook.agent.types":
        agent.convert_to_llm = convert_to_llm
    return context


async def replay(manager: SessionManager, sink: Callable[[AgentEvent], Any]) -> int:
    """Emit ``message_start`` / ``message_end`` for each message of the context at the leaf
    (``sink`` may be async). Returns the number of messages replayed."""
    messages = manager.build_session_context().messages
    for message in messages:
        for event in (MessageStartEvent(message=message), MessageEndEvent(message=message)):
            result = sink(event)
            if inspect.isawaitable(result):
                await result
    return len(messages)
