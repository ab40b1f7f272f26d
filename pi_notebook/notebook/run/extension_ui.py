"""``CellUI``: the ``ExtensionUI`` of one ``%%pi`` run (or one ``%pi NAME`` command).

When someone can click (the same rule as for approvals: a live view with working controls),
``confirm`` shows Yes / No, ``select`` one button per option and Cancel, ``input`` a text box
with OK / Cancel, above the run's controls; a Stop or an interrupt answers as Cancel would.
Otherwise (headless, ``--text``, inactive controls, a ``%pi`` line) nobody is asked, as in
Pi without a UI: ``confirm`` answers No, ``select`` and ``input`` nothing, and a notice says
so. Every question and its answer stay in the frozen output as a notice; ``notify`` is a
notice too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...ai.abort import AbortSignal
from ...runtime.extensions.ui import NoticeLevel
from .approval import answer_or_abort

__all__ = ["CellUI"]

_LEVELS = {"warning": "Warning: ", "error": "Error: "}


class CellUI:
    """``live``: the run's ``LiveView`` when someone can click in it, else ``None`` (then
    ``why`` says why nobody is asked). ``notice`` shows a line under the run."""

    def __init__(
        self,
        notice: Callable[[str], None],
        *,
        live: Any = None,
        why: str = "nobody can answer in this run",
        signal: Callable[[], AbortSignal | None] = lambda: None,
    ) -> None:
        self._notice = notice
        self._live = live
        self._why = why
        self._signal = signal

    @property
    def can_ask(self) -> bool:
        return self._live is not None

    async def _ask(self, dialog: Any) -> Any:
        self._live.show_dialog(dialog.widget)
        try:
            return await answer_or_abort(dialog.answer, self._signal(), None)
        finally:
            dialog.close()
            self._live.hide_dialog(dialog.widget)

    async def confirm(self, title: str, message: str) -> bool:
        if self._live is None:
            self._notice(f"An extension asked \u201c{title}\u201d: answered No ({self._why}).")
            return False
        from ..view.dialogs import choice_dialog

        answer = bool(await self._ask(choice_dialog(title, message, [("Yes", True), ("No", False)])))
        self._notice(f"An extension asked \u201c{title}\u201d: {'Yes' if answer else 'No'}.")
        return answer

    async def select(self, title: str, options: list[str]) -> str | None:
        if self._live is None:
            self._notice(f"An extension asked \u201c{title}\u201d: no option chosen ({self._why}).")
            return None
        from ..view.dialogs import choice_dialog

        choices: list[tuple[str, Any]] = [(o, o) for o in options] + [("Cancel", None)]
        answer = await self._ask(choice_dialog(title, None, choices))
        told = answer if answer is not None else "cancelled"
        self._notice(f"An extension asked \u201c{title}\u201d: {told}.")
        return answer if isinstance(answer, str) else None

    async def input(self, title: str, placeholder: str | None = None) -> str | None:
        if self._live is None:
            self._notice(f"An extension asked \u201c{title}\u201d: no answer ({self._why}).")
            return None
        from ..view.dialogs import input_dialog

        answer = await self._ask(input_dialog(title, placeholder))
        told = "answered" if isinstance(answer, str) else "cancelled"
        self._notice(f"An extension asked \u201c{title}\u201d: {told}.")
        return answer if isinstance(answer, str) else None

    def notify(self, message: str, level: NoticeLevel = "info") -> None:
        self._notice(_LEVELS.get(level, "") + message)
