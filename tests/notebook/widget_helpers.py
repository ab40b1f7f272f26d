"""Helpers of the live-view tests (``test_widgets*.py``): walking the widget tree, the controls
a test clicks, hand-made streaming events, a fake clock, and ``sent``, the fixture that counts
the messages (and their bytes) a kernel would send at ``Widget.send_state``."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import ipywidgets as W
import pytest

from pi_notebook.agent.types import MessageUpdateEvent
from pi_notebook.ai.events import TextDeltaEvent, TextStartEvent
from pi_notebook.ai.types import AssistantMessage
from pi_notebook.notebook.view.live import LiveView, ViewControls


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


@pytest.fixture(name="sent")
def sent_fixture(monkeypatch: pytest.MonkeyPatch) -> Sent:
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
