"""``ExtensionUI``: what an extension may ask the person in front of the session (Pi's
``ExtensionUIContext``: ``select``, ``confirm``, ``input``, ``notify``), as a protocol the host
implements. The notebook draws it in the cell; a script or a headless run gets
:class:`NoUI`, Pi's answers when nobody can click (``confirm`` False, ``select`` and ``input``
``None``, ``notify`` dropped).
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

__all__ = ["ExtensionUI", "NoUI", "NoticeLevel"]

NoticeLevel = Literal["info", "warning", "error"]


@runtime_checkable
class ExtensionUI(Protocol):
    """The dialogs are awaited: the run waits for the answer."""

    async def select(self, title: str, options: list[str]) -> str | None: ...

    async def confirm(self, title: str, message: str) -> bool: ...

    async def input(
        self, title: str, placeholder: str | None = None
    ) -> str | None: ...

    def notify(self, message: str, level: NoticeLevel = "info") -> None: ...


class NoUI:
    """Pi's no-op UI context: nobody is there to answer."""

    has_ui = False

    async def select(self, title: str, options: list[str]) -> str | None:
        return None

    async def confirm(self, title: str, message: str) -> bool:
        return False

    async def input(
        self, title: str, placeholder: str | None = None
    ) -> str | None:
        return None

    def notify(self, message: str, level: NoticeLevel = "info") -> None:
        return None
