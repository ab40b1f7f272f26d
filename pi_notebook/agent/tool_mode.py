"""Which way a run lets the model use tools: through the tool API (``tools``) or code-first
(``code``: Python in fenced blocks, run as ``run_code`` calls; ``printed_turns.py``).

``resolve_tool_mode`` is the one place that decides, in this order: what the user asked for
(``--tool-mode`` / ``c.PiMagics.tool_mode``, unless ``auto``), the model's ``toolMode`` (a
models file's field), what the model's server said it can do (``probed``), else ``tools``.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

__all__ = ["TOOL_MODES", "RequestedToolMode", "ToolMode", "resolve_tool_mode"]

ToolMode: TypeAlias = Literal["tools", "code"]
RequestedToolMode: TypeAlias = Literal["auto", "tools", "code"]
TOOL_MODES: tuple[RequestedToolMode, ...] = ("auto", "tools", "code")


def resolve_tool_mode(requested: str | None, model: Any, probed: str | None = None) -> ToolMode:
    """The mode of a run. ``requested``: the user's choice (``auto`` or ``None``: not chosen);
    ``model``: the run's model, whose ``tool_mode`` (``toolMode`` in a models file) decides
    next; ``probed``: what the model's server says it supports, ``tools`` or ``code`` (a chat
    template that cannot render tool calls means ``code``; ``None``: not asked, or it did not
    say). Anything else falls back to ``tools``, the API's own way."""
    for choice in (requested, getattr(model, "tool_mode", None), probed):
        if choice == "tools":
            return "tools"
        if choice == "code":
            return "code"
    return "tools"
