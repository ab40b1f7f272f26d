"""Compaction of an ``AgentSession``'s conversation, decided and run as Pi's ``AgentSession``
does it (``_checkCompaction``, ``_runAutoCompaction``, ``compact``):

* **Threshold**: after a run (and before the next prompt, counting an aborted answer too), when
  the context (the last answer's usage, or for a failed or usage-less answer the estimate from
  the last valid usage) is above the model's window minus ``reserve_tokens``: older messages are
  summarized, the run is not repeated (queued messages continue it).
* **Overflow**: the provider said the request did not fit (same provider and model as now). A
  completed answer compacts without a retry; a failed one leaves the agent's context (it stays in
  the session file), the conversation is compacted and the turn retried, once per episode.
* **Manual**: :meth:`Compactor.compact` (``/compact [instructions]`` in Pi).

An answer older than the latest compaction never triggers another one. Every attempt emits
``compaction_start`` / ``compaction_end``.

**Small windows** (not in Pi): all three use the settings :func:`fit_to_window` makes for the
model's window, so Pi's default reserve and keep shrink with a window under 64k tokens instead
of making every answer compact (and a manual compaction find nothing to summarize).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ..agent import Agent
from ..ai.abort import AbortController, AbortError
from ..ai.overflow import is_context_overflow
from ..session import (
    DEFAULT_COMPACTION_SETTINGS,
    CompactionEntry,
    CompactionError,
    CompactionResult,
    CompactionSettings,
    SessionManager,
    SummaryRequest,
    calculate_context_tokens,
    compact,
    compact_session,
    estimate_context_tokens,
    estimate_tokens,
    prepare_compaction,
    should_compact,
)
from .events import (
    AgentSessionEvent,
    CompactionEndEvent,
    CompactionReason,
    CompactionStartEvent,
    compaction_result_dict,
    summary_retry,
)
from .extensions.events import SessionBeforeCompactEvent
from .settings import RetrySettings

__all__ = ["FULL_WINDOW", "OVERFLOW_GAVE_UP", "Compactor", "fit_to_window"]

OVERFLOW_GAVE_UP = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)


FULL_WINDOW = 65_536
"""The smallest window Pi's defaults fit: their reserve (16,384) is a quarter of it."""


def fit_to_window(settings: CompactionSettings, window: int) -> CompactionSettings:
    """The settings compaction uses with a model of ``window`` tokens.

    Pi's defaults assume a large window: with 8,192 tokens, ``window - 16,384`` is negative, so
    every answer would compact, and keeping 20,000 tokens keeps everything. Under
    :data:`FULL_WINDOW` tokens each default shrinks in proportion to the window (a quarter of
    it for the reserve, about 30 % for the kept part: Pi's values as they relate to a 64k
    window). A value other than Pi's default was chosen by the caller and is used as given; an
    unknown window (0) changes nothing.
    """
    if not 0 < window < FULL_WINDOW:
        return settings
    default = DEFAULT_COMPACTION_SETTINGS
    reserve, keep = settings.reserve_tokens, settings.keep_recent_tokens
    if reserve == default.reserve_tokens:
        reserve = reserve * window // FULL_WINDOW
    if keep == default.keep_recent_tokens:
        keep = keep * window // FULL_WINDOW
    return replace(settings, reserve_tokens=reserve, keep_recent_tokens=keep)


def iso_to_ms(stamp: str) -> int:
    """A session entry's ISO timestamp as epoch milliseconds (a message's timestamp unit)."""
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def latest_compaction(path: list[Any]) -> CompactionEntry | None:
    for entry in reversed(path):
        if isinstance(entry, CompactionEntry):
            return entry
    return None


