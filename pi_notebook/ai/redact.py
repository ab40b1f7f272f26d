"""Keeping credentials out of error text.

A provider (or a proxy in front of it) may echo the request's headers back in an error body
or an error event, so every error text built from a response passes through :func:`redact`
with the secrets the request carried before it reaches an exception or a message.

The secrets of a request are its credential headers (:func:`secret_header_values`) and what its
URL carries (:func:`url_secrets`): the password of ``https://user:password@host/`` (and the Basic
``Authorization`` token httpx builds from it) and the query values of ``...?key=...``. Beyond
those exact values, :func:`redact` hides the userinfo and the query values of every URL in the
text (:func:`redact_urls`), so a URL the server quotes in another form shows no key either.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, unquote, urlsplit

__all__ = ["REDACTED", "redact", "redact_url", "redact_urls", "secret_header_values", "url_secrets"]

REDACTED = "[redacted]"

# Header names that carry credentials: Authorization, x-api-key, x-goog-api-key, api-key,
# cf-aig-authorization, proxy tokens ...
_SECRET_HEADER = re.compile(r"auth|key|token|secret|cookie", re.IGNORECASE)
# Shorter values are not redacted: replacing them would garble ordinary words in the text.
_MIN_SECRET_LEN = 8

# A URL in free text: a scheme, ``://`` and everything up to whitespace, a quote or a bracket.
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s\"'<>`\\]+")
# The userinfo of a URL (``//user:password@``): up to the first ``@`` before the host ends.
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*://)[^/?#@]*@")
# One ``name=value`` pair of a query (the value up to the next ``&``, ``#`` or the end).
_QUERY_VALUE = re.compile(r"([?&;][^=&#?;]*=)[^&#;]*")


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


def url_secrets(url: str | None) -> list[str]:
    """What a request to ``url`` carries as credentials: the userinfo (raw and decoded, the
    password alone, and the Basic token and header httpx sends for it) and every query value
    (raw and decoded)."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    out: list[str] = []
    userinfo, at, _host = parts.netloc.rpartition("@")
    if at and userinfo:
        user, _colon, password = userinfo.partition(":")
        plain = f"{unquote(user)}:{unquote(password)}"
        token = base64.b64encode(plain.encode()).decode()
        out += [userinfo, unquote(userinfo), password, unquote(password), token, f"Basic {token}"]
    # the query of the base URL, wherever the provider appended its path
    for _name, value in parse_qsl(url.partition("?")[2], keep_blank_values=False):
        out += [value, unquote(value)]
    for raw in re.findall(r"[?&][^=&#]*=([^&#/]*)", url):
        out.append(raw)
    return [s for s in dict.fromkeys(out) if s]


def redact_url(url: str) -> str:
    """``url`` with its userinfo and every query value replaced (scheme, host, port, path and
    the query's names stay, so the address can still be recognised)."""
    url = _USERINFO.sub(rf"\1{REDACTED}@", url)
    return _QUERY_VALUE.sub(rf"\1{REDACTED}", url) if "?" in url else url


def redact_urls(text: str) -> str:
    """Every URL in ``text`` through :func:`redact_url`."""
    if "://" not in text:
        return text
    return _URL.sub(lambda match: redact_url(match.group(0)), text)


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every occurrence of each secret (8 characters or more) replaced, and the
    userinfo and query values of every URL in it hidden."""
    for secret in sorted({s for s in secrets if s and len(s) >= _MIN_SECRET_LEN}, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return redact_urls(text)
