"""Asking a local OpenAI-compatible server how large its model's context really is, and
whether its chat template lets the model call tools.

A model resolved from ``llama.cpp:NAME``, ``ollama:NAME``, ``lmstudio:NAME`` or ``vllm:NAME`` starts
with a guessed window (32,768 tokens). Small local servers are often started with far less
(``llama-server -c 4096``, Ollama's default of 4,096), and a guessed window makes two things go
wrong: ``max_tokens`` is clamped to "the rest of the window", which asks the server for more than
it has (llama.cpp then refuses the request or truncates the prompt), and automatic compaction
triggers too late. :func:`probe_context_window` asks the server itself, with each server's own
endpoint:

* llama.cpp ``llama-server``: ``GET /props`` -> ``default_generation_settings.n_ctx`` (the
  per-slot context the server was started with);
* Ollama: ``POST /api/ps`` lists loaded models with their ``context_length``; otherwise
  ``POST /api/show`` gives ``num_ctx`` from the model's parameters, else the model's trained
  ``<arch>.context_length`` capped at Ollama's default runtime context of 4,096 tokens;
* LM Studio: ``GET /api/v0/models/NAME`` -> ``loaded_context_length`` (else
  ``max_context_length``);
* vLLM: ``GET /v1/models`` -> the entry's ``max_model_len``.

:func:`probed_model` returns the model with that window and an output budget of a quarter of it
(at most the model's own ``max_tokens``), so no request asks for a ``max_tokens`` as large as
the whole window.

The same answers say whether the server will take tool calls (:func:`probe_tool_calls`, and
:func:`probe_tool_mode` in the words of a run's tool mode):
llama.cpp's ``/props`` has ``chat_template_caps`` (``supports_tools`` and
``supports_tool_calls`` of the chat template it runs, ``--jinja`` or a ``--chat-template-file``),
Ollama's ``/api/show`` lists the model's ``capabilities`` (``"tools"`` among them or not). LM
Studio and vLLM say nothing about it: unknown.

Nothing here raises: a server that is down, old or different answers ``None`` (unknown) and the
caller keeps its model. One probe makes at most one round of requests, bounded by
``PROBE_BUDGET_S`` in all. Answers are cached per server URL and model id for the kernel's life;
a failed probe is not, so a server started later is asked again, except one that accepted the
connection and never answered in time: it is taken as unknown from then on, so a hanging server
delays one run, not every run.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from .types import Model

__all__ = [
    "OLLAMA_DEFAULT_CONTEXT",
    "PROBE_BUDGET_S",
    "PROBE_TIMEOUT_S",
    "UNKNOWN",
    "ServerFacts",
    "clear_probe_cache",
    "known_facts",
    "probe_context_window",
    "probe_server",
    "probe_tool_calls",
    "probe_tool_mode",
    "probed_model",
    "tool_mode_of",
    "with_window",
]

OLLAMA_DEFAULT_CONTEXT = 4096
PROBE_TIMEOUT_S = 2.0
"""Each request's connect / read timeout."""
PROBE_BUDGET_S = 3.0
"""All requests of one probe together (Ollama asks twice)."""


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What a local server said about a model: its context window and whether its chat template
    takes tool calls (``None``: it did not say)."""

    window: int | None = None
    tool_calls: bool | None = None


UNKNOWN = ServerFacts()
_cache: dict[tuple[str, str], ServerFacts] = {}


def clear_probe_cache() -> None:
    _cache.clear()


def _root(base_url: str) -> str:
    """``http://host:port/v1`` -> ``http://host:port``: the servers' own APIs live at the root."""
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path[: -len("/v1")] if parts.path.endswith("/v1") else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path, "", "")).rstrip("/")


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


async def _llama_cpp(client: httpx.AsyncClient, root: str, model_id: str) -> ServerFacts:
    props = (await client.get(f"{root}/props")).json()
    settings = props.get("default_generation_settings") or {}
    caps = props.get("chat_template_caps")
    tools = None
    if isinstance(caps, dict):  # older servers have none (and servers run without --jinja)
        takes, calls = _flag(caps.get("supports_tools")), _flag(caps.get("supports_tool_calls"))
        tools = None if takes is None or calls is None else takes and calls
    return ServerFacts(_positive_int(settings.get("n_ctx")), tools)


def _ollama_num_ctx(parameters: Any) -> int | None:
    for line in str(parameters or "").splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "num_ctx" and value.strip().isdigit():
            return _positive_int(int(value.strip()))
    return None


def _ollama_window(show: dict[str, Any]) -> int | None:
    configured = _ollama_num_ctx(show.get("parameters"))
    if configured:
        return configured
    info = show.get("model_info") or {}
    trained = next((_positive_int(v) for k, v in info.items() if k.endswith(".context_length")), None)
    return min(trained, OLLAMA_DEFAULT_CONTEXT) if trained else None


