"""What the live view sends over the wire while a long answer streams: a bounded number of
widget messages per second, and bytes that stay a fixed multiple of the answer (sealed blocks
sent once, the live tail within its byte budget), counted on fake time and in a real kernel."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import ipywidgets as W
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch

from pi_notebook.agent.types import MessageUpdateEvent
from pi_notebook.ai.events import (
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from pi_notebook.ai.types import AssistantMessage, TextContent, ToolCall
from pi_notebook.notebook.view.live import LiveView
from pi_notebook.notebook.view.parts import TAIL_GRANT

ENVELOPE = 550
ENVELOPE_KEYS = ("header", "parent_header", "content")
"""Bytes of a widget message around its state in ipykernel (header, parent header, comm id)."""


def answer(tokens: int) -> list[str]:
    """``tokens`` pieces of 4 characters: paragraphs of ~70 pieces, a list every fourth one."""
    pieces: list[str] = []
    for i in range(tokens):
        if i % 70 == 69:
            pieces.append("\n\n")
        elif i % 280 in range(140, 200):
            pieces.append(f"\n- {i % 10}" if i % 10 == 0 else f"w{i % 10}. ")
        else:
            pieces.append(f"w{i % 10}{'.' if i % 9 == 0 else ' '}")
    return pieces


class Wire:
    """Every widget message (model creations and state updates) with the JSON size of its state."""

    def __init__(self) -> None:
        self.messages: list[tuple[float, int]] = []
        self.now = 0.0

    def bytes(self) -> int:
        return sum(size + ENVELOPE for _, size in self.messages)


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Wire:
    record = Wire()
    send, open_ = W.Widget._send, W.Widget.open

    def counted_send(self: W.Widget, msg: dict[str, Any], buffers: Any = None) -> None:
        record.messages.append((record.now, len(json.dumps(msg, default=str))))
        send(self, msg, buffers)

    def counted_open(self: W.Widget) -> None:
        open_(self)
        record.messages.append((record.now, len(json.dumps(self.get_state(), default=str))))

    monkeypatch.setattr(W.Widget, "_send", counted_send)
    monkeypatch.setattr(W.Widget, "open", counted_open)
    return record


class Clock:
    def __init__(self, wire: Wire) -> None:
        self.wire = wire

    def __call__(self) -> float:
        return self.wire.now


def test_a_long_answer_costs_a_bounded_rate_and_linear_bytes(wire: Wire) -> None:
    for n in (300, 3000):
        view = LiveView("stream", clock=Clock(wire))
        partial = AssistantMessage(content=[TextContent(text="")])
        # the block's own widgets are a fixed cost of every block, whatever its length
        view.handle(MessageUpdateEvent(message=partial, assistant_message_event=TextStartEvent(0, partial)))
        view.flush()
        pieces = answer(n)
        start, first = wire.now, len(wire.messages)
        for piece in pieces:
            wire.now += 0.01  # 100 tokens per second
            view.handle(
                MessageUpdateEvent(message=partial, assistant_message_event=TextDeltaEvent(0, piece, partial))
            )
        full = "".join(pieces)
        view.handle(
            MessageUpdateEvent(message=partial, assistant_message_event=TextEndEvent(0, full, partial))
        )
        sent = wire.messages[first:]
        per_second = [sum(1 for t, _ in sent if s <= t - start < s + 1) for s in range(int(wire.now - start))]
        assert max(per_second) <= 20, per_second
        total = sum(size + ENVELOPE for _, size in sent)
        # linear: 5 bytes per character, plus a constant (the grant for the first words, the
        # final draw)
        assert total < 5 * len(full) + TAIL_GRANT + 2000, (n, total, len(full))
    assert total < 5 * len(full)
    assert len(full) > 9000


def test_streaming_tool_arguments_cost_a_bounded_rate_and_linear_bytes(wire: Wire) -> None:
    """A long ``run_code`` source streams as tool-call arguments, which the card re-sends whole:
    the same budget as text keeps the bytes linear in the arguments."""
    view = LiveView("stream", clock=Clock(wire))
    partial = AssistantMessage(content=[])
    partial.content.append(ToolCall(id="c1", name="run_code", arguments={}))
    view.handle(MessageUpdateEvent(message=partial, assistant_message_event=ToolCallStartEvent(0, partial)))
    view.flush()
    pieces = ['{"code": "'] + [f"x{i % 10} = {i}\\n" for i in range(3000)] + ['"}']
    start, first = wire.now, len(wire.messages)
    for piece in pieces:
        wire.now += 0.01
        view.handle(
            MessageUpdateEvent(message=partial, assistant_message_event=ToolCallDeltaEvent(0, piece, partial))
        )
        if int(wire.now * 100) % 100 == 0:
            view._on_tick()  # the 1 Hz tick shows what the budget held back, within its own
    raw = "".join(pieces)
    call = ToolCall(id="c1", name="run_code", arguments=json.loads(raw))
    end = ToolCallEndEvent(0, call, partial)
    view.handle(MessageUpdateEvent(message=partial, assistant_message_event=end))
    view.flush()
    sent = wire.messages[first:]
    per_second = [sum(1 for t, _ in sent if s <= t - start < s + 1) for s in range(int(wire.now - start))]
    total = sum(size + ENVELOPE for _, size in sent)
    assert max(per_second) <= 20, per_second
    assert len(raw) > 25_000
    assert total < 5 * len(raw) + TAIL_GRANT + 2000, (total, len(raw))
    assert "x9 = 2999" in view.state.items[-1].args["code"]


@pytest.mark.kernel
def test_a_3000_token_answer_in_a_real_kernel_sends_under_5x_its_text(tmp_path: Path) -> None:
    kernel = Kernel(tmp_path)
    try:
        text = "".join(answer(3000))
        kernel.run(f"faux._core.tokens_per_second = 200\nfaux.set_responses([{text!r}])")
        cell = kernel.execute("%%pi --model faux:faux-1 --tools none\nanswer at length")
        messages: list[tuple[float, int, bool]] = []
        streaming: list[bool] = []

        def count(watch: Watch, msg: dict[str, Any]) -> None:
            kind, content = msg["msg_type"], msg["content"]
            markdown = kind == "comm_msg" and "outputs" in content["data"].get("state", {})
            if markdown:
                streaming.append(True)  # the view is built; the answer streams from here
            if streaming and kind in ("comm_open", "comm_msg"):
                size = sum(len(json.dumps(msg[k], default=str)) for k in ENVELOPE_KEYS)
                messages.append((watch.now(), size, markdown))

        watch = Watch(kernel).until_replies([cell], count, timeout=120)
    finally:
        kernel.close()
    assert text.split("\n\n")[-1].strip() in watch.final_bundle()["text/plain"]
    # The stream: from the first Markdown update to the last one. What follows (the end line,
    # the footer, disabled buttons) is the same for an answer of any length.
    last = max(i for i, (_, _, markdown) in enumerate(messages) if markdown)
    stream = messages[: last + 1]
    wire = sum(size for _, size, _ in stream)
    assert wire < 5 * len(text.encode()), (wire, len(text.encode()), len(stream))
    span = stream[-1][0] - stream[0][0]
    assert span > 5
    assert len(stream) / span <= 20
