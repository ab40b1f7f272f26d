"""Project trust as Pi 0.83 decides and stores it (``trust-manager.js``, ``project-trust.js``).

A folder needs trust when it has project resources that could change what the agent does:
one of ``settings.json``, ``extensions``, ``skills``, ``prompts``, ``themes``, ``SYSTEM.md``,
``APPEND_SYSTEM.md`` in its ``.pi`` folder, or an ``.agents/skills`` folder in it or an
ancestor (``~/.agents/skills`` is the user's own and does not count). A folder without any is
trusted. Otherwise the nearest decision in Pi's trust store (``<agent dir>/trust.json``: real
paths to ``true`` / ``false``, the folder's own or an ancestor's) decides; without one, Pi's
``defaultProjectTrust`` setting (``always`` / ``never``), else the user is asked, and a run
where nobody can answer is untrusted. The store is read and written under Pi's lock, in Pi's
layout, so a decision taken in the Pi CLI counts here and the other way round.

``is_trusted(cwd)`` is the one-line answer for code that only needs to know (the extension
loader): it is ``project_trust(cwd).trusted``, with an undecided folder untrusted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ...session.storage import get_agent_dir
from ..settings_file import PiFileLock, SettingsWriteError, read_pi_settings, write_text_atomic

__all__ = [
    "TRUST_FILE",
    "ProjectTrust",
    "TrustStoreError",
    "has_trust_requiring_resources",
    "is_trusted",
    "project_trust",
    "save_trust",
    "trust_options",
]

TRUST_FILE = "trust.json"
CONFIG_DIR = ".pi"
TRUST_REQUIRING = (
    "settings.json", "extensions", "skills", "prompts", "themes", "SYSTEM.md", "APPEND_SYSTEM.md"
)
Default = Literal["ask", "always", "never"]


class TrustStoreError(ValueError):
    """Pi's trust store cannot be read or written; the message says which file and what to do."""


def _canonical(path: str) -> str:
    resolved = os.path.abspath(os.path.expanduser(path))
    try:
        return os.path.realpath(resolved, strict=True)
    except (OSError, ValueError):
        return resolved


def _home(home: str | None) -> str:
    return home if home is not None else os.environ.get("HOME") or os.path.expanduser("~")


def has_trust_requiring_resources(cwd: str, home: str | None = None) -> bool:
    """Pi's ``hasTrustRequiringProjectResources``."""
    user_skills = os.path.join(_canonical(_home(home)), ".agents", "skills")
    folder = _canonical(cwd)
    config = os.path.join(folder, CONFIG_DIR)
    if any(os.path.exists(os.path.join(config, name)) for name in TRUST_REQUIRING):
        return True
    while True:
        skills = os.path.join(folder, ".agents", "skills")
        if skills != user_skills and os.path.exists(skills):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


@dataclass(frozen=True, slots=True)
class ProjectTrust:
    """What Pi's rules say about one folder, before anyone is asked."""

    cwd: str
    """The folder, as Pi keys it (its real path)."""
    needs_trust: bool
    """The folder has project resources that load only when trusted."""
    decision: bool | None = None
    """The nearest decision in the trust store (``None``: none)."""
    decided_at: str | None = None
    """The folder the decision was stored for (the folder itself or an ancestor)."""
    default: Default = "ask"
    """Pi's ``defaultProjectTrust``."""
    problem: str = ""
    """Why the trust store could not be read (then the folder is untrusted)."""

    @property
    def trusted(self) -> bool:
        """Trusted without asking anyone (an undecided folder is not)."""
        if not self.needs_trust:
            return True
        if self.decision is not None:
            return self.decision
        return self.default == "always"

    @property
    def undecided(self) -> bool:
        """Pi would ask the user (no stored decision, ``defaultProjectTrust`` is ``ask``)."""
        return self.needs_trust and self.decision is None and self.default == "ask" and not self.problem


def _store(agent_dir: str | None) -> str:
    return os.path.join(os.path.abspath(agent_dir or get_agent_dir()), TRUST_FILE)


