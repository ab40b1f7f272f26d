"""``NotebookExtensions``: Pi's extensions (``pi_notebook.runtime.extensions``) in one kernel.
Not to be confused with ``load.py``, which makes ``pi_notebook`` an IPython extension.

One ``ExtensionRunner`` per shell serves every conversation; ``pi.send_message`` and friends
act on the conversation that runs (or ran last). Extensions load on first use (the first
``%%pi`` run, ``%pi extension ...`` or an extension command): the installed packages' entry
points, then the notebook folder's ``.pi/extensions/*.py`` if ``project_trusted(folder)``
says so (the host's trust decision; untrusted until one is given), and ``%pi extension load``.
When the kernel exits, every conversation hears ``session_shutdown``.
"""

from __future__ import annotations

import asyncio
import atexit
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..runtime.extensions import Extension, ExtensionRunner, discover_extensions, load_extension

__all__ = ["NotebookExtensions", "untrusted"]

ProjectTrusted = Callable[[Path], bool]


def untrusted(_: Path) -> bool:
    """No trust decision was given: a project's own extensions do not run."""
    return False


class NotebookExtensions:
    """The constructor only stores (no import, no I/O)."""

    def __init__(self, folder: Callable[[], str], project_trusted: ProjectTrusted = untrusted) -> None:
        self.runner = ExtensionRunner()
        self.folder = folder
        self.project_trusted = project_trusted
        """Decides whether a folder's ``.pi/extensions`` may run (the trust store sets it)."""
        self.skipped: list[str] = []
        self._discovered: tuple[str, bool] | None = None
        self._sessions: weakref.WeakSet[Any] = weakref.WeakSet()
        self._exit_hook = False

    def watch(self, session: Any) -> None:
        """``session`` hears ``session_shutdown`` when the kernel exits."""
        self._sessions.add(session)
        if not self._exit_hook:
            atexit.register(self._shutdown_all)
            self._exit_hook = True

    async def discover(self, at: tuple[str, bool] | None = None) -> list[Extension]:
        """Load what is installed and what the (trusted) project holds, once per folder and
        trust decision (``at``: the folder and its trust as a cell found them, else looked up)."""
        folder = self.folder() if at is None else at[0]
        trusted = self.project_trusted(Path(folder)) if at is None else at[1]
        seen = (folder, trusted)  # trust given since: the project loads
        if self._discovered == seen:
            return []
        self._discovered = seen
        found = await discover_extensions(self.runner, folder, project_trusted=self.project_trusted)
        self.skipped = found.skipped
        return found.loaded

    async def load(self, spec: str) -> Extension | None:
        """``%pi extension load``: a module or a path (relative to the notebook's folder)."""
        await self.discover()
        return await load_extension(self.runner, spec, cwd=self.folder())

    def rediscover(self) -> None:
        """Look again at the next use (trust was just given): what is loaded stays loaded,
        what is new (a newly trusted project's files) loads then."""
        self._discovered = None

    def reset(self) -> None:
        """Unload everything; the next use discovers again."""
        self.runner.clear()
        self._discovered = None
        self.skipped = []

    def lines(self) -> list[str]:
        """``%pi extension list``."""
        out = [e.describe() for e in self.runner.extensions] or ["no extensions loaded"]
        out += [f"skipped: {line}" for line in self.skipped]
        recent = self.runner.errors[-5:]
        out += [f"error: {error.line()}" for error in recent]
        return out

    def _shutdown_all(self) -> None:
        sessions = list(self._sessions)
        if not sessions or not self.runner.has_handlers("session_shutdown"):
            return

        async def shutdown() -> None:
            for session in sessions:
                await session.shutdown("quit")

        try:
            asyncio.run(shutdown())
        except Exception as exc:  # the kernel exits anyway; say which extension failed
            print(f"pi_notebook: session_shutdown failed: {type(exc).__name__}: {exc}")
