"""What a failed request was, as data: :class:`RequestFailure` rides on the failed
``AssistantMessage`` beside Pi's ``errorMessage`` text, so whoever reacts to a failure (the
session's auto-retry, the notebook's one-line explanations) reads fields instead of parsing the
text back.

The provider boundary (``providers/_base.py``) classifies the exception that ended the stream
once: ``connect`` (no connection, or it dropped), ``timeout``, ``http`` (a non-2xx status, with
the server's ``Retry-After``), ``shape`` (a response the parser could not read), ``stream`` (the
server reported an error inside a 2xx stream), ``abort``, or ``other``. The record is the
message's ``failure`` property (a private attribute): Pi's JSON (session files, ``model_dump``)
is unchanged, and a message read back from a file has none (:func:`failure_of` says ``None``).
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

__all__ = ["FailureKind", "RequestFailure", "failure_of", "retry_after_seconds"]

FailureKind: TypeAlias = Literal["connect", "timeout", "http", "shape", "stream", "abort", "other"]


@dataclass(frozen=True, slots=True)
class RequestFailure:
    """One failed request: its kind, and what the server said where it said anything."""

    kind: FailureKind
    status: int | None = None
    """The HTTP status of an ``http`` failure."""
    retry_after_s: float | None = None
    """The wait the server asked for (``Retry-After`` / ``retry-after-ms``), in seconds."""
    url: str | None = None
    """The URL the request went to, when the failure happened while sending it."""

    def to_dict(self) -> dict[str, Any]:
        """camelCase JSON, leaving out what is unknown."""
        out: dict[str, Any] = {"kind": self.kind}
        for key, value in (("status", self.status), ("retryAfterS", self.retry_after_s), ("url", self.url)):
            if value is not None:
                out[key] = value
        return out


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The server's ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date) in seconds;
    ``None`` when it sent neither or sent something unreadable."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


def failure_of(message: Any) -> RequestFailure | None:
    """The failure a provider recorded on ``message`` (``None`` for a message without one, e.g.
    one read from a session file or made by the faux provider)."""
    found = getattr(message, "failure", None)
    return found if isinstance(found, RequestFailure) else None
