"""HTTP plumbing shared by the providers: one ``httpx.AsyncClient`` per event loop,
provider errors with status and body, Pi's HTTP-level retry, one silent resend of a
request whose pooled connection died before the server answered, the request's timeouts and
the words of a transport failure.

``timeout_ms`` (Pi's ``timeoutMs``) is an idle timeout, as Pi's ``httpIdleTimeoutMs`` is: it
bounds connecting and each wait for the next bytes (the response's headers, then every read
of the streamed body), never the length of a whole answer, which may stream for minutes.

A client is built once per loop and reused for every request, so a warm request costs no more
than the raw httpx floor. Its SSL context loads the trusted certificates before its first TLS
handshake rather than when the client is built (``DeferredTrustContext``): a first request to
a local server over plain HTTP never pays for them.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import random
import ssl
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Literal

import httpx

from .abort import AbortError, AbortSignal, run_abortable
from .options import StreamOptions
from .redact import redact, redact_url, secret_header_values, url_secrets

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)

DEFAULT_TIMEOUT = httpx.Timeout(connect=30.0, read=600.0, write=60.0, pool=30.0)
TIMED_OUT = "Request timed out"
"""How every timeout's message begins (the SDKs' words, which Pi shows)."""


def request_timeout(options: StreamOptions) -> httpx.Timeout:
    """The httpx timeouts of a request: ``timeout_ms`` for each phase (connecting at most
    ``DEFAULT_TIMEOUT.connect``, as undici's 10 s connect timeout bounds Pi's), else
    ``DEFAULT_TIMEOUT``."""
    if not options.timeout_ms:
        return DEFAULT_TIMEOUT
    seconds = options.timeout_ms / 1000.0
    return httpx.Timeout(seconds, connect=min(seconds, DEFAULT_TIMEOUT.connect or seconds))


# Per kind of timeout: the httpx.Timeout field that bounds it and what did not happen in time.
_TIMEOUTS: tuple[tuple[type[httpx.TimeoutException], str, str], ...] = (
    (httpx.ConnectTimeout, "connect", "could not connect to the server in"),
    (httpx.WriteTimeout, "write", "could not send the request to the server in"),
    (httpx.PoolTimeout, "pool", "no free connection to the server in"),
    (httpx.ReadTimeout, "read", "no answer from the server in"),
)


def transport_error_text(
    exc: httpx.TransportError, timeout: httpx.Timeout | None = None, *, streaming: bool = False
) -> str:
    """The message of a failed connection: ``Connection error: <type>: <httpx's text>``, and for
    a timeout ``Request timed out: no answer from the server in 30 s (ReadTimeout)`` (the
    seconds from ``timeout``; ``streaming``: the answer had begun and then went silent)."""
    name = type(exc).__name__
    for kind, field, what in _TIMEOUTS if timeout is not None else ():
        seconds = getattr(timeout, field) if isinstance(exc, kind) else None
        if isinstance(seconds, int | float):
            stalled = streaming and kind is httpx.ReadTimeout
            happened = "the answer stalled, nothing more from the server in" if stalled else what
            return f"{TIMED_OUT}: {happened} {seconds:g} s ({name})"
    text = str(exc)
    return f"Connection error: {name}: {text}" if text else f"Connection error: {name}"


class DeferredTrustContext(ssl.SSLContext):
    """httpx's default client context, whose trusted certificates load before its first handshake.

    httpx builds ``ssl.create_default_context(cafile=certifi.where())`` (``SSL_CERT_FILE`` or
    ``SSL_CERT_DIR`` when set) with every client: parsing the bundle takes tens of milliseconds
    of a fresh process, which a request to a local server over plain HTTP never needs. This
    context has the settings ``create_default_context`` gives a client on this Python and loads
    the same certificates by the same rules on its first ``wrap_bio`` / ``wrap_socket``, the two
    ways a TLS connection is made from a context. ``tests/ai/test_http_tls.py`` compares it
    with httpx's own and makes real handshakes with it.
    """

    def __new__(cls) -> DeferredTrustContext:
        return super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)

    def __init__(self) -> None:
        self.verify_mode = ssl.CERT_REQUIRED
        self.check_hostname = True
        if sys.version_info >= (3, 13):  # as create_default_context does from 3.13 on
            self.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT
        keylog = os.environ.get("SSLKEYLOGFILE")
        if keylog and not sys.flags.ignore_environment:
            self.keylog_filename = keylog
        self._trust_lock = threading.Lock()
        self._trusted = False

    def load_trust(self) -> None:
        """Load the certificates httpx would trust (once; every handshake calls this first)."""
        with self._trust_lock:
            if self._trusted:
                return
            if os.environ.get("SSL_CERT_FILE"):
                self.load_verify_locations(cafile=os.environ["SSL_CERT_FILE"])
            elif os.environ.get("SSL_CERT_DIR"):
                self.load_verify_locations(capath=os.environ["SSL_CERT_DIR"])
            else:
                import certifi

                self.load_verify_locations(cafile=certifi.where())
            self._trusted = True

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self.load_trust()
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self.load_trust()
        return super().wrap_bio(*args, **kwargs)


def get_client(options: StreamOptions | None = None) -> httpx.AsyncClient:
    if options is not None and options.http_client is not None:
        return options.http_client
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        verify = DeferredTrustContext()
        client = httpx.AsyncClient(timeout=DEFAULT_TIMEOUT, follow_redirects=True, verify=verify)
        _clients[loop] = client
    return client


class ProviderError(Exception):
    """An HTTP error from a provider: ``status``, ``headers`` and the response body text.

    ``retry_note`` is the ``"Server requested Ns retry delay (max: Ms). "`` prefix when the
    error ends a retry because the server asked for too long a wait, else ``""``; a provider
    whose SDK words errors differently rebuilds its message as ``retry_note + its own text``.
    """

    def __init__(
        self, status: int | None, message: str, headers: Mapping[str, str] | None = None, body: str = ""
    ) -> None:
        super().__init__(message)
        self.status = status
        self.headers: Mapping[str, str] = headers or {}
        self.body = body
        self.retry_note = ""
        self.reason: str | None = None
        """The HTTP reason phrase the server sent (``None`` for a transport error)."""
        self.kind: Literal["http", "connect", "timeout"] = "http" if status is not None else "connect"
        """What failed: a non-2xx answer, no (or a dropped) connection, or a timeout."""
        self.url: str | None = None


MAX_ERROR_BODY_CHARS = 4000


def js_stringify(value: Any) -> str:
    """``JSON.stringify`` of a parsed JSON value (compact, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _js_truthy(value: Any) -> bool:
    if value is None or value is False or value == "":
        return False
    return not (isinstance(value, int | float) and not isinstance(value, bool) and value == 0)


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def sdk_error_object(body: str, whole_body: bool = False) -> Any:
    """The error object the vendor SDKs keep for an HTTP error: the body's ``error`` member
    (OpenAI SDK) or the whole JSON body (Anthropic SDK, ``whole_body``); ``None`` when the
    body is not JSON."""
    parsed = _parse_json(body)
    if whole_body:
        return parsed
    return parsed.get("error") if isinstance(parsed, dict) else None


def format_error_body(status: int, body: str, whole_body: bool = False) -> str:
    """The message the OpenAI and Anthropic SDKs give an HTTP error, which Pi keeps:
    ``"<status> <error.message>"``, else ``"<status> <error object as JSON>"``, else
    ``"<status> <raw body>"`` for a body that is not JSON, else ``"<status> status code (no body)"``.
    """
    parsed = _parse_json(body)
    error = sdk_error_object(body, whole_body)
    message = error.get("message") if isinstance(error, dict) else None
    if _js_truthy(message):
        text = message if isinstance(message, str) else js_stringify(message)
    elif _js_truthy(error):
        text = js_stringify(error)
    else:
        text = "" if _js_truthy(parsed) else body  # the SDK keeps raw text only when it is not JSON
    return f"{status} {text}" if text else f"{status} status code (no body)"


def with_error_body(error: ProviderError, prefix: str | None = None) -> str:
    """Pi's ``formatProviderError`` for an OpenAI-SDK error: the SDK message when it already
    shows the body (or there is none), else ``"<status>: <error object JSON>"`` (truncated at
    4000 characters); with ``prefix``: ``"<prefix> (<status>): ..."``."""
    message = str(error)
    error_object = sdk_error_object(error.body)
    body = None
    if isinstance(error_object, dict | list) and error_object:
        body = js_stringify(error_object).strip()
        if len(body) > MAX_ERROR_BODY_CHARS:
            body = f"{body[:MAX_ERROR_BODY_CHARS]}... [truncated {len(body) - MAX_ERROR_BODY_CHARS} chars]"
    if error.status is None or error.retry_note or body is None or body in message:
        return f"{prefix} ({error.status}): {message}" if prefix and error.status is not None else message
    return f"{prefix} ({error.status}): {body}" if prefix else f"{error.status}: {body}"


def merge_headers(base: Mapping[str, str], *extra: Mapping[str, str | None] | None) -> dict[str, str]:
    """Later mappings win, case-insensitively; a ``None`` value deletes the header."""
    out: dict[str, str] = dict(base)
    for mapping in extra:
        if not mapping:
            continue
        for key, value in mapping.items():
            for existing in [k for k in out if k.lower() == key.lower()]:
                del out[existing]
            if value is not None:
                out[key] = value
    return out


def _retry_delay_s(error: ProviderError, attempt: int) -> tuple[float, bool]:
    """(delay, server_requested)."""
    headers = {k.lower(): v for k, v in error.headers.items()}
    if "retry-after-ms" in headers:
        try:
            return float(headers["retry-after-ms"]) / 1000.0, True
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value:
        try:
            return float(value), True
        except ValueError:
            pass
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return 0.0, True  # Pi: Date.parse gives NaN and setTimeout(NaN) fires at once
        return max(0.0, parsed.timestamp() - time.time()), True
    base = min(0.5 * 2**attempt, 8.0)
    return base * (1 - 0.25 * random.random()), False


def is_retryable(error: ProviderError) -> bool:
    should = {k.lower(): v for k, v in error.headers.items()}.get("x-should-retry")
    if should == "true":
        return True
    if should == "false":
        return False
    return error.status is None or error.status in (408, 409, 429) or error.status >= 500


async def abortable_sleep(seconds: float, signal: AbortSignal | None) -> None:
    try:
        await run_abortable(asyncio.sleep(seconds), signal)
    except AbortError:
        raise AbortError("Request aborted") from None


_NO_RESPONSE = "without sending a response"


def died_before_response(exc: httpx.TransportError) -> bool:
    """True when the connection failed before any byte of the response arrived, so the server
    cannot have acted on the request: it closed a kept-alive connection just as the request
    went out ("Server disconnected without sending a response"), reset it while the request was
    written or before the status line (``WriteError``, ``ReadError``), or refused a new one.
    A timeout is never such a failure: the server may be working on the request."""
    if isinstance(exc, httpx.TimeoutException):
        return False
    if isinstance(exc, httpx.RemoteProtocolError):
        return _NO_RESPONSE in str(exc)
    return isinstance(exc, httpx.ConnectError | httpx.WriteError | httpx.ReadError)


async def _send(
    client: httpx.AsyncClient, build: Callable[[], httpx.Request], signal: AbortSignal | None
) -> httpx.Response:
    """Send with ``stream=True`` (it returns once the headers are in). A connection that died
    before the response began is resent once, silently: the pool has dropped the dead
    connection, so the resend opens a fresh one (servers such as llama-server close idle
    keep-alive connections, and a request can race that close). A second failure is raised."""
    try:
        return await client.send(build(), stream=True)
    except httpx.TransportError as exc:
        if not died_before_response(exc) or (signal is not None and signal.aborted):
            raise
    return await client.send(build(), stream=True)


async def open_stream(
    client: httpx.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    body: Any,
    options: StreamOptions,
) -> httpx.Response:
    """POST ``body`` as JSON and return the streaming response once its status is 2xx.

    A connection that died before any response byte arrived is resent once first (see
    :func:`_send`). Non-2xx responses become :class:`ProviderError`; retryable ones are retried up to
    ``options.max_retries`` times with the server's ``retry-after`` (capped by
    ``options.max_retry_delay_ms``, 0 = no cap) or capped exponential backoff.
    """
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    max_retries = options.max_retries or 0
    cap_ms = 60_000 if options.max_retry_delay_ms is None else options.max_retry_delay_ms
    timeout = request_timeout(options)

    def build() -> httpx.Request:
        return client.build_request("POST", url, headers=headers, content=payload, timeout=timeout)

    attempt = 0
    while True:
        try:
            response = await _send(client, build, options.signal)
        except httpx.TransportError as exc:
            # The exception type says what failed (ConnectError: refused, ReadTimeout, ...).
            error = ProviderError(None, redact(transport_error_text(exc, timeout), url_secrets(url)))
            error.kind = "timeout" if isinstance(exc, httpx.TimeoutException) else "connect"
        else:
            if response.status_code < 300:
                return response
            text = (await response.aread()).decode("utf-8", "replace")
            await response.aclose()
            # servers may echo the key back, or the URL with its userinfo or query
            text = redact(text, [*secret_header_values(headers), *url_secrets(url)])
            error = ProviderError(
                response.status_code, format_error_body(response.status_code, text), response.headers, text
            )
            error.reason = response.reason_phrase
        error.url = redact_url(url)
        if options.signal is not None and options.signal.aborted:
            raise AbortError("Request aborted")  # Pi: an aborted request is never retried
        if attempt >= max_retries or not is_retryable(error):
            raise error
        delay, requested = _retry_delay_s(error, attempt)
        if requested and cap_ms > 0 and delay * 1000 > cap_ms:
            note = f"Server requested {math.ceil(delay)}s retry delay (max: {math.ceil(cap_ms / 1000)}s). "
            capped = ProviderError(error.status, f"{note}{error}", error.headers, error.body)
            capped.retry_note, capped.kind, capped.url = note, error.kind, error.url
            raise capped
        await abortable_sleep(delay, options.signal)
        attempt += 1
