"""``pi_notebook.runtime``: Pi's ``AgentSession`` layer, an ``Agent`` with its session file,
auto-retry, auto-compaction, queues and one event stream, usable from a script, ``%%pi`` or a
kernel alike.

* ``agent_session``: ``AgentSession`` (``AgentSession.create(cwd=..., model=..., tools=...)``).
* ``events``: the ``AgentSessionEvent`` types (Pi's names in snake_case, ``to_dict()`` Pi's JSON).
* ``retry`` and ``compaction``: the two automatic recoveries, as Pi decides them.
* ``budget``: ``Budget``, a spending limit of a run or a conversation, and ``Spend``, usage
  added up (an addition to Pi).
* ``settings``: ``AgentSessionSettings`` (``RetrySettings``, the session layer's
  ``CompactionSettings``).
* ``extensions/``: Pi's extension API in Python (``ExtensionRunner``, ``def setup(pi)``);
  ``session_extensions``: where an ``AgentSession`` created with ``extensions=`` calls them.

Imports ``ai``, ``agent``, ``session``; never IPython. Names load their module on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from .agent_session import AgentSession, StreamingBehavior
    from .budget import Budget, Spend
    from .events import (
        AgentSessionEvent,
        AgentSettledEvent,
        AutoRetryEndEvent,
        AutoRetryStartEvent,
        BudgetReachedEvent,
        CompactionEndEvent,
        CompactionStartEvent,
        EntryAppendedEvent,
        QueueUpdateEvent,
        SessionAgentEndEvent,
        SessionInfoChangedEvent,
        SessionWriteEvent,
        SummarizationRetryAttemptStartEvent,
        SummarizationRetryFinishedEvent,
        SummarizationRetryScheduledEvent,
        ThinkingLevelChangedEvent,
    )
    from .settings import AgentSessionSettings, RetrySettings

_HOMES = {
    "AgentSession": "agent_session",
    "AgentSessionEvent": "events",
    "AgentSessionSettings": "settings",
    "AgentSettledEvent": "events",
    "AutoRetryEndEvent": "events",
    "AutoRetryStartEvent": "events",
    "Budget": "budget",
    "BudgetReachedEvent": "events",
    "CompactionEndEvent": "events",
    "CompactionStartEvent": "events",
    "EntryAppendedEvent": "events",
    "QueueUpdateEvent": "events",
    "RetrySettings": "settings",
    "SessionAgentEndEvent": "events",
    "SessionInfoChangedEvent": "events",
    "SessionWriteEvent": "events",
    "Spend": "budget",
    "StreamingBehavior": "agent_session",
    "SummarizationRetryAttemptStartEvent": "events",
    "SummarizationRetryFinishedEvent": "events",
    "SummarizationRetryScheduledEvent": "events",
    "ThinkingLevelChangedEvent": "events",
}

__all__ = [
    "AgentSession",
    "AgentSessionEvent",
    "AgentSessionSettings",
    "AgentSettledEvent",
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "Budget",
    "BudgetReachedEvent",
    "CompactionEndEvent",
    "CompactionStartEvent",
    "EntryAppendedEvent",
    "QueueUpdateEvent",
    "RetrySettings",
    "SessionAgentEndEvent",
    "SessionInfoChangedEvent",
    "SessionWriteEvent",
    "Spend",
    "StreamingBehavior",
    "SummarizationRetryAttemptStartEvent",
    "SummarizationRetryFinishedEvent",
    "SummarizationRetryScheduledEvent",
    "ThinkingLevelChangedEvent",
]

__getattr__, __dir__ = exports(__name__, _HOMES, __all__)
