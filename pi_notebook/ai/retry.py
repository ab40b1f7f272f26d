"""Retrying a whole assistant call on transient errors (Pi's ``utils/retry.ts``).

:func:`is_retryable_assistant_error` classifies a failed message: overloads, rate limits, 5xx,
dropped connections and streams that ended early are transient; quota, billing and
subscription limits are not. :func:`retry_assistant_call` runs a call under a
:class:`RetryPolicy` with exponential backoff (``base_delay_ms * 2**(attempt - 1)``); an
abort during the backoff returns the last error re-labelled ``aborted``.

One improvement on Pi, shared with the session's auto-retry: when the server said how long to
wait (:func:`requested_delay_ms`, the ``Retry-After`` of the failed request, read from the
message's ``failure`` record), the wait is at least that long; a server asking for more than
``max_requested_delay_ms`` has hit a limit, and its error is returned without a retry.

(HTTP-level retries of a single request live in :mod:`pi_notebook.ai.http`.)
"""

from __future__ import annotations

import asyncio
import inspect
import math
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .abort import AbortSignal
from .failures import failure_of
from .types import AssistantMessage

__all__ = [
    "RetryCallbacks",
    "RetryPolicy",
    "is_retryable_assistant_error",
    "requested_delay_ms",
    "retry_assistant_call",
    "sleep_unless_aborted",
]

_NOT_RETRYABLE = re.compile(
    "|".join(
        (
            # OpenCode Go/free-tier subscription limits (429 JSON types), not throttles
            "GoUsageLimitError",
            "FreeUsageLimitError",
            "Monthly usage limit reached",
            "available balance",
            # quota, budget and billing exhaustion
            "insufficient_quota",
            "out of budget",
            "quota exceeded",
            "billing",
        )
    ),
    re.IGNORECASE,
)

_RETRYABLE = re.compile(
    "|".join(
        (
            # load, status codes, server-side failures
            "overloaded",
            "rate.?limit",
            "too many requests",
            "429",
            "500",
            "502",
            "503",
            "504",
            "524",
            "service.?unavailable",
            "server.?error",
            "internal.?error",
            "provider.?returned.?error",
            # network, proxy and transport failures
            "network.?error",
            "connection.?error",
            "connection.?refused",
            "connection.?lost",
            "other side closed",
            "fetch failed",
            "getaddrinfo",
            "ENOTFOUND",
            "EAI_AGAIN",
            "upstream.?connect",
            "reset before headers",
            "socket hang up",
            "socket connection was closed",
            "timed? out",
            "timeout",
            "terminated",
            "websocket.?closed",
            "websocket.?error",
            # streams that ended before their terminal event
            "ended without",
            "stream ended before message_stop",
            "stream ended before a terminal response event",
            "http2 request did not get a response",
            # an over-long server-requested delay, left to this outer policy
            "retry delay",
            # explicit retry guidance from providers
            "you can retry your request",
            "try your request again",
            "please retry your request",
            "ResourceExhausted",
        )
    ),
    re.IGNORECASE,
)


def is_retryable_assistant_error(message: Any) -> bool:
    """True for an ``error`` message whose text looks transient (and not like a quota limit)."""
    error = getattr(message, "error_message", None)
    if getattr(message, "stop_reason", None) != "error" or not error:
        return False
    if _NOT_RETRYABLE.search(error):
        return False
    return _RETRYABLE.search(error) is not None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    enabled: bool = True
    max_retries: int = 3
    """Retries after the first call (0 = none)."""
    base_delay_ms: int = 2000
    """Delay before retry ``n`` is ``base_delay_ms * 2**(n - 1)``, or the server's ``Retry-After``
    when that is longer."""
    max_requested_delay_ms: int = 60_000
    """A server asking for a longer wait has hit a limit: its error is returned, not retried."""


