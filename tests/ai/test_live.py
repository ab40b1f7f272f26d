"""Live provider suite: the same contracts as the loopback tests, against real servers.

Every endpoint is SKIPPED unless its variables are set, so this module never runs in CI:

* ``PI_LIVE_OPENAI_COMPAT_URL`` (e.g. ``http://127.0.0.1:8080/v1``): any OpenAI Chat
  Completions server (llama.cpp's ``llama-server``, Ollama, vLLM, LM Studio).
  ``PI_LIVE_OPENAI_COMPAT_MODEL`` names the model (default: the first one ``/models`` lists).
* ``PI_LIVE_ANTHROPIC_COMPAT_URL`` (e.g. ``http://127.0.0.1:8080``): an Anthropic Messages
  server (``llama-server`` serves ``/v1/messages`` too); ``PI_LIVE_ANTHROPIC_COMPAT_MODEL``.
* ``PI_LIVE_API_KEY``: the key both compat servers expect (``llama-server --api-key``); only
  with it does the bad-key test have something to reject.
* Real providers: ``PI_LIVE=1`` plus ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` /
  ``GEMINI_API_KEY`` (models: ``PI_LIVE_OPENAI_MODEL``, ``PI_LIVE_ANTHROPIC_MODEL``,
  ``PI_LIVE_GEMINI_MODEL``). The extra ``PI_LIVE=1`` keeps a key that merely sits in a shell
  from turning an ordinary test run into paid network calls.

Everything goes through the public entry points ``stream``/``complete``. Local servers run
small models, so content checks there are about shape (a tool call with a string ``city``),
while real providers must also get the content right (``pong``, ``Paris``, ``18``).
llama-server quirks this tolerates: usage arrives only because the adapter asks for it
(``stream_options.include_usage``), and a *named* ``tool_choice`` is treated as ``auto``, so
tool calls are forced with ``required`` (``any``/``ANY`` on the other APIs) via ``on_payload``.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from pi_notebook.ai.abort import AbortController
from pi_notebook.ai.entry import stream
from pi_notebook.ai.event_stream import AssistantMessageEventStream
from pi_notebook.ai.models import get_model, openai_compatible_model
from pi_notebook.ai.options import StreamOptions
from pi_notebook.ai.types import (
    AssistantMessage,
    Context,
    Model,
    TextContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

pytestmark = pytest.mark.live

TIMEOUT_S = float(os.environ.get("PI_LIVE_TIMEOUT", "240"))
BAD_KEY = "pi-live-deliberately-invalid-key-0000"
# A tiny local model (the 135M SmolLM2 this was proven with) does not decide to call a tool on
# its own; a prompt that starts the call's syntax makes greedy decoding complete one. What is
# under test is unchanged: the server streams it as ``tool_calls`` and the adapter parses them.
LOCAL_TOOL_PROMPT = "<tool_call> get_weather Paris"
WEATHER = Tool(
    name="get_weather",
    description="Get the current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city name, e.g. Paris"}},
        "required": ["city"],
    },
)


@dataclass(frozen=True)
class Endpoint:
    name: str
    api: str
    base_url: str
    model_id: str | None  # None: ask the server's /models
    local: bool
    api_key: str | None = field(default=None, repr=False)  # never shown in test output
    skip: str | None = None

    @property
    def max_tokens(self) -> int:
        # Small local models ramble; cloud reasoning models need room to think before answering.
        return 160 if self.local else 1024

    @property
    def finished(self) -> tuple[str, ...]:
        """Acceptable stop reasons for a text answer: a small local model may run out of tokens."""
        return ("stop", "length") if self.local else ("stop",)


def _compat(name: str, api: str, prefix: str, key: str | None) -> Endpoint:
    url = os.environ.get(f"{prefix}_URL", "").rstrip("/")
    model_id = os.environ.get(f"{prefix}_MODEL") or None
    return Endpoint(name, api, url, model_id, True, key, None if url else f"set {prefix}_URL")


def _endpoints() -> list[Endpoint]:
    key = os.environ.get("PI_LIVE_API_KEY") or None
    out = [
        _compat("openai-compat", "openai-completions", "PI_LIVE_OPENAI_COMPAT", key),
        _compat("anthropic-compat", "anthropic-messages", "PI_LIVE_ANTHROPIC_COMPAT", key),
    ]
    cloud = os.environ.get("PI_LIVE") == "1"
    for provider, variable, prefix, default in (
        ("openai", "OPENAI_API_KEY", "PI_LIVE_OPENAI", "gpt-4o-mini"),
        ("anthropic", "ANTHROPIC_API_KEY", "PI_LIVE_ANTHROPIC", "claude-haiku-4-5"),
        ("google", "GEMINI_API_KEY", "PI_LIVE_GEMINI", "gemini-2.5-flash-lite"),
    ):
        model_id = os.environ.get(f"{prefix}_MODEL") or default
        api_key = os.environ.get(variable) or None
        reason = None if cloud and api_key else f"set PI_LIVE=1 and {variable}"
        api = get_model(provider, model_id).api
        out.append(Endpoint(provider, api, "", model_id, False, api_key, reason))
    return out


ENDPOINTS = [
    pytest.param(e, id=e.name, marks=[pytest.mark.skip(reason=e.skip)] if e.skip else [])
    for e in _endpoints()
]


async def _discover_model_id(endpoint: Endpoint) -> str:
    url = (
        f"{endpoint.base_url}/models"
        if endpoint.api == "openai-completions"
        else f"{endpoint.base_url}/v1/models"
    )
    headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
    async with httpx.AsyncClient(timeout=30) as client:
        reply = await client.get(url, headers=headers)
    reply.raise_for_status()
    return str(reply.json()["data"][0]["id"])


@pytest.fixture(params=ENDPOINTS)
async def live(request: pytest.FixtureRequest) -> tuple[Endpoint, Model]:
    endpoint: Endpoint = request.param
    if not endpoint.local:
        assert endpoint.model_id is not None
        return endpoint, get_model(endpoint.name, endpoint.model_id)
    model_id = endpoint.model_id or await _discover_model_id(endpoint)
    if endpoint.api == "openai-completions":
        model = openai_compatible_model(model_id, endpoint.base_url, provider="local", register=False)
    else:
        model = Model(id=model_id, api=endpoint.api, provider="local", base_url=endpoint.base_url)
    return endpoint, model


# --- helpers ----------------------------------------------------------------------------------


def _tool_choice(api: str, mode: str) -> Callable[[dict[str, Any], Model], dict[str, Any]]:
    """An ``on_payload`` hook forcing (``required``) or forbidding (``none``) tool calls."""

    def hook(payload: dict[str, Any], model: Model) -> dict[str, Any]:
        if api == "anthropic-messages":
            payload["tool_choice"] = {"type": "any" if mode == "required" else "none"}
        elif api == "google-generative-ai":
            config = {"functionCallingConfig": {"mode": "ANY" if mode == "required" else "NONE"}}
            # The REST body carries toolConfig at the top; an SDK-shaped one nests it in config.
            payload.get("config", payload)["toolConfig"] = config
        else:
            payload["tool_choice"] = mode
        return payload

    return hook


def _options(endpoint: Endpoint, **overrides: Any) -> StreamOptions:
    # Greedy decoding keeps a small local model's answers repeatable from run to run.
    temperature = 0.0 if endpoint.local else None
    fields: dict[str, Any] = {
        "max_tokens": endpoint.max_tokens,
        "api_key": endpoint.api_key,
        "temperature": temperature,
    }
    return StreamOptions(**{**fields, **overrides})


async def _drain(
    s: AssistantMessageEventStream, on_event: Callable[[Any], None] | None = None
) -> tuple[list[Any], AssistantMessage]:
    events: list[Any] = []
    async with asyncio.timeout(TIMEOUT_S):
        async for event in s:
            events.append(event)
            if on_event is not None:
                on_event(event)
        return events, await s.result()


def _text(message: AssistantMessage) -> str:
    return "".join(b.text for b in message.content if isinstance(b, TextContent))


def _assert_ok(message: AssistantMessage, model: Model, *reasons: str) -> None:
    assert message.stop_reason in reasons, message.error_message
    assert (message.api, message.provider, message.model) == (model.api, model.provider, model.id)


def _assert_usage(message: AssistantMessage) -> None:
    usage = message.usage
    assert usage.input + usage.cache_read > 0
    assert usage.output > 0
    assert usage.total_tokens >= usage.input + usage.output


async def _forced_tool_call(endpoint: Endpoint, model: Model) -> tuple[Context, list[Any], AssistantMessage]:
    prompt = (
        LOCAL_TOOL_PROMPT
        if endpoint.local
        else "What is the weather in Paris right now? Use the get_weather tool."
    )
    context = Context(messages=[UserMessage(content=prompt)], tools=[WEATHER])
    options = _options(endpoint, on_payload=_tool_choice(model.api, "required"))
    events, message = await _drain(stream(model, context, options))
    return context, events, message


# --- the suite --------------------------------------------------------------------------------


async def test_text_streams_in_order_with_usage(live: tuple[Endpoint, Model]) -> None:
    endpoint, model = live
    context = Context(
        system_prompt="You are terse.", messages=[UserMessage(content="Reply with one word: pong")]
    )
    events, message = await _drain(stream(model, context, _options(endpoint)))
    _assert_ok(message, model, *endpoint.finished)
    types = [e.type for e in events]
    assert types[0] == "start"
    assert types[-1] == "done"
    assert "text_delta" in types
    assert types.count("text_start") == types.count("text_end")
    text = _text(message)
    assert text.strip()
    streamed = "".join(e.delta for e in events if e.type == "text_delta")
    assert streamed == text
    assert [e.content for e in events if e.type == "text_end"] == [
        b.text for b in message.content if isinstance(b, TextContent)
    ]
    _assert_usage(message)
    if not endpoint.local:
        assert "pong" in text.lower()


async def test_tool_call_streams_its_arguments(live: tuple[Endpoint, Model]) -> None:
    endpoint, model = live
    _, events, message = await _forced_tool_call(endpoint, model)
    _assert_ok(message, model, "toolUse")
    types = [e.type for e in events]
    assert types.count("toolcall_start") >= 1
    assert types.count("toolcall_start") == types.count("toolcall_end")
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    assert calls
    call = calls[0]
    assert call.name == "get_weather"
    assert call.id
    assert isinstance(call.arguments.get("city"), str)
    assert call.arguments["city"].strip()
    ends = [e.tool_call for e in events if e.type == "toolcall_end"]
    assert ends[0].arguments == call.arguments
    first_deltas = "".join(e.delta for e in events if e.type == "toolcall_delta" and e.content_index == 0)
    if first_deltas.strip():
        assert json.loads(first_deltas) == call.arguments
    _assert_usage(message)
    if not endpoint.local:
        assert "paris" in call.arguments["city"].lower()


async def test_multi_turn_with_tool_result(live: tuple[Endpoint, Model]) -> None:
    endpoint, model = live
    context, _, first = await _forced_tool_call(endpoint, model)
    _assert_ok(first, model, "toolUse")
    call = next(b for b in first.content if isinstance(b, ToolCall))
    result = ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=[TextContent(text="Paris: 18 degrees Celsius, sunny.")],
    )
    context.messages += [first, result]
    options = _options(endpoint, on_payload=_tool_choice(model.api, "none"))
    _, second = await _drain(stream(model, context, options))
    _assert_ok(second, model, *endpoint.finished)
    assert _text(second).strip()
    assert not [b for b in second.content if isinstance(b, ToolCall)]
    if not endpoint.local:
        assert "18" in _text(second)


async def test_abort_mid_stream_ends_aborted(live: tuple[Endpoint, Model]) -> None:
    endpoint, model = live
    controller = AbortController()
    aborted_at: list[float] = []

    def abort_on_first_delta(event: Any) -> None:
        if event.type in ("text_delta", "thinking_delta") and not aborted_at:
            aborted_at.append(time.monotonic())
            controller.abort()

    prompt = "Count from 1 to 400, one number per line, with no other text."
    context = Context(messages=[UserMessage(content=prompt)])
    options = _options(endpoint, signal=controller.signal, max_tokens=2048)
    events, message = await _drain(stream(model, context, options), abort_on_first_delta)
    assert aborted_at, "the model produced no delta to abort on"
    assert time.monotonic() - aborted_at[0] < 10
    assert events[-1].type == "error"
    assert events[-1].reason == "aborted"
    assert "done" not in [e.type for e in events]
    assert message.stop_reason == "aborted"
    assert message.error_message


async def test_bad_key_is_an_error_event_not_an_exception(live: tuple[Endpoint, Model]) -> None:
    endpoint, model = live
    if endpoint.local and not endpoint.api_key:
        pytest.skip("this server accepts any key; start it with --api-key and set PI_LIVE_API_KEY")
    context = Context(messages=[UserMessage(content="Hello")])
    events, message = await _drain(stream(model, context, StreamOptions(api_key=BAD_KEY, max_tokens=16)))
    assert [e.type for e in events] == ["error"]
    assert message.stop_reason == "error"
    error = message.error_message or ""
    assert error.strip()
    assert BAD_KEY not in error
    if endpoint.api_key:
        assert endpoint.api_key not in error
