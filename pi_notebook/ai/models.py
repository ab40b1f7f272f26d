"""The model catalogue: built-in models (``data/models.json``), user-registered models and
faux models, looked up by ``get_model(provider, id)``.

``register_models`` adds models for any provider id, e.g. a local OpenAI-compatible server
(Ollama, vLLM, llama.cpp, LM Studio) through :func:`openai_compatible_model`.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from .types import Model, ModelThinkingLevel

THINKING_LEVELS: tuple[ModelThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")

_builtin: dict[str, dict[str, Model]] | None = None
_registered: dict[str, dict[str, Model]] = {}


def _load_builtin() -> dict[str, dict[str, Model]]:
    global _builtin
    if _builtin is None:
        raw = json.loads(resources.files("pi_notebook.ai").joinpath("data/models.json").read_text("utf-8"))
        catalogue: dict[str, dict[str, Model]] = {}
        for entry in raw["models"]:
            model = Model.model_validate(entry)
            catalogue.setdefault(model.provider, {})[model.id] = model
        _builtin = catalogue
    return _builtin


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


def get_providers() -> list[str]:
    names = list(_load_builtin())
    names += [p for p in _registered if p not in names]
    return names


def get_models(provider: str | None = None) -> list[Model]:
    builtin = _load_builtin()
    providers = [provider] if provider is not None else get_providers()
    out: list[Model] = []
    for name in providers:
        merged = {**builtin.get(name, {}), **_registered.get(name, {})}
        out.extend(merged.values())
    return out


def get_model(provider: str, model_id: str) -> Model:
    """The catalogue entry for ``provider``/``model_id``; raises ``KeyError`` naming both."""
    found = _registered.get(provider, {}).get(model_id) or _load_builtin().get(provider, {}).get(model_id)
    if found is None:
        known = ", ".join(m.id for m in get_models(provider)[:12]) or "none"
        raise KeyError(f"Unknown model {provider}:{model_id} (known for {provider}: {known})")
    return found


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
        id=model_id, name=name or model_id, api="openai-completions", provider=provider,
        base_url=base_url.rstrip("/"), reasoning=reasoning,
        input=["text", "image"] if images else ["text"],
        context_window=context_window, max_tokens=max_tokens, compat=compat,
    )
    if register:
        register_models([model])
    return model


def models_are_equal(a: Model | None, b: Model | None) -> bool:
    return a is not None and b is not None and a.id == b.id and a.provider == b.provider


def get_supported_thinking_levels(model: Model) -> list[ModelThinkingLevel]:
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
