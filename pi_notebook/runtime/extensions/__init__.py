"""``pi_notebook.runtime.extensions``: Pi's extension API in Python (no IPython here).

* ``api``: ``ExtensionAPI`` (``pi`` in ``def setup(pi)``), ``ExtensionContext``, ``Extension``.
* ``events``: the events handlers hear and the results they return.
* ``runner``: ``ExtensionRunner``, which calls handlers and combines their results as Pi does.
* ``loader``: entry points (``pi_notebook.extensions``), a trusted project's
  ``.pi/extensions/*.py``, a module or a file.
* ``providers``: ``pi.register_provider``. ``ui``: the ``ExtensionUI`` protocol a host
  implements, and ``NoUI``.

An ``AgentSession`` created with ``extensions=runner`` calls them (``runtime.session_extensions``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import exports

if TYPE_CHECKING:
    from .api import Extension, ExtensionAPI, ExtensionContext, RegisteredCommand
    from .events import (
        AgentEndEvent,
        BeforeAgentStartEvent,
        BeforeAgentStartResult,
        ContextEvent,
        ContextResult,
        InputEvent,
        InputResult,
        MessageEndEvent,
        MessageEndResult,
        ModelSelectEvent,
        SessionBeforeCompactEvent,
        SessionBeforeCompactResult,
        SessionShutdownEvent,
        SessionStartEvent,
        ToolCallEvent,
        ToolCallResult,
        ToolResultEvent,
        ToolResultResult,
    )
    from .loader import discover_extensions, load_extension
    from .providers import ProviderConfig
    from .runner import ExtensionError, ExtensionRunner
    from .ui import ExtensionUI, NoUI

_HOMES = {
    "AgentEndEvent": "events",
    "BeforeAgentStartEvent": "events",
    "BeforeAgentStartResult": "events",
    "ContextEvent": "events",
    "ContextResult": "events",
    "Extension": "api",
    "ExtensionAPI": "api",
    "ExtensionContext": "api",
    "ExtensionError": "runner",
    "ExtensionRunner": "runner",
    "ExtensionUI": "ui",
    "InputEvent": "events",
    "InputResult": "events",
    "MessageEndEvent": "events",
    "MessageEndResult": "events",
    "ModelSelectEvent": "events",
    "NoUI": "ui",
    "ProviderConfig": "providers",
    "RegisteredCommand": "api",
    "SessionBeforeCompactEvent": "events",
    "SessionBeforeCompactResult": "events",
    "SessionShutdownEvent": "events",
    "SessionStartEvent": "events",
    "ToolCallEvent": "events",
    "ToolCallResult": "events",
    "ToolResultEvent": "events",
    "ToolResultResult": "events",
    "discover_extensions": "loader",
    "load_extension": "loader",
}

__all__ = [
    "AgentEndEvent",
    "BeforeAgentStartEvent",
    "BeforeAgentStartResult",
    "ContextEvent",
    "ContextResult",
    "Extension",
    "ExtensionAPI",
    "ExtensionContext",
    "ExtensionError",
    "ExtensionRunner",
    "ExtensionUI",
    "InputEvent",
    "InputResult",
    "MessageEndEvent",
    "MessageEndResult",
    "ModelSelectEvent",
    "NoUI",
    "ProviderConfig",
    "RegisteredCommand",
    "SessionBeforeCompactEvent",
    "SessionBeforeCompactResult",
    "SessionShutdownEvent",
    "SessionStartEvent",
    "ToolCallEvent",
    "ToolCallResult",
    "ToolResultEvent",
    "ToolResultResult",
    "discover_extensions",
    "load_extension",
]

__getattr__, __dir__ = exports(__name__, _HOMES, __all__)
