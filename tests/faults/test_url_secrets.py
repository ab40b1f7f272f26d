"""A base URL's credentials never leak: ``https://user:password@host/v1?key=...``.

httpx turns the userinfo into a ``Basic`` ``Authorization`` header, and the query rides on every
request; a hostile server (``faults/echo.py``) echoes both back in its error, the request path
with its query and the headers it received, for each of the four wire APIs. The error message,
the failure record and every event must show none of the password, the query key or the Basic
token, in any form. ``tests/notebook/test_url_secrets_kernel.py`` runs the same end to end.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from faults.echo import EchoServer
from faults.invariants import Recorder
from faults.wire import APIS, WIRES
from loopback import Recorded, Reply

from pi_notebook.agent import Agent
from pi_notebook.ai import stream_simple
from pi_notebook.ai.failures import failure_of

PASSWORD = "PASSWORD-hunter2-77"
QUERY_KEY = "QUERYKEY-SECRET-0042"
BASIC = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
LEAKS = (PASSWORD, QUERY_KEY, BASIC, "hunter2", "SECRET-0042")


def assert_clean(where: str, text: str) -> None:
    found = [leak for leak in LEAKS if leak in text]
    assert not found, f"{found} leaked into {where}: {text[:600]}"


def echo_everything(status: int) -> Reply:
    """An error reply quoting the request line, the full URL and the headers it received."""

    def body(request: Recorded) -> bytes:
        host = request.headers.get("host", "")
        said = f"Bad request {request.path} (http://alice:{PASSWORD}@{host}{request.path}): {request.headers}"
        return json.dumps({"error": {"message": said, "type": "invalid_request_error"}}).encode()

    return Reply(status, [body], {"content-type": "application/json"})


@pytest.fixture
async def echo() -> Any:
    server = EchoServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.mark.parametrize("status", [401, 404])
@pytest.mark.parametrize("api", APIS)
async def test_base_url_credentials_never_reach_the_error(
    api: str, status: int, echo: EchoServer, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, "test-key")
    wire = WIRES[api]
    echo.queue(echo_everything(status))
    base = echo.url.replace("http://", f"http://alice:{PASSWORD}@") + f"/v1?key={QUERY_KEY}"

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        options.http_client = client
        return stream_simple(model, context, options)

    agent = Agent(stream_fn=stream_fn, initial_state={"model": wire.model(base)})
    recorder = Recorder()
    agent.subscribe(recorder)
    await agent.prompt("hi")
    [request] = echo.requests
    assert request.headers["authorization"] == f"Basic {BASIC}", "the userinfo was not sent"
    assert QUERY_KEY in request.path, "the query key was not sent"
    last = agent.state.messages[-1]
    assert last.stop_reason == "error"
    assert "Bad request" in (last.error_message or ""), "the server's words were lost"
    assert_clean("the error message", last.error_message or "")
    failure = failure_of(last)
    assert failure is not None
    assert failure.url is not None
    assert failure.status == status
    assert_clean("the failure record", json.dumps(failure.to_dict()))
    assert "127.0.0.1" in failure.url, "the address itself must stay recognisable"
    for event in recorder.events:
        assert_clean(f"the {event.type} event", json.dumps(event.to_dict(), default=str) + repr(event))
    assert_clean("the transcript", json.dumps([m.model_dump(by_alias=True) for m in agent.state.messages]))


def test_redact_url_keeps_the_address() -> None:
    from pi_notebook.ai.redact import redact, redact_url, url_secrets

    url = f"https://alice:{PASSWORD}@api.example.com:8443/v1/x?key={QUERY_KEY}&alt=sse#frag"
    assert (
        redact_url(url) == "https://[redacted]@api.example.com:8443/v1/x?key=[redacted]&alt=[redacted]#frag"
    )
    assert redact_url("https://api.example.com/v1") == "https://api.example.com/v1"
    text = f"failed: POST {url}. Try again."
    assert redact(text, []) == f"failed: POST {redact_url(url)}. Try again."
    encoded = f"https://alice:{PASSWORD.replace('-', '%2D')}@h/v1?key={QUERY_KEY.replace('-', '%2D')}"
    secrets = url_secrets(encoded)
    assert PASSWORD in secrets
    assert QUERY_KEY in secrets
    assert BASIC in secrets
    assert_clean("a text quoting the decoded values", redact(f"{PASSWORD} and {QUERY_KEY}", secrets))


def test_an_mcp_servers_url_shows_no_credentials() -> None:
    """``%pi mcp`` lists a server by ``describe()``; a failure may quote its URL."""
    from pi_notebook.mcp.config import ServerConfig
    from pi_notebook.mcp.server import describe_failure

    config = ServerConfig(name="s", url=f"http://alice:{PASSWORD}@127.0.0.1:9/mcp?token={QUERY_KEY}")
    listed = config.describe()
    assert_clean("the server's description", listed)
    assert listed.startswith("http://[redacted]@127.0.0.1:9/mcp?token=")
    failed = describe_failure(OSError(f"cannot reach {config.url}: refused"), config)
    assert_clean("the failure line", failed)
    assert "127.0.0.1:9" in failed
