"""``ResourceLoader``: the context files, skills and prompt templates of one working directory,
found where Pi 0.83's ``DefaultResourceLoader`` and package manager look, as one ``Resources``
value with every problem as a diagnostic.

Where (first found wins a name):

* context files: ``context.load_context_files`` (the agent dir's, then the ancestors'); no
  trust needed; ``context_files=False`` turns them off (Pi's ``--no-context-files``);
* skills: the project's ``.pi/skills``, then ``.agents/skills`` of the folder and each ancestor
  up to the git root (both only when the project is trusted), then the agent dir's ``skills``
  and ``~/.agents/skills``;
* templates: the project's ``.pi/prompts`` (trusted only), then the agent dir's ``prompts``.

``current()`` re-reads only when something changed: every folder and file a load looked at is
remembered with its ``stat`` (a new file changes its folder's), so a notebook can ask before
every cell for the price of a few ``stat`` calls (a missing path under an unchanged folder is
not looked at again). ``Resources.system_prompt(base)`` and
``Resources.expand(text)`` are what an ``AgentSession`` needs.

Pi's ``skills`` / ``prompts`` entries and packages in ``settings.json``, themes, extensions
(a separate loader) and ``SYSTEM.md`` / ``APPEND_SYSTEM.md`` are not read here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from ...session.storage import get_agent_dir
from .context import ContextFile, load_context_files
from .files import Diagnostic
from .prompt import build_system_prompt
from .skills import Skill, collect_skill_files, expand_skill_command, load_skills
from .templates import PromptTemplate, collect_template_files, expand_prompt_template, load_templates
from .trust import CONFIG_DIR, TRUST_FILE, ProjectTrust, project_trust

__all__ = ["ResourceLoader", "Resources"]

Stamp = tuple[int, int, int] | None
Trusted = bool | Callable[[ProjectTrust], bool] | None


@dataclass(frozen=True)
class Resources:
    """What was loaded for ``cwd``; see the module docstring."""

    cwd: str
    agent_dir: str
    trust: ProjectTrust
    trusted: bool
    """Whether the project's own skills and templates were loaded."""
    context_files: tuple[ContextFile, ...] = ()
    skills: tuple[Skill, ...] = ()
    templates: tuple[PromptTemplate, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()
    """(path, why) of project resources that exist but were not loaded."""
    watched: dict[str, Stamp] = field(default_factory=dict, repr=False, compare=False)

    @property
    def project_settings_dir(self) -> str | None:
        """The folder whose ``.pi/settings.json`` may be read (a trusted project), else ``None``."""
        return self.cwd if self.trusted and self.trust.needs_trust else None

    @property
    def visible_skills(self) -> tuple[Skill, ...]:
        return tuple(s for s in self.skills if not s.disable_model_invocation)

    @property
    def skill_dirs(self) -> tuple[str, ...]:
        """The folders of the loaded skills (what the skill-file tool may read)."""
        return tuple(dict.fromkeys(s.base_dir for s in self.skills))

    def system_prompt(self, base: str, *, has_read: bool = True) -> str:
        """``base`` with Pi's ``<project_context>`` and ``<available_skills>`` blocks and the
        working directory, as Pi builds a custom system prompt; ``base`` itself when there is
        neither a context file nor a skill (Pi would still add the working directory). The
        skills are listed only when the run has a ``read`` tool to open them (``has_read``)."""
        if not (self.context_files or self.skills):
            return base
        return build_system_prompt(base, self.cwd, self.context_files, self.skills, has_read=has_read)

    def expand(self, text: str) -> str:
        """``/skill:name args`` and ``/template args`` expanded as Pi expands a prompt."""
        expanded, _ = expand_skill_command(text, self.skills)
        return expand_prompt_template(expanded, self.templates)

    def changed(self) -> bool:
        """Whether a folder or file this load looked at has changed since. A path that was
        missing is not looked at again when its folder was stamped before it and is unchanged:
        creating it would have changed the folder (a missing ``.pi/skills`` under an unchanged
        ``.pi``, a missing ``trust.json`` in an unchanged agent dir), so a warm check costs about
        half the ``stat`` calls."""
        same: set[str] = set()
        for path, stamp in self.watched.items():  # in the order they were stamped
            if stamp is None and os.path.dirname(path) in same:
                same.add(path)
                continue
            if _stamp(path) != stamp:
                return True
            same.add(path)
        return False


def _stamp(path: str) -> Stamp:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)


def _git_root(folder: str) -> str | None:
    """Pi's ``findGitRepoRoot``: the nearest folder with a ``.git`` entry."""
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def ancestor_agents_skill_dirs(cwd: str) -> list[str]:
    """``.agents/skills`` of ``cwd`` and each ancestor, up to the git root if there is one."""
    root = _git_root(cwd)
    found, folder = [], cwd
    while True:
        found.append(os.path.join(folder, ".agents", "skills"))
        parent = os.path.dirname(folder)
        if folder in (root, parent):
            return found
        folder = parent


