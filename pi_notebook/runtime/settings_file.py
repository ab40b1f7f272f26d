"""Pi's own global settings file, ``settings.json`` in Pi's agent dir (``$PI_CODING_AGENT_DIR``
or ``~/.pi/agent``): reading the keys this package uses into values, and writing the default
model back the way Pi writes it.

Read: ``defaultProvider`` + ``defaultModel`` (the default model, used only when both are set,
as Pi does), ``defaultThinkingLevel``, ``compaction`` {``enabled``, ``reserveTokens``,
``keepRecentTokens``} and ``retry`` {``enabled``, ``maxRetries``, ``baseDelayMs``}. Every other
key is left to Pi. Reading never raises: a missing file, malformed JSON, a key of the wrong
type each become a one-line ``problems`` entry, and the values they would have set stay unset
(so the caller's defaults apply).

Project settings (``<cwd>/.pi/settings.json``) are merged over the global file as Pi merges
them (key by key, the ``compaction`` and ``retry`` objects too) only when the caller passes
``project_dir``, which it must do only for a trusted folder (``resources.trust``): the file could
change which model and server a prompt goes to. ``defaultProjectTrust`` is read from the global
file alone, as Pi reads it.

Written: ``save_default_model`` sets ``defaultProvider`` and ``defaultModel`` and keeps every
other key and their order, in Pi's layout (``JSON.stringify(settings, null, 2)``, no trailing
newline), under Pi's lock (the ``settings.json.lock`` directory of ``proper-lockfile``), through
a temporary file and a rename, so Pi never reads half a file.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field, replace
from typing import Any

from ..ai.levels import THINKING_LEVELS
from ..session.compaction import CompactionSettings
from ..session.storage import get_agent_dir, write_atomic
from .settings import AgentSessionSettings, RetrySettings

__all__ = [
    "PiFileLock",
    "PiSettings",
    "SettingsWriteError",
    "read_pi_settings",
    "save_default_model",
    "settings_path",
]

SETTINGS_FILE = "settings.json"
_LOCK_ATTEMPTS = 10
_LOCK_DELAY_S = 0.02
_LOCK_STALE_S = 10.0
"""``proper-lockfile``'s default: a lock not refreshed for 10 s belongs to a dead process."""


class SettingsWriteError(ValueError):
    """``settings.json`` could not be written; the message is one line saying what to do."""


@dataclass(frozen=True, slots=True)
class PiSettings:
    """What Pi's ``settings.json`` sets of the keys this package reads (``None``: not set)."""

    path: str
    exists: bool = False
    missing: bool = False
    """There is no file (Pi's defaults; ``problems`` says so, and it is not worth a notice)."""
    default_provider: str | None = None
    default_model: str | None = None
    default_thinking_level: str | None = None
    default_project_trust: str = "ask"
    """Pi's ``defaultProjectTrust``: ``always``, ``never``, else ``ask``."""
    compaction: dict[str, Any] = field(default_factory=dict)
    """The valid ``compaction`` keys, by our field names (``enabled``, ``reserve_tokens``,
    ``keep_recent_tokens``)."""
    retry: dict[str, Any] = field(default_factory=dict)
    """The valid ``retry`` keys, by our field names (``enabled``, ``max_retries``,
    ``base_delay_ms``)."""
    problems: tuple[str, ...] = ()
    """One line per problem (file unreadable, malformed, a key of the wrong type)."""

    @property
    def model_spec(self) -> str | None:
        """``provider:id`` when both ``defaultProvider`` and ``defaultModel`` are set."""
        if self.default_provider and self.default_model:
            return f"{self.default_provider}:{self.default_model}"
        return None

    def compaction_settings(self, base: CompactionSettings | None = None) -> CompactionSettings:
        """``base`` (default: Pi's defaults) with the file's ``compaction`` keys applied."""
        return replace(base or CompactionSettings(), **self.compaction)

    def retry_settings(self, base: RetrySettings | None = None) -> RetrySettings:
        """``base`` (default: Pi's defaults) with the file's ``retry`` keys applied."""
        return replace(base or RetrySettings(), **self.retry)

    def session_settings(self, base: AgentSessionSettings | None = None) -> AgentSessionSettings:
        """``base`` (default: Pi's defaults) with the file's compaction, retry and
        ``defaultThinkingLevel`` applied."""
        start = base or AgentSessionSettings()
        level = self.default_thinking_level or start.default_thinking_level
        return replace(
            start,
            compaction=self.compaction_settings(start.compaction),
            retry=self.retry_settings(start.retry),
            default_thinking_level=level,
        )


