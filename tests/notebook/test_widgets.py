"""The live ipywidgets view, without a kernel: widget state is read through traitlets, and the
messages a kernel would send are counted at ``Widget.send_state``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import ipywidgets as W
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from view_events import Run, tool_run
from widget_helpers import (
    Controls,
    FakeClock,
    Sent,
    buttons,
    classed,
    delta,
    find,
    markdown_sources,
    sent_fixture,  # noqa: F401  (the `sent` fixture)
    text_start,
    walk,
)

from pi_notebook.agent.types import MessageUpdateEvent
from pi_notebook.ai.events import TextEndEvent
from pi_notebook.ai.types import AssistantMessage, TextContent
from pi_notebook.notebook.view import parts, render
from pi_notebook.notebook.view.live import (
    NOTICE_NO_CONTROLS,
    NOTICE_NOT_INTERACTIVE,
    LiveView,
)
from pi_notebook.notebook.view.parts import FREEZE_MIN, MarkdownStream

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
    shown = view.widget._repr_mimebundle_()["text/plain"]  # what a frontend without widgets shows
    assert shown == (
        "pi_notebook live view (no widgets here: %%pi --text prints the run, jupyter console --kernel pi "
        "streams it)"
    )


def test_the_prompt_shows_what_the_model_received_once_the_message_is_sent() -> None:
    view = LiveView("/review <b>x</b>")
    assert "What the model received" not in view._prompt.value
    for event in Run().start("Review <b>x</b> please.").events:
        view.handle(event)
    view.flush()
    assert "What the model received" in view._prompt.value
    assert "Review &lt;b&gt;x&lt;/b&gt; please." in view._prompt.value  # escaped, never raw HTML
    assert "/review &lt;b&gt;x&lt;/b&gt;" in view._prompt.value


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