class ResourceLoader:
    """The resources of ``cwd`` (see the module docstring). The constructor does no I/O.

    ``trusted``: ``None`` follows Pi's rules without asking (``ProjectTrust.trusted``); a bool
    decides; a callable gets the ``ProjectTrust`` and decides (a notebook that asked the user).
    ``home`` and ``agent_dir`` default to ``$HOME`` and Pi's agent dir."""

    def __init__(
        self,
        cwd: str,
        *,
        agent_dir: str | None = None,
        home: str | None = None,
        context_files: bool = True,
        trusted: Trusted = None,
    ) -> None:
        self.cwd = os.path.abspath(cwd)
        self._agent_dir = agent_dir
        self._home = home
        self.context_files = context_files
        self.trusted = trusted
        self._last: Resources | None = None

    @property
    def agent_dir(self) -> str:
        return os.path.abspath(self._agent_dir or get_agent_dir())

    @property
    def home(self) -> str:
        return self._home if self._home is not None else os.environ.get("HOME") or os.path.expanduser("~")

    @property
    def last(self) -> Resources | None:
        """The last load, without looking at the files again."""
        return self._last

    def current(self) -> Resources:
        """The resources, re-read only when a file changed, trust changed or the switches did."""
        last = self._last
        if last is None or last.changed() or self._decide(last.trust) != last.trusted:
            return self.load()
        return last

    def load(self) -> Resources:
        """Read everything again."""
        watched: dict[str, Stamp] = {}

        def touched(path: str) -> None:
            if path not in watched:
                watched[path] = _stamp(path)

        trust = project_trust(self.cwd, self.agent_dir, self._home)
        touched(self.agent_dir)  # folders before what may be missing in them (see ``changed``)
        touched(os.path.join(self.cwd, CONFIG_DIR))
        for path in (os.path.join(self.agent_dir, TRUST_FILE), os.path.join(self.agent_dir, "settings.json")):
            touched(path)
        trusted = self._decide(trust)
        problems: list[Diagnostic] = []
        if trust.problem:
            problems.append(Diagnostic("error", trust.problem, os.path.join(self.agent_dir, TRUST_FILE)))
        context = (
            load_context_files(self.cwd, self.agent_dir, problems, touched)
            if self.context_files
            else []
        )
        skills, skill_problems = load_skills(self._skill_files(trusted, problems, touched))
        templates, template_problems = load_templates(self._template_files(trusted, problems, touched))
        self._last = Resources(
            cwd=self.cwd,
            agent_dir=self.agent_dir,
            trust=trust,
            trusted=trusted,
            context_files=tuple(context),
            skills=tuple(skills),
            templates=tuple(templates),
            diagnostics=tuple(problems + skill_problems + template_problems),
            skipped=() if trusted else self._skipped(),
            watched=watched,
        )
        return self._last

    def _decide(self, trust: ProjectTrust) -> bool:
        if self.trusted is None:
            return trust.trusted
        if isinstance(self.trusted, bool):
            return self.trusted or not trust.needs_trust
        return bool(self.trusted(trust))

    def _project_skill_dirs(self) -> list[tuple[str, str]]:
        user = os.path.join(self.home, ".agents", "skills")
        pi = [(os.path.join(self.cwd, CONFIG_DIR, "skills"), "pi")]
        agents = [(d, "agents") for d in ancestor_agents_skill_dirs(self.cwd) if os.path.abspath(d) != user]
        return pi + agents

    def _skill_files(
        self, trusted: bool, problems: list[Diagnostic], touched: Callable[[str], None]
    ) -> list[tuple[str, str]]:
        roots: list[tuple[str, str, str]] = []
        if trusted:
            roots += [(d, mode, "project") for d, mode in self._project_skill_dirs()]
        roots += [
            (os.path.join(self.agent_dir, "skills"), "pi", "user"),
            (os.path.join(self.home, ".agents", "skills"), "agents", "user"),
        ]
        files: list[tuple[str, str]] = []
        for root, mode, scope in roots:
            files += [(path, scope) for path in collect_skill_files(root, mode, problems, touched)]  # type: ignore[arg-type]
        return _unique(files)

    def _template_files(
        self, trusted: bool, problems: list[Diagnostic], touched: Callable[[str], None]
    ) -> list[tuple[str, str]]:
        roots = [(os.path.join(self.cwd, CONFIG_DIR, "prompts"), "project")] if trusted else []
        roots.append((os.path.join(self.agent_dir, "prompts"), "user"))
        files: list[tuple[str, str]] = []
        for root, scope in roots:
            files += [(path, scope) for path in collect_template_files(root, problems, touched)]
        return _unique(files)

    def _skipped(self) -> tuple[tuple[str, str], ...]:
        why = "not loaded: this folder is not trusted (%pi trust)"
        config = os.path.join(self.cwd, CONFIG_DIR)
        names = ("skills", "prompts", "extensions", "settings.json")
        candidates = [os.path.join(config, name) for name in names]
        candidates += [d for d, _ in self._project_skill_dirs()[1:]]
        return tuple((path, why) for path in candidates if os.path.exists(path))


def _unique(files: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each file once, by its real path, the first place it was found kept (Pi's package
    manager and ``mergePaths`` both drop a second path to the same file)."""
    seen: set[str] = set()
    kept = []
    for path, scope in files:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            kept.append((path, scope))
    return kept
