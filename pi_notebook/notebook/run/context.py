"""A ``%%pi`` cell's surroundings as one value, worked out once at the cell's start and passed
down: ``CellContext``.

What a cell needs to know about where it runs: the notebook's path (from the frontend), the
folder its resources and sessions belong to (``c.PiMagics.project_folder``, else the
notebook's), that folder's resource loader and what it has now (context files, skills,
templates, and the folder's trust, which decides whether the project's settings and
extensions apply), the settings in force (``c.PiMagics`` over Pi's ``settings.json`` and the
trusted project's, ``defaults.py``) and the run mode (live or static, can anyone click,
headless). Each is looked up here, once; the trust question, extension discovery, the plan and
the run read them from the value. A trust answer given in the cell changes what the folder
loads: ``after_trust`` reads the resources and settings again, once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..defaults import Effective, effective
from ..tools.cells import notebook_path
from .approval import FALLBACK_REASON, RunMode, run_mode

if TYPE_CHECKING:
    from ...runtime.resources.loader import ResourceLoader, Resources
    from ..config import PiConfig
    from ..state import NotebookState

__all__ = ["CellContext", "cell_context"]

TEXT_REASON = "Controls inactive: --text output has no widgets."


@dataclass(frozen=True, slots=True)
class CellContext:
    """See the module docstring."""

    notebook: str | None
    """The notebook's path as the frontend gives it (``None``: it does not)."""
    folder: str
    """Where the cell's resources, trust and project settings come from."""
    loader: ResourceLoader
    resources: Resources
    """What ``loader`` has now, the folder's trust included."""
    chosen: Effective
    """The settings in force (``c.PiMagics`` over Pi's files)."""
    mode: RunMode
    """The run's mode without ``--text`` (``mode_for`` applies it)."""
    awaited: bool
    config: PiConfig
    """The traits the settings in force start from (``after_trust`` works them out again)."""

    def mode_for(self, text: bool) -> RunMode:
        """The mode of a run with or without ``--text`` (plain text: nothing live, no clicks)."""
        if not text:
            return self.mode
        reason = TEXT_REASON if self.awaited else FALLBACK_REASON
        return RunMode(live=False, can_ask=False, headless=self.mode.headless, reason=reason)

    def after_trust(self) -> CellContext:
        """The same cell after its folder's trust was decided: resources and settings again."""
        resources = self.loader.load()
        chosen = effective(self.config, resources.project_settings_dir)
        return replace(self, resources=resources, chosen=chosen)


def cell_context(state: NotebookState, *, awaited: bool) -> CellContext:
    """Work out the cell's surroundings (see the module docstring); the resources hear whether
    anybody can answer the trust question in this run."""
    shell = state.shell
    notebook = notebook_path(shell)
    found = state.resources
    folder = found.folder_of(os.path.dirname(notebook) if notebook else os.getcwd())
    mode = run_mode(shell, awaited=awaited, text=False)
    found.headless = not mode.can_ask
    loader = found.loader_at(folder)
    resources = loader.current()
    config = state.config
    chosen = effective(config, resources.project_settings_dir)
    return CellContext(notebook, folder, loader, resources, chosen, mode, awaited, config)

