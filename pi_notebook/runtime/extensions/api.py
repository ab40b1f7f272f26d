"""``ExtensionAPI``: what ``setup(pi)`` gets (Pi's ``ExtensionAPI`` in snake_case), and the
``ExtensionContext`` every handler gets as its second argument.

An extension is a function ``setup(pi: ExtensionAPI) -> None`` (or ``async def``). It
subscribes with ``pi.on(event, handler)``, adds tools (``register_tool``), commands
(``register_command``: ``%pi NAME ...`` in a notebook, ``/NAME ...`` as a prompt) and
providers (``register_provider``), talks to the conversation (``send_message``,
``send_user_message``, ``append_entry``) and to the user (``pi.ui``). Handlers may be sync or
async and take ``(event)`` or ``(event, ctx)``.

The session-facing calls act on the ``AgentSession`` the extensions are bound to now (the one
that runs, or ran last): :class:`SessionActions` is what it provides.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ...agent.types import AgentTool
from ...ai.types import Model
from .events import EVENT_TYPES
from .providers import ProviderConfig, register_provider, unregister_provider
from .ui import ExtensionUI

__all__ = [
    "CommandHandler",
    "Extension",
    "ExtensionAPI",
    "ExtensionContext",
    "RegisteredCommand",
    "SessionActions",
]

Handler = Callable[..., Any]
CommandHandler = Callable[[str, "ExtensionContext"], Any]
DeliverAs = Literal["steer", "follow_up", "next_turn"]


class SessionActions(Protocol):
    """What the bound session does for ``pi.*`` (an ``AgentSession``'s extension half,
    ``runtime.session_extensions.SessionExtensions``, implements it)."""

    @property
    def cwd(self) -> str: ...

    @property
    def model(self) -> Model | None: ...

    @property
    def is_idle(self) -> bool: ...

    @property
    def pending_message_count(self) -> int: ...

    @property
    def system_prompt(self) -> str: ...

    @property
    def session_manager(self) -> Any: ...

    async def send_custom_message(
        self, message: Any, *, deliver_as: DeliverAs | None = None, trigger_turn: bool = False
    ) -> None: ...

    async def send_user_message(self, text: str, *, deliver_as: DeliverAs | None = None) -> None: ...

    def append_entry(self, custom_type: str, data: Any = None) -> str: ...

    def interrupt(self) -> None: ...


class Host(Protocol):
    """What the API and the context need of their ``ExtensionRunner``."""

    @property
    def ui(self) -> ExtensionUI: ...

    @property
    def has_ui(self) -> bool: ...

    session: SessionActions | None

    def act(self, extension: Extension, label: str, action: Callable[[SessionActions], Any]) -> None: ...

    def changed(self) -> None: ...


@dataclass
class RegisteredCommand:
    name: str
    handler: CommandHandler
    description: str = ""
    extension: str = ""


@dataclass(eq=False)
class Extension:
    """One loaded extension: where it came from and what its ``setup`` registered."""

    name: str
    """Its module (``package.module``), entry point (``name = module:attr``) or file path."""
    source: str = "load"
    """``entry_point``, ``project`` or ``load``."""
    handlers: dict[str, list[tuple[Handler, bool]]] = field(default_factory=dict)
    """Per event, the handlers and whether each takes ``ctx``."""
    tools: dict[str, AgentTool] = field(default_factory=dict)
    commands: dict[str, RegisteredCommand] = field(default_factory=dict)
    providers: list[str] = field(default_factory=list)

    def describe(self) -> str:
        parts = [f"{self.name} ({self.source})"]
        events = sorted(self.handlers)
        if events:
            parts.append("on " + ", ".join(events))
        if self.tools:
            parts.append("tools " + ", ".join(self.tools))
        if self.commands:
            parts.append("commands " + ", ".join(self.commands))
        if self.providers:
            parts.append("providers " + ", ".join(self.providers))
        return "; ".join(parts)


def _takes_context(handler: Handler) -> bool:
    """Whether ``handler`` accepts a second positional argument (Pi passes ``ctx`` to all)."""
    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):
        return True
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2


class ExtensionContext:
    """The context of a handler or a command (Pi's ``ExtensionContext``): read when used, so
    it always describes the session the extensions are bound to at that moment."""

    def __init__(self, runner: Host) -> None:
        self._runner = runner

    @property
    def ui(self) -> ExtensionUI:
        return self._runner.ui

    @property
    def has_ui(self) -> bool:
        return self._runner.has_ui

    @property
    def cwd(self) -> str | None:
        session = self._runner.session
        return session.cwd if session is not None else None

    @property
    def model(self) -> Model | None:
        session = self._runner.session
        return session.model if session is not None else None

    @property
    def session_manager(self) -> Any:
        session = self._runner.session
        return session.session_manager if session is not None else None

    def is_idle(self) -> bool:
        session = self._runner.session
        return session is None or session.is_idle

    def has_pending_messages(self) -> bool:
        session = self._runner.session
        return session is not None and session.pending_message_count > 0

    def get_system_prompt(self) -> str:
        session = self._runner.session
        return session.system_prompt if session is not None else ""

    def abort(self) -> None:
        session = self._runner.session
        if session is not None:
            session.interrupt()


class ExtensionAPI:
    """``pi`` in ``setup(pi)``. Registrations belong to the extension being set up."""

    def __init__(self, runner: Host, extension: Extension) -> None:
        self._runner = runner
        self._extension = extension

    @property
    def ui(self) -> ExtensionUI:
        """The host's UI now (the cell of the running ``%%pi``, or :class:`NoUI`)."""
        return self._runner.ui

    @property
    def name(self) -> str:
        return self._extension.name

    def on(self, event: str, handler: Handler) -> None:
        """Call ``handler(event)`` or ``handler(event, ctx)`` (sync or async) for ``event``."""
        if event not in EVENT_TYPES:
            known = ", ".join(sorted(EVENT_TYPES))
            raise ValueError(f"pi.on: unknown event {event!r}; use one of {known}")
        if not callable(handler):
            raise TypeError(f"pi.on({event!r}, ...): the handler must be callable")
        self._extension.handlers.setdefault(event, []).append((handler, _takes_context(handler)))
        self._runner.changed()  # a handler added after setup (from a handler or a command) counts

    def register_tool(self, tool: AgentTool) -> None:
        """Give every run this tool (an ``AgentTool``, e.g. from ``@tool``); it replaces a
        built-in tool of the same name, as in Pi."""
        if not isinstance(tool, AgentTool):
            raise TypeError("pi.register_tool needs an AgentTool: decorate a function with @tool")
        self._extension.tools[tool.name] = tool

    def register_command(self, name: str, handler: CommandHandler, *, description: str = "") -> None:
        """``%pi NAME ARGS`` (and a prompt ``/NAME ARGS``) calls ``handler(args, ctx)``."""
        if not name or any(c.isspace() for c in name) or name.startswith("/"):
            raise ValueError(f"pi.register_command: {name!r} is not a command name (one word, no '/')")
        self._extension.commands[name] = RegisteredCommand(name, handler, description, self._extension.name)

    def register_provider(self, name: str, config: ProviderConfig | dict[str, Any]) -> None:
        """Models (and optionally a stream function) under provider ``name`` (see
        ``providers.ProviderConfig``); ``--model name:id`` then finds them."""
        register_provider(name, config, source=f"extension:{self._extension.name}")
        if name not in self._extension.providers:
            self._extension.providers.append(name)

    def unregister_provider(self, name: str) -> None:
        unregister_provider(name, source=f"extension:{self._extension.name}")
        if name in self._extension.providers:
            self._extension.providers.remove(name)

    def send_message(
        self, message: Any, *, deliver_as: DeliverAs | None = None, trigger_turn: bool = False
    ) -> None:
        """Add a custom message (``custom_type``, ``content``, ``display``, ``details``) to
        the conversation: while it runs as steering (or ``deliver_as="follow_up"``), with the
        next prompt (``"next_turn"``), else at once (``trigger_turn``: and let the model answer)."""
        self._runner.act(
            self._extension,
            "send_message",
            lambda s: s.send_custom_message(message, deliver_as=deliver_as, trigger_turn=trigger_turn),
        )

    def send_user_message(self, text: str, *, deliver_as: DeliverAs | None = None) -> None:
        """Send ``text`` as the user (a new run, or queued while one runs)."""
        self._runner.act(
            self._extension, "send_user_message", lambda s: s.send_user_message(text, deliver_as=deliver_as)
        )

    def append_entry(self, custom_type: str, data: Any = None) -> None:
        """Record ``data`` in the session file (a ``custom`` entry the model never sees)."""
        self._runner.act(self._extension, "append_entry", lambda s: s.append_entry(custom_type, data))
