"""The live ipywidgets view, without a kernel: widget state is read through traitlets, and the
messages a kernel would send are counted at ``Widget.send_state``."""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ipywidgets as W
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from view_events import Run, tool_run

from pi_notebook.agent.types import MessageUpdateEvent
from pi_notebook.ai.events import TextDeltaEvent, TextEndEvent, TextStartEvent
from pi_notebook.ai.types import AssistantMessage, TextContent
from pi_notebook.notebook.view import parts, render
from pi_notebook.notebook.view.live import (
    NOTICE_NO_CONTROLS,
    NOTICE_NOT_INTERACTIVE,
    LiveView,
    ViewControls,
)
from pi_notebook.notebook.view.parts import FREEZE_MIN, MarkdownStream, ToolCardPart
from pi_notebook.notebook.view.reduce import ToolCard


def walk(widget: Any) -> Iterator[Any]:
    yield widget
    for child in getattr(widget, "children", ()):
        yield from walk(child)


def find(view: LiveView, cls: type) -> list[Any]:
    return [w for w in walk(view.widget) if isinstance(w, cls)]


def buttons(view: LiveView) -> dict[str, W.Button]:
    return {b.description: b for b in find(view, W.Button)}


def classed(view: LiveView, css: str) -> list[Any]:
    return [w for w in walk(view.widget) if css in getattr(w, "_dom_classes", ())]


def markdown_sources(widget: Any) -> list[str]:
    """The Markdown sources shown by the ``Output`` widgets under ``widget``, in order."""
    return [
        out["data"]["text/markdown"] for w in walk(widget) if isinstance(w, W.Output) for out in w.outputs
    ]


class Controls:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []

    def controls(self) -> ViewControls:
        return ViewControls(
            on_stop=lambda: self.calls.append(("stop", None)),
            on_steer=lambda text: self.calls.append(("steer", text)),
            on_follow_up=lambda text: self.calls.append(("follow_up", text)),
        )


def delta(partial: AssistantMessage, piece: str) -> MessageUpdateEvent:
    return MessageUpdateEvent(message=partial, assistant_message_event=TextDeltaEvent(0, piece, partial))


def text_start(partial: AssistantMessage) -> MessageUpdateEvent:
    return MessageUpdateEvent(message=partial, assistant_message_event=TextStartEvent(0, partial))


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Sent(Counter[tuple[int, str]]):
    """Every state message a kernel would send, keyed by (widget id, trait), and the largest
    Markdown source each ``Output`` sent."""

    def __init__(self) -> None:
        super().__init__()
        self.largest: Counter[int] = Counter()
        self.bytes = 0
        """JSON bytes of the state those messages carried."""


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Sent:
    record = Sent()
    original = W.Widget.send_state

    def send_state(self: W.Widget, key: Any = None) -> None:
        keys = [key] if isinstance(key, str) else list(key or ["*"])
        for name in keys:
            record[(id(self), name)] += 1
        record.bytes += len(json.dumps(self.get_state(key), default=str))
        if isinstance(self, W.Output) and self.outputs:
            size = len(self.outputs[0]["data"]["text/markdown"])
            record.largest[id(self)] = max(record.largest[id(self)], size)
        original(self, key)

    monkeypatch.setattr(W.Widget, "send_state", send_state)
    return record


# --- structure -------------------------------------------------------------------------------------


def test_root_prompt_controls_and_placeholder() -> None:
    view = LiveView("Plot <b>sales</b>", controls=Controls().controls())
    assert "pi-view" in view.widget._dom_classes
    assert "Plot &lt;b&gt;sales&lt;/b&gt;" in view._prompt.value
    assert set(buttons(view)) == {"Stop", "Send", "Queue"}
    (text,) = find(view, W.Text)
    assert text.placeholder == "Steer the agent"
    assert len(classed(view, "pi-footer")) == 1
    assert view.state.notice == ""
    assert repr(view.widget) == "pi_notebook live view"


