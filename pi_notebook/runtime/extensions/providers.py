"""``pi.register_provider(name, config)``: Pi's ``ProviderConfig`` in snake_case, applied to
the model catalogue (``ai.models.register_models``) and, with ``stream_simple``, the API
registry (``ai.registry``).

API keys never sit in code or notebooks here: ``api_key`` names an environment variable
(``"$MY_KEY"`` or ``"${MY_KEY}"``), read when a request is made. Pi's literal keys and
``!command`` keys are refused with a message saying so. A provider with its own
``stream_simple`` and no ``api_key`` needs no key (its function authenticates itself).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from ...ai.env import register_key_variables
from ...ai.models import register_models, unregister_models
from ...ai.registry import ApiProvider, register_api_provider, unregister_api_providers
from ...ai.types import Model

__all__ = ["ProviderConfig", "register_provider", "unregister_provider"]

_ENV_REFERENCE = re.compile(r"^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$")


@dataclass
class ProviderConfig:
    """``models``: dicts (or ``Model``s) with Pi's model fields (``id``, ``name``,
    ``reasoning``, ``input``, ``cost``, ``context_window``, ``max_tokens`` ...); each gets the
    provider's ``api``, ``base_url`` and ``headers`` unless it names its own."""

    name: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    api: str | None = None
    stream_simple: Callable[..., Any] | None = None
    headers: dict[str, str] | None = None
    models: list[Any] = field(default_factory=list)


def _config(config: ProviderConfig | dict[str, Any]) -> ProviderConfig:
    if isinstance(config, ProviderConfig):
        return config
    known = {f.name for f in fields(ProviderConfig)}
    unknown = sorted(set(config) - known)
    if unknown:
        raise ValueError(
            f"register_provider: unknown config keys {', '.join(unknown)}; use {', '.join(sorted(known))}"
        )
    return ProviderConfig(**config)


def _key_variables(name: str, api_key: str | None) -> tuple[str, ...] | None:
    if api_key is None:
        return None
    match = _ENV_REFERENCE.match(api_key.strip())
    if match is None:
        raise ValueError(
            f"register_provider({name!r}): api_key must name an environment variable (\"$MY_KEY\"); "
            "put the key in that variable instead of in code"
        )
    return (match.group(1),)


def _model(name: str, config: ProviderConfig, spec: Any) -> Model:
    data = spec.model_dump() if isinstance(spec, Model) else dict(spec)
    data["provider"] = name
    data.setdefault("api", config.api or name)
    if config.base_url is not None:
        data.setdefault("base_url", config.base_url)
    if config.headers:
        data["headers"] = {**config.headers, **(data.get("headers") or {})}
    data.setdefault("name", data.get("id", ""))
    if config.stream_simple is not None and config.api_key is None:
        # its own stream function does its own authentication: no key is looked for
        data["compat"] = {"requiresApiKey": False, **(data.get("compat") or {})}
    return Model.model_validate(data)


def register_provider(name: str, config: ProviderConfig | dict[str, Any], *, source: str) -> list[Model]:
    """Register ``name``'s models (replacing those registered under it before), its key
    variable and its stream function; returns the models."""
    chosen = _config(config)
    keys = _key_variables(name, chosen.api_key)
    models = [_model(name, chosen, spec) for spec in chosen.models]
    if chosen.stream_simple is not None:
        stream = chosen.stream_simple
        register_api_provider(ApiProvider(chosen.api or name, stream, stream), source_id=source)
    unregister_models(name)
    register_models(models)
    register_key_variables(name, keys)
    return models


def unregister_provider(name: str, *, source: str) -> None:
    unregister_models(name)
    unregister_api_providers(source)
    register_key_variables(name, None)
