"""Thinking levels: the names a request, a model and an agent use for reasoning effort.

A module of its own, importing nothing, so that code which only names the levels (the
notebook's ``c.PiMagics.thinking`` setting) does not load the data model and pydantic.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

ThinkingLevel: TypeAlias = Literal["minimal", "low", "medium", "high", "xhigh", "max"]
"""A reasoning level a request can ask for (``SimpleStreamOptions.reasoning``; ``None`` = off)."""
ModelThinkingLevel: TypeAlias = Literal["off", ThinkingLevel]
"""A model's or an agent's setting: ``"off"`` or one of the request levels (the agent layer
calls it ``ThinkingLevel``, as Pi's agent does)."""
THINKING_LEVELS: tuple[ModelThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