def _read_store(path: str) -> dict[str, bool | None]:
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise TrustStoreError(f"cannot read Pi's trust store {path} ({exc.strerror})") from None
    try:
        data = json.loads(text)
    except UnicodeDecodeError:
        reason = "not UTF-8 text"
    except RecursionError:
        reason = "nested too deeply"
    except ValueError as exc:
        reason = str(exc)
    else:
        reason = ""
    if reason:
        raise TrustStoreError(f"Failed to read trust store {path}: {reason}; fix or delete it")
    if not isinstance(data, dict):
        raise TrustStoreError(f"Invalid trust store {path}: expected an object; fix or delete it")
    for key, value in data.items():
        if value is not True and value is not False and value is not None:
            raise TrustStoreError(
                f"Invalid trust store {path}: value for {json.dumps(key)} must be true, false, or null"
            )
    return data


def _nearest(data: dict[str, bool | None], cwd: str) -> tuple[str, bool] | None:
    folder = cwd
    while True:
        value = data.get(folder)
        if value is True or value is False:
            return folder, value
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def project_trust(cwd: str, agent_dir: str | None = None, home: str | None = None) -> ProjectTrust:
    """Pi's rules for ``cwd`` (see the module docstring); never raises."""
    folder = _canonical(cwd)
    if not has_trust_requiring_resources(folder, home):
        return ProjectTrust(folder, False)
    default = read_pi_settings(agent_dir).default_project_trust
    path = _store(agent_dir)
    try:
        found = None
        if os.path.exists(path):  # no store: nothing to lock (and no agent dir to create)
            with PiFileLock(path):
                found = _nearest(_read_store(path), folder)
    except (ValueError, OSError) as exc:  # TrustStoreError, or the lock (SettingsWriteError)
        return ProjectTrust(folder, True, default=default, problem=str(exc))  # type: ignore[arg-type]
    if found is None:
        return ProjectTrust(folder, True, default=default)  # type: ignore[arg-type]
    return ProjectTrust(folder, True, found[1], found[0], default)  # type: ignore[arg-type]


def is_trusted(cwd: str, agent_dir: str | None = None) -> bool:
    """Whether project-local resources of ``cwd`` may load now, by Pi's rules and Pi's trust
    store, without asking anyone (undecided: ``False``)."""
    return project_trust(cwd, agent_dir).trusted


@dataclass(frozen=True, slots=True)
class TrustOption:
    """One answer to Pi's trust question (``getProjectTrustOptions``)."""

    label: str
    trusted: bool
    updates: tuple[tuple[str, bool | None], ...]


def trust_options(cwd: str) -> list[TrustOption]:
    """Pi's answers: Trust, Trust parent folder (…), Do not trust (the session-only ones are
    left out: a kernel keeps its answer in the store, where the Pi CLI sees it too)."""
    folder = _canonical(cwd)
    parent = os.path.dirname(folder)
    options = [TrustOption("Trust", True, ((folder, True),))]
    if parent != folder:
        options.append(TrustOption(f"Trust parent folder ({parent})", True, ((parent, True), (folder, None))))
    options.append(TrustOption("Do not trust", False, ((folder, False),)))
    return options


def save_trust(updates: Iterable[tuple[str, bool | None]], agent_dir: str | None = None) -> str:
    """Write decisions to Pi's trust store (``None`` removes one), as Pi's ``setMany`` does
    (sorted keys, two-space JSON and a newline); returns the store's path. Raises
    ``TrustStoreError`` when it cannot."""
    path = _store(agent_dir)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with PiFileLock(path):
            data = _read_store(path)
            for folder, decision in updates:
                key = _canonical(folder)
                if decision is None:
                    data.pop(key, None)
                else:
                    data[key] = decision
            ordered = {key: data[key] for key in sorted(data)}
            # a temporary file renamed over the store: a failed write leaves every decision
            write_text_atomic(path, json.dumps(ordered, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise TrustStoreError(f"cannot write Pi's trust store {path} ({exc.strerror or exc})") from None
    except SettingsWriteError as exc:  # the lock
        reason = str(exc).replace("nothing was saved", "the trust decision was not saved")
        raise TrustStoreError(reason) from None
    return path