def test_full_run_draws_markdown_thinking_cards_and_footer() -> None:
    clock = FakeClock()
    view = LiveView("Add 2 and 3, then read missing.txt", controls=Controls().controls(), clock=clock)
    for event in tool_run().events:
        clock.now += 0.01
        view.handle(event)
    view.close()

    texts = classed(view, "pi-text")
    assert [markdown_sources(t) for t in texts] == [
        ["Let me use the tools."],
        ["The sum is **5**; the file is missing."],
    ]
    (thinking,) = classed(view, "pi-thinking")
    assert isinstance(thinking, W.Accordion)
    assert thinking.selected_index is None  # collapsed
    assert thinking.titles == ("Thinking",)
    assert markdown_sources(thinking) == ["I need both tools."]

    cards = classed(view, "pi-tool")
    assert len(cards) == 2
    add, read = cards
    assert "pi-tool--done" in add._dom_classes
    assert "pi-tool--error" in read._dom_classes
    assert "pi-tool--running" not in add._dom_classes
    add_html = " ".join(w.value for w in walk(add) if isinstance(w, W.HTML))
    assert "<b>add</b>" in add_html
    assert ">done<" in add_html
    assert "&quot;a&quot;: 2" in add_html
    assert ">5</pre>" in add_html
    (details,) = [w for w in walk(add) if "pi-details" in getattr(w, "_dom_classes", ())]
    assert details.selected_index is None
    assert details.titles == ("Details",)
    assert "&quot;exact&quot;: true" in details.children[0].value
    assert not [w for w in walk(read) if "pi-details" in getattr(w, "_dom_classes", ())]  # details {} hidden

    (footer,) = classed(view, "pi-footer")
    assert "2 turns · 250 in / 32 out tokens · $0.0033" in footer.value
    assert "faux-1" in footer.value
    assert f"{view.state.footer.elapsed:.1f} s" in footer.value
    assert view.state.footer.elapsed == pytest.approx(clock.now - 100.0)


def test_model_html_is_never_put_in_html_widgets() -> None:
    view = LiveView("q")
    run = Run().start("q")
    run.assistant(("text", "<img src=x onerror=alert(1)> **bold** ![p](http://e.example/p.png)"))
    for event in run.end().events:
        view.handle(event)
    html_values = " ".join(w.value for w in walk(view.widget) if isinstance(w, W.HTML))
    assert "<img" not in html_values
    (out,) = find(view, W.Output)
    data = out.outputs[0]["data"]
    assert (
        data["text/markdown"] == "&lt;img src=x onerror=alert(1)> **bold** &#33;[p](http://e.example/p.png)"
    )
    assert out.outputs[0]["output_type"] == "display_data"


def test_tool_arguments_show_while_streaming() -> None:
    clock = FakeClock()
    view = LiveView("q", clock=clock)
    run = Run(chunk=3).start("q")
    run.assistant(("tool", "t", "write_file", {"path": "a.txt", "text": "hello"}))
    shown: list[str] = []
    for event in run.events:
        clock.now += 1.0  # every event may draw
        view.handle(event)
        for card in classed(view, "pi-tool"):
            shown.append(card.children[0].value + card.children[1].value)
    streamed = [s for s in shown if "&quot;path" in s and "a.txt" not in s]
    assert streamed, "partial JSON arguments were never drawn"
    assert all("writing arguments" in s for s in streamed)
    assert "queued" in shown[-1]  # complete, not started yet


def test_not_interactive_hides_controls_and_says_why() -> None:
    view = LiveView("q", controls=Controls().controls(), interactive=False)
    assert buttons(view) == {}
    assert find(view, W.Text) == []
    assert view.state.notice == NOTICE_NOT_INTERACTIVE
    assert NOTICE_NOT_INTERACTIVE in view._notice.value

    no_controls = LiveView("q")
    assert buttons(no_controls) == {}
    assert no_controls.state.notice == NOTICE_NO_CONTROLS

    custom = LiveView("q", interactive=False, notices=["ipykernel 6.17 cannot handle clicks during a cell."])
    assert custom.state.notice == "ipykernel 6.17 cannot handle clicks during a cell."


# --- coalescing ------------------------------------------------------------------------------------


def paragraph_text(deltas: int) -> list[str]:
    """``deltas`` pieces of about 4 characters with a paragraph break every 80 pieces."""
    pieces = []
    for i in range(deltas):
        pieces.append("\n\n" if i % 80 == 79 else f"w{i % 10}{'.' if i % 7 == 0 else ' '}")
    return pieces


