"""``AnthropicOptions``: the options type of the ``anthropic-messages`` provider, and the
literal types its fields take.

Its own module so that the stream side (:mod:`.anthropic_messages`) and the request side
(:mod:`.anthropic_request`) both import it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from ..options import StreamOptions

__all__ = ["AnthropicEffort", "AnthropicOptions", "ThinkingDisplay", "ToolChoice"]

AnthropicEffort: TypeAlias = Literal["low", "medium", "high", "xhigh", "max"]
ThinkingDisplay: TypeAlias = Literal["summarized", "omitted"]
ToolChoice: TypeAlias = Literal["auto", "any", "none"] | dict[str, Any]


@dataclass(kw_only=True)
class AnthropicOptions(StreamOptions):
    """Pi's ``AnthropicOptions``: generic stream options plus Anthropic's thinking controls."""

    thinking_enabled: bool | None = None
    """``True``: budget or adaptive thinking; ``False``: ``thinking: disabled`` on reasoning
    models; ``None``: no ``thinking`` field at all."""
    thinking_budget_tokens: int | None = None
    """Budget for non-adaptive models (default 1024 when thinking is enabled)."""
    effort: AnthropicEffort | None = None
    """``output_config.effort`` for adaptive-thinking models (``compat.forceAdaptiveThinking``)."""
    thinking_display: ThinkingDisplay | None = None
    """``summarized`` (default) or ``omitted`` thinking text."""
    interleaved_thinking: bool = True
    """Send the interleaved-thinking beta (never for adaptive models, which have it built in)."""
    tool_choice: ToolChoice | None = None
    """``auto``/``any``/``none`` or ``{"type": "tool", "name": ...}``."""
