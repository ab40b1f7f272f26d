"""Asking a local OpenAI-compatible server how large its model's context really is.

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
the whole window. Both never raise: a server that is down, old or different answers ``None``
and the caller keeps its model. Answers are cached per server URL and model id; a failed probe is
not, so a server started later is asked again.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from .types import Model

__all__ = [
    "OLLAMA_DEFAULT_CONTEXT",
    "PROBE_TIMEOUT_S",
    "clear_probe_cache",
    "probe_context_window",
    "probed_model",
    "with_window",
]

OLLAMA_DEFAULT_CONTEXT = 4096
PROBE_TIMEOUT_S = 2.0
_cache: dict[tuple[str, str], int] = {}


def clear_probe_cache() -> None:
    _cache.clear()


def _root(base_url: str) -> str:
    """``http://host:port/v1`` -> ``http://host:port``: the servers' own APIs live at the root."""
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path[: -len("/v1")] if parts.path.endswith("/v1") else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path, "", "")).rstrip("/")


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


async def _llama_cpp(client: httpx.AsyncClient, root: str, model_id: str) -> int | None:
    response = await client.get(f"{root}/props")
    settings = response.json().get("default_generation_settings") or {}
    return _positive_int(settings.get("n_ctx"))


def _ollama_num_ctx(parameters: Any) -> int | None:
    for line in str(parameters or "").splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "num_ctx" and value.strip().isdigit():
            return _positive_int(int(value.strip()))
    return None


async def _ollama(client: httpx.AsyncClient, root: str, model_id: str) -> int | None:
    loaded = (await client.get(f"{root}/api/ps")).json().get("models") or []
    names = {model_id, f"{model_id}:latest"}
    for entry in loaded:
        if entry.get("name") in names or entry.get("model") in names:
            found = _positive_int(entry.get("context_length"))
            if found:
                return found
    show = (await client.post(f"{root}/api/show", json={"model": model_id})).json()
    configured = _ollama_num_ctx(show.get("parameters"))
    if configured:
        return configured
    info = show.get("model_info") or {}
    trained = next((_positive_int(v) for k, v in info.items() if k.endswith(".context_length")), None)
    return min(trained, OLLAMA_DEFAULT_CONTEXT) if trained else None


async def _lmstudio(client: httpx.AsyncClient, root: str, model_id: str) -> int | None:
    info = (await client.get(f"{root}/api/v0/models/{model_id}")).json()
    return _positive_int(info.get("loaded_context_length")) or _positive_int(info.get("max_context_length"))


async def _vllm(client: httpx.AsyncClient, root: str, model_id: str) -> int | None:
    listing = (await client.get(f"{root}/v1/models")).json().get("data") or []
    for entry in listing:
        if entry.get("id") == model_id or len(listing) == 1:
            return _positive_int(entry.get("max_model_len"))
    return None


_PROBES = {"llama.cpp": _llama_cpp, "ollama": _ollama, "lmstudio": _lmstudio, "vllm": _vllm}


async def probe_context_window(
    model: Model, *, client: httpx.AsyncClient | None = None
) -> int | None:
    """The context window the local server reports for ``model``, or ``None`` (never raises)."""
    probe = _PROBES.get(model.provider)
    if probe is None or not model.base_url:
        return None
    key = (model.base_url, model.id)
    if key in _cache:
        return _cache[key]
    own = client is None
    http = client or httpx.AsyncClient(timeout=PROBE_TIMEOUT_S)
    try:
        found = await probe(http, _root(model.base_url), model.id)
    except (httpx.HTTPError, ValueError, AttributeError, TypeError):
        found = None  # down, not that server, or an answer of another shape: keep the guess
    finally:
        if own:
            await http.aclose()
    if found is not None:
        _cache[key] = found
    return found


def with_window(model: Model, window: int) -> Model:
    """``model`` with ``window`` as its context and a quarter of it (at most the model's own
    ``max_tokens``, at least 256) as the output budget."""
    budget = max(256, min(model.max_tokens, window // 4))
    return model.model_copy(update={"context_window": window, "max_tokens": budget})


async def probed_model(model: Model, *, client: httpx.AsyncClient | None = None) -> Model:
    """``model`` with the window its local server reports; unchanged when it reports none."""
    window = await probe_context_window(model, client=client)
    return model if window is None else with_window(model, window)
