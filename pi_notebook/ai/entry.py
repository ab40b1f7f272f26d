"""Entry points ``stream``, ``complete``, ``stream_simple``, ``complete_simple``.

(The module is named ``entry`` so it cannot shadow the ``stream`` function on the package.)

They never raise, where Pi's would throw: an unknown API, a missing API key or a provider that
throws while setting up all become a single terminal ``error`` event whose message says what
to do, so a caller only ever has to handle events.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .env import get_env_api_key, missing_key_message, needs_api_key
from .event_stream import AssistantMessageEventStream, error_stream
from .options import SimpleStreamOptions, StreamOptions, coerce_options
from .registry import get_api_provider
from .types import AssistantMessage, Context, Model


def _dispatch(model: Model, context: Context, options: Any, simple: bool) -> AssistantMessageEventStream:
    cls = SimpleStreamOptions if simple else StreamOptions
    try:
        if not isinstance(context, Context):
            context = Context.model_validate(context)
        opts: StreamOptions = options if isinstance(options, StreamOptions) else coerce_options(options, cls)
        provider = get_api_provider(model.api)
        if provider is None:
            return error_stream(model, f"No API provider registered for api: {model.api}")
        if opts.api_key is None:
            key = get_env_api_key(model.provider, opts.env)
            if key is None and needs_api_key(model):
                return error_stream(model, missing_key_message(model.provider))
            if key is not None:
                opts = dataclasses.replace(opts, api_key=key)
        fn = provider.stream_simple if simple else provider.stream
        return fn(model, context, opts)
    except Exception as exc:  # the contract: entry points never raise
        return error_stream(model, str(exc) or type(exc).__name__)


def stream(
    model: Model, context: Context | dict[str, Any], options: Any = None
) -> AssistantMessageEventStream:
    """Stream with API-specific options (``StreamOptions`` or a mapping of its fields)."""
    return _dispatch(model, context, options, simple=False)  # type: ignore[arg-type]


def stream_simple(
    model: Model, context: Context | dict[str, Any], options: Any = None
) -> AssistantMessageEventStream:
    """Stream with provider-neutral options (``reasoning`` level, thinking budgets)."""
    return _dispatch(model, context, options, simple=True)  # type: ignore[arg-type]


async def complete(model: Model, context: Context | dict[str, Any], options: Any = None) -> AssistantMessage:
    return await stream(model, context, options).result()


async def complete_simple(
    model: Model, context: Context | dict[str, Any], options: Any = None
) -> AssistantMessage:
    return await stream_simple(model, context, options).result()
