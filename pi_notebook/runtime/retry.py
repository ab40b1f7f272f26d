"""Auto-retry of a failed model call, as Pi's ``AgentSession`` does it (``_prepareRetry``):

* only a failure Pi calls transient (``is_retryable_assistant_error``: overloaded, rate limits,
  5xx, dropped connections, timeouts) and never a context overflow (compaction handles that);
* up to ``max_retries`` retries after ``base_delay_ms * 2**(attempt - 1)``; the failed message
  leaves the agent's context (it stays in the session file) and the agent continues;
* a successful answer ends the episode (``auto_retry_end`` success) and resets the count, so each
  failing call of a long run gets the whole budget; an abort during the wait ends it with
  ``"Retry cancelled"``.

One improvement on Pi: when the server said how long to wait (``Retry-After`` on an HTTP
failure, read from the message's ``failure`` record, not from its text), the wait is that long
if it is longer than the backoff; a server asking for more than ``max_requested_delay_ms`` has
hit a limit and its error stands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..agent import Agent
from ..ai.abort import AbortController
from ..ai.overflow import is_context_overflow
from ..ai.retry import is_retryable_assistant_error, requested_delay_ms, sleep_unless_aborted
from ..ai.types import Model
from .events import AgentSessionEvent, AutoRetryEndEvent, AutoRetryStartEvent
from .settings import RetrySettings

__all__ = ["AutoRetry", "is_retryable", "requested_delay_ms"]


def is_retryable(message: Any, model: Model) -> bool:
    """Transient, and not a context overflow (which compaction handles)."""
    if is_context_overflow(message, model.context_window or 0):
        return False
    return is_retryable_assistant_error(message)


class AutoRetry:
    """The retry state of one session: the attempt count and the wait in progress."""

    def __init__(
        self, agent: Agent, settings: Callable[[], RetrySettings], emit: Callable[[AgentSessionEvent], None]
    ) -> None:
        self.agent = agent
        self.settings = settings
        self.emit = emit
        self.attempt = 0
        self._abort: AbortController | None = None

    @property
    def waiting(self) -> bool:
        return self._abort is not None

    def abort(self) -> None:
        if self._abort is not None:
            self._abort.abort()

    def will_retry(self, messages: Sequence[Any], model: Model) -> bool:
        """``agent_end.will_retry``: the run's last answer is a failure that will be retried."""
        settings = self.settings()
        if not settings.enabled or self.attempt >= settings.max_retries:
            return False
        for message in reversed(messages):
            if getattr(message, "role", None) == "assistant":
                return is_retryable(message, model) and not self._over_limit(message)
        return False

    def _over_limit(self, message: Any) -> bool:
        requested = requested_delay_ms(message)
        return requested is not None and requested > self.settings().max_requested_delay_ms

    def succeeded(self) -> int:
        """An answer came back: the episode's attempt count (0: there was none), now reset."""
        attempt, self.attempt = self.attempt, 0
        return attempt

    def failed(self, error: str | None) -> AutoRetryEndEvent | None:
        """The run ended in an error that is not retried: the end of the episode, if any."""
        if self.attempt == 0:
            return None
        attempt, self.attempt = self.attempt, 0
        return AutoRetryEndEvent(False, attempt, error)

    async def prepare(self, message: Any, model: Model) -> bool:
        """After a failed run: wait and drop the failed message when a retry is due (True)."""
        settings = self.settings()
        if not settings.enabled or not is_retryable(message, model) or self._over_limit(message):
            return False
        self.attempt += 1
        if self.attempt > settings.max_retries:
            self.attempt -= 1  # kept, so the post-run handling reports the whole episode
            return False
        delay_ms = max(settings.backoff_ms(self.attempt), requested_delay_ms(message) or 0)
        error = message.error_message or "Unknown error"
        self.emit(AutoRetryStartEvent(self.attempt, settings.max_retries, delay_ms, error))
        messages = self.agent.state.messages
        if messages and getattr(messages[-1], "role", None) == "assistant":
            self.agent.state.messages = messages[:-1]
        controller = self._abort = AbortController()
        try:
            woke = await sleep_unless_aborted(delay_ms / 1000.0, controller.signal)
        except BaseException:  # the caller was cancelled (a kernel interrupt): the episode ends
            woke = False
            raise
        finally:
            self._abort = None
            if not woke:
                attempt, self.attempt = self.attempt, 0
                self.emit(AutoRetryEndEvent(False, attempt, "Retry cancelled"))
        return woke
