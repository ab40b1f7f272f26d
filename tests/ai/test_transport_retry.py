"""A request whose connection dies before the server answered is resent once, silently, on a
fresh connection (real HTTP over the loopback server, which can hang up without answering), and
what a request's timeouts are and how a timeout is worded."""

from __future__ import annotations

import httpx
import pytest
from loopback import LoopbackServer, Reply, hang_up, json_reply, sse

from pi_notebook.ai.abort import AbortController, AbortError
from pi_notebook.ai.http import (
    DEFAULT_TIMEOUT,
    ProviderError,
    died_before_response,
    open_stream,
    request_timeout,
    transport_error_text,
)
from pi_notebook.ai.options import StreamOptions

OK = sse({"ok": True})


async def _post(client: httpx.AsyncClient, server: LoopbackServer, **options: object) -> bytes:
    response = await open_stream(client, f"{server.url}/v1/x", {}, {"ping": 1}, StreamOptions(**options))  # type: ignore[arg-type]
    body = await response.aread()
    await response.aclose()
    return body


async def test_a_connection_closed_without_an_answer_is_resent_once(loopback: LoopbackServer) -> None:
    loopback.queue(hang_up())
    loopback.queue_sse([OK])
    async with httpx.AsyncClient() as client:
        body = await _post(client, loopback)
    assert b'data: {"ok":true}' in body
    assert [r.json for r in loopback.requests] == [{"ping": 1}, {"ping": 1}]


async def test_a_kept_alive_connection_the_server_dropped_is_resent_on_a_fresh_one(
    loopback: LoopbackServer,
) -> None:
    """The llama-server case: the pool reuses a connection the server closes as the request
    arrives; the resend must not go over the dead connection."""
    loopback.queue_sse([OK])
    loopback.queue(hang_up())
    loopback.queue_sse([OK])
    async with httpx.AsyncClient() as client:
        await _post(client, loopback)
        body = await _post(client, loopback)  # reuses the first connection, which hangs up
    assert b'data: {"ok":true}' in body
    assert len(loopback.requests) == 3


async def test_a_second_hang_up_is_reported(loopback: LoopbackServer) -> None:
    loopback.queue(hang_up(), hang_up())
    loopback.queue_sse([OK])
    async with httpx.AsyncClient() as client:
        with pytest.raises(ProviderError) as caught:
            await _post(client, loopback)
    assert str(caught.value) == (
        "Connection error: RemoteProtocolError: Server disconnected without sending a response."
    )
    assert caught.value.status is None
    assert len(loopback.requests) == 2, "one silent resend, not more"


async def test_the_resend_does_not_use_up_max_retries(loopback: LoopbackServer) -> None:
    """With Pi's HTTP retry on (``max_retries``), the resend comes first and is not counted."""
    loopback.queue(hang_up(), hang_up(), hang_up())
    loopback.queue_sse([OK])
    async with httpx.AsyncClient() as client:
        body = await _post(client, loopback, max_retries=1)
    assert b"ok" in body
    assert len(loopback.requests) == 4


async def test_a_timeout_after_the_request_was_sent_is_not_resent(loopback: LoopbackServer) -> None:
    loopback.queue(Reply(head_delay=2.0, parts=[OK]))
    loopback.queue_sse([OK])
    async with httpx.AsyncClient() as client:
        with pytest.raises(ProviderError) as caught:
            await _post(client, loopback, timeout_ms=300)
    assert "ReadTimeout" in str(caught.value)
    assert len(loopback.requests) == 1


async def test_a_response_that_started_is_not_resent(loopback: LoopbackServer) -> None:
    """A 5xx is an answer: it goes to Pi's HTTP retry (off by default), not to the resend."""
    loopback.queue(json_reply(503, {"error": {"message": "busy"}}))
    loopback.queue_sse([OK])
    async with httpx.AsyncClient() as client:
        with pytest.raises(ProviderError) as caught:
            await _post(client, loopback)
    assert caught.value.status == 503
    assert len(loopback.requests) == 1


async def test_an_aborted_request_is_not_resent(loopback: LoopbackServer) -> None:
    controller = AbortController()
    loopback.queue(hang_up())
    loopback.queue_sse([OK])

    class Aborting(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            controller.abort()  # the user stops the run while the request is out
            return await super().handle_async_request(request)

    async with httpx.AsyncClient(transport=Aborting()) as client:
        with pytest.raises(AbortError):
            await _post(client, loopback, signal=controller.signal)
    assert len(loopback.requests) == 1


def test_only_failures_before_the_response_count() -> None:
    request = httpx.Request("POST", "http://127.0.0.1/")
    assert died_before_response(httpx.RemoteProtocolError("Server disconnected without sending a response."))
    assert died_before_response(httpx.ReadError("[Errno 104] Connection reset by peer", request=request))
    assert died_before_response(httpx.ConnectError("[Errno 111] Connection refused", request=request))
    assert not died_before_response(httpx.RemoteProtocolError("illegal status line: b'HTP/1.1'"))
    assert not died_before_response(httpx.ReadTimeout("timed out", request=request))
    assert not died_before_response(httpx.ConnectTimeout("timed out", request=request))


def test_timeout_ms_bounds_every_wait_but_connecting_stays_short() -> None:
    """``timeout_ms`` is an idle timeout for each phase; a long one (``--timeout 0`` is about 25
    days) must not let a connection attempt to a host that drops packets hang as long."""
    assert request_timeout(StreamOptions()) == DEFAULT_TIMEOUT
    assert request_timeout(StreamOptions(timeout_ms=2500)) == httpx.Timeout(2.5)
    days = request_timeout(StreamOptions(timeout_ms=2**31 - 1))
    assert (days.connect, days.read) == (DEFAULT_TIMEOUT.connect, 2147483.647)


def test_each_kind_of_timeout_says_what_did_not_happen_in_time() -> None:
    request = httpx.Request("POST", "http://127.0.0.1/")
    timeout = httpx.Timeout(5.0, connect=2.0)
    texts = [
        transport_error_text(kind("timed out", request=request), timeout)
        for kind in (httpx.ConnectTimeout, httpx.WriteTimeout, httpx.PoolTimeout, httpx.ReadTimeout)
    ]
    assert texts == [
        "Request timed out: could not connect to the server in 2 s (ConnectTimeout)",
        "Request timed out: could not send the request to the server in 5 s (WriteTimeout)",
        "Request timed out: no free connection to the server in 5 s (PoolTimeout)",
        "Request timed out: no answer from the server in 5 s (ReadTimeout)",
    ]
    refused = httpx.ConnectError("[Errno 111] Connection refused", request=request)
    expected = "Connection error: ConnectError: [Errno 111] Connection refused"
    assert transport_error_text(refused, timeout) == expected
