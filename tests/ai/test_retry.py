"""Assistant-level retry (Pi's retry.test.ts)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from pi_notebook.ai.abort import AbortController
from pi_notebook.ai.faux import faux_assistant_message
from pi_notebook.ai.retry import (
    RetryCallbacks,
    RetryPolicy,
    is_retryable_assistant_error,
    retry_assistant_call,
)
from pi_notebook.ai.types import AssistantMessage, message_text


def failed(message: str) -> AssistantMessage:
    return faux_assistant_message("", stop_reason="error", error_message=message)


# --- classification ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        # explicit provider retry guidance
        "An error occurred while processing your request. You can retry your request, or contact us "
        "through our help center at help.openai.com if the error persists. Please include the request "
        "ID req_******** in your message.",
        '{"message":"The system encountered an unexpected error during processing. Try your request again."}',
        "ResourceExhausted: Worker local total request limit reached (288/48)",
        # Bun fetch socket drop
        "The socket connection was closed unexpectedly. For more information, pass `verbose: true` in the "
        "second argument to fetch()",
        # DNS failures
        "The pending stream has been canceled (caused by: getaddrinfo ENOTFOUND "
        "bedrock-runtime.us-east-1.amazonaws.com)",
        "connect ENOTFOUND api.example.com",
        "EAI_AGAIN api.example.com",
        "getaddrinfo failed for api.example.com",
        # early stream ends and the rest of the transient list
        "OpenAI Responses stream ended before a terminal response event",
        "overloaded_error",
        "524 status code (no body)",
        "Rate-limit hit",
        "503 Service Unavailable",
        "Connection error: peer reset",
        "Request timed out",
        "terminated",
        "websocket closed",
        "Anthropic stream ended before message_stop",
        "Server requested 120s retry delay (max: 60s). 429 slow down",
        "Provider returned error",
    ],
)
def test_transient_errors_are_retryable(message: str) -> None:
    assert is_retryable_assistant_error(failed(message)) is True


@pytest.mark.parametrize(
    "message",
    [
        "429 quota exceeded",
        "insufficient_quota: You exceeded your current quota",
        "429 GoUsageLimitError",
        "FreeUsageLimitError: daily limit",
        "Monthly usage limit reached; enable available balance usage",
        "503 out of budget",
        "Billing hard limit reached (500)",
        "invalid api key",  # not transient either
    ],
)
def test_limits_and_permanent_errors_are_not_retryable(message: str) -> None:
    assert is_retryable_assistant_error(failed(message)) is False


def test_only_error_messages_with_text_are_retryable() -> None:
    assert is_retryable_assistant_error(faux_assistant_message("not an error")) is False
    assert (
        is_retryable_assistant_error(faux_assistant_message("", stop_reason="aborted", error_message="503"))
        is False
    )
    assert is_retryable_assistant_error(faux_assistant_message("", stop_reason="error")) is False


# --- retry_assistant_call ---------------------------------------------------------------------------------

ENABLED = RetryPolicy(enabled=True, max_retries=3, base_delay_ms=0)
DISABLED = RetryPolicy(enabled=False, max_retries=3, base_delay_ms=0)


class Recorder:
    """Callbacks that record their calls; one of each kind is async to prove both work."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def scheduled(self, attempt: int, max_attempts: int, delay_ms: int, error: str) -> None:
        self.calls.append(("scheduled", attempt, max_attempts, delay_ms, error))

    async def attempt_start(self) -> None:
        self.calls.append(("attempt-start",))

    async def finished(self, success: bool, attempt: int, final_error: str | None) -> None:
        self.calls.append(("finished", success, attempt, final_error))

    def hooks(self) -> RetryCallbacks:
        return RetryCallbacks(self.scheduled, self.attempt_start, self.finished)

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        return [c[1:] for c in self.calls if c[0] == kind]


def scripted(*responses: AssistantMessage) -> tuple[Any, list[int]]:
    count = [0]

    async def produce() -> AssistantMessage:
        count[0] += 1
        return responses[min(count[0], len(responses)) - 1]

    return produce, count


async def test_returns_a_success_at_once() -> None:
    produce, count = scripted(faux_assistant_message("ok"))
    result = await retry_assistant_call(produce, ENABLED, None)
    assert message_text(result) == "ok"
    assert count == [1]


async def test_never_retries_an_aborted_message() -> None:
    produce, count = scripted(faux_assistant_message("", stop_reason="aborted"))
    rec = Recorder()
    result = await retry_assistant_call(produce, ENABLED, None, rec.hooks())
    assert result.stop_reason == "aborted"
    assert count == [1]
    assert rec.calls == []