def settings_path(agent_dir: str | None = None) -> str:
    """Where Pi keeps its global settings: ``<agent dir>/settings.json``."""
    return os.path.join(agent_dir or get_agent_dir(), SETTINGS_FILE)


_cache: dict[str, tuple[tuple[int, int], PiSettings]] = {}


def read_pi_settings(agent_dir: str | None = None, project_dir: str | None = None) -> PiSettings:
    """Pi's global settings, with a trusted project's ``.pi/settings.json`` merged over them
    when ``project_dir`` is given; never raises (see the module docstring). A parsed file is
    kept until its size or modification time changes, so a cell can read it every time."""
    found = _read_file(settings_path(agent_dir))
    if project_dir is None:
        return found
    project = _read_file(os.path.join(project_dir, ".pi", SETTINGS_FILE))
    return found if project.missing else _merged(found, project)


def _merged(base: PiSettings, project: PiSettings) -> PiSettings:
    """Pi's deep merge of the project's file over the global one (for the keys read here)."""
    problems = tuple(p for p in base.problems if not base.missing) + project.problems
    return replace(
        base,
        exists=True,
        missing=False,
        default_provider=project.default_provider or base.default_provider,
        default_model=project.default_model or base.default_model,
        default_thinking_level=project.default_thinking_level or base.default_thinking_level,
        compaction={**base.compaction, **project.compaction},
        retry={**base.retry, **project.retry},
        problems=problems,
    )


def _read_file(path: str) -> PiSettings:
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        problem = f"no Pi settings file at {path}; Pi's defaults apply"
        return PiSettings(path, missing=True, problems=(problem,))
    except OSError as exc:
        return PiSettings(path, problems=(f"cannot read {path} ({exc.strerror}); Pi's defaults apply",))
    stamp = (stat.st_mtime_ns, stat.st_size)
    cached = _cache.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    found = _parse_file(path)
    _cache[path] = (stamp, found)
    return found


def _parse_file(path: str) -> PiSettings:
    try:
        with open(path, encoding="utf-8") as handle:
            data = _loads(handle.read())
    except OSError as exc:
        return PiSettings(path, problems=(f"cannot read {path} ({exc.strerror}); Pi's defaults apply",))
    except RecursionError:
        problem = f"{path} is nested too deeply to read; it is ignored, fix it or delete it"
        return PiSettings(path, exists=True, problems=(problem,))
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        problem = f"{path} is not valid JSON ({reason}{where}); it is ignored, fix it or delete it"
        return PiSettings(path, exists=True, problems=(problem,))
    if not isinstance(data, dict):
        problem = f"{path} must hold a JSON object, not {_json_type(data)}; it is ignored"
        return PiSettings(path, exists=True, problems=(problem,))
    try:
        return _from_object(path, data)
    except RecursionError:  # a value deep enough to parse but not to show
        problem = f"{path} is nested too deeply to read; it is ignored, fix it or delete it"
        return PiSettings(path, exists=True, problems=(problem,))


def _loads(text: str) -> Any:
    """``JSON.parse``: ``NaN`` and ``Infinity``, which Python's parser would accept, are errors."""
    def refuse(name: str) -> Any:
        raise json.JSONDecodeError(f"{name} is not JSON", text, 0)

    return json.loads(text, parse_constant=refuse)


def _from_object(path: str, data: dict[str, Any]) -> PiSettings:
    problems: list[str] = []

    def bad(key: str, expected: str, value: Any) -> None:
        problems.append(f"{path}: {key} must be {expected}, not {_shown(value)}; ignored")

    values: dict[str, Any] = {}
    for key, name in (("defaultProvider", "default_provider"), ("defaultModel", "default_model")):
        value = data.get(key)
        if value is not None and not (isinstance(value, str) and value.strip()):
            bad(key, "a non-empty string", value)
        elif value is not None:
            values[name] = value.strip()
    level = data.get("defaultThinkingLevel")
    if level is not None and level not in THINKING_LEVELS:
        bad("defaultThinkingLevel", "one of " + ", ".join(THINKING_LEVELS), level)
    elif level is not None:
        values["default_thinking_level"] = level
    if data.get("defaultProjectTrust") in ("always", "never"):
        values["default_project_trust"] = data["defaultProjectTrust"]
    compaction = _section(data, "compaction", _COMPACTION_KEYS, bad)
    retry = _section(data, "retry", _RETRY_KEYS, bad)
    return PiSettings(
        path, exists=True, compaction=compaction, retry=retry, problems=tuple(problems), **values
    )