@dataclass
class Compactor:
    """The compaction half of one ``AgentSession`` (it owns the abort controllers)."""

    agent: Agent
    manager: SessionManager
    settings: Callable[[], CompactionSettings]
    emit: Callable[[AgentSessionEvent], None]
    summary_timeout_ms: Callable[[], int | None] = lambda: None
    retry_settings: Callable[[], RetrySettings] = RetrySettings
    """Summary requests are retried under the session's retry settings, as Pi's are."""
    before_compact: Callable[[SessionBeforeCompactEvent], Awaitable[Any]] | None = None
    """Extensions' ``session_before_compact``: a result with ``cancel`` / ``compaction``, or None."""
    overflow_recovery_attempted: bool = False
    _auto_abort: AbortController | None = None
    _manual_abort: AbortController | None = None

    @property
    def is_compacting(self) -> bool:
        return self._auto_abort is not None or self._manual_abort is not None

    def abort(self) -> None:
        for controller in (self._auto_abort, self._manual_abort):
            if controller is not None:
                controller.abort()

    def fitted_settings(self) -> CompactionSettings:
        """The session's settings for the current model's window (:func:`fit_to_window`)."""
        return fit_to_window(self.settings(), self.agent.state.model.context_window or 0)

    def _request(self, controller: AbortController, reason: CompactionReason) -> SummaryRequest:
        """The conversation's own model, stream function and thinking level summarize."""
        state = self.agent.state
        level = state.thinking_level
        policy, callbacks = summary_retry(self.retry_settings(), self.emit, "compaction", reason)
        return SummaryRequest(
            model=state.model,
            stream_fn=self.agent.stream_fn,
            signal=controller.signal,
            thinking_level=None if level == "off" else level,
            retry=policy,
            timeout_ms=self.summary_timeout_ms(),
            callbacks=callbacks,
        )

    async def check(self, message: Any, skip_aborted: bool = True) -> bool:
        """Pi's check of the last answer; True when the agent is to continue (a retried turn,
        or queued messages after a threshold compaction)."""
        settings = self.fitted_settings()
        if not settings.enabled or (skip_aborted and message.stop_reason == "aborted"):
            return False
        model = self.agent.state.model
        window = model.context_window or 0
        same_model = message.provider == model.provider and message.model == model.id
        latest = self.manager.latest_on_branch(CompactionEntry)
        if latest is not None and message.timestamp <= iso_to_ms(latest.timestamp):
            return False
        if same_model and is_context_overflow(message, window):
            if message.stop_reason == "stop":
                return await self._auto("overflow", will_retry=False)
            if self.overflow_recovery_attempted:
                self.emit(CompactionEndEvent("overflow", None, False, False, OVERFLOW_GAVE_UP))
                return False
            self.overflow_recovery_attempted = True
            self._drop_failed_answer(any_stop=True)
            return await self._auto("overflow", will_retry=True)
        tokens = self._context_tokens(message, latest)
        if tokens is not None and should_compact(tokens, window, settings):
            return await self._auto("threshold", will_retry=False)
        return False

    def _context_tokens(self, message: Any, latest: CompactionEntry | None) -> int | None:
        direct = calculate_context_tokens(message.usage) if message.usage is not None else 0
        if message.stop_reason != "error" and direct > 0:
            return direct
        messages = self.agent.state.messages
        estimate = estimate_context_tokens(messages)
        if estimate.last_usage_index is None:
            return None
        source: Any = messages[estimate.last_usage_index]
        stale = latest is not None and source.timestamp <= iso_to_ms(latest.timestamp)
        if stale and getattr(source, "role", None) == "assistant":
            return None  # kept pre-compaction usage describes the old, larger context
        return estimate.tokens

    def _drop_failed_answer(self, *, any_stop: bool = False) -> None:
        messages = self.agent.state.messages
        last = messages[-1] if messages else None
        if getattr(last, "role", None) == "assistant" and (any_stop or last.stop_reason == "error"):  # type: ignore[union-attr]
            self.agent.state.messages = messages[:-1]

    async def _asked(self, event: SessionBeforeCompactEvent) -> tuple[bool, CompactionResult | None]:
        """The extensions' say (Pi asks them after ``compaction_start``): cancelled, and the
        compaction one of them made."""
        if self.before_compact is None:
            return False, None
        said = await self.before_compact(event)
        cancel = bool(said.get("cancel") if isinstance(said, dict) else getattr(said, "cancel", False))
        made = said.get("compaction") if isinstance(said, dict) else getattr(said, "compaction", None)
        return cancel, made

    async def _auto(self, reason: CompactionReason, *, will_retry: bool) -> bool:
        entries = self.manager.get_branch()
        preparation = prepare_compaction(entries, self.fitted_settings())
        if preparation is None:
            return False
        self.emit(CompactionStartEvent(reason))
        controller = self._auto_abort = AbortController()
        try:
            signal = controller.signal
            asked = SessionBeforeCompactEvent(preparation, entries, None, reason, will_retry, signal)
            cancel, made = await self._asked(asked)
            if cancel:
                self.emit(CompactionEndEvent(reason, None, True, False))
                return False
            result = made or await compact(preparation, self._request(controller, reason), None)
            if controller.signal.aborted:
                self.emit(CompactionEndEvent(reason, None, True, False))
                return False
            self.emit(CompactionEndEvent(reason, self._apply(result, made is not None), False, will_retry))
        except Exception as exc:
            if controller.signal.aborted or isinstance(exc, AbortError):
                self.emit(CompactionEndEvent(reason, None, True, False))
                return False
            failed = "Context overflow recovery failed" if reason == "overflow" else "Auto-compaction failed"
            error = f"{failed}: {exc or 'compaction failed'}"
            self.emit(CompactionEndEvent(reason, None, False, False, error))
            return False
        finally:
            self._auto_abort = None
        if will_retry:
            self._drop_failed_answer()
            return True
        return self.agent.has_queued_messages()

    def _apply(self, result: CompactionResult, from_hook: bool = False) -> dict[str, Any]:
        """Append the compaction entry, give the agent the new context; the event's result."""
        self.manager.append_compaction(
            result.summary,
            result.first_kept_entry_id,
            result.tokens_before,
            result.details,
            from_hook=from_hook,
            usage=result.usage,
        )
        return self._context_after(result)

    def _context_after(self, result: CompactionResult) -> dict[str, Any]:
        """Give the agent the context after the compaction entry; the event's result."""
        messages = self.manager.build_session_context().messages
        self.agent.state.messages = messages
        return compaction_result_dict(result, sum(estimate_tokens(m) for m in messages))

    async def compact(self, custom_instructions: str | None = None) -> CompactionResult:
        """Compact now (the caller has stopped the agent). Raises ``CompactionError`` with Pi's
        texts ("Nothing to compact (session too small)", "Already compacted", "Compaction
        cancelled") or the summarizing model's error."""
        controller = self._manual_abort = AbortController()
        self.emit(CompactionStartEvent("manual"))
        try:
            result = await self._manual(controller, custom_instructions)
        except BaseException as exc:
            text = str(exc) or type(exc).__name__
            aborted = text == "Compaction cancelled" or isinstance(exc, AbortError)
            error = None if aborted else f"Compaction failed: {text}"
            self.emit(CompactionEndEvent("manual", None, aborted, False, error))
            raise
        finally:
            self._manual_abort = None
        return result

    async def _manual(self, controller: AbortController, instructions: str | None) -> CompactionResult:
        request = self._request(controller, "manual")
        if self.before_compact is not None:
            return await self._manual_asked(controller, request, instructions)
        entry = await compact_session(self.manager, request, self.fitted_settings(), instructions)
        result = CompactionResult(
            summary=entry.summary,
            first_kept_entry_id=entry.first_kept_entry_id,
            tokens_before=entry.tokens_before,
            usage=entry.usage,
            details=entry.details or {},
        )
        self.emit(CompactionEndEvent("manual", self._context_after(result), False, False))
        return result

    async def _manual_asked(
        self, controller: AbortController, request: SummaryRequest, instructions: str | None
    ) -> CompactionResult:
        """``compact_session`` with the extensions asked before the summary, as Pi's ``compact``."""
        entries = self.manager.get_branch()
        preparation = prepare_compaction(entries, self.fitted_settings())
        if preparation is None:
            raise CompactionError(
                "Already compacted" if entries and isinstance(entries[-1], CompactionEntry)
                else "Nothing to compact (session too small)"
            )
        signal = controller.signal
        asked = SessionBeforeCompactEvent(preparation, entries, instructions, "manual", False, signal)
        cancel, made = await self._asked(asked)
        if cancel:
            raise CompactionError("Compaction cancelled")
        result = made or await compact(preparation, request, instructions)
        if controller.signal.aborted:
            raise CompactionError("Compaction cancelled")
        self.emit(CompactionEndEvent("manual", self._apply(result, made is not None), False, False))
        return result
