"""Compaction of a notebook conversation, decided as Pi's coding agent decides it.

* **Threshold**: after a run (and before the next prompt, counting an aborted answer too),
  when the context (the last answer's usage plus estimates of what followed) is above the
  model's window minus ``reserve_tokens``, older messages are summarized and the most recent
  ``keep_recent_tokens`` kept. The run is not repeated.
* **Overflow**: when the provider answers that the request did not fit, the failed answer
  leaves the model's context (it stays in the session file), the conversation is compacted and
  the turn is retried once; an overflow again before any answer succeeds is reported, not retried.
* **On demand**: ``%pi compact [instructions]``.

An answer older than the latest compaction never triggers another one (its usage describes
the old, larger context). Settings: ``c.PiMagics.compact`` (on/off),
``compact_reserve_tokens`` and ``compact_keep_recent_tokens`` (Pi's defaults 16384 and 20000).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...agent import Agent
from ...ai.abort import AbortSignal
from ...ai.overflow import is_context_overflow
from ...session import (
    CompactionEntry,
    CompactionSettings,
    SessionManager,
    SummaryRequest,
    calculate_context_tokens,
    compact,
    compact_session,
    estimate_context_tokens,
    prepare_compaction,
    should_compact,
)
from ..config import PiConfig, timeout_ms

OVERFLOW_GAVE_UP = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)


def compaction_settings(config: PiConfig) -> CompactionSettings:
    return CompactionSettings(
        enabled=bool(config.compact),
        reserve_tokens=int(config.compact_reserve_tokens),
        keep_recent_tokens=int(config.compact_keep_recent_tokens),
    )


def summary_request(
    agent: Agent, signal: AbortSignal | None = None, *, timeout: float | None = None
) -> SummaryRequest:
    """The conversation's own model and thinking level summarize, as in Pi, with the run's
    ``--timeout`` (seconds, ``c.PiMagics.timeout``) for the summarizing request."""
    level = agent.state.thinking_level
    return SummaryRequest(
        model=agent.state.model,
        signal=signal,
        thinking_level=None if level == "off" else level,
        timeout_ms=None if timeout is None else timeout_ms(timeout),
    )


def describe(entry: CompactionEntry, reason: str = "") -> str:
    why = {"threshold": " (context near the model's window)", "overflow": " (context overflow)"}.get(
        reason, ""
    )
    return f"Context compacted{why}: {entry.tokens_before:,} tokens summarized."


async def compact_now(
    manager: SessionManager, agent: Agent, config: PiConfig, instructions: str | None = None
) -> CompactionEntry:
    """``%pi compact``: compact the current branch and give the agent the new context.
    Raises ``CompactionError`` ("Nothing to compact ...") when there is too little."""
    request = summary_request(agent, timeout=config.timeout)
    entry = await compact_session(manager, request, compaction_settings(config), instructions or None)
    agent.state.messages = manager.build_session_context().messages
    return entry


@dataclass
class AutoCompaction:
    """What an automatic check did: a notice for the view, and whether to retry the turn."""

    notice: str
    retry: bool = False


def _latest_compaction(path: list[Any]) -> CompactionEntry | None:
    for entry in reversed(path):
        if isinstance(entry, CompactionEntry):
            return entry
    return None


def _iso_ms(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


class AutoCompactor:
    """The automatic checks of one ``%%pi`` run (one overflow retry at most)."""

    def __init__(
        self, manager: SessionManager, agent: Agent, config: PiConfig, timeout: float | None = None
    ) -> None:
        self.manager = manager
        self.agent = agent
        self.settings = compaction_settings(config)
        self.timeout = config.timeout if timeout is None else timeout
        """The run's ``--timeout`` for the summarizing request."""
        self.overflow_retried = False
        self.notices: list[str] = []
        self.signal: AbortSignal | None = None
        """The run's abort signal: Stop or an interrupt also cancels a summary in progress."""

    def saw(self, event: Any) -> None:
        """Pi forgets an overflow retry when a user message starts or an answer ends without
        an error, so a later turn of the same run may be retried once too."""
        kind = event.type
        if kind not in ("message_start", "message_end"):
            return
        role = getattr(event.message, "role", None)
        started_user = kind == "message_start" and role == "user"
        answered = kind == "message_end" and role == "assistant" and event.message.stop_reason != "error"
        if started_user or answered:
            self.overflow_retried = False

    def last_assistant(self) -> Any:
        for message in reversed(self.agent.state.messages):
            if getattr(message, "role", None) == "assistant":
                return message
        return None

    async def check(self, *, before_prompt: bool = False) -> AutoCompaction | None:
        """Pi's check on the last answer; ``before_prompt`` also counts an aborted answer."""
        message = self.last_assistant()
        if message is None or not self.settings.enabled:
            return None
        if not before_prompt and message.stop_reason == "aborted":
            return None
        model = self.agent.state.model
        window = model.context_window or 0
        latest = _latest_compaction(self.manager.get_branch())
        if latest is not None and message.timestamp <= _iso_ms(latest.timestamp):
            return None
        same_model = message.provider == model.provider and message.model == model.id
        if same_model and is_context_overflow(message, window):
            # A completed answer over the window compacts without a retry. Before a prompt the
            # failed answer still leaves the context, but the new prompt is the "retry".
            retry = message.stop_reason != "stop"
            if retry and self.overflow_retried:
                return self._note(AutoCompaction(OVERFLOW_GAVE_UP))
            if retry:
                self.overflow_retried = True
                self._drop_failed_answer()
            return await self._run("overflow", retry)
        tokens = self._context_tokens(message, latest)
        if tokens is not None and should_compact(tokens, window, self.settings):
            return await self._run("threshold", False)
        return None

    def _context_tokens(self, message: Any, latest: CompactionEntry | None) -> int | None:
        direct = calculate_context_tokens(message.usage) if message.usage is not None else 0
        if message.stop_reason != "error" and direct > 0:
            return direct
        messages = self.agent.state.messages
        estimate = estimate_context_tokens(messages)
        if estimate.last_usage_index is None:
            return None
        source: Any = messages[estimate.last_usage_index]
        if latest is not None and source.timestamp <= _iso_ms(latest.timestamp):
            return None  # kept pre-compaction usage describes the old context
        return estimate.tokens

    def _drop_failed_answer(self) -> None:
        messages = self.agent.state.messages
        if messages and getattr(messages[-1], "role", None) == "assistant":
            self.agent.state.messages = messages[:-1]

    def _note(self, outcome: AutoCompaction) -> AutoCompaction:
        self.notices.append(outcome.notice)
        return outcome

    async def _run(self, reason: str, retry: bool) -> AutoCompaction | None:
        preparation = prepare_compaction(self.manager.get_branch(), self.settings)
        if preparation is None:
            return None
        try:
            request = summary_request(self.agent, self.signal, timeout=self.timeout)
            result = await compact(preparation, request, None)
        except Exception as exc:  # the summarizing model failed: the run's answer stands
            failed = "Context overflow recovery failed" if reason == "overflow" else "Auto-compaction failed"
            return self._note(AutoCompaction(f"{failed}: {exc}"))
        entry_id = self.manager.append_compaction(
            result.summary,
            result.first_kept_entry_id,
            result.tokens_before,
            result.details,
            from_hook=False,
            usage=result.usage,
        )
        self.agent.state.messages = self.manager.build_session_context().messages
        if retry:
            self._drop_failed_answer()
        entry = self.manager.get_entry(entry_id)
        assert isinstance(entry, CompactionEntry)
        return self._note(AutoCompaction(describe(entry, reason), retry))
