"""The ipywidgets that draw one transcript item each: streamed Markdown, thinking, tool cards and
injected user messages. ``widgets.LiveView`` decides *when* to draw; these decide *what* a
draw sends, and send only what changed.

Each widget message costs the kernel a tenth of a millisecond or more of CPU, so every setter
here compares before it assigns. Streamed Markdown is split into sealed outputs, each sent
once, plus one tail that carries the unfinished blocks; a widget update always carries the
whole value, so the tail is re-sent only as often as a byte budget proportional to the text
allows (``TAIL_BYTES_PER_CHAR``): what a run sends stays a fixed multiple of its answer,
whatever the answer's length or the token rate. A tool call's arguments, re-sent whole while
they stream, get the same budget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W
from ipywidgets.widgets.widget_button import ButtonStyle
from ipywidgets.widgets.widget_string import HTMLStyle

from ..tools.previews import approval_labels
from .reduce import TextBlock, ThinkingBlock, ToolCard, UserItem
from .render import (
    SplitScanner,
    args_html,
    display_html,
    format_details,
    frontend_markdown,
    pre_html,
    progress_html,
    result_html,
    tool_head_html,
    user_html,
)

__all__ = [
    "FREEZE_MIN",
    "MSG_OVERHEAD",
    "TAIL_BYTES_PER_CHAR",
    "TAIL_GRANT",
    "TICK_BYTES_PER_CHAR",
    "ByteBudget",
    "MarkdownStream",
    "Part",
    "SharedModels",
    "TextPart",
    "ThinkingPart",
    "ToolCardPart",
    "UserPart",
    "set_value",
]

FREEZE_MIN = 1200
"""Characters of finished Markdown blocks gathered before they are sealed into their own
output. A seal costs about 2 KB of messages (a new ``Output`` model and the box's new
children), so sealing every short paragraph would cost more than re-sending it; fewer, larger
sealed outputs also keep the number of widget models low."""

MSG_OVERHEAD = 700
"""Bytes of a widget update around the state it carries: the Jupyter message's header, parent
header and metadata, the comm envelope (about 550 bytes measured in ipykernel 7)."""

TAIL_BYTES_PER_CHAR = 2.5
"""Bytes one stream (its sealed outputs and the live tail, envelopes included) may send per
character of its text so far. The tail is re-sent whole, so without a budget a long unfinished
block costs the square of its length; with it, the tail is re-sent at most once a frame and,
past ``TAIL_GRANT``, as often as the budget allows. Every update carries about 700 bytes of
envelope and a seal about 2 bytes per character (1 of text, 1 of overhead), so at 100 tokens
a second a long answer's text moves about once a second: the price of a fixed multiple."""

TICK_BYTES_PER_CHAR = 2.75
"""The looser budget of the slow tick (1 Hz), which shows text the frame budget held back: on
a slow or steady stream the reader waits a second or two for new words, and a stream still
sends at most this many bytes per character (plus ``TAIL_GRANT`` and the final draw). It was
3.0 while a seal cost one message more (``MarkdownStream._freeze``)."""

TAIL_GRANT = 6000
"""Bytes a stream may spend before the budget applies: a short answer streams live (a few
updates a second for its first ~1,500 characters), a long one pays this once."""


def set_value(widget: Any, value: Any, name: str = "value") -> None:
    """Assign a synced trait only when it changes (each assignment is one comm message)."""
    if getattr(widget, name) != value:
        setattr(widget, name, value)


def _markdown_outputs(source: str) -> tuple[dict[str, Any], ...]:
    if not source:
        return ()
    # Markdown only: every frontend that shows widgets renders it, and a text/plain copy would
    # double what each update sends (the frozen output keeps text/plain for the rest).
    data = {"text/markdown": frontend_markdown(source)}
    return ({"output_type": "display_data", "data": data, "metadata": {}},)


def _source_size(source: str) -> int:
    """About the JSON size of the outputs of ``source``, without building them: escaping the
    Markdown (``frontend_markdown``) is left for the updates the budget lets through."""
    return 100 + len(source) if source else 2


class ByteBudget:
    """What one widget value that is re-sent whole as it grows may send: ``TAIL_GRANT``, then
    ``TAIL_BYTES_PER_CHAR`` per character of the text it shows (``TICK_BYTES_PER_CHAR`` for the
    slow tick's catch-up). ``sent_bytes``: what it sent, envelopes estimated."""

    def __init__(self) -> None:
        self.sent_bytes = 0

    def allows(self, cost: int, chars: int, *, tick: bool = False) -> bool:
        per_char = TICK_BYTES_PER_CHAR if tick else TAIL_BYTES_PER_CHAR
        return self.sent_bytes + cost <= TAIL_GRANT + per_char * chars

    def spend(self, cost: int) -> None:
        self.sent_bytes += cost


