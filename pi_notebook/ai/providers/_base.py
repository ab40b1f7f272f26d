"""The skeleton every wire-API provider shares: its ``stream`` / ``stream_simple`` entry points
and the error-encoding wrapper its request runs in.

The rule it enforces in one place: a provider's stream functions never raise. Options that do
not fit, a context that does not validate, a crash while setting up, an HTTP error, a dropped
connection, an abort or a bug all end the stream with exactly one terminal event (``error``, or
``error`` with reason ``aborted``), carrying whatever content arrived before it. Its message
never contains the API key, even when the server echoed the key back.

A provider supplies a :class:`Provider`: its options type, ``body(run, context, options)``
(build the request, call :meth:`ProviderRun.send`, parse the stream while mutating
``run.output`` and pushing block events) and the mapping from the provider-neutral
``SimpleStreamOptions`` to its own options.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

import httpx

from ..abort import ABORT_MESSAGE, AbortError, run_abortable
from ..call_ids import CallIds
from ..event_stream import AssistantMessageEventStream, error_stream
from ..events import DoneEvent, DoneReason, ErrorEvent, StartEvent
from ..failures import RequestFailure, retry_after_seconds
from ..http import ProviderError, get_client, open_stream, request_timeout, transport_error_text
from ..options import SimpleStreamOptions, StreamOptions, coerce_options
from ..redact import redact, secret_header_values, url_secrets
from ..types import AssistantMessage, Context, Model, Usage

OptionsT = TypeVar("OptionsT", bound=StreamOptions)


class StreamError(Exception):
    """Raised by an adapter to end the stream with ``stopReason: "error"`` and this message."""


class ProviderRun:
    """State of one request: the mutable output message, the event stream, the options."""

    __slots__ = ("call_ids", "model", "options", "output", "reading", "stream")

    def __init__(self, model: Model, options: StreamOptions, context: Context | None = None) -> None:
        self.model = model
        self.options = options
        self.call_ids = CallIds(context.messages if context is not None else ())
        """Ids of the transcript: a parsed tool call claims its id here (``ai.call_ids``)."""
        self.stream = AssistantMessageEventStream()
        self.output = AssistantMessage(
            content=[],
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=Usage(),
            stop_reason="pending",
        )
        self.reading = False  # True once the response body is being parsed

    async def send(self, url: str, headers: Mapping[str, str], payload: dict[str, Any]) -> httpx.Response:
        """Apply ``on_payload``, POST with retries, call ``on_response``, push ``start``."""
        opts = self.options
        if opts.on_payload is not None:
            replaced = opts.on_payload(payload, self.model)
            if inspect.isawaitable(replaced):
                replaced = await replaced
            if replaced is not None:
                payload = replaced
        try:
            response = await open_stream(get_client(opts), url, headers, payload, opts)
        except ProviderError as exc:  # adapters reword it; what it was is kept here, as data
            self.output.failure = RequestFailure(
                exc.kind, exc.status, retry_after_seconds(exc.headers) if exc.headers else None, exc.url
            )
            raise
        if opts.on_response is not None:
            result = opts.on_response(
                {"status": response.status_code, "headers": dict(response.headers)}, self.model
            )
            if inspect.isawaitable(result):
                await result
        self.stream.push(StartEvent(partial=self.output))
        self.reading = True
        return response


def start_provider_stream(
    model: Model,
    options: StreamOptions,
    body: Callable[[ProviderRun], Awaitable[None]],
    label: str,
    context: Context | None = None,
) -> AssistantMessageEventStream:
    """Run ``body`` in a background task under the abort signal and the error wrapper
    (``context``: the request's, whose tool-call ids the response's calls must not reuse)."""
    run = ProviderRun(model, options, context)
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
        text = ABORT_MESSAGE if aborted else describe_error(exc, label if run.reading else None, run.options)
        output.error_message = redact_error(text, run.model, run.options)
        if aborted or output.failure is None:
            output.failure = classify_failure(exc, aborted=aborted, reading=run.reading)
        run.stream.push(ErrorEvent(reason=output.stop_reason, error=output))
    finally:
        run.stream.end()


def redact_error(text: str, model: Model, options: StreamOptions | None = None) -> str:
    """An error text as it may be shown and stored: an error body or event may echo the
    request's credentials back (the key, a credential header, the userinfo or a query value of
    the base URL, the Basic token built from it), and a URL in it shows no userinfo or query
    values."""
    secrets: list[str | None] = [*secret_header_values(model.headers), *url_secrets(model.base_url)]
    if options is not None:
        secrets += [options.api_key, *secret_header_values(options.headers)]
    return redact(text, secrets)


def redact_key(text: str, api_key: str | None) -> str:
    """Servers may echo the API key back in an error body; it must never reach a message."""
    return redact(text, [api_key])


# What reading a response of an unexpected shape raises (``"text" + 42``, ``"str".get``).
_SHAPE_ERRORS = (TypeError, AttributeError, KeyError, IndexError)


def classify_failure(exc: BaseException, *, aborted: bool, reading: bool) -> RequestFailure:
    """What kind of failure ended a stream (an HTTP error was recorded when it was raised)."""
    if aborted or isinstance(exc, AbortError):
        return RequestFailure("abort")
    if isinstance(exc, ProviderError):
        return RequestFailure(exc.kind, exc.status, url=exc.url)
    if isinstance(exc, httpx.TimeoutException):
        return RequestFailure("timeout")
    if isinstance(exc, httpx.TransportError):
        return RequestFailure("connect")
    if reading and isinstance(exc, _SHAPE_ERRORS):
        return RequestFailure("shape")
    if isinstance(exc, StreamError) and reading:
        return RequestFailure("stream")  # the server said so inside a 2xx stream
    return RequestFailure("other")


def describe_error(exc: BaseException, label: str | None = None, options: StreamOptions | None = None) -> str:
    """The error message for ``exc``; with ``label`` (the response was being read) a shape
    error says which provider sent data the parser could not read, not just Python's words,
    and a timeout (its seconds from ``options``) says the answer went silent."""
    if label is not None and isinstance(exc, _SHAPE_ERRORS):
        return f"{label} sent a response of an unexpected shape ({type(exc).__name__}: {exc})"
    if isinstance(exc, ProviderError | StreamError):
        return str(exc)
    if isinstance(exc, httpx.TransportError):
        timeout = request_timeout(options) if options is not None else None
        return transport_error_text(exc, timeout, streaming=label is not None)
    text = str(exc)
    return text if text else type(exc).__name__


# --- the entry points ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Provider(Generic[OptionsT]):
    """One wire API's ``stream`` and ``stream_simple``.

    Both accept options as ``options_type``, any other ``StreamOptions`` (its known fields are
    taken) or a mapping of field names (an unknown name is an error), and the context as a
    ``Context`` or a mapping of its fields. Neither raises: see the module docstring.
    """

    label: str
    """The API's name in the wrapper's own messages ("<label> stream ended without ...")."""
    options_type: type[OptionsT]
    body: Callable[[ProviderRun, Context, OptionsT], Awaitable[None]]
    """Send the request and parse the response; raise :class:`StreamError` to fail the stream."""
    simple_options: Callable[[Model, Context, SimpleStreamOptions], OptionsT]
    """Map the provider-neutral options (``reasoning`` level, thinking budgets) to this API's."""
    simple_passthrough: tuple[str, ...] = ()
    """Fields of ``options_type`` that ``stream_simple`` accepts too and passes on unchanged."""

    def stream(
        self, model: Model, context: Context | Mapping[str, Any], options: Any = None
    ) -> AssistantMessageEventStream:
        """Stream one response with this API's own options."""
        try:
            return self._start(model, _as_context(context), coerce_options(options, self.options_type))
        except Exception as exc:  # streams never raise: a setup failure is the error event
            return error_stream(model, redact_error(describe_error(exc), model))

    def stream_simple(
        self, model: Model, context: Context | Mapping[str, Any], options: Any = None
    ) -> AssistantMessageEventStream:
        """Map provider-neutral options through ``simple_options``, then stream as :meth:`stream`."""
        try:
            options, passthrough = _split_passthrough(options, self.simple_passthrough)
            ctx = _as_context(context)
            opts = self.simple_options(model, ctx, coerce_options(options, SimpleStreamOptions))
            if passthrough:  # most calls pass none: skip a copy of ~25 fields
                opts = dataclasses.replace(opts, **passthrough)
            return self._start(model, ctx, opts)
        except Exception as exc:  # streams never raise: a setup failure is the error event
            return error_stream(model, redact_error(describe_error(exc), model))

    def _start(self, model: Model, context: Context, options: OptionsT) -> AssistantMessageEventStream:
        body = self.body
        return start_provider_stream(
            model, options, lambda run: body(run, context, options), self.label, context
        )


def _as_context(context: Context | Mapping[str, Any]) -> Context:
    return context if isinstance(context, Context) else Context.model_validate(context)


def _split_passthrough(options: Any, names: tuple[str, ...]) -> tuple[Any, dict[str, Any]]:
    """``options`` without the ``names`` fields, and those of them that are given (not ``None``)."""
    if not names:
        return options, {}
    if isinstance(options, Mapping):
        rest = {k: v for k, v in options.items() if k not in names}
        given = {name: options.get(name) for name in names}
    else:
        rest, given = options, {name: getattr(options, name, None) for name in names}
    return rest, {name: value for name, value in given.items() if value is not None}
