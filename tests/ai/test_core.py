"""EventStream, AbortController/AbortSignal, Pi's JSON round trip of the types, and
the never-raising entry points (docs/design.md, deviation 4)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_notebook.ai import (
    AbortController,
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    DoneEvent,
    ErrorEvent,
    EventStream,
    Model,
    StartEvent,
    ToolResultMessage,
    UserMessage,
    complete,
    complete_simple,
    stream,
    unregister_api_providers,
)
from pi_notebook.ai.abort import AbortError, CancelScope, run_abortable
from pi_notebook.ai.registry import ApiProvider, register_api_provider

# --- EventStream -------------------------------------------------------------------------


def _int_stream() -> EventStream[int, str]:
    return EventStream(lambda e: e < 0, lambda e: f"result:{e}")


async def test_completing_event_is_delivered_and_resolves_result() -> None:
    s = _int_stream()
    s.push(1)
    s.push(2)
    s.push(-1)
    s.push(3)  # ignored: the stream is done
    assert [e async for e in s] == [1, 2, -1]
    assert await s.result() == "result:-1"


async def test_consumer_waiting_is_woken_by_push_and_end() -> None:
    s = _int_stream()
    received: list[int] = []

    async def consume() -> None:
        async for e in s:
            received.append(e)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0)
    s.push(5)
    await asyncio.sleep(0)
    assert received == [5]
    s.end("explicit")
    await asyncio.wait_for(task, 1)
    assert await s.result() == "explicit"


async def test_first_resolution_wins() -> None:
    s = _int_stream()
    s.push(-7)
    s.end("later")
    assert await s.result() == "result:-7"


async def test_result_without_completion_never_resolves() -> None:
    s = _int_stream()
    s.end()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(s.result(), 0.05)


def test_push_works_without_a_running_loop() -> None:
    s = AssistantMessageEventStream()
    message = AssistantMessage()
    s.push(StartEvent(partial=message))
    s.push(DoneEvent(reason="stop", message=message))

    async def drain() -> tuple[list[str], AssistantMessage]:
        return [e.type async for e in s], await s.result()

    types, result = asyncio.run(drain())
    assert types == ["start", "done"]
    assert result is message


# --- abort -------------------------------------------------------------------------------


async def test_abort_signal_semantics() -> None:
    controller = AbortController()
    calls: list[str] = []
    remove = controller.signal.add_listener(lambda: calls.append("a"))
    controller.signal.add_listener(lambda: calls.append("b"))
    remove()
    waiter = asyncio.create_task(controller.signal.wait())
    await asyncio.sleep(0)
    assert not waiter.done()
    controller.abort("why")
    controller.abort("again")  # idempotent
    await asyncio.wait_for(waiter, 1)
    assert calls == ["b"]
    assert controller.signal.aborted
    assert controller.signal.reason == "why"
    late: list[int] = []
    controller.signal.add_listener(lambda: late.append(1))  # already aborted: runs at once
    assert late == [1]


async def test_run_abortable_cancels_the_work() -> None:
    controller = AbortController()
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def work() -> None:
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    task = asyncio.create_task(run_abortable(work(), controller.signal))
    await started.wait()
    controller.abort()
    with pytest.raises(AbortError):
        await task
    assert cancelled.is_set()


async def test_run_abortable_runs_in_the_callers_task() -> None:
    """No task of its own: that would cost two event-loop iterations per request."""
    seen: list[asyncio.Task[Any] | None] = []

    async def work() -> None:
        seen.append(asyncio.current_task())

    await run_abortable(work(), AbortController().signal)
    assert seen == [asyncio.current_task()]


async def test_abort_after_the_works_last_await_is_still_an_abort() -> None:
    controller = AbortController()

    async def work() -> str:
        await asyncio.sleep(0)
        controller.abort()  # from inside the work, after its last await
        return "done"

    with pytest.raises(AbortError):
        await run_abortable(work(), controller.signal)
    await asyncio.sleep(0)  # no cancellation is left pending for the caller's next await
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_cancel_scope_leaves_a_foreign_cancellation_alone() -> None:
    """The caller's own cancellation passes through as CancelledError, even when the scope
    fired too; only the scope's own becomes its error."""
    started = asyncio.Event()

    async def guarded() -> None:
        async with CancelScope(lambda: RuntimeError("scope")) as scope:
            started.set()
            try:
                await asyncio.sleep(10)
            finally:
                scope.cancel()

    task = asyncio.create_task(guarded())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancel_scope_keeps_the_outcome_of_work_that_caught_its_cancellation() -> None:
    async def stubborn() -> str:
        async with CancelScope(lambda: RuntimeError("scope")) as scope:
            asyncio.get_running_loop().call_soon(scope.cancel)
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                return "finished anyway"
        return "not reached"

    assert await stubborn() == "finished anyway"
    await asyncio.sleep(0)


