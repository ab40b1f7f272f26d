"""The events an ``AgentSession`` emits (Pi's ``AgentSessionEvent``): every agent event as the
agent emitted it, except ``agent_end``, which becomes :class:`SessionAgentEndEvent` with
``will_retry``; and the session's own events below. Field names are Pi's in snake_case;
``to_dict()`` gives Pi's JSON (camelCase, absent optionals left out).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from ..agent.types import AgentEvent, AgentMessage, _AgentEvent, _plain
from ..ai.retry import RetryCallbacks, RetryPolicy
from ..session import CompactionResult, SessionEntry

__all__ = [
    "AgentSessionEvent",
    "AgentSessionListener",
    "AgentSettledEvent",
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "BudgetReachedEvent",
    "CompactionEndEvent",
    "CompactionReason",
    "CompactionStartEvent",
    "EntryAppendedEvent",
    "QueueUpdateEvent",
    "SessionAgentEndEvent",
    "SessionInfoChangedEvent",
    "SessionWriteEvent",
    "SummarizationRetryAttemptStartEvent",
    "SummarizationRetryFinishedEvent",
    "SummarizationRetryScheduledEvent",
    "ThinkingLevelChangedEvent",
    "compaction_result_dict",
    "summary_retry",
]

CompactionReason: TypeAlias = Literal["manual", "threshold", "overflow"]

_CAMEL = {
    "will_retry": "willRetry",
    "follow_up": "followUp",
    "error_message": "errorMessage",
    "max_attempts": "maxAttempts",
    "delay_ms": "delayMs",
    "final_error": "finalError",
}


class _SessionEvent:
    """``to_dict``: Pi's JSON of the event; ``None`` optionals are left out, as Pi's are absent."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": getattr(self, "type")}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name != "type" and value is not None:
                out[_CAMEL.get(f.name, f.name)] = _plain(value)
        return out


@dataclass(slots=True)
class SessionAgentEndEvent(_AgentEvent):
    """``agent_end`` with ``will_retry``: the session will retry the failed call (auto-retry)."""

    messages: list[AgentMessage]
    will_retry: bool = False
    type: Literal["agent_end"] = "agent_end"

    def to_dict(self) -> dict[str, Any]:
        return {"type": "agent_end", "messages": _plain(self.messages), "willRetry": self.will_retry}


@dataclass(slots=True)
class AgentSettledEvent(_SessionEvent):
    """The session is idle: the run, its retries, compactions and continuations are over."""

    type: Literal["agent_settled"] = "agent_settled"


@dataclass(slots=True)
class QueueUpdateEvent(_SessionEvent):
    """The texts waiting in the steering and follow-up queues."""

    steering: list[str]
    follow_up: list[str]
    type: Literal["queue_update"] = "queue_update"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "steering": list(self.steering), "followUp": list(self.follow_up)}


@dataclass(slots=True)
class CompactionStartEvent(_SessionEvent):
    reason: CompactionReason
    type: Literal["compaction_start"] = "compaction_start"


@dataclass(slots=True)
class CompactionEndEvent(_SessionEvent):
    """``result`` is Pi's compaction result JSON (:func:`compaction_result_dict`) on success."""

    reason: CompactionReason
    result: dict[str, Any] | None
    aborted: bool
    will_retry: bool
    error_message: str | None = None
    type: Literal["compaction_end"] = "compaction_end"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "reason": self.reason}
        if self.result is not None:  # Pi's JSON leaves an undefined result out
            out["result"] = self.result
        out["aborted"], out["willRetry"] = self.aborted, self.will_retry
        if self.error_message is not None:
            out["errorMessage"] = self.error_message
        return out


@dataclass(slots=True)
class AutoRetryStartEvent(_SessionEvent):
    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str
    type: Literal["auto_retry_start"] = "auto_retry_start"


@dataclass(slots=True)
class AutoRetryEndEvent(_SessionEvent):
    success: bool
    attempt: int
    final_error: str | None = None
    type: Literal["auto_retry_end"] = "auto_retry_end"


@dataclass(slots=True)
class SummarizationRetryScheduledEvent(_SessionEvent):
    """A summary request (compaction, branch summary) failed transiently and will be retried."""

    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str
    type: Literal["summarization_retry_scheduled"] = "summarization_retry_scheduled"