class SharedModels:
    """The layout and style models that the widgets of one view share.

    By default every ipywidgets widget makes a ``Layout`` model (about 1.6 KB of state) and,
    for HTML and buttons, a style model, each opened with a message of its own: 25 of the 53
    messages (31 of 57 KB) of the view of a one-word answer. Nothing here restyles a widget
    once it is made, so the widgets that keep the default look share one model of each kind,
    made on first use. CSS classes are passed to the constructors (``_dom_classes``) for the
    same reason: ``add_class`` after the model is open is one more message."""

    def __init__(self) -> None:
        self._layout: W.Layout | None = None
        self._card_layout: W.Layout | None = None
        self._html_style: HTMLStyle | None = None
        self._button_style: ButtonStyle | None = None

    @property
    def layout(self) -> W.Layout:
        if self._layout is None:
            self._layout = W.Layout()
        return self._layout

    @property
    def card_layout(self) -> W.Layout:
        """The frame of a tool card."""
        if self._card_layout is None:
            self._card_layout = W.Layout(
                border="1px solid rgba(127,127,127,.35)", padding="2px 8px", margin="6px 0"
            )
        return self._card_layout

    def html(self, value: str = "", *classes: str) -> W.HTML:
        if self._html_style is None:
            self._html_style = HTMLStyle()
        return W.HTML(value, layout=self.layout, style=self._html_style, _dom_classes=classes)

    def button(self, layout: W.Layout | None = None, **traits: Any) -> W.Button:
        if self._button_style is None:
            self._button_style = ButtonStyle()
        return W.Button(layout=layout or self.layout, style=self._button_style, **traits)

    def vbox(self, children: Any, *classes: str, layout: W.Layout | None = None) -> W.VBox:
        return W.VBox(children, layout=layout or self.layout, _dom_classes=classes)

    def hbox(self, children: Any, *classes: str) -> W.HBox:
        return W.HBox(children, layout=self.layout, _dom_classes=classes)

    def output(self, outputs: tuple[dict[str, Any], ...] = ()) -> W.Output:
        return W.Output(layout=self.layout, outputs=outputs)

    def collapsed(self, child: W.Widget, title: str, css_class: str) -> W.Accordion:
        """An accordion, closed (``selected_index`` is ``None`` by default in ipywidgets 8)."""
        return W.Accordion(children=[child], titles=(title,), layout=self.layout, _dom_classes=(css_class,))


