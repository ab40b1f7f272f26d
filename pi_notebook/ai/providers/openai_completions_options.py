"""``OpenAICompletionsOptions``: the options type of the ``openai-completions`` provider.

Its own module so that the stream side (:mod:`.openai_completions`) and the request side
(:mod:`.openai_completions_request`) both import it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..levels import ThinkingLevel
from ..options import StreamOptions

__all__ = ["OpenAICompletionsOptions"]


@dataclass(kw_only=True)
class OpenAICompletionsOptions(StreamOptions):
    """``StreamOptions`` plus the Chat Completions specific knobs."""

    tool_choice: str | dict[str, Any] | None = None
    """``"auto"``, ``"none"``, ``"required"`` or ``{"type": "function", "function": {"name": ...}}``."""
    reasoning_effort: ThinkingLevel | None = None
    """Already clamped to the model; ``stream_simple`` derives it from ``reasoning``."""
