"""API keys never leak: not into error messages, events, the transcript, exceptions or logs.

The keys come from the environment, as a user sets them. The loopback server plays a hostile
provider (``faults/echo.py``): its error replies echo the credential headers it received (in
the message text and as a raw header dump), both as an HTTP error and as an error event inside
a 200 stream. A refused connection is checked too. Logging is captured at DEBUG, httpx and
httpcore included. ``tests/notebook/test_no_leaks.py`` runs the same provider end to end in a
real kernel.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from faults.echo import EchoServer, assert_no_key, credentials, http_echo, stream_echo
from faults.invariants import Recorder, check_run
from faults.wire import APIS, WIRES, WireApi, closed_port_url
from loopback import Reply

from pi_notebook.agent import Agent
from pi_notebook.ai import stream_simple
from pi_notebook.ai.http import ProviderError, open_stream
from pi_notebook.ai.options import StreamOptions

KEYS = {
    "OPENAI_API_KEY": "sk-test-SECRET123-openai-0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-test-SECRET456-anthropic-0123456789",
    "GEMINI_API_KEY": "AIza-test-SECRET789-gemini-0123456789abcd",
}
SECRET_MARKERS = ("SECRET123", "SECRET456", "SECRET789")


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    for name in ("ANTHROPIC_OAUTH_TOKEN", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def echo() -> Any:
    server = EchoServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def assert_clean(where: str, text: str) -> None:
    assert_no_key(where, text, KEYS, SECRET_MARKERS)


def assert_run_clean(agent: Agent, recorder: Recorder, caplog: pytest.LogCaptureFixture) -> None:
    last = check_run(agent, recorder, expect_stop="error")
    assert_clean("the error message", last.error_message or "")
    assert_clean("the agent's error", agent.state.error_message or "")
    for event in recorder.events:
        assert_clean(f"the {event.type} event", json.dumps(event.to_dict(), default=str) + repr(event))
    for message in agent.state.messages:
        assert_clean("the transcript", message.model_dump_json() + repr(message))
    assert any(r.name.startswith(("httpx", "httpcore")) for r in caplog.records), "no HTTP log captured"
    for record in caplog.records:
        rendered = record.getMessage() + repr(record.args) + (record.exc_text or "")
        assert_clean(f"the log record of {record.name}", rendered)


def capture_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "pi_notebook"):
        caplog.set_level(logging.DEBUG, logger=name)


def stream_fn_with(client: httpx.AsyncClient) -> Any:
    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        options.http_client = client  # the key itself comes from the environment
        return stream_simple(model, context, options)

    return stream_fn


def make_agent(wire: WireApi, base: str, client: httpx.AsyncClient) -> tuple[Agent, Recorder]:
    agent = Agent(stream_fn=stream_fn_with(client), initial_state={"model": wire.model(base)})
    recorder = Recorder()
    agent.subscribe(recorder)
    return agent, recorder


@pytest.mark.parametrize("status", [401, 500])
@pytest.mark.parametrize("api", APIS)
async def test_http_error_echoing_the_key(
    api: str,
    status: int,
    *,
    secret_env: None,
    echo: EchoServer,
    client: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    capture_debug(caplog)
    wire = WIRES[api]
    echo.queue(http_echo(wire, status))
    agent, recorder = make_agent(wire, echo.url, client)
    await agent.prompt("hi")
    sent = credentials(echo.requests[0])
    assert any(KEYS[wire.env_key] in value for value in sent.values()), "the env key was not sent"
    assert_run_clean(agent, recorder, caplog)
    assert str(status) in (agent.state.error_message or "")


@pytest.mark.parametrize("api", APIS)
async def test_error_event_echoing_the_key(
    api: str, secret_env: None, echo: EchoServer, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    capture_debug(caplog)
    wire = WIRES[api]
    echo.queue(stream_echo(wire))
    agent, recorder = make_agent(wire, echo.url, client)
    await agent.prompt("hi")
    assert_run_clean(agent, recorder, caplog)
    assert "Incorrect API key provided" in (agent.state.error_message or "")


@pytest.mark.parametrize("api", APIS)
async def test_refused_connection(
    api: str, secret_env: None, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    capture_debug(caplog)
    agent, recorder = make_agent(WIRES[api], closed_port_url(), client)
    await agent.prompt("hi")
    assert_run_clean(agent, recorder, caplog)
    assert "Connection error" in (agent.state.error_message or "")


async def test_provider_error_exception_text(
    secret_env: None, echo: EchoServer, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """The HTTP layer's own exception (what a caller of ``open_stream`` sees) is clean too."""
    capture_debug(caplog)
    wire = WIRES["openai-completions"]
    key = KEYS["OPENAI_API_KEY"]
    echo.queue(http_echo(wire, 401))
    with pytest.raises(ProviderError) as caught:
        await open_stream(
            client,
            f"{echo.url}/v1/chat/completions",
            {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            {"model": "gpt-test", "messages": []},
            StreamOptions(api_key=key),
        )
    error = caught.value
    assert error.status == 401
    for text in (str(error), repr(error), repr(error.args), error.body):
        assert_clean("the ProviderError", text)
    for record in caplog.records:
        assert_clean(f"the log record of {record.name}", record.getMessage())


async def test_the_options_a_stream_function_receives_do_not_show_the_key(
    secret_env: None, echo: EchoServer, client: httpx.AsyncClient
) -> None:
    """A traceback that shows locals, or a printed options object, must not reveal the key."""
    key = KEYS["ANTHROPIC_API_KEY"]
    wire = WIRES["anthropic-messages"]
    echo.queue(Reply(200, wire.text_script("Hello there.").parts()))
    seen: list[Any] = []

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        options.http_client = client
        options.headers = {"x-api-key": key}
        options.env = {"ANTHROPIC_API_KEY": key}
        seen.append(options)
        return stream_simple(model, context, options)

    agent = Agent(
        stream_fn=stream_fn,
        get_api_key=lambda provider: key,
        initial_state={"model": wire.model(echo.url)},
    )
    await agent.prompt("hi")
    assert agent.state.messages[-1].stop_reason == "stop"
    [options] = seen
    assert options.api_key == key
    assert_clean("repr() of the loop's stream options", repr(options) + str(options))
    assert_clean("repr() of StreamOptions", repr(StreamOptions(api_key=key, headers={"x-api-key": key})))
