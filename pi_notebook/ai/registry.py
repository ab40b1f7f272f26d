"""The API registry: which stream functions serve which wire API (``model.api``).

Built-in providers register lazily on first lookup so ``import pi_notebook.ai`` stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .event_stream import AssistantMessageEventStream
from .types import Context, Model

StreamFunction = Callable[[Model, Context, Any], AssistantMessageEventStream]


@dataclass(frozen=True)
class ApiProvider:
    api: str
    stream: StreamFunction
    stream_simple: StreamFunction


_providers: dict[str, tuple[ApiProvider, str | None]] = {}

# api id -> module that defines ``stream`` and ``stream_simple`` (imported on first use)
BUILTIN_APIS: dict[str, str] = {
    "openai-completions": "pi_notebook.ai.providers.openai_completions",
    "anthropic-messages": "pi_notebook.ai.providers.anthropic_messages",
    "openai-responses": "pi_notebook.ai.providers.openai_responses",
    "google-generative-ai": "pi_notebook.ai.providers.google",
}


def register_api_provider(provider: ApiProvider, source_id: str | None = None) -> None:
    _providers[provider.api] = (provider, source_id)


def unregister_api_providers(source_id: str) -> None:
    for api in [api for api, (_, sid) in _providers.items() if sid == source_id]:
        del _providers[api]


def get_api_provider(api: str) -> ApiProvider | None:
    entry = _providers.get(api)
    if entry is not None:
        return entry[0]
    module_name = BUILTIN_APIS.get(api)
    if module_name is None:
        return None
    module = importlib.import_module(module_name)
    provider = ApiProvider(api=api, stream=module.stream, stream_simple=module.stream_simple)
    _providers[api] = (provider, "builtin")
    return provider