def test_five_thousand_deltas_are_coalesced_to_the_frame_rate(sent: Sent) -> None:
    clock = FakeClock()
    rate = 20.0
    view = LiveView("stream", max_rate_hz=rate, clock=clock)
    pieces = paragraph_text(5000)
    partial = AssistantMessage(content=[TextContent(text="")])
    run = Run().start("stream")
    for event in run.events:
        view.handle(event)
    view.handle(text_start(partial))
    sent.clear()
    start = clock.now
    sealed_at: dict[int, int] = {}  # a sealed output's updates, counted when it was sealed
    for piece in pieces:
        clock.now += 0.001  # 1,000 tokens per second of fake time
        view.handle(delta(partial, piece))
        for box in classed(view, "pi-text"):
            for w in box.children[:-1]:
                sealed_at.setdefault(id(w), sent[(id(w), "outputs")])
    duration = clock.now - start
    (text_box,) = classed(view, "pi-text")
    outputs = [w for w in walk(text_box) if isinstance(w, W.Output)]
    per_widget = {id(w): sent[(id(w), "outputs")] for w in outputs}
    frames = int(duration * rate) + 1
    # The tail output is re-assigned at most once per frame; a sealed output is sent its
    # sealed blocks once, in the frame that seals it, and never again.
    assert per_widget[id(text_box.children[-1])] <= frames
    assert all(per_widget[id(w)] == sealed_at[id(w)] for w in text_box.children[:-1])
    sealed = view.parts()[0].stream._frozen  # type: ignore[union-attr]
    assert markdown_sources(text_box)[:-1] == [render.frontend_markdown(source) for source in sealed]
    assert len(text_box.children) > 3  # finished paragraphs were sealed along the way
    assert sent[(id(view._footer), "value")] <= duration / 5 + 1  # the clock moves every 5 s
    assert sum(per_widget.values()) >= frames // 10  # and it does stream while the text arrives
    # Each frame re-sends only the unfinished tail, never the whole answer.
    full = "".join(pieces)
    assert len(full) > 7 * FREEZE_MIN
    assert 0 < max(sent.largest.values()) < 2 * FREEZE_MIN  # a tail, or a seal

    view.flush()  # the last deltas arrived within one frame; flush draws them exactly
    assert "".join(markdown_sources(text_box)) == full
    # A block end is drawn at once, whatever the clock says.
    clock_before = clock.now
    view.handle(MessageUpdateEvent(message=partial, assistant_message_event=TextEndEvent(0, full, partial)))
    assert clock.now == clock_before
    assert "".join(markdown_sources(text_box)) == full
    for out in (w for w in walk(text_box) if isinstance(w, W.Output)):
        for item in out.outputs:
            assert set(item["data"]) == {"text/markdown"}  # no text/plain copy on the wire


