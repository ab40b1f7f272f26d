"""The model catalogue: which models exist, where they are served and what they cost.

Three layers answer a lookup, the first that knows the model wins:

1. models registered at run time (:func:`register_models`, :func:`openai_compatible_model`,
   the faux provider),
2. the user's own file named by ``PI_NOTEBOOK_MODELS`` (read on first lookup, not at import;
   a file that cannot be read or holds a bad model adds nothing and :func:`user_models_problem`
   says why in one line, so the other layers, ``faux`` included, still answer),
3. the built-in curated catalogue ``data/models.json`` (also read on first lookup).

:func:`resolve_model` turns the notebook's ``provider:id`` strings into models; ids for local
OpenAI-compatible servers (``ollama:llama3.2``, ``lmstudio:…``, ``llama.cpp:…``, ``vllm:…``)
resolve to a model on that server's default local URL even when nobody registered them.
Thinking-level support and clamping follow Pi's ``getSupportedThinkingLevels`` and
``clampThinkingLevel`` exactly.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from .levels import THINKING_LEVELS, ModelThinkingLevel
from .types import Model

USER_MODELS_ENV = "PI_NOTEBOOK_MODELS"

Catalogue = dict[str, dict[str, Model]]


@dataclass(frozen=True, slots=True)
class LocalServer:
    """A local OpenAI-compatible server that needs no registration to be used."""

    provider: str
    label: str
    default_base_url: str
    env_var: str


LOCAL_SERVERS: dict[str, LocalServer] = {
    server.provider: server
    for server in (
        LocalServer("ollama", "Ollama", "http://127.0.0.1:11434/v1", "OLLAMA_BASE_URL"),
        LocalServer("lmstudio", "LM Studio", "http://127.0.0.1:1234/v1", "LMSTUDIO_BASE_URL"),
        LocalServer("llama.cpp", "llama.cpp", "http://127.0.0.1:8080/v1", "LLAMA_CPP_BASE_URL"),
        LocalServer("vllm", "vLLM", "http://127.0.0.1:8000/v1", "VLLM_BASE_URL"),
    )
}
PROVIDER_ALIASES: dict[str, str] = {
    "llamacpp": "llama.cpp",
    "llama-cpp": "llama.cpp",
    "lm-studio": "lmstudio",
}

_builtin: Catalogue | None = None
_user: tuple[str, Catalogue, str | None] | None = None
_registered: Catalogue = {}
# The local-server models ``resolve_model`` registered itself, so that a changed ``*_BASE_URL``
# reaches the next lookup (models registered by the user keep their own URL).
_auto_local: dict[tuple[str, str], Model] = {}


class ModelNotFoundError(KeyError):
    """``get_model``/``resolve_model`` found nothing; the message says what is known instead."""

    def __init__(self, message: str, provider: str = "", model_id: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.model_id = model_id

    def __str__(self) -> str:
        # KeyError's own __str__ would wrap the message in quotes.
        return self.message


# ---------------------------------------------------------------------------------------------
# Loading


def _catalogue(models: list[Model]) -> Catalogue:
    out: Catalogue = {}
    for model in models:
        out.setdefault(model.provider, {})[model.id] = model
    return out


def _load_builtin() -> Catalogue:
    global _builtin
    if _builtin is None:
        text = resources.files("pi_notebook.ai").joinpath("data/models.json").read_text("utf-8")
        _builtin = _catalogue([Model.model_validate(entry) for entry in json.loads(text)["models"]])
    return _builtin


def _entries(raw: Any) -> list[dict[str, Any]]:
    """Model dicts from either the flat form or Pi's provider-grouped ``models.json`` form.

    Flat: ``{"models": [<Model JSON>, ...]}`` (or a bare list). Grouped: ``{"providers": {id:
    {"baseUrl", "api", "headers", "compat", "models": [...]}}}``; entries inherit those keys.
    """
    if isinstance(raw, list):
        return list(raw)
    if not isinstance(raw, dict):
        raise ValueError("expected a JSON object or list")
    out: list[dict[str, Any]] = list(raw.get("models", []))
    for provider, spec in (raw.get("providers") or {}).items():
        inherited = {k: spec[k] for k in ("baseUrl", "api", "headers", "compat") if k in spec}
        out += [{**inherited, "provider": provider, **entry} for entry in spec.get("models", [])]
    return out


def _read_user_file(path: str) -> tuple[Catalogue, str | None]:
    """The file's models and the first problem found: an unreadable file adds none (a
    ``ValueError``), an invalid model is left out and the others are kept."""
    where = f"{USER_MODELS_ENV}={path}"
    try:
        raw = json.loads(Path(path).expanduser().read_bytes())
        entries = _entries(raw)
    except UnicodeDecodeError:
        raise ValueError(f"{where}: not UTF-8 text") from None
    except RecursionError:
        raise ValueError(f"{where}: JSON nested too deeply to read") from None
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"{where}: {exc}") from None
    models: list[Model] = []
    problems: list[str] = []
    for index, entry in enumerate(entries):
        label = f"{entry.get('provider', '?')}:{entry.get('id', '?')}" if isinstance(entry, dict) else "?"
        try:
            models.append(Model.model_validate(entry))
        except RecursionError:
            problems.append(f"model #{index} ({label}) is nested too deeply to read")
        except (ValidationError, TypeError) as exc:
            problems.append(f"model #{index} ({label}) is invalid: {_first_error(exc)}")
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    problem = f"{where}: {problems[0]}{more}; that model is left out" if problems else None
    return _catalogue(models), problem


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        location = ".".join(str(part) for part in error["loc"])
        return f"{location}: {error['msg']}" if location else str(error["msg"])
    return str(exc)


def _load_user() -> Catalogue:
    global _user
    path = os.environ.get(USER_MODELS_ENV, "")
    if not path:
        return {}
    if _user is None or _user[0] != path:
        try:
            _user = (path, *_read_user_file(path))
        except ValueError as exc:  # one bad file must not hide every other model
            told = f"{exc}; its models are not available, fix the file or unset {USER_MODELS_ENV}"
            _user = (path, {}, told)
    return _user[1]


def user_models_problem() -> str | None:
    """Why the ``PI_NOTEBOOK_MODELS`` file adds no model (one line), ``None`` when it is fine."""
    _load_user()
    return _user[2] if _user is not None and os.environ.get(USER_MODELS_ENV, "") else None


def reload_user_models() -> None:
    """Forget the cached ``PI_NOTEBOOK_MODELS`` file so the next lookup reads it again."""
    global _user
    _user = None


def _layers() -> tuple[Catalogue, Catalogue, Catalogue]:
    """Lowest precedence first."""
    return _load_builtin(), _load_user(), _registered


# ---------------------------------------------------------------------------------------------
# Registration


def register_models(models: list[Model] | list[dict[str, Any]], provider: str | None = None) -> list[Model]:
    """Make models resolvable through :func:`get_model`. Later registrations win."""
    out: list[Model] = []
    for item in models:
        model = item if isinstance(item, Model) else Model.model_validate(item)
        if provider is not None and model.provider != provider:
            model = model.model_copy(update={"provider": provider})
        _registered.setdefault(model.provider, {})[model.id] = model
        out.append(model)
    return out


def unregister_models(provider: str, ids: list[str] | None = None) -> None:
    if ids is None:
        _registered.pop(provider, None)
        return
    for model_id in ids:
        _registered.get(provider, {}).pop(model_id, None)


def openai_compatible_model(
    model_id: str,
    base_url: str,
    *,
    provider: str = "local",
    name: str | None = None,
    reasoning: bool = False,
    context_window: int = 32_768,
    max_tokens: int = 8_192,
    images: bool = False,
    compat: dict[str, Any] | None = None,
    register: bool = True,
) -> Model:
    """A model served by any OpenAI Chat Completions server (Ollama, vLLM, llama.cpp, LM Studio)."""
    model = Model(
        id=model_id,
        name=name or model_id,
        api="openai-completions",
        provider=provider,
        base_url=base_url.rstrip("/"),
        reasoning=reasoning,
        input=["text", "image"] if images else ["text"],
        context_window=context_window,
        max_tokens=max_tokens,
        compat=compat,
    )
    if register:
        register_models([model])
    return model


# ---------------------------------------------------------------------------------------------
# Lookup


def get_providers() -> list[str]:
    names: list[str] = []
    for layer in _layers():
        names += [p for p in layer if p not in names and layer[p]]
    return names


def get_models(provider: str | None = None) -> list[Model]:
    providers = [provider] if provider is not None else get_providers()
    out: list[Model] = []
    for name in providers:
        merged: dict[str, Model] = {}
        for layer in _layers():
            merged.update(layer.get(name, {}))
        out.extend(merged.values())
    return out


def _find(provider: str, model_id: str) -> Model | None:
    for layer in reversed(_layers()):
        found = layer.get(provider, {}).get(model_id)
        if found is not None:
            return found
    return None


def _not_found(provider: str, model_id: str) -> ModelNotFoundError:
    import difflib

    known = [m.id for m in get_models(provider)]
    problem = user_models_problem()
    if problem:
        return ModelNotFoundError(f"Unknown model {provider}:{model_id}. {problem}", provider, model_id)
    if not known:
        providers = ", ".join(get_providers())
        local = ", ".join(f"{p}:" for p in LOCAL_SERVERS)
        message = (
            f"Unknown model {provider}:{model_id}: no provider {provider!r}. Known providers: {providers}; "
            f"local servers: {local} (or register one with openai_compatible_model())."
        )
        return ModelNotFoundError(message, provider, model_id)
    hint = difflib.get_close_matches(model_id, known, n=1)
    shown = ", ".join(known[:12]) + (f" (+{len(known) - 12} more)" if len(known) > 12 else "")
    suggestion = f" Did you mean {provider}:{hint[0]}?" if hint else ""
    return ModelNotFoundError(
        f"Unknown model {provider}:{model_id}.{suggestion} Known {provider} models: {shown}.",
        provider,
        model_id,
    )


def get_model(provider: str, model_id: str) -> Model:
    """The catalogue entry for ``provider``/``model_id``; raises :class:`ModelNotFoundError`."""
    found = _find(provider, model_id)
    if found is None:
        raise _not_found(provider, model_id)
    return found


def local_base_url(provider: str) -> str:
    """The base URL of a local server: its ``*_BASE_URL`` variable, else the usual port.

    A bare ``http://host:port`` gets ``/v1`` appended, since all four servers mount their
    OpenAI-compatible API there and users tend to copy the address without it.
    """
    server = LOCAL_SERVERS[provider]
    url = (os.environ.get(server.env_var) or server.default_base_url).strip().rstrip("/")
    if urlsplit(url).path in ("", "/"):
        url += "/v1"
    return url


def resolve_model(spec: str) -> Model:
    """A model from ``"provider:id"`` (the notebook's ``--model``), or from a bare unique id.

    Only the first ``:`` separates, so ``ollama:llama3.2:3b`` is provider ``ollama``, model
    ``llama3.2:3b``. Unknown ids on a local server (:data:`LOCAL_SERVERS`) become a registered
    :func:`openai_compatible_model` at :func:`local_base_url`.
    """
    text = spec.strip()
    provider, sep, model_id = text.partition(":")
    if not sep:
        return _resolve_bare(text)
    if not provider or not model_id:
        raise ValueError(f"Model spec must look like provider:model-id, got {spec!r}")
    provider = PROVIDER_ALIASES.get(provider.lower(), provider)
    found = _find(provider, model_id)
    auto = found is not None and found is _auto_local.get((provider, model_id))
    if found is not None and not (auto and found.base_url != local_base_url(provider)):
        return found
    if provider in LOCAL_SERVERS:
        model = openai_compatible_model(model_id, local_base_url(provider), provider=provider)
        _auto_local[(provider, model_id)] = model
        return model
    raise _not_found(provider, model_id)


def _resolve_bare(model_id: str) -> Model:
    if not model_id:
        raise ValueError("Model spec must look like provider:model-id, got ''")
    matches = [m for m in (_find(p, model_id) for p in get_providers()) if m is not None]
    if len(matches) == 1:
        return matches[0]
    if matches:
        options = ", ".join(f"{m.provider}:{m.id}" for m in matches)
        raise ModelNotFoundError(f"Model id {model_id!r} is ambiguous; use one of {options}.", "", model_id)
    raise ModelNotFoundError(
        f"Unknown model {model_id!r}: write provider:model-id, e.g. openai:gpt-4o-mini or ollama:llama3.2.",
        "",
        model_id,
    )


def models_are_equal(a: Model | None, b: Model | None) -> bool:
    return a is not None and b is not None and a.id == b.id and a.provider == b.provider


# ---------------------------------------------------------------------------------------------
# Thinking levels: which a model supports, and how a requested level is clamped to them


def get_supported_thinking_levels(model: Model) -> list[ModelThinkingLevel]:
    """``["off"]`` without reasoning; else all levels minus those mapped to ``None``, with
    ``xhigh``/``max`` only when the model's ``thinkingLevelMap`` names them."""
    if not model.reasoning:
        return ["off"]
    mapping = model.thinking_level_map or {}
    out: list[ModelThinkingLevel] = []
    for level in THINKING_LEVELS:
        if level in mapping and mapping[level] is None:
            continue
        if level in ("xhigh", "max") and level not in mapping:
            continue
        out.append(level)
    return out


def clamp_thinking_level(model: Model, level: ModelThinkingLevel) -> ModelThinkingLevel:
    """``level`` if supported, else the nearest supported level above it, else below it."""
    supported = get_supported_thinking_levels(model)
    if level in supported:
        return level
    index = THINKING_LEVELS.index(level)
    for candidate in THINKING_LEVELS[index + 1 :]:
        if candidate in supported:
            return candidate
    for candidate in reversed(THINKING_LEVELS[:index]):
        if candidate in supported:
            return candidate
    return supported[0] if supported else "off"
