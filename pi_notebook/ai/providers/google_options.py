"""``GoogleOptions``: the options type of the ``google-generative-ai`` provider, with its
``GoogleThinking`` setting.

Its own module so that the stream side (:mod:`.google`) and the request side
(:mod:`.google_request`) both import it without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..options import StreamOptions

__all__ = ["GoogleOptions", "GoogleThinking", "GoogleThinkingLevel"]

GoogleThinkingLevel = Literal["THINKING_LEVEL_UNSPECIFIED", "MINIMAL", "LOW", "MEDIUM", "HIGH"]


@dataclass(kw_only=True)
class GoogleThinking:
    """``enabled`` with either a Gemini 3 ``level`` or a token ``budget_tokens`` (-1 = dynamic, 0 = off)."""

    enabled: bool
    budget_tokens: int | None = None
    level: GoogleThinkingLevel | None = None


@dataclass(kw_only=True)
class GoogleOptions(StreamOptions):
    tool_choice: Literal["auto", "none", "any"] | None = None
    thinking: GoogleThinking | Mapping[str, Any] | None = None
    """``GoogleThinking`` or a mapping of its fields (``enabled``, ``budget_tokens``, ``level``)."""
