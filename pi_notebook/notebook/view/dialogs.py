"""The widgets of an extension's question in the cell (``ctx.ui.confirm`` / ``select`` /
``input``): the question, then buttons (or a text box and OK / Cancel), and a future that the
first click resolves. ``run/extension_ui.py`` decides when they are shown; the live view
places them above its controls.

Titles and messages come from extension code and are escaped: nothing in them is HTML.
"""

from __future__ import annotations

import asyncio
import html
from dataclasses import dataclass
from typing import Any

import ipywidgets as W

__all__ = ["Dialog", "choice_dialog", "input_dialog"]


@dataclass
class Dialog:
    widget: W.VBox
    answer: asyncio.Future[Any]
    buttons: list[W.Button]
    text: W.Text | None = None

    def close(self) -> None:
        """Disable the controls (the answer is in, or the run ended)."""
        for button in self.buttons:
            button.disabled = True
        if self.text is not None:
            self.text.disabled = True
        if not self.answer.done():
            self.answer.cancel()


def _question(title: str, message: str | None) -> W.HTML:
    body = f"<b>{html.escape(title)}</b>"
    if message:
        body += f"<br>{html.escape(message)}"
    return W.HTML(body, _dom_classes=("pi-dialog-question",))


def _answer(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _box(children: list[W.Widget]) -> W.VBox:
    layout = W.Layout(border="1px solid #8b7cf6", padding="4px 8px", margin="4px 0")
    return W.VBox(children, layout=layout, _dom_classes=("pi-dialog",))


def choice_dialog(title: str, message: str | None, choices: list[tuple[str, Any]]) -> Dialog:
    """One button per ``(label, value)``; a click answers its value."""
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    buttons = []
    for label, value in choices:
        button = W.Button(description=label, tooltip=label)
        button.on_click(lambda _b, value=value: _answer(future, value))
        buttons.append(button)
    widget = _box([_question(title, message), W.HBox(buttons)])
    return Dialog(widget, future, buttons)


def input_dialog(title: str, placeholder: str | None) -> Dialog:
    """A text box with OK (answers its text; Enter does too) and Cancel (answers ``None``)."""
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    text = W.Text(placeholder=placeholder or "", layout=W.Layout(flex="1 1 auto", width="auto"))
    ok = W.Button(description="OK", button_style="primary")
    cancel = W.Button(description="Cancel")
    ok.on_click(lambda _b: _answer(future, text.value))
    cancel.on_click(lambda _b: _answer(future, None))
    text.on_submit(lambda _t: _answer(future, text.value))
    widget = _box([_question(title, None), W.HBox([text, ok, cancel])])
    return Dialog(widget, future, [ok, cancel], text)
