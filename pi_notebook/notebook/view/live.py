"""The live view of a ``%%pi`` run: ``LiveView`` turns agent events into an ipywidgets tree that
updates while the cell runs, with Stop, Approve / Deny and steering controls.

It owns *when* to draw. Every event goes through the pure reducer (``reduce.reduce``); widget
updates are coalesced to at most ``max_rate_hz`` per second whatever the token rate, and
flushed at once on block ends, tool start/end, message and turn ends and ``agent_end``, so the
transcript never lags behind a structural change. A streaming frame is drawn by the first
event after the interval; a timer on the running loop draws the last few tokens when a stream
pauses (a frame after the interval, so a steady stream never wakes the loop for it), and a
slow tick (1 Hz) keeps the elapsed time and what the run waits for (``render.activity``)
moving while the model is silent, and shows text the streamed Markdown's byte budget held
back. While text streams, the footer's clock moves every ``clock_s`` seconds only: the text
shows the run is alive, and a footer update per frame would cost more bytes than the text
itself. Per-item widgets live in ``parts``; the view's widgets share their layout and
style models (``SharedModels``).

Button callbacks run on the kernel's event loop (ipykernel >= 7.4 handles comms while an
awaiting cell runs); everything here must be called from that loop's thread.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as W

from ...agent.types import AgentEvent
from ...runtime.events import AgentSessionEvent
from . import render
from .parts import Part, SharedModels, TextPart, ThinkingPart, ToolCardPart, UserPart, set_value
from .reduce import (
    FINAL_STATUSES,
    TextBlock,
    ThinkingBlock,
    ToolCard,
    ViewState,
    add_notice,
    mark_approval,
    mark_granted,
    mark_queued,
    offer_grant,
    reduce,
    set_elapsed,
)
from .review import leave_unanswered

__all__ = ["LiveView", "ViewControls", "close_tree"]

log = logging.getLogger(__name__)

STEER_PLACEHOLDER = "Steer the agent"
NOTICE_NOT_INTERACTIVE = (
    "Buttons are inactive in this run: nothing can answer a click while the cell runs, "
    "so approvals follow the non-interactive policy."
)
NOTICE_NO_CONTROLS = "Stop and steering are not available in this run."

_FLUSH_EVENTS = frozenset(
    {
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "turn_end",
        "agent_end",
        # the session's own: a retry or a compaction starts or ends (a line under the run)
        "auto_retry_start",
        "auto_retry_end",
        "compaction_start",
        "compaction_end",
    }
)
_FLUSH_BLOCK_EVENTS = frozenset({"text_end", "thinking_end", "toolcall_end"})


@dataclass
class ViewControls:
    """What the view's buttons do; the runtime wires them to the agent."""

    on_stop: Callable[[], None]
    on_steer: Callable[[str], None]
    """The "Send" button: ``session.queue(text, "steer")`` (injected after the current turn)."""
    on_follow_up: Callable[[str], None]
    """The "Queue" button: ``session.queue(text, "follow_up")`` (run when the agent would stop)."""


LIVE_VIEW_TEXT = (
    "pi_notebook live view (no widgets here: %%pi --text prints the run, jupyter console --kernel pi "
    "streams it)"
)
"""At most 110 characters: ipywidgets cuts a longer text repr."""


class _ViewBox(W.VBox):  # type: ignore[misc]
    """The root box. Its text repr is what nbval compares for a widget display, so it must
    not contain widget values that differ between runs. It is all that a frontend without
    widgets that also ignores display updates shows of the run (``jupyter console`` with the
    Python kernel), so it says what to use there."""

    def __repr__(self) -> str:
        return LIVE_VIEW_TEXT


def close_tree(widget: W.Widget) -> None:
    """Close ``widget`` and every widget it holds (children, layout, style), each once."""
    seen: set[int] = set()
    todo = [widget]
    while todo:
        item = todo.pop()
        if id(item) in seen or not isinstance(item, W.Widget):
            continue
        seen.add(id(item))
        for name in ("children", "layout", "style"):
            value = getattr(item, name, None) if item.has_trait(name) else None
            todo.extend(value if isinstance(value, tuple | list) else [value] if value is not None else [])
        item.close()


def _is_flush_point(event: AgentEvent | AgentSessionEvent) -> bool:
    kind = event.type
    if kind == "message_update":
        return event.assistant_message_event.type in _FLUSH_BLOCK_EVENTS  # type: ignore[union-attr]
    return kind in _FLUSH_EVENTS


