"""Where extensions come from, in this order (each loaded once by name):

1. Installed packages: the entry points of group ``pi_notebook.extensions``
   (``[project.entry-points."pi_notebook.extensions"] name = "module:setup"``).
2. The project: ``<cwd>/.pi/extensions/*.py`` and ``<cwd>/.pi/extensions/NAME/__init__.py``
   (Pi's folder, with Python files), only when ``project_trusted(cwd)`` says so. The trust
   decision is the host's; without one the project is untrusted and nothing there runs.
3. Explicitly: :func:`load_extension` with a module (``package.module``, ``module:function``)
   or a path to a ``.py`` file.

A module's extension is its ``setup`` function unless the spec names another attribute.
Failing to import is reported like a failing ``setup``: one line, and the rest still loads.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from .api import Extension
from .runner import ExtensionRunner, Setup

__all__ = [
    "ENTRY_POINT_GROUP",
    "DiscoveryResult",
    "discover_extensions",
    "load_extension",
    "project_extension_paths",
    "resolve_setup",
]

ENTRY_POINT_GROUP = "pi_notebook.extensions"
ProjectTrusted = Callable[[Path], bool]


def _untrusted(_: Path) -> bool:
    return False


@dataclass
class DiscoveryResult:
    loaded: list[Extension] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Why something found was not loaded (an untrusted project folder)."""


def _module_from_file(path: Path) -> Any:
    """Import ``path`` under a name of its own (two projects' ``tools.py`` never collide)."""
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    name = f"pi_notebook_extension_{path.stem}_{digest}"
    target = path / "__init__.py" if path.is_dir() else path
    spec = importlib.util.spec_from_file_location(
        name, target, submodule_search_locations=[str(path)] if path.is_dir() else None
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def resolve_setup(spec: str, cwd: str | Path | None = None) -> tuple[Setup, str]:
    """The setup function ``spec`` names and the extension's name (a path, or the module)."""
    text = spec.strip()
    base = Path(cwd) if cwd is not None else Path.cwd()
    candidate = (base / text).expanduser() if not Path(text).is_absolute() else Path(text)
    if text.endswith(".py") or (candidate.is_dir() and (candidate / "__init__.py").is_file()):
        path = candidate.resolve()
        if not path.exists():
            raise FileNotFoundError(f"no extension file {path}: give the path of a .py file or a module name")
        return _setup_of(_module_from_file(path), "setup", str(path)), str(path)
    module_name, _, attribute = text.partition(":")
    module = importlib.import_module(module_name)
    return _setup_of(module, attribute or "setup", text), text


def _setup_of(module: Any, attribute: str, name: str) -> Setup:
    setup = getattr(module, attribute, None)
    if not callable(setup):
        raise AttributeError(f"{name} has no function {attribute}(pi): define def {attribute}(pi): ...")
    return setup  # type: ignore[no-any-return]


async def load_extension(
    runner: ExtensionRunner, spec: str, *, cwd: str | Path | None = None, source: str = "load"
) -> Extension | None:
    """Import ``spec`` and run its setup; ``None`` when that failed (reported on ``runner``)."""
    try:
        setup, name = resolve_setup(spec, cwd)
    except Exception as exc:
        runner.report(spec, "load", exc)
        return None
    return await runner.load(setup, name, source)


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


def project_extension_paths(cwd: str | Path) -> list[Path]:
    """``.pi/extensions/*.py`` and its packages under ``cwd``, sorted by name."""
    folder = Path(cwd) / ".pi" / "extensions"
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.name.startswith(("_", ".")):
            continue
        if (entry.suffix == ".py" and entry.is_file()) or (entry / "__init__.py").is_file():
            found.append(entry)
    return found


async def discover_extensions(
    runner: ExtensionRunner,
    cwd: str | Path,
    *,
    project_trusted: ProjectTrusted = _untrusted,
    entry_point_group: str = ENTRY_POINT_GROUP,
) -> DiscoveryResult:
    """Load the installed (entry point) extensions, then the project's when it is trusted;
    those already loaded under the same name are left as they are."""
    out = DiscoveryResult()
    for point in sorted(entry_points(group=entry_point_group), key=lambda p: p.name):
        name = f"{point.name} = {point.value}"
        if runner.get(name) is not None:
            continue
        try:
            setup = point.load()
        except Exception as exc:
            runner.report(name, "load", exc)
            continue
        loaded = await runner.load(setup, name, "entry_point")
        if loaded is not None:
            out.loaded.append(loaded)
    paths = project_extension_paths(cwd)
    if not paths:
        return out
    folder = _real(cwd)
    if not project_trusted(folder):
        out.skipped += [f"{p} (the project {folder} is not trusted)" for p in paths]
        return out
    for path in paths:
        if runner.get(str(_real(path))) is None:
            loaded = await load_extension(runner, str(path), cwd=cwd, source="project")
            if loaded is not None:
                out.loaded.append(loaded)
    return out