def requested_delay_ms(message: Any) -> int | None:
    """The wait the server asked for with the failed request, in milliseconds (``None``: it did
    not say, or the message has no ``failure`` record)."""
    failure = failure_of(message)
    if failure is None or failure.retry_after_s is None:
        return None
    return math.ceil(failure.retry_after_s * 1000)


@dataclass(frozen=True, slots=True)
class RetryCallbacks:
    """Optional hooks, sync or async (awaited in order).

    ``on_retry_scheduled(attempt, max_attempts, delay_ms, error_message)`` before each
    backoff; ``on_retry_attempt_start()`` after it, right before the retried call;
    ``on_retry_finished(success, attempt, final_error)`` once at the end if anything was
    retried (``final_error`` is ``None`` unless retries were exhausted or the backoff was
    aborted).
    """

    on_retry_scheduled: Callable[[int, int, int, str], Any] | None = None
    on_retry_attempt_start: Callable[[], Any] | None = None
    on_retry_finished: Callable[[bool, int, str | None], Any] | None = None


async def _call(callback: Callable[..., Any] | None, *args: Any) -> None:
    if callback is not None:
        result = callback(*args)
        if inspect.isawaitable(result):
            await result


async def sleep_unless_aborted(seconds: float, signal: AbortSignal | None) -> bool:
    """Sleep unless ``signal`` fires first; returns False when aborted (at once if it already
    was). A cancellation of the caller that is not the signal's propagates."""
    if signal is None:
        await asyncio.sleep(seconds)
        return True
    if signal.aborted:
        return False
    sleeper = asyncio.ensure_future(asyncio.sleep(seconds))
    remove = signal.add_listener(sleeper.cancel)
    try:
        await sleeper
    except asyncio.CancelledError:
        if not signal.aborted:
            raise
        return False
    finally:
        remove()
    return True


def _callbacks(callbacks: RetryCallbacks | Mapping[str, Any] | None) -> RetryCallbacks:
    if callbacks is None:
        return RetryCallbacks()
    if isinstance(callbacks, Mapping):
        return RetryCallbacks(**callbacks)
    return callbacks


async def retry_assistant_call(
    produce: Callable[[], Awaitable[AssistantMessage]],
    policy: RetryPolicy | None = None,
    signal: AbortSignal | None = None,
    callbacks: RetryCallbacks | Mapping[str, Any] | None = None,
) -> AssistantMessage:
    """Call ``produce()`` and retry it on transient errors.

    Success and aborts return at once (an abort is never retried); a non-retryable error
    or an exhausted budget returns the last error message. ``policy=None`` or a disabled
    policy means exactly one call.
    """
    hooks = _callbacks(callbacks)
    max_attempts = policy.max_retries if policy is not None and policy.enabled else 0
    base_delay_ms = policy.base_delay_ms if policy is not None else 0
    most_ms = policy.max_requested_delay_ms if policy is not None else 0
    attempt = 0
    retried = False
    while True:
        response = await produce()
        if response.stop_reason == "aborted":
            if retried:
                await _call(hooks.on_retry_finished, False, attempt, None)
            return response
        if response.stop_reason != "error":
            if retried:
                await _call(hooks.on_retry_finished, True, attempt, None)
            return response
        requested = requested_delay_ms(response) or 0
        if attempt >= max_attempts or not is_retryable_assistant_error(response) or requested > most_ms:
            if retried:
                await _call(hooks.on_retry_finished, False, attempt, response.error_message)
            return response
        attempt += 1
        retried = True
        error = response.error_message or "Unknown error"
        delay_ms = max(base_delay_ms * 2 ** (attempt - 1), requested)
        await _call(hooks.on_retry_scheduled, attempt, max_attempts, delay_ms, error)
        if not await sleep_unless_aborted(delay_ms / 1000, signal):
            await _call(hooks.on_retry_finished, False, attempt, error)
            # the same shape as a stream that was aborted
            return response.model_copy(update={"stop_reason": "aborted", "error_message": None})
        await _call(hooks.on_retry_attempt_start)