class MarkdownStream:
    """Markdown rendered by the frontend, streamed: one tail ``Output`` whose ``outputs`` is
    re-assigned as text arrives, within the byte budget; when the tail's first blocks are
    finished (``FREEZE_MIN``), the tail is sealed with them, is never sent again, and a new
    tail output follows it. All the outputs share one ``Layout`` model."""

    def __init__(self, css_class: str, models: SharedModels | None = None) -> None:
        self._models = models or SharedModels()
        self.tail = self._models.output()
        self.widget = self._models.vbox([self.tail], css_class)
        self._frozen: list[str] = []
        self._frozen_len = 0
        self._shown = ""
        self._held = ""
        self._split = SplitScanner()  # the tail's block ends, each line read once
        self.budget = ByteBudget()  # the tail's updates and the seals

    @property
    def behind(self) -> bool:
        """The tail holds text the budget has not let through yet."""
        return bool(self._held)

    def draw(self, text: str, done: bool) -> None:
        if self._frozen_len and (len(text) < self._frozen_len or (done and not self._prefix_holds(text))):
            self._reset()
        tail = text[self._frozen_len :]
        if not done:
            cut = self._split.split(tail, FREEZE_MIN)
            if cut:
                self._freeze(tail[:cut], tail[cut:])
                self._split.reset()  # the tail now starts at the cut
                return
        if tail == self._shown:
            self._held = ""
            return
        cost = MSG_OVERHEAD + _source_size(tail)
        if not done and not self.budget.allows(cost, len(text)):
            self._held = tail
            return
        self._send(tail, cost)

    def catch_up(self, tick: bool = False) -> None:
        """Send a held tail now, budget or not: the stream paused, the reader waits for it.
        ``tick``: the periodic catch-up of a running stream, within ``TICK_BYTES_PER_CHAR``."""
        if not self._held:
            return
        cost = MSG_OVERHEAD + _source_size(self._held)
        if not tick or self.budget.allows(cost, self._frozen_len + len(self._held), tick=True):
            self._send(self._held, cost)

    def _send(self, tail: str, cost: int) -> None:
        self.budget.spend(cost)
        self._shown, self._held = tail, ""
        self.tail.outputs = _markdown_outputs(tail)

    def _prefix_holds(self, text: str) -> bool:
        return text[: self._frozen_len] == "".join(self._frozen)

    def _freeze(self, source: str, rest: str) -> None:
        """Seal ``source``: the tail output, which shows part of it already, takes all of it and
        keeps its place, and a new tail after it is made with ``rest`` in the message that
        creates it. Three messages (the seal, the new model, the box's children); sealing into
        a new output took a fourth, the old tail's update, about 700 bytes a seal."""
        sealed, self.tail = self.tail, self._models.output(_markdown_outputs(rest))
        outputs = _markdown_outputs(source)
        seal_cost = 0
        if sealed.outputs != outputs:
            sealed.outputs = outputs
            seal_cost = MSG_OVERHEAD + _source_size(source)
        self._frozen.append(source)
        self._frozen_len += len(source)
        self._shown, self._held = rest, ""
        self.widget.children = (*self.widget.children, self.tail)
        children = MSG_OVERHEAD + 40 * len(self.widget.children)
        self.budget.spend(seal_cost + MSG_OVERHEAD + 400 + _source_size(rest) + children)

    def _reset(self) -> None:
        """The final text is not an extension of what was streamed: start over."""
        self._frozen, self._frozen_len, self._shown, self._held = [], 0, "", ""
        self._split.reset()
        self.widget.children = (self.tail,)


class TextPart:
    def __init__(self, models: SharedModels | None = None) -> None:
        self.stream = MarkdownStream("pi-text", models)
        self.widget = self.stream.widget

    def draw(self, item: TextBlock) -> None:
        self.stream.draw(item.text, item.done)

    def catch_up(self, tick: bool = False) -> None:
        self.stream.catch_up(tick)

    def disable(self) -> None:
        return None


class ThinkingPart:
    """Collapsed by default: reasoning is there to be looked at, not read along."""

    def __init__(self, models: SharedModels | None = None) -> None:
        models = models or SharedModels()
        self.stream = MarkdownStream("pi-thinking-body", models)
        self.widget = models.collapsed(self.stream.widget, "Thinking…", "pi-thinking")

    def draw(self, item: ThinkingBlock) -> None:
        text = "*[Reasoning redacted]*" if item.redacted else item.text
        self.stream.draw(text, item.done)
        set_value(self.widget, ("Thinking",) if item.done else ("Thinking…",), "titles")

    def catch_up(self, tick: bool = False) -> None:
        self.stream.catch_up(tick)

    def disable(self) -> None:
        return None


class UserPart:
    def __init__(self, models: SharedModels | None = None) -> None:
        self.widget = (models or SharedModels()).html("", "pi-user-item")

    def draw(self, item: UserItem) -> None:
        set_value(self.widget, user_html(item))

    def catch_up(self, tick: bool = False) -> None:
        return None

    def disable(self) -> None:
        return None


