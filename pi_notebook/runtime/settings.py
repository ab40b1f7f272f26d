"""The settings an ``AgentSession`` runs with: Pi's ``retry`` and ``compaction`` sections of
``settings.json``, as values (Pi's defaults: retry on, 3 retries from 2 s; compaction on,
reserve 16,384 tokens, keep 20,000)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..session import CompactionSettings

__all__ = ["AgentSessionSettings", "RetrySettings"]


@dataclass(frozen=True, slots=True)
class RetrySettings:
    """Auto-retry of a failed model call after a transient error."""

    enabled: bool = True
    max_retries: int = 3
    """Retries after the failed call (Pi's ``maxRetries``)."""
    base_delay_ms: int = 2000
    """The wait before the first retry, doubled for each further one (Pi's ``baseDelayMs``)."""
    max_requested_delay_ms: int = 60_000
    """A server whose ``Retry-After`` asks for longer than this has hit a limit, not a hiccup:
    its error stands and nothing is retried (Pi has no such rule: it ignores ``Retry-After``)."""

    def backoff_ms(self, attempt: int) -> int:
        """Pi's exponential backoff before retry number ``attempt`` (1-based)."""
        return int(self.base_delay_ms * 2 ** (attempt - 1))


@dataclass(frozen=True, slots=True)
class AgentSessionSettings:
    retry: RetrySettings = field(default_factory=RetrySettings)
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    summary_timeout_ms: int | None = None
    """The idle timeout of a summarizing request (compaction, branch summaries) outside a run;
    inside one, the run's own ``timeout_ms`` applies. ``None``: the provider default."""
    default_thinking_level: str = "medium"
    """Where a switch from a model without reasoning to one with it starts (Pi's
    ``defaultThinkingLevel``); a level set on a reasoning model becomes the new default."""
