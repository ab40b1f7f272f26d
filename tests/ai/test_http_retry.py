"""Pi's provider-retry.test.ts, over real HTTP: ``open_stream`` against the loopback server."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from loopback import LoopbackServer, json_reply, sse

from pi_notebook.ai.abort import AbortController, AbortError
from pi_notebook.ai.http import ProviderError, open_stream
from pi_notebook.ai.options import StreamOptions

RATE_LIMITED = {"error": {"type": "rate_limit_error", "message": "slow down"}}


async def _post(server: LoopbackServer, **options: object) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        response = await open_stream(client, f"{server.url}/v1/x", {}, {"ping": 1}, StreamOptions(**options))  # type: ignore[arg-type]
        await response.aread()  # the body stays readable after the client closes
        await response.aclose()
        return response


async def test_retries_a_429_after_the_requested_retry_after_ms(loopback: LoopbackServer) -> None:
    loopback.queue(json_reply(429, RATE_LIMITED, headers={"retry-after-ms": "300"}))
    loopback.queue_sse([sse({"ok": True})])
    started = time.monotonic()
    response = await _post(loopback, max_retries=1)
    elapsed = time.monotonic() - started
    assert response.status_code == 200
    assert b'data: {"ok":true}' in response.content
    assert len(loopback.requests) == 2
    assert loopback.requests[1].json == {"ping": 1}
    assert elapsed >= 0.29, "the retry must wait for the server-requested delay"


async def test_does_not_retry_an_error_marked_x_should_retry_false(loopback: LoopbackServer) -> None:
    loopback.queue(json_reply(429, RATE_LIMITED, headers={"x-should-retry": "false"}))
    loopback.queue_sse([sse({"ok": True})])
    with pytest.raises(ProviderError) as caught:
        await _post(loopback, max_retries=2)
    assert caught.value.status == 429
    assert str(caught.value) == "429 slow down"  # the OpenAI SDK's "<status> <error.message>"
    assert len(loopback.requests) == 1


async def test_rejects_a_server_delay_above_max_retry_delay_ms(loopback: LoopbackServer) -> None:
    loopback.queue(json_reply(429, RATE_LIMITED, headers={"retry-after": "277403"}))
    started = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        await _post(loopback, max_retries=1, max_retry_delay_ms=1000)
    assert time.monotonic() - started < 1.0
    assert str(caught.value).startswith("Server requested 277403s retry delay (max: 1s). 429 ")
    assert len(loopback.requests) == 1


async def test_reports_server_delays_rounded_up_to_whole_seconds(loopback: LoopbackServer) -> None:
    loopback.queue(json_reply(503, {"error": {"message": "busy"}}, headers={"retry-after-ms": "1500"}))
    with pytest.raises(ProviderError, match=r"^Server requested 2s retry delay \(max: 1s\)\. 503 busy$"):
        await _post(loopback, max_retries=1, max_retry_delay_ms=1000)


async def test_max_retry_delay_ms_zero_disables_the_cap(loopback: LoopbackServer) -> None:
    # With a 100 ms cap the same 300 ms request fails at once ...
    loopback.queue(json_reply(429, RATE_LIMITED, headers={"retry-after": "0.3"}))
    with pytest.raises(ProviderError, match="Server requested 1s retry delay"):
        await _post(loopback, max_retries=1, max_retry_delay_ms=100)
    # ... and with the cap disabled it is honoured.
    loopback.queue(json_reply(429, RATE_LIMITED, headers={"retry-after": "0.3"}))
    loopback.queue_sse([sse({"ok": True})])
    started = time.monotonic()
    response = await _post(loopback, max_retries=1, max_retry_delay_ms=0)
    assert response.status_code == 200
    assert time.monotonic() - started >= 0.29
    assert len(loopback.requests) == 3


async def test_abort_during_a_server_requested_delay_raises_abort_error(loopback: LoopbackServer) -> None:
    loopback.queue(json_reply(429, RATE_LIMITED, headers={"retry-after": "277403"}))
    controller = AbortController()
    task = asyncio.ensure_future(
        _post(loopback, max_retries=2, max_retry_delay_ms=0, signal=controller.signal)
    )
    for _ in range(200):  # until the first request has been answered
        if loopback.requests:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # the client is now sleeping out the delay
    assert not task.done()
    started = time.monotonic()
    controller.abort()
    with pytest.raises(AbortError, match=r"^Request aborted$"):
        await asyncio.wait_for(task, 2)
    assert time.monotonic() - started < 0.5
    assert len(loopback.requests) == 1
    # the backoff timer is gone: only this test and the server's connection handler remain
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
    assert [getattr(t.get_coro(), "__qualname__", "?") for t in others] in ([], ["LoopbackServer._handle"])


async def test_a_failure_after_an_abort_raises_abort_error_without_retrying(loopback: LoopbackServer) -> None:
    controller = AbortController()
    controller.abort()
    loopback.queue(json_reply(429, RATE_LIMITED, headers={"x-should-retry": "false"}))
    with pytest.raises(AbortError, match=r"^Request aborted$"):
        await _post(loopback, max_retries=3, signal=controller.signal)
    assert len(loopback.requests) == 1


async def test_an_unparsable_retry_after_date_retries_without_waiting(loopback: LoopbackServer) -> None:
    # JavaScript's Date.parse gives NaN, which setTimeout treats as 0.
    loopback.queue(json_reply(500, {"error": {"message": "oops"}}, headers={"retry-after": "soon-ish"}))
    loopback.queue_sse([sse({"ok": True})])
    started = time.monotonic()
    response = await _post(loopback, max_retries=1)
    assert response.status_code == 200
    assert time.monotonic() - started < 0.4
    assert len(loopback.requests) == 2


async def test_retries_are_off_by_default(loopback: LoopbackServer) -> None:
    loopback.queue(json_reply(429, RATE_LIMITED, headers={"retry-after-ms": "0"}))
    with pytest.raises(ProviderError):
        await _post(loopback)
    assert len(loopback.requests) == 1