class LiveView:
    """Live ipywidgets output of one agent run.

    ``handle`` is the agent listener; ``request_approval`` is awaited by the approval hook;
    ``close`` freezes the controls at the end, after which ``static_bundle`` is what replaces
    the widget in the saved notebook."""

    def __init__(
        self,
        prompt: str,
        *,
        controls: ViewControls | None = None,
        interactive: bool = True,
        notices: Sequence[str] | None = None,
        max_rate_hz: float = 20.0,
        clock: Callable[[], float] = time.monotonic,
        tick_s: float = 1.0,
        clock_s: float = 5.0,
    ) -> None:
        self.state = ViewState(prompt=prompt)
        self.closed = False
        self._controls = controls if interactive else None
        self._interactive = interactive
        self._clock = clock
        self._interval = 1.0 / max_rate_hz if max_rate_hz > 0 else 0.0
        self._started = clock()
        self._last_flush = -math.inf
        self._clock_s = clock_s
        self._clock_at = -math.inf
        self._pending = False
        self._timer: asyncio.TimerHandle | None = None
        self._tick_s = tick_s
        self._ticker: asyncio.TimerHandle | None = None
        self._approvals: dict[str, asyncio.Future[bool]] = {}
        self._granted: set[str] = set()
        self._parts: list[Part] = []
        self._drawn: list[int] = []
        if notices is None and not interactive:
            notices = [NOTICE_NOT_INTERACTIVE]
        elif notices is None and controls is None:
            notices = [NOTICE_NO_CONTROLS]
        for line in notices or ():
            add_notice(self.state, line)
        self._models = SharedModels()
        set_elapsed(self.state, 0.0)  # what the first flush shows, so the footer is built with it
        self._build()
        self.flush()
        self._arm_tick()

    # --- widget tree -------------------------------------------------------------------------

    def _build(self) -> None:
        models = self._models
        self._prompt = models.html(render.prompt_html(self.state.prompt, self.state.sent))
        self._sent_drawn = self.state.sent
        self._plan = models.html(render.plan_html(self.state.plan), "pi-plan-card")
        self._transcript = models.vbox([], "pi-transcript")
        # Made with their first values: a value assigned after the model is open is a message.
        queued, error, notice, footer = self._chrome()
        self._queued = models.html(queued)
        self._error = models.html(error)
        self._notice = models.html(notice)
        self._footer = models.html(footer, "pi-footer")
        children: list[W.Widget] = [
            self._prompt, self._plan, self._transcript, self._queued, self._error, self._notice
        ]
        self.stop_button: W.Button | None = None
        self.steer_text: W.Text | None = None
        self.send_button: W.Button | None = None
        self.queue_button: W.Button | None = None
        if self._controls is not None:
            children.append(self._build_controls())
        children.append(self._footer)
        layout = W.Layout(border_left="3px solid #8b7cf6", padding="2px 0 2px 10px", margin="4px 0")
        self.widget = _ViewBox(children, layout=layout, _dom_classes=("pi-view",))

    def _build_controls(self) -> W.HBox:
        button = self._models.button
        self.stop_button = button(description="Stop", button_style="warning", icon="stop")
        text_layout = W.Layout(flex="1 1 auto", width="auto")
        self.steer_text = W.Text(placeholder=STEER_PLACEHOLDER, layout=text_layout)
        self.send_button = button(description="Send", tooltip="Steer: inject after the current turn")
        self.queue_button = button(description="Queue", tooltip="Follow up: run when the agent would stop")
        self.stop_button.on_click(lambda _b: self._on_stop())
        self.send_button.on_click(lambda _b: self._on_message("steer"))
        self.queue_button.on_click(lambda _b: self._on_message("follow_up"))
        return self._models.hbox(
            [self.stop_button, self.steer_text, self.send_button, self.queue_button], "pi-controls"
        )

    def _make_part(self, item: Any) -> Part:
        models = self._models
        if isinstance(item, TextBlock):
            return TextPart(models)
        if isinstance(item, ThinkingBlock):
            return ThinkingPart(models)
        if isinstance(item, ToolCard):
            return ToolCardPart(self.resolve_approval, models, on_grant=self.grant_approval)
        return UserPart(models)

    # --- events and drawing ------------------------------------------------------------------

    def handle(self, event: AgentEvent | AgentSessionEvent) -> None:
        """Reduce ``event`` and redraw, coalesced. Never raises: a drawing bug must not end the
        agent run (listener errors abort it), so it is logged and shown in the notice."""
        try:
            reduce(self.state, event)
            if self.closed:
                return
            if self._ticker is None:
                self._arm_tick()
            if _is_flush_point(event):
                self.flush()
            elif self._clock() - self._last_flush >= self._interval:
                self.flush(clock=False)
            else:
                self._pending = True
                if self._timer is None:
                    self._arm_timer()
        except Exception as exc:
            log.exception("pi_notebook view failed on %s", getattr(event, "type", event))
            self._report(exc)

    def flush(self, clock: bool = True) -> None:
        """Draw the current state now (only the widgets whose content changed). ``clock=False``
        (a streaming frame) moves the footer's clock only if ``clock_s`` have passed and leaves
        streamed text the byte budget holds back for a later frame; any other flush shows it."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending = False
        self._last_flush = now = self._clock()
        if not self.closed and (clock or now - self._clock_at >= self._clock_s):
            self._clock_at = now
            set_elapsed(self.state, now - self._started)
        self._draw()
        if clock:
            for part in self._parts:
                part.catch_up()

    def _draw(self) -> None:
        state, parts, drawn = self.state, self._parts, self._drawn
        items = state.items
        grew = len(parts) < len(items)
        for item in items[len(parts) :]:
            parts.append(self._make_part(item))
            drawn.append(-1)
        for i, item in enumerate(items):
            if item.rev != drawn[i]:
                parts[i].draw(item)  # type: ignore[arg-type]
                drawn[i] = item.rev
        if grew:
            self._transcript.children = tuple(part.widget for part in parts)
        if state.sent != self._sent_drawn:  # the first user message came: what the model got
            self._sent_drawn = state.sent
            set_value(self._prompt, render.prompt_html(state.prompt, state.sent))
        set_value(self._plan, render.plan_html(state.plan))
        queued, error, notice, footer = self._chrome()
        set_value(self._queued, queued)
        set_value(self._error, error)
        set_value(self._notice, notice)
        set_value(self._footer, footer)

    def _chrome(self) -> tuple[str, str, str, str]:
        """The HTML of the lines under the transcript: queued messages, the end, the notice
        and the footer."""
        state = self.state
        return (
            render.line_html("pi-queued", render.queued_text(state)),
            render.line_html("pi-error", render.end_text(state)),
            render.line_html("pi-notice", state.notice),
            render.footer_html(state.footer, render.activity(state)),
        )

    def _arm_timer(self) -> None:
        if self._timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (plain scripts, tests): the next event or flush() draws
        # A steady stream is drawn by ``handle`` once the interval has passed; the timer is for
        # a stream that pauses, so it waits one frame more. Firing at the frame boundary woke
        # the loop 20 times a second only to do what the next token would have done.
        delay = max(0.0, self._interval - (self._clock() - self._last_flush)) + self._interval
        self._timer = loop.call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._pending and not self.closed:
            try:
                self.flush(clock=False)
            except Exception as exc:
                log.exception("pi_notebook view failed to redraw")
                self._report(exc)

    def _arm_tick(self) -> None:
        if self._ticker is not None or self.closed or self._tick_s <= 0:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop yet: the first event on the agent's loop arms it
        self._ticker = loop.call_later(self._tick_s, self._on_tick)

    def _on_tick(self) -> None:
        """While nothing arrives (a slow prompt, a long tool), the clock and the activity still
        move; a stream that draws anyway is not drawn again, but text its byte budget held back
        is shown (so the answer moves at least once a tick, on a slow stream too)."""
        self._ticker = None
        if self.closed:
            return
        try:
            if self._clock() - self._last_flush >= self._tick_s / 2:
                self.flush()
            else:
                for part in self._parts:
                    part.catch_up(tick=True)
        except Exception as exc:
            log.exception("pi_notebook view failed to redraw")
            self._report(exc)
        self._arm_tick()

    def _report(self, exc: Exception) -> None:
        try:
            add_notice(self.state, f"The live view failed to draw ({type(exc).__name__}: {exc}).", "view")
            set_value(self._notice, render.line_html("pi-notice", self.state.notice))
        except Exception:
            log.exception("pi_notebook view could not report its failure")

    def add_notice(self, text: str, key: str | None = None) -> None:
        add_notice(self.state, text, key)
        self.flush()

    # --- an extension's questions ----------------------------------------------------------

    def show_dialog(self, widget: W.Widget) -> None:
        """Put an extension's question above the controls (``run/extension_ui.py``)."""
        children = list(self.widget.children)
        children.insert(len(children) - (2 if self._controls is not None else 1), widget)
        self.widget.children = tuple(children)

    def hide_dialog(self, widget: W.Widget) -> None:
        self.widget.children = tuple(c for c in self.widget.children if c is not widget)

    # --- approvals ---------------------------------------------------------------------------

    def request_approval(self, tool_call_id: str) -> asyncio.Future[bool]:
        """Show Approve / Deny on the tool card; the returned future resolves with the click
        (``True`` = approve). Without an interactive frontend, or after ``close``, nobody can
        click, so it resolves ``False`` at once instead of hanging the cell."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if not self._interactive or self.closed:
            future.set_result(False)
            mark_approval(self.state, tool_call_id, "denied")
            self._note_auto_denied(tool_call_id)
            self.flush()
            return future
        previous = self._approvals.get(tool_call_id)
        if previous is not None and not previous.done():
            return previous
        self._approvals[tool_call_id] = future
        mark_approval(self.state, tool_call_id, "pending_approval")
        self.flush()
        return future

    def resolve_approval(self, tool_call_id: str, approved: bool) -> None:
        """Answer an approval (a click, or a policy decision); the card shows the outcome."""
        future = self._approvals.pop(tool_call_id, None)
        if future is not None and not future.done():
            future.set_result(approved)
        card = self.state.tool_card(tool_call_id)
        if card is None or card.status not in FINAL_STATUSES:
            mark_approval(self.state, tool_call_id, "running" if approved else "denied")
        if not self.closed:
            self.flush()

    def grant_approval(self, tool_call_id: str) -> None:
        """"Allow for this conversation": approve the call; the gate then keeps the grant."""
        self._granted.add(tool_call_id)
        self.resolve_approval(tool_call_id, True)

    def took_grant(self, tool_call_id: str) -> bool:
        """Whether the click that approved this call was "Allow for this conversation"."""
        if tool_call_id in self._granted:
            self._granted.discard(tool_call_id)
            return True
        return False

    def offer_grant(self, tool_call_id: str, label: str) -> None:
        offer_grant(self.state, tool_call_id, label)

    def show_granted(self, tool_call_id: str, text: str) -> None:
        mark_granted(self.state, tool_call_id, text)
        if not self.closed:
            self.flush()

    def _note_auto_denied(self, tool_call_id: str) -> None:
        card = self.state.tool_card(tool_call_id)
        name = card.name if card is not None and card.name else "a tool"
        line = f"Denied {name} automatically: no one can approve it in this run."
        add_notice(self.state, line)

    def _deny_pending(self) -> None:
        """The run ends (Stop, the end): the cards still asking are denied, unanswered."""
        for tool_call_id in list(self._approvals):
            if not self._approvals[tool_call_id].done():
                leave_unanswered(self.state, tool_call_id)
            self.resolve_approval(tool_call_id, False)

    # --- controls ----------------------------------------------------------------------------

    def _on_stop(self) -> None:
        if self.closed or self._controls is None:
            return
        # A card waiting for a click would otherwise keep the run alive after Stop.
        self._deny_pending()
        if self.stop_button is not None:
            self.stop_button.disabled = True
        add_notice(self.state, "Stopping…", "stop")
        self._controls.on_stop()
        self.flush()

    def _on_message(self, kind: str) -> None:
        box, controls = self.steer_text, self._controls
        if self.closed or box is None or controls is None:
            return
        text = box.value
        if not text.strip():
            return
        try:
            (controls.on_steer if kind == "steer" else controls.on_follow_up)(text)
        except Exception as exc:  # e.g. the run already ended: keep the text, say why
            add_notice(self.state, f"Could not send the message: {exc}", "send")
            self.flush()
            return
        box.value = ""
        mark_queued(self.state, "steer" if kind == "steer" else "follow_up", text)
        self.flush()

    def close(self) -> None:
        """Final flush, then disable every control; idempotent."""
        if self.closed:
            return
        self._deny_pending()
        self.flush()
        self.closed = True
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        for widget in (self.stop_button, self.steer_text, self.send_button, self.queue_button):
            if widget is not None:
                widget.disabled = True
        for part in self._parts:
            part.disable()

    def static_bundle(self) -> dict[str, str]:
        """The frozen output (``text/plain`` + ``text/html``) of the current state."""
        return render.static_bundle(self.state)

    def show_frozen(self, html: str) -> None:
        """Make the widget itself look like the frozen output ``html`` (after ``close``): one
        HTML child in place of the transcript and the controls, which are closed. For a page
        that shows the widget from the saved notebook: the output's ``update_display_data``
        never reaches it (see ``kernel.pages``). One message carries the whole HTML, so the
        runner asks for it only when a page connected during the run."""
        old = self.widget.children
        self.widget.children = (W.HTML(html),)  # its own layout: the shared one closes below
        layout = self.widget.layout
        layout.border_left = layout.padding = layout.margin = None  # the HTML has its own
        for child in old:
            close_tree(child)

    # --- introspection for the runtime and tests ---------------------------------------------

    @property
    def pending_approvals(self) -> list[str]:
        return [key for key, future in self._approvals.items() if not future.done()]

    def parts(self) -> list[Part]:
        return list(self._parts)