async def test_does_not_retry_quota_errors() -> None:
    produce, count = scripted(failed("insufficient_quota"))
    rec = Recorder()
    result = await retry_assistant_call(produce, ENABLED, None, rec.hooks())
    assert result.stop_reason == "error"
    assert count == [1]
    assert rec.calls == []


async def test_retries_up_to_max_retries_then_returns_the_last_error() -> None:
    produce, count = scripted(failed("terminated"))
    rec = Recorder()
    result = await retry_assistant_call(produce, ENABLED, None, rec.hooks())
    assert result.stop_reason == "error"
    assert count == [4]  # 1 initial + 3 retries
    assert rec.of("scheduled") == [(1, 3, 0, "terminated"), (2, 3, 0, "terminated"), (3, 3, 0, "terminated")]
    assert rec.of("finished") == [(False, 3, "terminated")]


async def test_stops_retrying_once_a_call_succeeds() -> None:
    produce, count = scripted(failed("terminated"), failed("terminated"), faux_assistant_message("recovered"))
    rec = Recorder()
    result = await retry_assistant_call(produce, ENABLED, None, rec.hooks())
    assert message_text(result) == "recovered"
    assert count == [3]
    assert rec.of("finished") == [(True, 2, None)]


async def test_an_aborted_retried_call_is_reported_unsuccessful() -> None:
    produce, count = scripted(failed("terminated"), faux_assistant_message("", stop_reason="aborted"))
    rec = Recorder()
    result = await retry_assistant_call(produce, ENABLED, None, rec.hooks())
    assert result.stop_reason == "aborted"
    assert count == [2]
    assert rec.of("finished") == [(False, 1, None)]


@pytest.mark.parametrize("policy", [DISABLED, None, RetryPolicy(max_retries=0, base_delay_ms=0)])
async def test_disabled_or_missing_policy_means_one_call(policy: RetryPolicy | None) -> None:
    produce, count = scripted(failed("terminated"))
    rec = Recorder()
    result = await retry_assistant_call(produce, policy, None, rec.hooks())
    assert result.stop_reason == "error"
    assert count == [1]
    assert rec.calls == []


async def test_callback_order_around_each_retry() -> None:
    events: list[str] = []
    responses = [failed("terminated"), failed("terminated"), faux_assistant_message("recovered")]

    async def produce() -> AssistantMessage:
        events.append(f"produce:{len([e for e in events if e.startswith('produce')])}")
        return responses[len([e for e in events if e.startswith("produce")]) - 1]

    callbacks = {
        "on_retry_scheduled": lambda attempt, *_: events.append(f"retry:{attempt}"),
        "on_retry_attempt_start": lambda: events.append("attempt-start"),
    }
    result = await retry_assistant_call(produce, ENABLED, None, callbacks)
    assert message_text(result) == "recovered"
    assert events == [
        "produce:0",
        "retry:1",
        "attempt-start",
        "produce:1",
        "retry:2",
        "attempt-start",
        "produce:2",
    ]


async def test_backoff_doubles_from_the_base_delay() -> None:
    produce, _ = scripted(failed("503"), failed("503"), faux_assistant_message("ok"))
    rec = Recorder()
    started = time.monotonic()
    await retry_assistant_call(produce, RetryPolicy(max_retries=3, base_delay_ms=40), None, rec.hooks())
    assert [s[2] for s in rec.of("scheduled")] == [40, 80]
    assert time.monotonic() - started >= 0.115


async def test_abort_during_the_backoff_returns_an_aborted_copy_of_the_error() -> None:
    controller = AbortController()
    produce, count = scripted(failed("terminated"))
    rec = Recorder()
    task = asyncio.ensure_future(
        retry_assistant_call(
            produce, RetryPolicy(max_retries=5, base_delay_ms=10_000), controller.signal, rec.hooks()
        )
    )
    for _ in range(100):
        if rec.of("scheduled"):
            break
        await asyncio.sleep(0.01)
    started = time.monotonic()
    controller.abort()
    result = await asyncio.wait_for(task, 2)
    assert time.monotonic() - started < 0.5
    assert result.stop_reason == "aborted"
    assert result.error_message is None
    assert count == [1]
    assert rec.of("finished") == [(False, 1, "terminated")]
    assert rec.of("attempt-start") == []


async def test_an_already_aborted_signal_ends_at_the_first_backoff() -> None:
    controller = AbortController()
    controller.abort()
    produce, count = scripted(failed("terminated"))
    result = await retry_assistant_call(produce, RetryPolicy(base_delay_ms=10_000), controller.signal)
    assert result.stop_reason == "aborted"
    assert count == [1]
