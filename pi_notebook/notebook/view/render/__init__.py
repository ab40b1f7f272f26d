"""Static renderers of a ``ViewState`` and the Markdown helpers the live widgets share with them.

* ``text``: ``render_text``, the deterministic ``text/plain`` nbval compares, and the shared
  formatting of tool fields, statuses, the footer and the end line.
* ``static_html``: ``render_html``, the self-contained ``text/html`` a saved notebook shows
  without widget JavaScript (server-side Markdown, inline styles, everything escaped).
* ``markdown``: Markdown prepared for the frontend's own renderer (``frontend_markdown``) and
  where a growing answer may be cut (``safe_split``).
* ``rich``: what a tool card shows beyond text: images and sanitised tables from a result's
  ``details["display"]``, highlighted Python source in the arguments.
* ``limits``: how much Markdown either renderer takes on (``too_much_markup``, ``cap_nesting``).

``static_bundle`` is the frozen output of a run: both renderings under their MIME types.
Pure: no widget or IPython imports.
"""

from __future__ import annotations

from ..reduce import ViewState
from .limits import MAX_MARKDOWN_CHARS, MAX_MARKUP, MAX_NESTING, PLAIN_NOTE, too_much_markup
from .markdown import (
    SAFE_SCHEMES,
    SplitScanner,
    frontend_markdown,
    plain_markdown,
    renders_raw_html,
    renders_unsafe_link,
    safe_split,
    unsafe_url,
)
from .static_html import (
    MATH,
    NO_MATH,
    args_html,
    details_html,
    display_html,
    footer_html,
    line_html,
    plan_html,
    pre_html,
    progress_html,
    prompt_html,
    render_html,
    render_markdown,
    result_html,
    thinking_html,
    tool_head_html,
    user_html,
)
from .text import (
    MAX_SHOWN,
    activity,
    code_arg,
    end_text,
    footer_text,
    format_args,
    format_details,
    plan_text,
    queued_text,
    render_text,
    status_label,
    user_label,
)

__all__ = [
    "MATH",
    "MAX_MARKDOWN_CHARS",
    "MAX_MARKUP",
    "MAX_NESTING",
    "MAX_SHOWN",
    "NO_MATH",
    "PLAIN_NOTE",
    "SAFE_SCHEMES",
    "SplitScanner",
    "activity",
    "args_html",
    "code_arg",
    "details_html",
    "display_html",
    "end_text",
    "footer_html",
    "footer_text",
    "format_args",
    "format_details",
    "frontend_markdown",
    "line_html",
    "plain_markdown",
    "plan_html",
    "plan_text",
    "pre_html",
    "progress_html",
    "prompt_html",
    "queued_text",
    "render_html",
    "render_markdown",
    "render_text",
    "renders_raw_html",
    "renders_unsafe_link",
    "result_html",
    "safe_split",
    "static_bundle",
    "status_label",
    "thinking_html",
    "too_much_markup",
    "tool_head_html",
    "unsafe_url",
    "user_html",
    "user_label",
]


MAX_PLAIN_BLOCK = 20_000
"""Characters of one prompt, answer or thinking block in the frozen ``text/plain``."""


def static_bundle(state: ViewState) -> dict[str, str]:
    """The frozen output: ``{"text/plain": render_text(...), "text/html": render_html(...)}``.
    The HTML has every text whole; the plain text cuts a prompt, answer or thinking block at
    ``MAX_PLAIN_BLOCK`` characters, so a long answer is not saved twice in the notebook."""
    return {"text/plain": render_text(state, MAX_PLAIN_BLOCK), "text/html": render_html(state)}