async def test_cancel_scope_turns_its_own_cancellation_into_its_error() -> None:
    async def slow() -> None:
        async with CancelScope(lambda: RuntimeError("too slow")) as scope:
            asyncio.get_running_loop().call_later(0.01, scope.cancel)
            await asyncio.sleep(10)

    with pytest.raises(RuntimeError, match="too slow"):
        await slow()


# --- JSON round trip ---------------------------------------------------------------------


def test_pi_json_round_trip() -> None:
    pi_json: dict[str, Any] = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
            {"type": "text", "text": "hi", "textSignature": "t"},
            {"type": "toolCall", "id": "c1", "name": "echo", "arguments": {"v": 1}},
        ],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude",
        "usage": {
            "input": 1,
            "output": 2,
            "cacheRead": 3,
            "cacheWrite": 4,
            "cacheWrite1h": 1,
            "totalTokens": 10,
            "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.3},
        },
        "stopReason": "toolUse",
        "timestamp": 1700000000000,
    }
    message = AssistantMessage.model_validate(pi_json)
    assert message.usage.cache_write1h == 1
    assert message.content[0].thinking_signature == "sig"  # type: ignore[union-attr]
    assert message.model_dump() == pi_json
    result = ToolResultMessage.model_validate(
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "echo",
            "content": [],
            "isError": False,
            "timestamp": 1,
            "details": {"x": 1},
        }
    )
    assert result.model_dump()["toolCallId"] == "c1"
    context = Context.model_validate(
        {"systemPrompt": "s", "messages": [pi_json, {"role": "user", "content": "q", "timestamp": 2}]}
    )
    assert isinstance(context.messages[0], AssistantMessage)
    assert isinstance(context.messages[1], UserMessage)


def test_events_dump_to_pi_json() -> None:
    message = AssistantMessage(stop_reason="error", error_message="x")
    assert ErrorEvent(reason="error", error=message).to_dict()["error"]["errorMessage"] == "x"


# --- entry points never raise -----------------------------------------------------------


def _model(**overrides: Any) -> Model:
    data: dict[str, Any] = {
        "id": "m",
        "api": "openai-completions",
        "provider": "openai",
        "base_url": "https://api.example.invalid/v1",
    }
    data.update(overrides)
    return Model(**data)


async def test_unknown_api_is_an_error_event() -> None:
    events = [e async for e in stream(_model(api="nope"), Context())]
    assert [e.type for e in events] == ["error"]
    assert events[0].error.error_message == "No API provider registered for api: nope"


async def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    message = await complete_simple(_model(), Context(messages=[UserMessage(content="hi")]))
    assert message.stop_reason == "error"
    assert "OPENAI_API_KEY" in (message.error_message or "")


async def test_provider_that_raises_in_setup_becomes_an_error_event() -> None:
    def broken(model: Model, context: Context, options: Any) -> AssistantMessageEventStream:
        raise RuntimeError("setup exploded")

    register_api_provider(ApiProvider(api="broken-api", stream=broken, stream_simple=broken), "test-broken")
    try:
        message = await complete(_model(api="broken-api", provider="local"), Context())
    finally:
        unregister_api_providers("test-broken")
    assert (message.stop_reason, message.error_message) == ("error", "setup exploded")


async def test_invalid_options_become_an_error_event() -> None:
    message = await complete(_model(api="nope"), Context(), {"no_such_option": 1})
    assert message.stop_reason == "error"
    assert "no_such_option" in (message.error_message or "")
