"""The project-trust question in a cell: Pi's question and answers (``Trust``, ``Trust parent
folder (...)``, ``Do not trust``) as buttons in a card framed like a tool card, with the
approval buttons' colours. ``TrustCard.answer`` resolves with the label clicked; the card then
shows what was decided and its buttons go away. Pi's wording, with the folder's path escaped
(it is shown as HTML)."""

from __future__ import annotations

import asyncio
import html
from collections.abc import Sequence

import ipywidgets as W

from .parts import SharedModels, set_value

__all__ = ["TrustCard", "trust_question"]


def trust_question(cwd: str) -> str:
    """Pi's ``formatProjectTrustPrompt``, saying what trust allows here: this package installs
    no project packages, and a project's extensions are Python files run in the kernel."""
    return (
        f"Trust project folder?\n{cwd}\n\nThis allows pi to load .pi settings and resources "
        "(skills, prompt templates) and to run the project's .pi/extensions Python files in this "
        "kernel. The decision is saved in Pi's trust store, which the Pi CLI reads too."
    )


class TrustCard:
    """The question and one button per answer; create on the kernel's loop (the future)."""

    def __init__(self, cwd: str, labels: Sequence[str], found: Sequence[str]) -> None:
        self._models = SharedModels()
        self.answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        question = html.escape(trust_question(cwd)).replace("\n", "<br>")
        listed = "".join(f"<li><code>{html.escape(path)}</code></li>" for path in found)
        self._text = self._models.html(
            f"<div>{question}</div>" + (f"<div>Found:<ul>{listed}</ul></div>" if listed else ""),
            "pi-trust-question",
        )
        self.buttons = [self._button(label) for label in labels]
        self._row = self._models.hbox(self.buttons, "pi-approval")
        self.widget = W.VBox(
            [self._text, self._row], layout=self._models.card_layout, _dom_classes=("pi-trust",)
        )

    def _button(self, label: str) -> W.Button:
        style = "danger" if label.startswith("Do not") else "success"
        button = self._models.button(description=label, button_style=style, tooltip=label)
        button.layout = W.Layout(width="auto")
        button.on_click(lambda _b: self._clicked(label))
        return button

    def _clicked(self, label: str) -> None:
        if not self.answer.done():
            self.answer.set_result(label)

    def decided(self, line: str) -> None:
        """Replace the buttons by what was decided (``line`` is plain text)."""
        self.widget.children = (self._text, self._models.html(html.escape(line), "pi-trust-decided"))
        for button in self.buttons:
            set_value(button, True, "disabled")
