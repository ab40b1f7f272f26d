"""The error-encoding wrapper every adapter runs in (spec 3.3): streams never raise.

An adapter supplies ``body(run)``: build the request, call :meth:`ProviderRun.send`, parse the
stream while mutating ``run.output`` and pushing block events. The wrapper turns whatever
happens (HTTP error, dropped connection, abort, a bug) into one terminal event.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

import httpx

from ..abort import ABORT_MESSAGE, AbortError, run_abortable
from ..event_stream import AssistantMessageEventStream
from ..events import DoneEvent, DoneReason, ErrorEvent, StartEvent
from ..http import ProviderError, get_client, open_stream
from ..options import StreamOptions
from ..types import AssistantMessage, Model, Usage


class StreamError(Exception):
    """Raised by an adapter to end the stream with ``stopReason: "error"`` and this message."""


class ProviderRun:
    """State of one request: the mutable output message, the event stream, the options."""

    __slots__ = ("model", "options", "output", "stream")

    def __init__(self, model: Model, options: StreamOptions) -> None:
        self.model = model
        self.options = options
        self.stream = AssistantMessageEventStream()
        self.output = AssistantMessage(
            content=[],
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=Usage(),
            stop_reason="pending",
        )

    async def send(self, url: str, headers: Mapping[str, str], payload: dict[str, Any]) -> httpx.Response:
        """Apply ``on_payload``, POST with retries, call ``on_response``, push ``start``."""
        opts = self.options
        if opts.on_payload is not None:
            replaced = opts.on_payload(payload, self.model)
            if inspect.isawaitable(replaced):
                replaced = await replaced
            if replaced is not None:
                payload = replaced
        response = await open_stream(get_client(opts), url, headers, payload, opts)
        if opts.on_response is not None:
            result = opts.on_response(
                {"status": response.status_code, "headers": dict(response.headers)}, self.model
            )
            if inspect.isawaitable(result):
                await result
        self.stream.push(StartEvent(partial=self.output))
        return response


def start_provider_stream(
    model: Model,
    options: StreamOptions,
    body: Callable[[ProviderRun], Awaitable[None]],
    label: str,
) -> AssistantMessageEventStream:
    """Run ``body`` in a background task under the abort signal and the 3.3 error wrapper."""
    run = ProviderRun(model, options)
    run.stream.start(lambda: _produce(run, body, label))
    return run.stream


async def _produce(run: ProviderRun, body: Callable[[ProviderRun], Awaitable[None]], label: str) -> None:
    output, signal = run.output, run.options.signal
    try:
        if signal is not None and signal.aborted:
            raise AbortError()
        await run_abortable(body(run), signal)
        if signal is not None and signal.aborted:
            raise AbortError()
        if output.stop_reason == "pending":
            raise StreamError(f"{label} stream ended without a stop reason")
        if output.stop_reason in ("error", "aborted"):
            raise StreamError(output.error_message or f"{label} request failed")
        run.stream.push(DoneEvent(reason=cast(DoneReason, output.stop_reason), message=output))
    except (Exception, asyncio.CancelledError) as exc:
        aborted = (signal is not None and signal.aborted) or isinstance(exc, asyncio.CancelledError)
        output.stop_reason = "aborted" if aborted else "error"
        output.error_message = ABORT_MESSAGE if aborted else describe_error(exc)
        run.stream.push(ErrorEvent(reason=output.stop_reason, error=output))
    finally:
        run.stream.end()


def describe_error(exc: BaseException) -> str:
    if isinstance(exc, ProviderError | StreamError):
        return str(exc)
    if isinstance(exc, httpx.TransportError):
        text = str(exc)
        return (
            f"Connection error: {type(exc).__name__}: {text}"
            if text
            else f"Connection error: {type(exc).__name__}"
        )
    text = str(exc)
    return text if text else type(exc).__name__
