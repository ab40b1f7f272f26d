"""What an ``AgentSession`` does with its extensions (``extensions.ExtensionRunner``), where
Pi's ``AgentSession`` does it:

* a prompt: ``/name args`` runs an extension command; ``input`` may transform or handle the
  text; ``before_agent_start`` adds custom messages and may set this run's system prompt
  (the next run without one gets the session's own back);
* the run: ``context`` before every model request, ``tool_call`` (may block) before every
  tool, ``tool_result`` (may override) after it, and the extensions' tools, all given to the
  loop as ``AgentRunOptions``, so the agent itself is never patched;
* every agent event reaches the extensions before the session's listeners (``message_end``
  may replace the message in place, before it is recorded);
* ``model_select``, ``session_before_compact``, ``session_start`` / ``session_shutdown``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ..agent import Agent, AgentRunOptions
from ..agent.tools import resolve
from ..agent.types import (
    AfterToolCallContext,
    AfterToolCallResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
    MessageEndEvent,
    MessageStartEvent,
)
from ..ai.abort import AbortSignal
from ..ai.models import models_are_equal
from ..ai.types import ImageContent, Model, TextContent, UserMessage, content_text, now_ms
from ..session.entries import CustomMessage
from .events import EntryAppendedEvent
from .extensions.events import (
    AgentEndEvent,
    InputEvent,
    ModelSelectEvent,
    SessionBeforeCompactEvent,
    SessionShutdownEvent,
    ToolCallEvent,
    ToolResultEvent,
    result_field,
)
from .extensions.runner import ExtensionRunner

__all__ = ["SessionExtensions", "SessionParts", "custom_message"]


class _Session(Protocol):
    """The ``AgentSession`` as this module uses it (its public API)."""

    cwd: str

    @property
    def agent(self) -> Agent: ...

    @property
    def model(self) -> Model | None: ...

    @property
    def is_streaming(self) -> bool: ...

    @property
    def pending_message_count(self) -> int: ...

    @property
    def session_manager(self) -> Any: ...

    def interrupt(self) -> None: ...

    async def prompt(self, text: str, *, streaming_behavior: Any = None) -> None: ...


def custom_message(message: Any) -> CustomMessage:
    """An extension's message (a ``CustomMessage``, or a dict / object with ``custom_type``,
    ``content``, ``display``, ``details``) as the conversation's ``custom`` message."""
    if isinstance(message, CustomMessage):
        return message.model_copy(update={"timestamp": message.timestamp or now_ms()})
    content = result_field(message, "content")
    display = result_field(message, "display")
    return CustomMessage(
        custom_type=result_field(message, "custom_type") or "extension",
        content=content if content is not None else [],
        display=True if display is None else bool(display),
        details=result_field(message, "details"),
        timestamp=now_ms(),
    )


def _replace_in_place(target: Any, replacement: Any) -> None:
    """Pi mutates the finished message so the agent's state, the later events and the
    session file all hold the replacement."""
    if target is replacement:
        return
    for name in type(target).model_fields:
        if hasattr(replacement, name):
            setattr(target, name, getattr(replacement, name))


@dataclass(frozen=True)
class SessionParts:
    """What of its session this module may use beyond the public API: its event stream, its
    recorder and its way to run the agent (with the session's budgets)."""

    emit: Callable[[Any], None]
    record: Callable[[Any], Any]
    run: Callable[[list[Any]], Awaitable[None]]


