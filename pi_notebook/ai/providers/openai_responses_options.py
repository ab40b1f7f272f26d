"""``OpenAIResponsesOptions``: the options type of the ``openai-responses`` provider.

Its own module so that the stream side (:mod:`.openai_responses`) and the request side
(:mod:`.openai_responses_request`) both import it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..options import StreamOptions

__all__ = ["OpenAIResponsesOptions"]


@dataclass(kw_only=True)
class OpenAIResponsesOptions(StreamOptions):
    reasoning_effort: str | None = None
    """A Pi level (``minimal`` ... ``max``), sent through ``model.thinking_level_map``."""
    reasoning_summary: Literal["auto", "detailed", "concise"] | None = None
    service_tier: str | None = None
    """``auto`` / ``default`` / ``flex`` / ``priority``; flex and priority change the cost."""
    tool_choice: Any = None
    """Passed through: ``"auto"``, ``"none"``, ``"required"`` or ``{"type": "function", "name": ...}``."""