_COMPACTION_KEYS = {
    "enabled": "enabled", "reserveTokens": "reserve_tokens", "keepRecentTokens": "keep_recent_tokens"
}
_RETRY_KEYS = {"enabled": "enabled", "maxRetries": "max_retries", "baseDelayMs": "base_delay_ms"}


def _section(data: dict[str, Any], key: str, keys: dict[str, str], bad: Any) -> dict[str, Any]:
    """The valid keys of the object ``data[key]``, by our field names."""
    section = data.get(key)
    if section is None:
        return {}
    if not isinstance(section, dict):
        bad(key, "an object", section)
        return {}
    out: dict[str, Any] = {}
    for theirs, ours in keys.items():
        value = section.get(theirs)
        if value is None:
            continue
        if theirs == "enabled":
            if isinstance(value, bool):
                out[ours] = value
            else:
                bad(f"{key}.{theirs}", "true or false", value)
        elif _whole(value):
            out[ours] = int(value)
        else:
            bad(f"{key}.{theirs}", "a whole number, 0 or more", value)
    return out


def _whole(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and value >= 0
        and float(value).is_integer()
    )


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


# --- writing -------------------------------------------------------------------------------------


def save_default_model(provider: str, model_id: str, agent_dir: str | None = None) -> str:
    """Set ``defaultProvider`` and ``defaultModel`` in Pi's ``settings.json`` (created with the
    agent dir if need be), keeping every other key; returns the file's path. Raises
    ``SettingsWriteError`` (one line) when the file cannot be parsed, as Pi refuses to save over
    a file it could not load, or cannot be written."""
    path = os.path.realpath(settings_path(agent_dir))  # a symlinked settings.json stays a link
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as exc:
        raise SettingsWriteError(f"cannot create {os.path.dirname(path)} ({exc.strerror})") from None
    with PiFileLock(path):
        data = _current(path)
        data["defaultProvider"] = provider
        data["defaultModel"] = model_id
        write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False))
    return path


def _current(path: str) -> dict[str, Any]:
    """The file's object, or ``{}`` when there is no file."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsWriteError(f"cannot read {path} ({exc}); nothing was saved") from None
    if not text.strip():
        return {}  # Pi treats an empty file as no settings
    try:
        data = _loads(text)
    except (ValueError, RecursionError):
        raise SettingsWriteError(f"{path} is not valid JSON; fix or delete it, then save again") from None
    if not isinstance(data, dict):
        raise SettingsWriteError(f"{path} must hold a JSON object; fix or delete it, then save again")
    return data


def write_text_atomic(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) through a temporary file in the same folder, fsynced
    and renamed over it, keeping the file's mode (a new file gets what Pi's ``writeFileSync``
    would create). A failed write leaves the old file as it was; raises ``SettingsWriteError``."""
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    except OSError as exc:
        raise SettingsWriteError(f"cannot write {path} ({exc.strerror}); nothing was saved") from None
    try:
        write_atomic(path, text.encode("utf-8"), mode)
    except OSError as exc:
        raise SettingsWriteError(f"cannot write {path} ({exc.strerror or exc}); nothing was saved") from None


class PiFileLock:
    """Pi's lock on ``path``: the directory ``path + ".lock"``, taken with ``mkdir`` (atomic),
    retried 10 times 20 ms apart as Pi does, and taken over when older than 10 s."""

    def __init__(self, path: str) -> None:
        self.lock = path + ".lock"

    def __enter__(self) -> None:
        for _ in range(_LOCK_ATTEMPTS):
            try:
                os.mkdir(self.lock)
                return
            except FileExistsError:
                if self._stale():
                    self._remove()
                    continue
                time.sleep(_LOCK_DELAY_S)
            except OSError as exc:
                reason = f"cannot lock {self.lock} ({exc.strerror}); nothing was saved"
                raise SettingsWriteError(reason) from None
        raise SettingsWriteError(
            f"{self.lock} is held by another Pi process; try again, or remove it if no Pi is running"
        )

    def __exit__(self, *exc: object) -> None:
        self._remove()

    def _stale(self) -> bool:
        try:
            return time.time() - os.stat(self.lock).st_mtime > _LOCK_STALE_S
        except FileNotFoundError:
            return False

    def _remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(self.lock)
