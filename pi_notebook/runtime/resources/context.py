"""Context files (``AGENTS.md`` / ``CLAUDE.md``) as Pi 0.83's ``loadProjectContextFiles`` finds them.

The agent dir's file first, then one file per folder from the filesystem root down to the
working directory (``AGENTS.md``, ``AGENTS.MD``, ``CLAUDE.md``, ``CLAUDE.MD``: the first that is
a file wins in each folder), each path once. In a linked git worktree nested inside its main
checkout, the main checkout's copy of the worktree's own context file is left out (it is the
same tracked file, twice). Context files need no project trust, as in Pi.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from .files import Diagnostic, error_text, read_text

__all__ = ["CONTEXT_FILE_NAMES", "ContextFile", "find_git_paths", "load_context_files"]

CONTEXT_FILE_NAMES = ("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")


@dataclass(frozen=True, slots=True)
class ContextFile:
    path: str
    content: str


def _canonical(path: str) -> str:
    """Pi's ``canonicalizePath``: the real path, or the path itself when that fails."""
    try:
        return os.path.realpath(path, strict=True)
    except (OSError, ValueError):
        return path


def _from_folder(
    folder: str, problems: list[Diagnostic], touched: Callable[[str], None]
) -> ContextFile | None:
    for name in CONTEXT_FILE_NAMES:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        try:
            if not os.path.isfile(path):
                continue
            touched(path)
            return ContextFile(path, read_text(path))
        except (OSError, ValueError) as exc:  # Pi warns and tries the next name
            problems.append(Diagnostic("warning", error_text(exc), path))
    return None


def find_git_paths(cwd: str) -> tuple[str, str] | None:
    """Pi's ``findGitPaths``: (the checkout's root, its common git dir), or ``None``."""
    folder = cwd
    while True:
        git = os.path.join(folder, ".git")
        if os.path.exists(git):
            return _git_paths(folder, git)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _git_paths(folder: str, git: str) -> tuple[str, str] | None:
    try:
        if os.path.isfile(git):
            with open(git, encoding="utf-8") as handle:
                content = handle.read().strip()
            if not content.startswith("gitdir: "):
                return None
            git_dir = os.path.normpath(os.path.join(folder, content[8:].strip()))
            if not os.path.exists(os.path.join(git_dir, "HEAD")):
                return None
            common = os.path.join(git_dir, "commondir")
            if os.path.exists(common):
                with open(common, encoding="utf-8") as handle:
                    return folder, os.path.normpath(os.path.join(git_dir, handle.read().strip()))
            return folder, git_dir
        if os.path.isdir(git):
            return (folder, git) if os.path.exists(os.path.join(git, "HEAD")) else None
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _shadowed(cwd: str, touched: Callable[[str], None]) -> str | None:
    """Pi's ``findShadowedContextFile``: the main checkout's context file that a nested linked
    worktree's own copy shadows (canonical), else ``None``."""
    paths = find_git_paths(cwd)
    if paths is None:
        return None
    common, root = _canonical(paths[1]), _canonical(paths[0])
    main = os.path.dirname(common)
    if not root.startswith(main + os.sep) or _canonical(os.path.join(main, ".git")) != common:
        return None
    own = _from_folder(root, [], touched)
    return os.path.join(main, os.path.basename(own.path)) if own is not None else None


def load_context_files(
    cwd: str,
    agent_dir: str,
    problems: list[Diagnostic] | None = None,
    touched: Callable[[str], None] = lambda path: None,
) -> list[ContextFile]:
    """The context files for ``cwd`` in Pi's order; a file that cannot be read is a diagnostic
    in ``problems``. ``touched(path)`` hears every folder and file looked at (for re-reads)."""
    problems = problems if problems is not None else []
    cwd, agent_dir = os.path.abspath(cwd), os.path.abspath(agent_dir)
    found: list[ContextFile] = []
    seen: set[str] = set()
    touched(agent_dir)
    own = _from_folder(agent_dir, problems, touched)
    if own is not None:
        found.append(own)
        seen.add(own.path)
    shadowed = _shadowed(cwd, touched)
    ancestors: list[ContextFile] = []
    folder = cwd
    while True:
        touched(folder)
        file = _from_folder(folder, problems, touched)
        hidden = shadowed is not None and file is not None and _canonical(file.path) == shadowed
        if file is not None and not hidden and file.path not in seen:
            ancestors.insert(0, file)
            seen.add(file.path)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return found + ancestors