class SessionExtensions:
    """The extension half of one ``AgentSession``, and what ``pi.*`` acts on (it implements
    ``SessionActions`` for its session). The constructor only stores."""

    def __init__(self, session: _Session, runner: ExtensionRunner, parts: SessionParts) -> None:
        self.session = session
        self.runner = runner
        self.parts = parts
        runner.attach(session, self)
        self.next_turn: list[CustomMessage] = []
        self._model_seen: Model | None = None
        """The model of the last prompt: a model changed without ``set_model`` (the notebook's
        ``--model``) is told as ``model_select`` before the next prompt."""

    # --- SessionActions: what extensions see of the session ------------------------------------

    @property
    def cwd(self) -> str:
        return self.session.cwd

    @property
    def model(self) -> Model | None:
        return self.session.model

    @property
    def is_idle(self) -> bool:
        return not self.session.is_streaming

    @property
    def pending_message_count(self) -> int:
        return self.session.pending_message_count

    @property
    def system_prompt(self) -> str:
        return self.session.agent.state.system_prompt

    @property
    def session_manager(self) -> Any:
        return self.session.session_manager

    def interrupt(self) -> None:
        self.session.interrupt()

    async def send_user_message(self, text: str, *, deliver_as: str | None = None) -> None:
        """Pi's ``sendUserMessage``: a prompt, queued as ``deliver_as`` while a run goes on."""
        streaming = self.session.is_streaming
        behavior = ("follow_up" if deliver_as == "follow_up" else "steer") if streaming else None
        await self.session.prompt(text, streaming_behavior=behavior)

    # --- a prompt -------------------------------------------------------------------------------

    async def prepare(
        self, text: str | UserMessage, images: list[ImageContent] | None, streaming: str | None
    ) -> str | UserMessage | None:
        """The prompt after commands and ``input``; ``None`` when an extension took it."""
        self.runner.bind(self.session)
        await self.runner.start_session(self.session)
        current, seen = self.session.model, self._model_seen
        self._model_seen = current
        changed = current is not None and seen is not None and not models_are_equal(current, seen)
        if changed and self.runner.has_handlers("model_select"):
            await self.runner.emit(ModelSelectEvent(current, seen, "set"))  # type: ignore[arg-type]
        raw = text if isinstance(text, str) else content_text(text.content, "")
        if raw.startswith("/"):
            name, _, args = raw[1:].partition(" ")
            if await self.runner.run_command(name, args):
                return None
        if not self.runner.has_handlers("input"):
            return text
        given = list(images or []) or ([] if isinstance(text, str) else _images(text)) or None
        behavior = "follow_up" if streaming == "follow_up" else "steer" if streaming else None
        result = await self.runner.emit_input(InputEvent(raw, given, "interactive", behavior))  # type: ignore[arg-type]
        if result.action == "handled":
            return None
        if result.action == "transform":
            content = [TextContent(text=result.text), *(result.images or ())]
            return UserMessage(content=content, timestamp=now_ms())
        return text

    async def before_agent_start(
        self, message: UserMessage, run: AgentRunOptions | None
    ) -> tuple[list[Any], AgentRunOptions | None]:
        """The messages a run starts with (the prompt, ``next_turn`` messages, then those of
        ``before_agent_start``) and ``run`` with the system prompt a handler gave, for this run
        only: the handlers see the run's own prompt (the resources' blocks in it)."""
        out: list[Any] = [message, *self.next_turn]
        self.next_turn = []
        if not self.runner.has_handlers("before_agent_start"):
            return out, run
        own = run.system_prompt if run is not None else None
        given = own if own is not None else self.session.agent.state.system_prompt
        prompt, images = content_text(message.content, ""), _images(message) or None
        added, system_prompt = await self.runner.emit_before_agent_start(prompt, images, given)
        out += [custom_message(m) for m in added]
        if system_prompt is not None:
            run = replace(run if run is not None else AgentRunOptions(), system_prompt=system_prompt)
        return out, run

    # --- the run --------------------------------------------------------------------------------

    def run_options(self, run: AgentRunOptions | None) -> AgentRunOptions:
        """``run`` with the extensions' hooks before its own and their tools added."""
        run = run if run is not None else AgentRunOptions()
        before = run.before_tool_call
        tools = list(run.tools if run.tools is not None else self.session.agent.state.tools)
        registered = self.runner.tools()
        if registered:
            names = {t.name for t in registered}
            tools = [t for t in tools if t.name not in names] + registered

        async def before_tool_call(ctx: BeforeToolCallContext, signal: AbortSignal | None = None) -> Any:
            if self.runner.has_handlers("tool_call"):
                event = ToolCallEvent(ctx.tool_call.name, ctx.tool_call.id, ctx.args)
                blocked = await self.runner.emit_tool_call(event)
                if blocked is not None and blocked.block:
                    return BeforeToolCallResult(block=True, reason=blocked.reason)
            if before is None:
                return None
            return await resolve(before(ctx, signal))

        return replace(
            run,
            tools=tools if registered else run.tools,
            before_tool_call=before_tool_call,
            after_tool_call=self._after_tool_call,
            transform_context=self._context,
        )

    async def _after_tool_call(self, ctx: AfterToolCallContext, signal: AbortSignal | None = None) -> Any:
        if not self.runner.has_handlers("tool_result"):
            return None
        result = ctx.result
        event = ToolResultEvent(
            ctx.tool_call.name, ctx.tool_call.id, ctx.args, list(result.content), result.details, ctx.is_error
        )
        changed = await self.runner.emit_tool_result(event)
        if changed is None:
            return None
        return AfterToolCallResult(
            content=changed.content, details=changed.details, is_error=changed.is_error
        )

    async def _context(self, messages: list[Any], signal: AbortSignal | None = None) -> list[Any]:
        if not self.runner.has_handlers("context"):
            return messages
        return await self.runner.emit_context(messages)

    def wants(self, event_type: str) -> bool:
        return self.runner.has_handlers(event_type)

    async def agent_event(self, event: Any, then: Callable[[Any], None]) -> None:
        """An agent event, told to the extensions, then to ``then`` (the session's listeners)."""
        kind = event.type
        if kind == "message_end":
            replacement = await self.runner.emit_message_end(event.message)
            if replacement is not None:
                _replace_in_place(event.message, replacement)
        elif kind == "agent_end":
            await self.runner.emit(AgentEndEvent(list(event.messages)))
        else:
            await self.runner.emit(event)
        then(event)

    # --- the rest -------------------------------------------------------------------------------

    def model_selected(self, model: Model, previous: Model | None) -> None:
        self._model_seen = model
        if self.runner.has_handlers("model_select"):
            event = ModelSelectEvent(model, previous, "set")
            self.runner.spawn("<runtime>", "model_select", self.runner.emit(event))

    async def before_compact(self, event: SessionBeforeCompactEvent) -> Any:
        """``session_before_compact``'s combined result (``cancel`` / ``compaction``) or None."""
        if not self.runner.has_handlers("session_before_compact"):
            return None
        return await self.runner.emit(event)

    async def send_custom_message(
        self, message: Any, *, deliver_as: str | None = None, trigger_turn: bool = False
    ) -> None:
        """Pi's ``sendCustomMessage``: with the next prompt (``"next_turn"``), queued while a
        run goes on, a new run (``trigger_turn``), else into the conversation at once."""
        custom = custom_message(message)
        agent = self.session.agent
        if deliver_as == "next_turn":
            self.next_turn.append(custom)
        elif self.session.is_streaming:
            (agent.follow_up if deliver_as == "follow_up" else agent.steer)(custom)
        elif trigger_turn:
            await self.parts.run([custom])
        else:
            agent.state.messages.append(custom)
            self.parts.record(custom)
            self.parts.emit(MessageStartEvent(message=custom))
            self.parts.emit(MessageEndEvent(message=custom))

    def append_entry(self, custom_type: str, data: Any = None) -> str:
        manager = self.session.session_manager
        entry_id: str = manager.append_custom_entry(custom_type, data)
        entry = manager.get_entry(entry_id)
        if entry is not None:
            self.parts.emit(EntryAppendedEvent(entry))
        return entry_id

    async def shutdown(self, reason: str = "quit") -> None:
        if self.runner.has_handlers("session_shutdown"):
            await self.runner.emit(SessionShutdownEvent(reason=reason))  # type: ignore[arg-type]


def _images(message: UserMessage) -> list[ImageContent]:
    content = message.content
    return [b for b in content if isinstance(b, ImageContent)] if isinstance(content, list) else []
