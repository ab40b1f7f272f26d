"""``ExtensionRunner``: the loaded extensions, their handlers called and their results combined
as Pi's ``ExtensionRunner`` combines them (``core/extensions/runner.js``):

* ``emit``: every handler in load order; for ``session_before_*`` the last result counts and a
  ``cancel`` stops at once.
* ``tool_call``: the first ``block`` wins; a handler that raises blocks the call (its error is
  the tool's result), as in Pi.
* ``tool_result``: each field a handler returns replaces the result's; later handlers see it.
* ``context``: a chain over a copy of the messages. ``input``: ``transform`` chains,
  ``handled`` stops. ``before_agent_start``: messages collect, the system prompt chains.
  ``message_end``: a replacement must keep the role, later handlers see it.

A handler (or ``setup``) that raises is reported as one line (:class:`ExtensionError`) to the
``on_error`` listeners and skipped; the run goes on.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .api import Extension, ExtensionAPI, ExtensionContext, RegisteredCommand, SessionActions
from .events import (
    BeforeAgentStartEvent,
    ContextEvent,
    InputEvent,
    InputResult,
    MessageEndEvent,
    SessionStartEvent,
    ToolCallEvent,
    ToolCallResult,
    ToolResultEvent,
    ToolResultResult,
    result_field,
)
from .providers import unregister_provider
from .ui import ExtensionUI, NoUI

__all__ = ["ExtensionError", "ExtensionRunner", "Setup"]

Setup = Callable[[ExtensionAPI], Any]
ErrorListener = Callable[["ExtensionError"], None]
_BEFORE_EVENTS = frozenset({"session_before_compact", "session_before_switch", "session_before_fork"})


@dataclass(frozen=True)
class ExtensionError:
    extension: str
    event: str
    error: str

    def line(self) -> str:
        return f"Extension {self.extension} failed in {self.event}: {self.error}"


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class ExtensionRunner:
    """The extensions of one host (a kernel, a script). The constructor only stores."""

    def __init__(self, ui: ExtensionUI | None = None) -> None:
        self.extensions: list[Extension] = []
        self._ui: ExtensionUI = ui if ui is not None else NoUI()
        self._error_listeners: list[ErrorListener] = []
        self.errors: list[ExtensionError] = []
        """Every error reported so far (``%pi extension list`` shows the last ones)."""
        self.session: SessionActions | None = None
        self.context = ExtensionContext(self)
        self._started: weakref.WeakKeyDictionary[Any, set[int]] = weakref.WeakKeyDictionary()
        self._actions: weakref.WeakKeyDictionary[Any, weakref.ref[Any]] = weakref.WeakKeyDictionary()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._handled: frozenset[str] = frozenset()
        """The events some handler listens to: the session asks per streamed token."""

    # --- the host -------------------------------------------------------------------------------

    @property
    def ui(self) -> ExtensionUI:
        return self._ui

    @property
    def has_ui(self) -> bool:
        return not isinstance(self._ui, NoUI)

    @contextmanager
    def using_ui(self, ui: ExtensionUI) -> Iterator[None]:
        """``ui`` answers ``pi.ui`` / ``ctx.ui`` until the block ends (one ``%%pi`` cell)."""
        previous, self._ui = self._ui, ui
        try:
            yield
        finally:
            self._ui = previous

    def attach(self, session: Any, actions: SessionActions) -> None:
        """``actions`` are what ``pi.*`` does to ``session`` (an ``AgentSession``)."""
        self._actions[session] = weakref.ref(actions)  # a strong value would keep the key alive

    def bind(self, session: Any) -> None:
        """``pi.send_message`` and friends act on ``session`` from now on (an attached
        ``AgentSession``, or ``SessionActions`` themselves)."""
        found = self._actions.get(session)
        actions = found() if found is not None else None
        self.session = actions if actions is not None else session

    def on_error(self, listener: ErrorListener) -> Callable[[], None]:
        self._error_listeners.append(listener)
        return lambda: self._error_listeners.remove(listener) if listener in self._error_listeners else None

    def report(self, extension: str, event: str, exc: BaseException | str) -> ExtensionError:
        error = ExtensionError(extension, event, exc if isinstance(exc, str) else _describe(exc))
        self.errors.append(error)
        del self.errors[:-50]
        for listener in list(self._error_listeners):
            listener(error)
        return error

    # --- loading --------------------------------------------------------------------------------

    async def load(self, setup: Setup, name: str, source: str = "load") -> Extension | None:
        """Run ``setup(pi)`` (awaited when async); ``None`` when it raised (reported, nothing
        of it kept). Loading a name again replaces that extension."""
        extension = Extension(name=name, source=source)
        try:
            done = setup(ExtensionAPI(self, extension))
            if inspect.isawaitable(done):
                await done
        except Exception as exc:
            self.report(name, "setup", exc)
            return None
        self.extensions = [e for e in self.extensions if e.name != name] + [extension]
        self.changed()
        return extension

    def unload(self, name: str) -> bool:
        """Forget extension ``name``: its handlers, tools, commands and providers."""
        extension = self.get(name)
        if extension is None:
            return False
        for provider in list(extension.providers):
            unregister_provider(provider, source=f"extension:{name}")
        self.extensions = [e for e in self.extensions if e is not extension]
        self.changed()
        return True

    def clear(self) -> None:
        """Unload every extension and forget the errors."""
        for extension in list(self.extensions):
            self.unload(extension.name)
        self.errors.clear()

    def get(self, name: str) -> Extension | None:
        return next((e for e in self.extensions if e.name == name), None)

    # --- what extensions registered -------------------------------------------------------------

    def has_handlers(self, event_type: str) -> bool:
        return event_type in self._handled

    def changed(self) -> None:
        """An extension was loaded or unloaded, or a handler added: recount the events."""
        kinds = (kind for e in self.extensions for kind, found in e.handlers.items() if found)
        self._handled = frozenset(kinds)

    def tools(self) -> list[Any]:
        """Every registered tool; the first registration of a name wins."""
        found: dict[str, Any] = {}
        for extension in self.extensions:
            for name, tool in extension.tools.items():
                found.setdefault(name, tool)
        return list(found.values())

    def commands(self) -> dict[str, RegisteredCommand]:
        """Commands by the name they are called with: Pi's ``name:2`` ... for a name that more
        than one extension registered."""
        every = [c for e in self.extensions for c in e.commands.values()]
        counts: dict[str, int] = {}
        for command in every:
            counts[command.name] = counts.get(command.name, 0) + 1
        seen: dict[str, int] = {}
        resolved: dict[str, RegisteredCommand] = {}
        for command in every:
            seen[command.name] = occurrence = seen.get(command.name, 0) + 1
            name = f"{command.name}:{occurrence}" if counts[command.name] > 1 else command.name
            while name in resolved:
                occurrence += 1
                name = f"{command.name}:{occurrence}"
            resolved[name] = command
        return resolved

    async def run_command(self, name: str, args: str) -> bool:
        """Run command ``name`` with ``args``; False when there is none. A command that raises
        is reported (Pi names it ``command:NAME``) and counts as run."""
        command = self.commands().get(name)
        if command is None:
            return False
        try:
            done = command.handler(args, self.context)
            if inspect.isawaitable(done):
                await done
        except Exception as exc:
            self.report(f"command:{name}", "command", exc)
        return True

    # --- calling handlers -----------------------------------------------------------------------

    def _handlers(self, event_type: str) -> Iterator[tuple[Extension, Callable[..., Any], bool]]:
        for extension in list(self.extensions):
            for handler, takes_ctx in list(extension.handlers.get(event_type, ())):
                yield extension, handler, takes_ctx

    async def _call(self, handler: Callable[..., Any], takes_ctx: bool, event: Any) -> Any:
        result = handler(event, self.context) if takes_ctx else handler(event)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def emit(self, event: Any, *, only: list[Extension] | None = None) -> Any:
        """Every handler of ``event.type``; the result of a ``session_before_*`` event."""
        outcome = None
        for extension, handler, takes_ctx in self._handlers(event.type):
            if only is not None and extension not in only:
                continue
            try:
                result = await self._call(handler, takes_ctx, event)
            except Exception as exc:
                self.report(extension.name, event.type, exc)
                continue
            if event.type in _BEFORE_EVENTS and result is not None:
                outcome = result
                if result_field(result, "cancel"):
                    return outcome
        return outcome

    async def start_session(self, session: Any, reason: str = "startup") -> None:
        """``session_start`` for the extensions that have not heard it for ``session`` (one
        loaded later hears it before that session's next prompt)."""
        started = self._started.setdefault(session, set())
        new = [e for e in self.extensions if id(e) not in started]
        started.update(id(e) for e in new)
        if new and self.has_handlers("session_start"):
            await self.emit(SessionStartEvent(reason=reason), only=new)  # type: ignore[arg-type]

    async def emit_tool_call(self, event: ToolCallEvent) -> ToolCallResult | None:
        outcome: ToolCallResult | None = None
        for extension, handler, takes_ctx in self._handlers("tool_call"):
            try:
                result = await self._call(handler, takes_ctx, event)
            except Exception as exc:
                error = self.report(extension.name, "tool_call", exc)
                return ToolCallResult(block=True, reason=f"{error.line()} (the call was blocked)")
            if result is not None:
                outcome = ToolCallResult(bool(result_field(result, "block")), result_field(result, "reason"))
                if outcome.block:
                    return outcome
        return outcome

    async def emit_tool_result(self, event: ToolResultEvent) -> ToolResultResult | None:
        modified = False
        for extension, handler, takes_ctx in self._handlers("tool_result"):
            try:
                result = await self._call(handler, takes_ctx, event)
            except Exception as exc:
                self.report(extension.name, "tool_result", exc)
                continue
            for name in ("content", "details", "is_error"):
                value = result_field(result, name)
                if value is not None:
                    setattr(event, name, value)
                    modified = True
        if not modified:
            return None
        return ToolResultResult(event.content, event.details, event.is_error)

    async def emit_context(self, messages: list[Any]) -> list[Any]:
        current = copy.deepcopy(messages)
        for extension, handler, takes_ctx in self._handlers("context"):
            try:
                result = await self._call(handler, takes_ctx, ContextEvent(current))
            except Exception as exc:
                self.report(extension.name, "context", exc)
                continue
            replaced = result_field(result, "messages")
            if replaced is not None:
                current = list(replaced)
        return current

    async def emit_input(self, event: InputEvent) -> InputResult:
        text, images = event.text, event.images
        for extension, handler, takes_ctx in self._handlers("input"):
            current = InputEvent(text, images, event.source, event.streaming_behavior)
            try:
                result = await self._call(handler, takes_ctx, current)
            except Exception as exc:
                self.report(extension.name, "input", exc)
                continue
            action = result_field(result, "action")
            if action == "handled":
                return InputResult("handled")
            if action == "transform":
                text = result_field(result, "text") or ""
                images = result_field(result, "images") or images
        if text != event.text or images is not event.images:
            return InputResult("transform", text, images)
        return InputResult("continue")

    async def emit_before_agent_start(
        self, prompt: str, images: list[Any] | None, system_prompt: str
    ) -> tuple[list[Any], str | None]:
        """The custom messages to send after the prompt and the system prompt of the run
        (``None``: the session's own)."""
        messages: list[Any] = []
        current, modified = system_prompt, False
        for extension, handler, takes_ctx in self._handlers("before_agent_start"):
            event = BeforeAgentStartEvent(prompt, images, current)
            try:
                result = await self._call(handler, takes_ctx, event)
            except Exception as exc:
                self.report(extension.name, "before_agent_start", exc)
                continue
            message = result_field(result, "message")
            if message is not None:
                messages.append(message)
            replaced = result_field(result, "system_prompt")
            if replaced is not None:
                current, modified = replaced, True
        return messages, (current if modified else None)

    async def emit_message_end(self, message: Any) -> Any:
        """The replacement of ``message`` the handlers chose, or ``None``."""
        current, modified = message, False
        for extension, handler, takes_ctx in self._handlers("message_end"):
            try:
                result = await self._call(handler, takes_ctx, MessageEndEvent(current))
            except Exception as exc:
                self.report(extension.name, "message_end", exc)
                continue
            replacement = result_field(result, "message")
            if replacement is None:
                continue
            if result_field(replacement, "role") != result_field(current, "role"):
                same_role = "message_end handlers must return a message with the same role"
                self.report(extension.name, "message_end", same_role)
                continue
            current, modified = replacement, True
        return current if modified else None

    # --- session actions ------------------------------------------------------------------------

    def act(self, extension: Extension, label: str, action: Callable[[SessionActions], Any]) -> None:
        """Run ``action`` on the bound session; an async one is scheduled on the running loop
        (Pi does not wait for it either). Failures are reported, never raised."""
        session = self.session
        if session is None:
            told = "no conversation yet: run a %%pi cell (or prompt the session) first"
            self.report(extension.name, label, told)
            return
        try:
            done = action(session)
        except Exception as exc:
            self.report(extension.name, label, exc)
            return
        if inspect.isawaitable(done):
            self.spawn(extension.name, label, done)

    def spawn(self, name: str, label: str, done: Awaitable[Any]) -> None:
        """Await ``done`` on the running loop (or now, without one); failures are reported."""

        async def guarded() -> None:
            try:
                await done
            except Exception as exc:
                self.report(name, label, exc)

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(guarded())
            return
        task = loop.create_task(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait for the session actions scheduled so far (tests, a host closing a cell)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