@dataclass(slots=True)
class SummarizationRetryAttemptStartEvent(_SessionEvent):
    """The retried summary request starts: ``source`` "compaction" (with its ``reason``) or
    "branchSummary"."""

    source: Literal["compaction", "branchSummary"]
    reason: CompactionReason | None = None
    type: Literal["summarization_retry_attempt_start"] = "summarization_retry_attempt_start"


@dataclass(slots=True)
class SummarizationRetryFinishedEvent(_SessionEvent):
    type: Literal["summarization_retry_finished"] = "summarization_retry_finished"


@dataclass(slots=True)
class EntryAppendedEvent(_SessionEvent):
    """An entry an extension appended to the session file."""

    entry: SessionEntry
    type: Literal["entry_appended"] = "entry_appended"


@dataclass(slots=True)
class SessionInfoChangedEvent(_SessionEvent):
    name: str | None
    type: Literal["session_info_changed"] = "session_info_changed"


@dataclass(slots=True)
class BudgetReachedEvent(_SessionEvent):
    """The spend reached the run's or the conversation's budget and the run stops; ``reason``
    is the one line that says so (an event Pi does not have: Pi has no budgets)."""

    reason: str
    type: Literal["budget_reached"] = "budget_reached"


@dataclass(slots=True)
class SessionWriteEvent(_SessionEvent):
    """The session file cannot be written (``write_failed``: the conversation goes on in
    memory), is written again (``write_recovered``), or another process writes it too
    (``shared``); ``text`` is the one line that says so. An event Pi does not have: Pi's
    session throws on a failed write."""

    kind: str
    text: str
    type: Literal["session_write"] = "session_write"


@dataclass(slots=True)
class ThinkingLevelChangedEvent(_SessionEvent):
    level: str
    type: Literal["thinking_level_changed"] = "thinking_level_changed"


AgentSessionEvent: TypeAlias = (
    AgentEvent
    | SessionAgentEndEvent
    | AgentSettledEvent
    | QueueUpdateEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | AutoRetryStartEvent
    | AutoRetryEndEvent
    | BudgetReachedEvent
    | SummarizationRetryScheduledEvent
    | SummarizationRetryAttemptStartEvent
    | SummarizationRetryFinishedEvent
    | EntryAppendedEvent
    | SessionInfoChangedEvent
    | SessionWriteEvent
    | ThinkingLevelChangedEvent
)

AgentSessionListener: TypeAlias = Callable[[AgentSessionEvent], None]


def compaction_result_dict(result: CompactionResult, estimated_tokens_after: int) -> dict[str, Any]:
    """Pi's ``CompactionResult`` JSON as a ``compaction_end`` event carries it."""
    out: dict[str, Any] = {
        "summary": result.summary,
        "firstKeptEntryId": result.first_kept_entry_id,
        "tokensBefore": result.tokens_before,
        "estimatedTokensAfter": estimated_tokens_after,
    }
    if result.usage is not None:
        out["usage"] = result.usage.model_dump()
    out["details"] = result.details
    return out


def summary_retry(
    settings: Any,
    emit: Callable[[AgentSessionEvent], None],
    source: Literal["compaction", "branchSummary"],
    reason: CompactionReason | None = None,
) -> tuple[RetryPolicy, RetryCallbacks]:
    """The retry of a summary request under the session's retry settings (as Pi's), and the
    callbacks that report it as ``summarization_retry_*`` events."""
    policy = RetryPolicy(
        enabled=settings.enabled,
        max_retries=settings.max_retries,
        base_delay_ms=settings.base_delay_ms,
        max_requested_delay_ms=settings.max_requested_delay_ms,
    )
    callbacks = RetryCallbacks(
        on_retry_scheduled=lambda a, m, d, e: emit(SummarizationRetryScheduledEvent(a, m, d, e)),
        on_retry_attempt_start=lambda: emit(SummarizationRetryAttemptStartEvent(source, reason)),
        on_retry_finished=lambda *_: emit(SummarizationRetryFinishedEvent()),
    )
    return policy, callbacks
