"""``NotebookResources``: Pi's context files, skills, templates and project trust for the
notebook's folder (the folder ``SessionFiles.folder()`` names: the notebook's, else the
working directory), or ``c.PiMagics.project_folder``.

One ``ResourceLoader`` per folder, shared by the conversations of the shell; each conversation's
``AgentSession`` asks it before every run, and it re-reads only files that changed. Trust, as Pi
decides it: a folder without project resources is trusted; else the decision in Pi's trust
store (``%pi trust`` / ``%pi trust --revoke`` write it, and so do the buttons the first
``%%pi`` cell shows when nobody has decided yet). A run that cannot ask (headless, the
non-awaited fallback) treats an undecided folder as untrusted, unless ``c.PiMagics.trust_headless``
is on; Pi's ``defaultProjectTrust`` (``always`` / ``never``) decides before anyone is asked.
Problems with the files and project resources left out are told once each, under the run.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..runtime.resources.loader import ResourceLoader, Resources
from ..runtime.resources.trust import ProjectTrust, project_trust, save_trust, trust_options
from .config import PiConfig

__all__ = ["NotebookResources"]


class NotebookResources:
    """See the module docstring. The constructor does no I/O."""

    def __init__(self, config: Callable[[], PiConfig], folder: Callable[[], str]) -> None:
        self._config = config
        self._folder = folder
        self._loaders: dict[str, ResourceLoader] = {}
        self.headless = False
        """Whether the run being prepared can ask nobody (set by the runner before each run)."""
        self._told: set[str] = set()

    @property
    def folder(self) -> str:
        """``c.PiMagics.project_folder``, else the notebook's folder."""
        return self.folder_of(self._folder())

    def folder_of(self, notebook_folder: str) -> str:
        """``c.PiMagics.project_folder``, else ``notebook_folder``."""
        configured = str(self._config().project_folder).strip()
        return os.path.abspath(os.path.expanduser(configured) if configured else notebook_folder)

    def loader(self) -> ResourceLoader:
        """The loader of the notebook's folder (created on first use)."""
        return self.loader_at(self.folder)

    def loader_at(self, folder: str) -> ResourceLoader:
        """The loader of ``folder`` (created on first use)."""
        loader = self._loaders.get(folder)
        if loader is None:
            loader = self._loaders[folder] = ResourceLoader(folder, trusted=self._decide)
        loader.context_files = bool(self._config().context_files)
        return loader

    def current(self) -> Resources:
        return self.loader().current()

    def reload(self) -> Resources:
        """Read everything again, and tell the problems found again too."""
        self._told.clear()
        return self.loader().load()

    def _decide(self, trust: ProjectTrust) -> bool:
        if trust.trusted:
            return True
        if trust.undecided and self.headless:
            return bool(self._config().trust_headless)
        return False

    def undecided(self) -> ProjectTrust | None:
        """The folder's trust when Pi would ask the user now (no decision stored), else ``None``."""
        trust = project_trust(self.folder)
        return trust if trust.undecided else None

    def trusted_project(self) -> str | None:
        """The folder when its project settings may be read (it is trusted), else ``None``."""
        return self.current().project_settings_dir

    def set_trust(self, trusted: bool, *, parent: bool = False) -> str:
        """Store a decision for the folder (or, ``parent``, trust its parent folder) in Pi's
        trust store; returns a line saying what was saved. Raises ``TrustStoreError``."""
        options = trust_options(self.folder)
        chosen = options[0] if trusted else options[-1]
        if parent and len(options) == 3:
            chosen = options[1]
        return self.apply(chosen.label)

    def apply(self, label: str) -> str:
        """Save the trust answer ``label`` (one of Pi's, ``trust_options``); returns what was saved."""
        chosen = next(o for o in trust_options(self.folder) if o.label == label)
        path = save_trust(chosen.updates)
        self._told.clear()
        where = chosen.updates[0][0]
        state = "trusted" if chosen.trusted else "not trusted"
        return f"{where} is {state} (saved in Pi's trust store {path}, which the Pi CLI reads too)"

    def notices(self, resources: Resources) -> list[str]:
        """Lines for under a run: each problem and each left-out project resource, once."""
        lines = []
        if resources.skipped and not resources.trusted:
            paths = ", ".join(os.path.relpath(p, resources.cwd) for p, _ in resources.skipped)
            asked = not (self.headless and resources.trust.undecided)
            why = "not trusted" if asked else "not trusted (nobody can answer the question in this run)"
            lines.append(
                f"Project resources not loaded ({paths}): the folder {resources.cwd} is {why}. "
                "Run %pi trust to trust it (Pi's trust store), or %pi resources to see what loads."
            )
        lines += [f"Resource problem: {d.line()}" for d in resources.diagnostics if d.type != "collision"]
        fresh = [line for line in lines if line not in self._told]
        self._told.update(fresh)
        return fresh
