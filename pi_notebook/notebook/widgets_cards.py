"""The ipywidgets that draw one transcript item each: streamed Markdown, thinking, tool cards and
injected user messages. ``widgets.LiveView`` decides *when* to draw; these decide *what* a
draw sends, and send only what changed.

Each widget message costs the kernel a tenth of a millisecond or more of CPU, so every setter
here compares before it assigns, and streamed Markdown is split into frozen outputs plus one
tail: a long answer re-sends its unfinished last block, not itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W

from .render import (
    format_args,
    format_details,
    frontend_markdown,
    pre_html,
    progress_html,
    result_html,
    safe_split,
    tool_head_html,
    user_html,
)
from .view import TextBlock, ThinkingBlock, ToolCard, UserItem

__all__ = [
    "FREEZE_MIN",
    "MarkdownStream",
    "Part",
    "TextPart",
    "ThinkingPart",
    "ToolCardPart",
    "UserPart",
    "set_value",
]

FREEZE_MIN = 2000
"""Characters of finished Markdown blocks gathered before they are frozen into their own
output: fewer, larger frozen outputs keep the number of widget models low."""


def set_value(widget: Any, value: Any, name: str = "value") -> None:
    """Assign a synced trait only when it changes (each assignment is one comm message)."""
    if getattr(widget, name) != value:
        setattr(widget, name, value)


def _markdown_outputs(source: str) -> tuple[dict[str, Any], ...]:
    if not source:
        return ()
    data = {"text/markdown": frontend_markdown(source), "text/plain": source}
    return ({"output_type": "display_data", "data": data, "metadata": {}},)


def _classed(widget: W.Widget, *classes: str) -> W.Widget:
    for cls in classes:
        widget.add_class(cls)
    return widget


def _collapsed(child: W.Widget, title: str, css_class: str) -> W.Accordion:
    accordion = _classed(W.Accordion(children=[child], titles=(title,)), css_class)
    accordion.selected_index = None
    return accordion


class MarkdownStream:
    """Markdown rendered by the frontend, streamed: an ``Output`` per frozen run of finished
    blocks, and one tail ``Output`` whose ``outputs`` is re-assigned as text arrives."""

    def __init__(self, css_class: str) -> None:
        self.tail = W.Output()
        self.widget = _classed(W.VBox([self.tail]), css_class)
        self._frozen: list[str] = []
        self._frozen_len = 0
        self._shown = ""

    def draw(self, text: str, done: bool) -> None:
        if self._frozen_len and (len(text) < self._frozen_len or (done and not self._prefix_holds(text))):
            self._reset()
        tail = text[self._frozen_len :]
        if not done:
            cut = safe_split(tail, FREEZE_MIN)
            if cut:
                self._freeze(tail[:cut])
                tail = tail[cut:]
        if tail != self._shown:
            self._shown = tail
            self.tail.outputs = _markdown_outputs(tail)

    def _prefix_holds(self, text: str) -> bool:
        return text[: self._frozen_len] == "".join(self._frozen)

    def _freeze(self, source: str) -> None:
        frozen = W.Output()
        frozen.outputs = _markdown_outputs(source)
        self._frozen.append(source)
        self._frozen_len += len(source)
        self.widget.children = (*self.widget.children[:-1], frozen, self.tail)

    def _reset(self) -> None:
        """The final text is not an extension of what was streamed: start over."""
        self._frozen, self._frozen_len, self._shown = [], 0, ""
        self.widget.children = (self.tail,)


class TextPart:
    def __init__(self) -> None:
        self.stream = MarkdownStream("pi-text")
        self.widget = self.stream.widget

    def draw(self, item: TextBlock) -> None:
        self.stream.draw(item.text, item.done)

    def disable(self) -> None:
        return None


class ThinkingPart:
    """Collapsed by default: reasoning is there to be looked at, not read along."""

    def __init__(self) -> None:
        self.stream = MarkdownStream("pi-thinking-body")
        self.widget = _classed(
            W.Accordion(children=[self.stream.widget], titles=("Thinking…",)), "pi-thinking"
        )
        self.widget.selected_index = None

    def draw(self, item: ThinkingBlock) -> None:
        text = "*[Reasoning redacted]*" if item.redacted else item.text
        self.stream.draw(text, item.done)
        set_value(self.widget, ("Thinking",) if item.done else ("Thinking…",), "titles")

    def disable(self) -> None:
        return None


class UserPart:
    def __init__(self) -> None:
        self.widget = _classed(W.HTML(), "pi-user-item")

    def draw(self, item: UserItem) -> None:
        set_value(self.widget, user_html(item))

    def disable(self) -> None:
        return None


class ToolCardPart:
    """One card per tool call: name and status, arguments as they stream, progress then the
    result content, and the details in a collapsed section; Approve / Deny while it waits."""

    def __init__(self, on_answer: Callable[[str, bool], None]) -> None:
        self.head = W.HTML()
        self.args = W.HTML()
        self.body = W.HTML()
        layout = W.Layout(border="1px solid rgba(127,127,127,.35)", padding="2px 8px", margin="6px 0")
        self.widget = _classed(W.VBox([self.head, self.args, self.body], layout=layout), "pi-tool")
        self.details: W.Accordion | None = None
        self._details_html: W.HTML | None = None
        self.approve: W.Button | None = None
        self.deny: W.Button | None = None
        self._approval_row: W.HBox | None = None
        self._on_answer = on_answer
        self._status = ""
        self._call_id = ""

    def draw(self, card: ToolCard) -> None:
        self._call_id = card.tool_call_id
        if card.status != self._status:
            if self._status:
                self.widget.remove_class(f"pi-tool--{self._status}")
            self.widget.add_class(f"pi-tool--{card.status}")
            self._status = card.status
        set_value(self.head, tool_head_html(card))
        args = format_args(card)
        set_value(self.args, pre_html(args, "pi-args") if args else "")
        set_value(self.body, self._body_html(card))
        details = format_details(card.details) if card.details is not None else ""
        if details or self.details is not None:
            self._draw_details(details)
        self._draw_approval(card.status == "pending_approval")

    @staticmethod
    def _body_html(card: ToolCard) -> str:
        if card.content:
            return result_html(card)
        if card.progress:
            return progress_html(card.progress)
        return ""

    def _draw_details(self, body: str) -> None:
        if self.details is None or self._details_html is None:
            self._details_html = W.HTML()
            self.details = _classed(
                W.Accordion(children=[self._details_html], titles=("Details",)), "pi-details"
            )
            self.details.selected_index = None
            self.widget.children = (*self.widget.children, self.details)
        set_value(self._details_html, pre_html(body, "pi-details-body") if body else "")

    def _draw_approval(self, waiting: bool) -> None:
        if waiting and self._approval_row is None:
            self.approve = W.Button(description="Approve", button_style="success", icon="check")
            self.deny = W.Button(description="Deny", button_style="danger", icon="times")
            self.approve.on_click(lambda _button: self._on_answer(self._call_id, True))
            self.deny.on_click(lambda _button: self._on_answer(self._call_id, False))
            self._approval_row = _classed(W.HBox([self.approve, self.deny]), "pi-approval")
            self.widget.children = (*self.widget.children, self._approval_row)
        elif not waiting and self._approval_row is not None:
            self.widget.children = tuple(c for c in self.widget.children if c is not self._approval_row)
            self._approval_row = None

    def disable(self) -> None:
        for button in (self.approve, self.deny):
            if button is not None:
                set_value(button, True, "disabled")


Part = TextPart | ThinkingPart | ToolCardPart | UserPart
