"""HTTP plumbing shared by the providers: one ``httpx.AsyncClient`` per event loop,
provider errors with status and body, and Pi's HTTP-level retry (spec 3.8).

A client is built once per loop (building one costs 50-100 ms for its SSL context) and reused
for every request, so a warm request costs no more than the raw httpx floor.
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import random
import time
import weakref
from collections.abc import Mapping
from typing import Any

import httpx

from .abort import AbortError, AbortSignal, run_abortable
from .options import StreamOptions

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)

DEFAULT_TIMEOUT = httpx.Timeout(connect=30.0, read=600.0, write=60.0, pool=30.0)


def get_client(options: StreamOptions | None = None) -> httpx.AsyncClient:
    if options is not None and options.http_client is not None:
        return options.http_client
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(timeout=DEFAULT_TIMEOUT, follow_redirects=True)
        _clients[loop] = client
    return client


class ProviderError(Exception):
    """An HTTP error from a provider: ``status``, ``headers`` and the response body text."""

    def __init__(
        self, status: int | None, message: str, headers: Mapping[str, str] | None = None, body: str = ""
    ) -> None:
        super().__init__(message)
        self.status = status
        self.headers: Mapping[str, str] = headers or {}
        self.body = body


def format_error_body(status: int, body: str) -> str:
    """``"<status> <provider message>"`` using the JSON error message when there is one."""
    text = body.strip()
    try:
        import json

        data = json.loads(text)
        err = data.get("error", data) if isinstance(data, dict) else data
        if isinstance(err, dict):
            msg = err.get("message") or err.get("msg") or json.dumps(err)
            etype = err.get("type") or err.get("code") or err.get("status")
            text = f"{msg}" if not etype or str(etype) in str(msg) else f"{etype}: {msg}"
        elif isinstance(err, str):
            text = err
    except (ValueError, TypeError):
        pass
    if not text:
        return f"{status} status code (no body)"
    return f"{status} {text}"


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


async def open_stream(
    client: httpx.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    body: Any,
    options: StreamOptions,
) -> httpx.Response:
    """POST ``body`` as JSON and return the streaming response once its status is 2xx.

    Non-2xx responses become :class:`ProviderError`; retryable ones are retried up to
    ``options.max_retries`` times with the server's ``retry-after`` (capped by
    ``options.max_retry_delay_ms``, 0 = no cap) or capped exponential backoff.
    """
    import json

    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    max_retries = options.max_retries or 0
    cap_ms = 60_000 if options.max_retry_delay_ms is None else options.max_retry_delay_ms
    timeout = httpx.Timeout(options.timeout_ms / 1000.0) if options.timeout_ms else DEFAULT_TIMEOUT
    attempt = 0
    while True:
        request = client.build_request("POST", url, headers=headers, content=payload, timeout=timeout)
        try:
            response = await client.send(request, stream=True)
        except httpx.TransportError as exc:
            # The exception type says what failed (ConnectError: refused, ReadTimeout, ...).
            detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            error = ProviderError(None, f"Connection error: {detail}")
        else:
            if response.status_code < 300:
                return response
            text = (await response.aread()).decode("utf-8", "replace")
            await response.aclose()
            error = ProviderError(
                response.status_code, format_error_body(response.status_code, text), response.headers, text
            )
        if options.signal is not None and options.signal.aborted:
            raise AbortError("Request aborted")  # Pi: an aborted request is never retried
        if attempt >= max_retries or not is_retryable(error):
            raise error
        delay, requested = _retry_delay_s(error, attempt)
        if requested and cap_ms > 0 and delay * 1000 > cap_ms:
            raise ProviderError(
                error.status,
                f"Server requested {math.ceil(delay)}s retry delay "
                f"(max: {math.ceil(cap_ms / 1000)}s). {error}",
                error.headers,
                error.body,
            )
        await abortable_sleep(delay, options.signal)
        attempt += 1
