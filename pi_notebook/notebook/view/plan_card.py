"""The plan card of ``%%pi --plan``: the proposed steps with Run plan / Edit / Cancel.

``PlanChoice.choice`` is a future the runner awaits (the kernel handles the clicks while the
cell awaits, as for approvals): ``("run", text)`` with the plan's text, as edited when Edit was
used, or ``("cancel", "")``. Edit opens a text area holding the plan; what it holds when Run
plan is clicked is the plan that runs. After the choice the buttons go and ``frozen_text`` is
what the cell keeps.
"""

from __future__ import annotations

import asyncio
from typing import Literal

import ipywidgets as W

from .render.static_html import plan_html
from .state import PlanCard

__all__ = ["PlanChoice"]

Choice = tuple[Literal["run", "cancel"], str]


class PlanChoice:
    def __init__(self, text: str, steps: list[str]) -> None:
        self.text = text
        self.choice: asyncio.Future[Choice] = asyncio.get_running_loop().create_future()
        self._summary = W.HTML(plan_html(PlanCard(steps=steps)), _dom_classes=("pi-plan-proposed",))
        hidden = W.Layout(width="100%", height="12em", display="none")
        self.editor = W.Textarea(value=text, layout=hidden, _dom_classes=("pi-plan-editor",))
        self.run_button = W.Button(description="Run plan", button_style="primary", icon="play")
        self.edit_button = W.Button(description="Edit", icon="pencil")
        self.cancel_button = W.Button(description="Cancel", icon="times")
        self.run_button.on_click(lambda _b: self._answer("run"))
        self.edit_button.on_click(lambda _b: self._edit())
        self.cancel_button.on_click(lambda _b: self._answer("cancel"))
        row = [self.run_button, self.edit_button, self.cancel_button]
        buttons = W.HBox(row, _dom_classes=("pi-plan-controls",))
        layout = W.Layout(border="1px solid rgba(139,124,246,.6)", padding="4px 8px", margin="4px 0")
        parts = [self._summary, self.editor, buttons]
        self.widget = W.VBox(parts, layout=layout, _dom_classes=("pi-plan-choice",))

    def _edit(self) -> None:
        self.editor.layout.display = ""
        self.edit_button.disabled = True

    def _answer(self, kind: Literal["run", "cancel"]) -> None:
        if self.choice.done():
            return
        text = self.editor.value if kind == "run" else ""
        for button in (self.run_button, self.edit_button, self.cancel_button):
            button.disabled = True
        self.editor.disabled = True
        self.choice.set_result((kind, text))

    def close(self) -> None:
        """Close the widgets (their models leave the kernel); the cell shows ``frozen_text``."""
        for widget in (self._summary, self.editor, self.run_button, self.edit_button, self.cancel_button):
            widget.close()
        self.widget.close()
