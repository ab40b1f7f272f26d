"""Keeping credentials out of error text.

A provider (or a proxy in front of it) may echo the request's headers back in an error body
or an error event, so every error text built from a response passes through :func:`redact`
with the secrets the request carried before it reaches an exception or a message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["REDACTED", "redact", "secret_header_values"]

REDACTED = "[redacted]"

# Header names that carry credentials: Authorization, x-api-key, x-goog-api-key, api-key,
# cf-aig-authorization, proxy tokens ...
_SECRET_HEADER = re.compile(r"auth|key|token|secret|cookie", re.IGNORECASE)
# Shorter values are not redacted: replacing them would garble ordinary words in the text.
_MIN_SECRET_LEN = 8


def secret_header_values(headers: Mapping[str, str | None] | None) -> list[str]:
    """The values of credential headers, plus the token of ``<scheme> <token>`` values."""
    out: list[str] = []
    for name, value in (headers or {}).items():
        if value and _SECRET_HEADER.search(name):
            out.append(value)
            token = value.partition(" ")[2].strip()
            if token:
                out.append(token)
    return out


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every occurrence of each secret (8 characters or more) replaced."""
    for secret in sorted({s for s in secrets if s and len(s) >= _MIN_SECRET_LEN}, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text