async def _ollama(client: httpx.AsyncClient, root: str, model_id: str) -> ServerFacts:
    loaded = (await client.get(f"{root}/api/ps")).json().get("models") or []
    names = {model_id, f"{model_id}:latest"}
    window = None
    for entry in loaded:
        if entry.get("name") in names or entry.get("model") in names:
            window = window or _positive_int(entry.get("context_length"))
    # /api/show also says what the model can do ("capabilities": ["completion", "tools", ...])
    show = (await client.post(f"{root}/api/show", json={"model": model_id})).json()
    capabilities = show.get("capabilities")
    tools = ("tools" in capabilities) if isinstance(capabilities, list) else None
    return ServerFacts(window or _ollama_window(show), tools)


async def _lmstudio(client: httpx.AsyncClient, root: str, model_id: str) -> ServerFacts:
    info = (await client.get(f"{root}/api/v0/models/{model_id}")).json()
    window = _positive_int(info.get("loaded_context_length")) or _positive_int(info.get("max_context_length"))
    return ServerFacts(window)


async def _vllm(client: httpx.AsyncClient, root: str, model_id: str) -> ServerFacts:
    listing = (await client.get(f"{root}/v1/models")).json().get("data") or []
    for entry in listing:
        if entry.get("id") == model_id or len(listing) == 1:
            return ServerFacts(_positive_int(entry.get("max_model_len")))
    return UNKNOWN


_PROBES = {"llama.cpp": _llama_cpp, "ollama": _ollama, "lmstudio": _lmstudio, "vllm": _vllm}


async def probe_server(model: Model, *, client: httpx.AsyncClient | None = None) -> ServerFacts:
    """What the local server of ``model`` says about it (never raises; see the module docstring)."""
    probe = _PROBES.get(model.provider)
    if probe is None or not model.base_url:
        return UNKNOWN
    key = (model.base_url, model.id)
    if key in _cache:
        return _cache[key]
    own = client is None
    http = client or httpx.AsyncClient(timeout=PROBE_TIMEOUT_S)
    try:
        found = await asyncio.wait_for(probe(http, _root(model.base_url), model.id), PROBE_BUDGET_S)
    except (TimeoutError, httpx.TimeoutException):
        _cache[key] = found = UNKNOWN  # it took the connection and kept silent: do not wait again
    except (httpx.HTTPError, ValueError, AttributeError, TypeError):
        found = UNKNOWN  # down, not that server, or an answer of another shape: keep the guess
    finally:
        if own:
            await http.aclose()
    if found != UNKNOWN:
        _cache[key] = found
    return found


async def probe_context_window(
    model: Model, *, client: httpx.AsyncClient | None = None
) -> int | None:
    """The context window the local server reports for ``model``, or ``None`` (never raises)."""
    return (await probe_server(model, client=client)).window


async def probe_tool_calls(model: Model, *, client: httpx.AsyncClient | None = None) -> bool | None:
    """Whether the local server's chat template takes tool calls for ``model``: ``True``,
    ``False``, or ``None`` when it does not say (never raises; answered from the cache when
    the window was asked for already)."""
    return (await probe_server(model, client=client)).tool_calls


def with_window(model: Model, window: int) -> Model:
    """``model`` with ``window`` as its context and a quarter of it (at most the model's own
    ``max_tokens``, at least 256) as the output budget."""
    budget = max(256, min(model.max_tokens, window // 4))
    return model.model_copy(update={"context_window": window, "max_tokens": budget})


async def probed_model(model: Model, *, client: httpx.AsyncClient | None = None) -> Model:
    """``model`` with the window its local server reports; unchanged when it reports none."""
    window = await probe_context_window(model, client=client)
    return model if window is None else with_window(model, window)


def known_facts(model: Model) -> ServerFacts:
    """What the last probe of ``model``'s server said, without asking again (``UNKNOWN``: it
    was not asked, or did not answer)."""
    return _cache.get((model.base_url, model.id), UNKNOWN)


def tool_mode_of(facts: ServerFacts) -> str | None:
    """What a server's answer means for a run's tool mode: ``"tools"`` (its chat template takes
    tool calls), ``"code"`` (it does not: the model can only be asked for code), ``None`` (it
    did not say)."""
    return None if facts.tool_calls is None else "tools" if facts.tool_calls else "code"


async def probe_tool_mode(model: Model, *, client: httpx.AsyncClient | None = None) -> str | None:
    """``tool_mode_of`` what the server of ``model`` says (asked once; never raises)."""
    return tool_mode_of(await probe_server(model, client=client))
