"""Stream options (Pi's ``StreamOptions`` / ``SimpleStreamOptions``) as keyword-only dataclasses.

The agent loop's config extends ``SimpleStreamOptions`` and is handed to the stream function
as is, so every generic option reaches the provider; providers read the fields they know.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .levels import ThinkingLevel
from .types import CacheRetention

if TYPE_CHECKING:
    import httpx

    from .abort import AbortSignal
    from .types import Model

Transport = Literal["sse", "websocket", "websocket-cached", "auto"]
OnPayload = Callable[[dict[str, Any], "Model"], "Awaitable[dict[str, Any] | None] | dict[str, Any] | None"]
OnResponse = Callable[[dict[str, Any], "Model"], "Awaitable[None] | None"]


@dataclass(kw_only=True)
class StreamOptions:
    temperature: float | None = None
    max_tokens: int | None = None
    signal: AbortSignal | None = None
    # Credentials stay out of ``repr`` (tracebacks with locals, printed options, logs).
    api_key: str | None = field(default=None, repr=False)
    transport: Transport | None = None
    cache_retention: CacheRetention | None = None
    session_id: str | None = None
    on_payload: OnPayload | None = None
    on_response: OnResponse | None = None
    headers: dict[str, str | None] | None = field(default=None, repr=False)
    timeout_ms: int | None = None
    max_retries: int | None = None
    max_retry_delay_ms: int | None = None
    metadata: dict[str, Any] | None = None
    env: dict[str, str] | None = field(default=None, repr=False)
    http_client: httpx.AsyncClient | None = None
    """Use this client instead of the shared per-loop one (tests, custom transports)."""


@dataclass(kw_only=True)
class SimpleStreamOptions(StreamOptions):
    reasoning: ThinkingLevel | None = None
    thinking_budgets: dict[str, int] | None = None


OptionsT = TypeVar("OptionsT", bound=StreamOptions)


def coerce_options(options: Any, cls: type[OptionsT]) -> OptionsT:
    """Accept ``None``, an options dataclass (any subclass) or a mapping of field names."""
    if options is None:
        return cls()
    if isinstance(options, cls):
        return options
    names = {f.name for f in dataclasses.fields(cls)}
    if isinstance(options, Mapping):
        source: Mapping[str, Any] = options
    elif dataclasses.is_dataclass(options):
        source = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
    else:
        raise TypeError(f"options must be a {cls.__name__}, a mapping or None, not {type(options).__name__}")
    unknown = set(source) - names
    if isinstance(options, Mapping) and unknown:
        raise TypeError(f"unknown stream option(s): {', '.join(sorted(unknown))}")
    return cls(**{k: v for k, v in source.items() if k in names})