class ToolCardPart:
    """One card per tool call: name and status, arguments as they stream (Python source as
    code), progress then the result content, the images and tables the tool returned for the
    user (``display``), and the details in a collapsed section; Approve / Deny while it waits."""

    def __init__(
        self,
        on_answer: Callable[[str, bool], None],
        models: SharedModels | None = None,
        on_grant: Callable[[str], None] | None = None,
    ) -> None:
        self._models = models = models or SharedModels()
        self.head = models.html()
        self.args = models.html()
        self.body = models.html()
        self.widget = models.vbox([self.head, self.args, self.body], "pi-tool", layout=models.card_layout)
        self.display: W.HTML | None = None
        self._display_of: object = None  # the details ``display`` was drawn from
        self.details: W.Accordion | None = None
        self._details_html: W.HTML | None = None
        self.approve: W.Button | None = None
        self.deny: W.Button | None = None
        self.grant: W.Button | None = None
        """"Allow for this conversation", where the run offers a grant (``sessions/grants.py``)."""
        self._approval_row: W.HBox | None = None
        self._on_answer = on_answer
        self._on_grant = on_grant
        self._status = ""
        self._call_id = ""
        self._name = ""
        self._args_held: tuple[str, int] | None = None  # (HTML, characters) the budget held back
        self.args_budget = ByteBudget()

    def draw(self, card: ToolCard) -> None:
        self._call_id = card.tool_call_id
        self._name = card.name
        if card.status != self._status:
            if self._status:
                self.widget.remove_class(f"pi-tool--{self._status}")
            self.widget.add_class(f"pi-tool--{card.status}")
            self._status = card.status
        set_value(self.head, tool_head_html(card))
        self._draw_args(card)
        set_value(self.body, self._body_html(card))
        self._draw_display(card)
        details = format_details(card.details) if card.details is not None else ""
        if details or self.details is not None:
            self._draw_details(details)
        self._draw_approval(card.status == "pending_approval", card.grant_offer)

    def _draw_args(self, card: ToolCard) -> None:
        """Streaming arguments (a long ``run_code`` source, say) are re-sent whole by every
        update, so they get the Markdown tail's byte budget; complete ones are sent at once."""
        value, chars = args_html(card)
        self._args_held = None
        if value == self.args.value:
            return
        cost = MSG_OVERHEAD + len(value)
        if card.status == "streaming" and not self.args_budget.allows(cost, chars):
            self._args_held = (value, chars)
            return
        self._send_args(value, cost)

    def _send_args(self, value: str, cost: int) -> None:
        self.args_budget.spend(cost)
        self._args_held = None
        self.args.value = value

    @staticmethod
    def _body_html(card: ToolCard) -> str:
        if card.content:
            return result_html(card)
        if card.progress:
            return progress_html(card.progress)
        return ""

    def _draw_display(self, card: ToolCard) -> None:
        """Figures and tables, in their own widget after the result: built and sent once per
        result (an image is up to 1 MB of base64), not on every redraw of the card."""
        if card.details is self._display_of:
            return
        self._display_of = card.details
        value = display_html(card)
        if value and self.display is None:
            self.display = self._models.html()
            head = self.widget.children[:3]  # head, args, body; details and approval stay after
            self.widget.children = (*head, self.display, *self.widget.children[3:])
        if self.display is not None:
            set_value(self.display, value)

    def _draw_details(self, body: str) -> None:
        if self.details is None or self._details_html is None:
            self._details_html = self._models.html()
            self.details = self._models.collapsed(self._details_html, "Details", "pi-details")
            self.widget.children = (*self.widget.children, self.details)
        set_value(self._details_html, pre_html(body, "pi-details-body") if body else "")

    def _draw_approval(self, waiting: bool, offer: str = "") -> None:
        if waiting and self._approval_row is None:
            yes, no = approval_labels(self._name)  # Apply / Reject where the card shows the change
            self.approve = self._models.button(description=yes, button_style="success", icon="check")
            self.deny = self._models.button(description=no, button_style="danger", icon="times")
            self.approve.on_click(lambda _button: self._on_answer(self._call_id, True))
            self.deny.on_click(lambda _button: self._on_answer(self._call_id, False))
            row: list[W.Widget] = [self.approve, self.deny]
            if offer and self._on_grant is not None:
                on_grant = self._on_grant
                # as wide as its words: a button's default width cut "Allow for this c..."
                fit = W.Layout(width="auto")
                self.grant = self._models.button(fit, description=offer, icon="check-double")
                self.grant.on_click(lambda _button: on_grant(self._call_id))
                row.append(self.grant)
            self._approval_row = self._models.hbox(row, "pi-approval")
            self.widget.children = (*self.widget.children, self._approval_row)
        elif not waiting and self._approval_row is not None:
            self.widget.children = tuple(c for c in self.widget.children if c is not self._approval_row)
            self._approval_row = None

    def catch_up(self, tick: bool = False) -> None:
        """Send held-back arguments; ``tick``: only within ``TICK_BYTES_PER_CHAR``."""
        if self._args_held is None:
            return
        value, chars = self._args_held
        cost = MSG_OVERHEAD + len(value)
        if not tick or self.args_budget.allows(cost, chars, tick=True):
            self._send_args(value, cost)

    def disable(self) -> None:
        for button in (self.approve, self.deny, self.grant):
            if button is not None:
                set_value(button, True, "disabled")


Part = TextPart | ThinkingPart | ToolCardPart | UserPart