def test_a_streaming_frame_reads_only_the_new_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Per frame, the view looks for block ends in the text that arrived since the last frame
    (not the whole unfinished tail), and escapes Markdown only for what it sends."""
    escaped: list[int] = []

    def counted(text: str) -> str:
        escaped.append(len(text))
        return render.frontend_markdown(text)

    monkeypatch.setattr(parts, "frontend_markdown", counted)
    clock = FakeClock()
    view = LiveView("stream", clock=clock)
    partial = AssistantMessage(content=[TextContent(text="")])
    view.handle(text_start(partial))
    pieces = paragraph_text(5000)
    for piece in pieces:
        clock.now += 0.001
        view.handle(delta(partial, piece))
    full = "".join(pieces)
    stream = view.parts()[0].stream  # type: ignore[union-attr]
    frames = 5000 * 0.001 * 20
    assert frames * FREEZE_MIN > 5 * len(full)  # re-reading the tail per frame would show
    assert stream._split.scanned <= 1.2 * len(full)
    assert sum(escaped) <= 3 * len(full)


def test_the_view_shares_its_layout_and_style_models_and_sends_no_class_updates(sent: Sent) -> None:
    view = LiveView("q", controls=Controls().controls())
    for event in tool_run().events:
        view.handle(event)
    view.close()
    widgets = list(walk(view.widget))
    layouts = {id(w.layout) for w in widgets}
    assert len(layouts) <= 4  # the shared one, the root's border, the steer box, a tool card's
    styles = {id(w.style) for w in widgets if hasattr(w, "style")}
    assert len(styles) <= 3  # HTML, buttons, the steer box
    class_updates = [key for key in sent if key[1] == "_dom_classes"]
    cards = classed(view, "pi-tool")
    assert len(class_updates) <= 2 * len(cards)  # only tool cards' status classes change


async def test_a_steady_stream_is_drawn_by_its_events_not_by_the_timer() -> None:
    """The pause timer fires a frame after the interval: a stream whose next token comes first
    is drawn by that token, and never wakes the loop for a frame."""
    clock = FakeClock()
    view = LiveView("q", clock=clock)  # 20 frames a second
    partial = AssistantMessage(content=[TextContent(text="")])
    view.handle(text_start(partial))
    view.handle(delta(partial, "a"))
    loop = asyncio.get_running_loop()
    timer = view._timer
    assert timer is not None
    assert timer.when() - loop.time() > 0.05 + 0.04  # the interval, then one frame more
    clock.now += 0.06
    view.handle(delta(partial, "b"))  # the interval has passed: this event draws
    assert timer.cancelled()
    assert view._timer is None
    (text_box,) = classed(view, "pi-text")
    assert markdown_sources(text_box) == ["ab"]


def test_flush_makes_the_pending_tail_exact(sent: Sent) -> None:
    clock = FakeClock()
    view = LiveView("q", clock=clock)
    partial = AssistantMessage(content=[TextContent(text="")])
    view.handle(text_start(partial))
    clock.now += 1.0
    view.handle(delta(partial, "Hel"))
    for piece in ("lo", ", ", "world"):  # no time passes: nothing is drawn
        view.handle(delta(partial, piece))
    (text_box,) = classed(view, "pi-text")
    assert markdown_sources(text_box) == ["Hel"]
    view.flush()
    assert markdown_sources(text_box) == ["Hello, world"]
    before = sum(sent.values())
    view.flush()  # nothing changed: nothing is sent
    assert sum(sent.values()) == before


async def test_a_pause_in_the_stream_still_draws_the_last_tokens() -> None:
    clock = FakeClock()  # frozen: only the loop's timer can draw
    view = LiveView("q", max_rate_hz=100.0, clock=clock)
    partial = AssistantMessage(content=[TextContent(text="")])
    for event in (text_start(partial), delta(partial, "a"), delta(partial, "b")):
        view.handle(event)
    assert classed(view, "pi-text") == []
    await asyncio.sleep(0.05)
    (text_box,) = classed(view, "pi-text")
    assert markdown_sources(text_box) == ["ab"]
    assert view._timer is None


async def test_a_silent_model_still_moves_the_clock_and_says_what_it_waits_for() -> None:
    """A slow prompt or a server holding back output: no event for seconds. The footer's elapsed
    time keeps ticking (not frozen at 0.1 s) and says the run waits for the model."""
    clock = FakeClock()
    view = LiveView("q", clock=clock, tick_s=0.02)
    for event in Run().start("q").events:
        view.handle(event)
    (footer,) = classed(view, "pi-footer")
    assert footer.value.endswith("0.0 s · waiting for the model</div>")
    for second in (1, 2, 3):
        clock.now += 1.0
        await asyncio.sleep(0.05)
        assert f"{second}.0 s · waiting for the model" in footer.value
    view.close()
    assert view._ticker is None
    shown = footer.value
    clock.now += 5.0
    await asyncio.sleep(0.05)
    assert footer.value == shown  # closed: no more ticks
    assert "waiting" not in render.render_html(view.state)


def test_markdown_stream_restarts_when_the_final_text_differs() -> None:
    stream = MarkdownStream("pi-text")
    first = ("x" * 50 + "\n\n") * 60
    stream.draw(first, done=False)
    assert len(stream.widget.children) > 1
    stream.draw("completely different\n", done=True)
    assert stream.widget.children == (stream.tail,)
    assert [o["data"]["text/markdown"] for o in stream.tail.outputs] == ["completely different\n"]


# --- approvals and controls -----------------------------------------------------------------------------


def started_tool_view(controls: ViewControls | None = None) -> LiveView:
    view = LiveView("q", controls=controls)
    run = Run().start("q")
    run.assistant(("tool", "w1", "run_code", {"code": "x = 1"}), stop_reason="toolUse")
    run.tool_start("w1", "run_code", {"code": "x = 1"})
    for event in run.events:
        view.handle(event)
    return view


@pytest.mark.parametrize(
    ("label", "expected", "status"), [("Approve", True, "running"), ("Deny", False, "denied")]
)
async def test_approval_click_resolves_the_future(label: str, expected: bool, status: str) -> None:
    view = started_tool_view()
    future = view.request_approval("w1")
    assert not future.done()
    (card,) = classed(view, "pi-tool")
    assert "pi-tool--pending_approval" in card._dom_classes
    assert "awaiting approval" in card.children[0].value
    assert set(buttons(view)) == {"Approve", "Deny"}
    assert view.pending_approvals == ["w1"]

    buttons(view)[label].click()

    assert future.done()
    assert await future is expected
    assert view.state.tool_card("w1").status == status  # type: ignore[union-attr]
    assert buttons(view) == {}  # the decision replaces the buttons
    assert f"pi-tool--{status}" in card._dom_classes
    assert view.pending_approvals == []


async def test_approval_is_auto_denied_without_an_interactive_frontend() -> None:
    view = LiveView("q", interactive=False)
    future = view.request_approval("w9")
    assert future.done()
    assert await future is False
    assert view.state.tool_card("w9").status == "denied"  # type: ignore[union-attr]
    assert "Denied a tool automatically" in view.state.notice
    assert NOTICE_NOT_INTERACTIVE in view.state.notice


async def test_policy_resolution_and_cancelled_futures() -> None:
    view = started_tool_view()
    future = view.request_approval("w1")
    assert view.request_approval("w1") is future  # asking twice shows one prompt
    future.cancel()  # the runtime gave up (run aborted)
    view.resolve_approval("w1", True)  # a late click must not raise
    view.resolve_approval("other", False)  # a policy decision for a card without a prompt
    assert view.state.tool_card("other").status == "denied"  # type: ignore[union-attr]


async def test_stop_denies_waiting_approvals_then_stops() -> None:
    calls = Controls()
    view = started_tool_view(calls.controls())
    future = view.request_approval("w1")
    buttons(view)["Stop"].click()
    assert calls.calls == [("stop", None)]
    assert await future is False
    assert buttons(view)["Stop"].disabled
    assert view.state.notice == "Stopping…"


def test_send_and_queue_call_the_controls_with_the_text_and_clear_it() -> None:
    calls = Controls()
    view = LiveView("q", controls=calls.controls())
    (box,) = find(view, W.Text)
    controls = buttons(view)

    box.value = "also check column X"
    controls["Send"].click()
    assert box.value == ""
    box.value = "then write a summary"
    controls["Queue"].click()
    assert box.value == ""
    box.value = "   "
    controls["Send"].click()  # blank: nothing is sent
    assert calls.calls == [("steer", "also check column X"), ("follow_up", "then write a summary")]
    assert "queued steer: also check column X" in view._queued.value
    assert "queued follow-up: then write a summary" in view._queued.value

    # When the agent injects the steer, the queued line goes and the transcript labels it.
    run = Run().start("q").user("also check column X")
    for event in run.events:
        view.handle(event)
    assert "also check column X" not in view._queued.value
    (user,) = classed(view, "pi-user-item")
    assert "↳ steer: also check column X" in user.value


def test_a_failing_control_keeps_the_text_and_says_why() -> None:
    def refuse(text: str) -> None:
        raise RuntimeError("the run has ended")

    view = LiveView("q", controls=ViewControls(on_stop=lambda: None, on_steer=refuse, on_follow_up=refuse))
    (box,) = find(view, W.Text)
    box.value = "late"
    buttons(view)["Send"].click()
    assert box.value == "late"
    assert view.state.notice == "Could not send the message: the run has ended"


async def test_close_disables_every_control_and_is_idempotent() -> None:
    calls = Controls()
    view = started_tool_view(calls.controls())
    future = view.request_approval("w1")
    view.close()
    view.close()
    assert await future is False
    for widget in [*find(view, W.Button), *find(view, W.Text)]:
        assert widget.disabled, widget.description
    assert {"Stop", "Send", "Queue"} <= set(buttons(view))
    buttons(view)["Stop"].click()
    assert calls.calls == []  # a disabled, closed view does nothing


async def test_close_disables_approval_buttons_still_shown() -> None:
    part = ToolCardPart(lambda call_id, ok: None)
    part.draw(ToolCard(tool_call_id="t", name="n", status="pending_approval"))
    assert part.approve is not None
    assert part.deny is not None
    part.disable()
    assert part.approve.disabled
    assert part.deny.disabled


def test_static_bundle_matches_the_renderer() -> None:
    view = LiveView("Add 2 and 3, then read missing.txt")
    for event in tool_run().events:
        view.handle(event)
    view.close()
    bundle = view.static_bundle()
    assert bundle == render.static_bundle(view.state)
    assert bundle["text/plain"].startswith("> Add 2 and 3")


def test_handle_never_raises_and_reports_the_failure() -> None:
    view = LiveView("q")

    class Broken:
        type = "message_update"
        assistant_message_event = None  # no ``type``: the reducer fails on it

    view.handle(Broken())  # type: ignore[arg-type]
    assert view.state.notices[-1].text.startswith("The live view failed to draw (AttributeError")


# --- with the real agent loop and the faux provider ------------------------------------------------


async def test_real_agent_run_streams_asks_and_freezes(faux: Any) -> None:
    """The whole path the runtime wires: ``Agent`` events -> ``handle``; ``before_tool_call`` ->
    ``request_approval``; a click on Approve; ``close``; the static bundle."""
    from pi_notebook.agent import Agent, AgentTool, AgentToolResult, BeforeToolCallResult
    from pi_notebook.ai.faux import faux_assistant_message, faux_text, faux_thinking, faux_tool_call

    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_thinking("Use the tool."),
                    faux_text("Adding."),
                    faux_tool_call("add", {"a": 2, "b": 3}, id="c1"),
                ],
                stop_reason="toolUse",
            ),
            faux_assistant_message("The sum is **5**."),
        ]
    )

    async def add(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        on_update(AgentToolResult(content=[TextContent(text="adding…")]))
        total = params["a"] + params["b"]
        return AgentToolResult(
            content=[TextContent(text=str(total))], details={"inputs": [params["a"], params["b"]]}
        )

    schema = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}
    calls = Controls()
    view = LiveView("Add 2 and 3", controls=calls.controls())

    async def ask(ctx: Any, signal: Any) -> BeforeToolCallResult | None:
        approved = await view.request_approval(ctx.tool_call.id)
        return None if approved else BeforeToolCallResult(block=True, reason="denied")

    agent = Agent(
        initial_state={
            "model": faux.get_model(),
            "tools": [AgentTool(name="add", description="Add", parameters=schema, execute=add)],
        },
        before_tool_call=ask,
    )
    agent.subscribe(lambda event, signal: view.handle(event))
    run = asyncio.create_task(agent.prompt("Add 2 and 3"))
    for _ in range(500):
        if view.pending_approvals:
            break
        await asyncio.sleep(0.002)
    assert view.pending_approvals == ["c1"]
    assert "pi-tool--pending_approval" in classed(view, "pi-tool")[0]._dom_classes
    buttons(view)["Approve"].click()
    await asyncio.wait_for(run, 5)
    view.close()

    assert render.render_text(view.state) == (
        "> Add 2 and 3\n\n"
        "[thinking]\n    Use the tool.\n\n"
        "Adding.\n\n"
        "[tool] add (done)\n"
        '    args: {"a": 2, "b": 3}\n'
        "    result: 5\n"
        '    details: {"inputs": [2, 3]}\n\n'
        "The sum is **5**.\n"
    )
    assert [markdown_sources(t) for t in classed(view, "pi-text")] == [["Adding."], ["The sum is **5**."]]
    footer = view.state.footer
    assert footer.turns == 2
    assert footer.input_tokens > 0
    assert footer.output_tokens > 0
    assert footer.model == "faux-1"
    assert view.state.stop_reason == "stop"
    assert view.state.finished
    assert all(w.disabled for w in find(view, W.Button))
    assert view.static_bundle() == render.static_bundle(view.state)


def test_tool_card_shows_code_and_the_figure_once() -> None:
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAIAAAUAAd5bqZsAAAAASUVORK5CYII="
    code = {"code": "a = 1\nb = 2"}
    card = ToolCard(tool_call_id="c", name="run_code", status="pending_approval", args=code)
    part = ToolCardPart(lambda call_id, ok: None)
    part.draw(card)
    assert "<code>" in part.args.value
    assert "\\n" not in part.args.value
    assert "\n" in part.args.value
    assert part.display is None
    card.status, card.content = "done", "[figure 1: 1x1 PNG, attached]"
    card.details = {"display": [{"type": "image", "mime": "image/png", "data": png, "label": "figure 1"}]}
    part.draw(card)
    assert part.display is not None
    assert part.widget.children[3] is part.display
    assert f'src="data:image/png;base64,{png}"' in part.display.value
    sent: list[Any] = []
    part.display.send_state = lambda key=None: sent.append(key)  # type: ignore[method-assign]
    part.draw(card)  # a redraw of the same result sends no image again
    assert sent == []
