"""Session files on disk: where they live, how they load, migrate and get written.

Location (as Pi): ``<agent dir>/sessions/--<cwd>--/<ISO timestamp>_<session id>.jsonl``;
the agent dir is ``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``; the cwd is encoded by dropping
its leading separator and turning every ``/``, ``\\`` and ``:`` into ``-``; the timestamp
has ``:`` and ``.`` replaced by ``-``.

Loading follows Pi: blank and unparsable lines are skipped (a line torn by a crash loses that
entry only), the first parsed line must be a header with a string ``id``, and v1/v2 files are
migrated to v3 and rewritten. Unlike Pi, this reader reports every line it skipped or did not
understand (:attr:`LoadedSession.problems`) and rewrites migrated files atomically.

Writing: every line is one ``os.write`` of the whole ``\\n``-terminated line followed by
``fsync``, so an entry whose append returned survives a killed process; a file whose last
line was torn gets a newline first, so the torn fragment cannot swallow the next entry. An
append that fails part-way (full disk, ``KeyboardInterrupt``) truncates the file back to its
size before; a create that fails removes the partial file; a rewrite goes through a temporary
file in the same folder (:func:`write_atomic`). Appends hold an exclusive ``flock``.

Reading never raises for what a line holds (bytes that are not UTF-8, JSON nested deeper than
Python's recursion limit, shapes it does not know): the line is skipped or kept as unknown,
and an entry whose parent is missing is attached to the entry before it
(:func:`reattach_orphans`); each such thing is one line in ``problems``. A folder whose
encoded name is over 255 bytes gets a hashed one (:func:`session_dir_name`).
An optional :data:`Redactor` sees each entry's JSON object just before it is written.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import hashlib
import json
import os
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # POSIX: writers of this package take turns on a session file
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock
    fcntl = None  # type: ignore[assignment]

from .entries import (
    CURRENT_SESSION_VERSION,
    SessionEntry,
    SessionHeader,
    UnknownEntry,
    ValidationError,
    entry_adapter,
    entry_to_dict,
    new_entry_id,
    parse_entry,
)

ENV_AGENT_DIR = "PI_CODING_AGENT_DIR"
ENV_SESSION_DIR = "PI_CODING_AGENT_SESSION_DIR"

_SESSION_ID = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")


class SessionError(Exception):
    """A session file that cannot be used (not a session, unknown entry id, ...)."""


def assert_valid_session_id(session_id: str) -> None:
    if not _SESSION_ID.match(session_id):
        raise SessionError(
            "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
            "and start and end with an alphanumeric character"
        )


def expand_path(value: str | os.PathLike[str]) -> str:
    """``~`` expanded, nothing else (Pi's ``normalizePath``)."""
    return os.path.expanduser(os.fspath(value))


def resolve_path(value: str | os.PathLike[str]) -> str:
    """Absolute, normalised, ``~`` expanded; symlinks are not resolved (Pi's ``resolvePath``)."""
    return os.path.abspath(expand_path(value))


def get_agent_dir() -> str:
    env = os.environ.get(ENV_AGENT_DIR)
    return expand_path(env) if env else os.path.join(os.path.expanduser("~"), ".pi", "agent")


def get_sessions_dir() -> str:
    return os.path.join(get_agent_dir(), "sessions")


def encode_cwd(cwd: str) -> str:
    """``/home/me/proj`` -> ``--home-me-proj--``."""
    resolved = resolve_path(cwd)
    return "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", resolved)) + "--"


MAX_NAME_BYTES = 255
"""The longest file name most file systems take."""


def session_dir_name(cwd: str) -> str:
    """:func:`encode_cwd`, or for a folder whose encoded name is over 255 bytes (Pi cannot
    record there at all) its first 200 bytes and a hash of the whole: ``--home-me-…-1a2b…--``."""
    name = encode_cwd(cwd)
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) <= MAX_NAME_BYTES:
        return name
    digest = hashlib.sha256(raw).hexdigest()[:16]
    return raw[:200].decode("utf-8", "ignore") + f"-{digest}--"


def default_session_dir(cwd: str, agent_dir: str | None = None, create: bool = True) -> str:
    """Where the sessions of ``cwd`` live (created unless ``create=False``)."""
    directory = os.path.join(resolve_path(agent_dir or get_agent_dir()), "sessions", session_dir_name(cwd))
    if create:
        os.makedirs(directory, exist_ok=True)
    return directory


def session_file_name(timestamp: str, session_id: str) -> str:
    return f"{re.sub(r'[:.]', '-', timestamp)}_{session_id}.jsonl"


# --- loading ------------------------------------------------------------------------------


@dataclass(slots=True)
class LoadedSession:
    """A parsed file: header, entries in file order, and one line per problem found."""

    header: SessionHeader | None
    entries: list[SessionEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    migrated: bool = False


def _loads_row(number: int, raw: bytes, last: int, problems: list[str]) -> dict[str, Any] | None:
    """One line as a JSON object, or ``None`` with the reason added to ``problems``."""
    try:
        value = json.loads(raw)
    except UnicodeDecodeError:
        problems.append(f"line {number}: not UTF-8 text (a torn or foreign write), skipped")
        return None
    except ValueError:
        torn = number == last
        problems.append(f"line {number}: {'torn last line' if torn else 'not valid JSON'}, skipped")
        return None
    except RecursionError:
        problems.append(f"line {number}: JSON nested too deeply to read, skipped")
        return None
    if not isinstance(value, dict):
        problems.append(f"line {number}: not a JSON object, skipped")
        return None
    return value


def _is_header(value: dict[str, Any]) -> bool:
    return value.get("type") == "session" and isinstance(value.get("id"), str)


def read_session_bytes(path: str) -> bytes:
    """The bytes of a session file, or :class:`SessionError` saying why it cannot be read (a
    folder, a symlink loop, no permission) and what to do."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise SessionError(
            f"cannot read session file {path} ({exc.strerror or exc}); "
            "pass the path of a readable .jsonl file"
        ) from None


def load_session_file(path: str) -> LoadedSession:
    """Parse ``path``; ``header is None`` when its first parsed line is not a session header.

    Never raises for the content of a line (any bytes, any nesting): what it skips, does not
    know or repairs is in ``problems``. An entry whose parent is not in the file (the parent's
    write was torn) is attached to the entry before it, so the history before the tear stays
    reachable from the last entry. A file that cannot be read raises :class:`SessionError`.
    """
    lines = read_session_bytes(path).split(b"\n")
    problems: list[str] = []
    rows: list[tuple[int, dict[str, Any]]] = []
    for number, raw in enumerate(lines, 1):
        if raw.strip():
            value = _loads_row(number, raw, len(lines), problems)
            if value is not None:
                rows.append((number, value))
                break
    if not rows or not _is_header(rows[0][1]):
        return LoadedSession(header=None, problems=problems)
    first = rows[0][0]
    version = rows[0][1].get("version", 1)
    if isinstance(version, int) and version < CURRENT_SESSION_VERSION:
        # Old files: every line as a dict, migrated in place, then typed.
        for number, raw in enumerate(lines[first:], first + 1):
            value = _loads_row(number, raw, len(lines), problems) if raw.strip() else None
            if value is not None:
                rows.append((number, value))
        migrate_to_current_version([value for _, value in rows])
        entries = [e for number, value in rows[1:] if (e := _parse_row(number, value, problems))]
    else:
        entries = _parse_lines(lines, first, problems)
    try:
        header = SessionHeader.model_validate(rows[0][1])
    except (ValidationError, RecursionError):
        problems.append(f"line {first}: the session header does not have Pi's shape")
        return LoadedSession(header=None, problems=problems)
    entries = reattach_orphans(entries, problems)
    if header.version > CURRENT_SESSION_VERSION:
        problems.insert(
            0,
            f"header: session version {header.version} is newer than this reader "
            f"(version {CURRENT_SESSION_VERSION}); entries it does not know are kept but ignored",
        )
    return LoadedSession(
        header=header, entries=entries, problems=problems, migrated=version != header.version
    )


def _parse_lines(lines: list[bytes], first: int, problems: list[str]) -> list[SessionEntry]:
    """Entries of a current file: each line straight from JSON into its model; a line that
    does not validate takes the careful path that explains why."""
    adapter = entry_adapter()
    entries: list[SessionEntry] = []
    for number, raw in enumerate(lines[first:], first + 1):
        if not raw.strip():
            continue
        try:
            entries.append(adapter.validate_json(raw))
            continue
        except (ValidationError, RecursionError):
            pass
        value = _loads_row(number, raw, len(lines), problems)
        entry = _parse_row(number, value, problems) if value is not None else None
        if entry is not None:
            entries.append(entry)
    return entries


def _parse_row(number: int, value: dict[str, Any], problems: list[str]) -> SessionEntry | None:
    kind: Any = value.get("type")
    if kind == "session":
        problems.append(f"line {number}: a second session header, skipped")
        return None
    if not isinstance(kind, str):
        problems.append(f"line {number}: not an entry (no 'type' field; a newer Pi?), skipped")
        return None
    if not isinstance(value.get("id"), str):
        problems.append(f"line {number}: {_describe(kind)} has no string id, skipped")
        return None
    try:
        entry = parse_entry(value)
    except RecursionError:
        problems.append(f"line {number}: {_describe(kind)} is nested too deeply to read, skipped")
        return None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        problems.append(
            f"line {number}: {_describe(kind)} does not have Pi's shape ({where}: {first.get('msg')}); "
            "kept but ignored"
        )
        return UnknownEntry(raw=value)
    if isinstance(entry, UnknownEntry):
        problems.append(f"line {number}: unknown entry type {kind!r} (a newer Pi?), kept but ignored")
    return entry


def _describe(kind: str) -> str:
    return f"{kind!r} entry"


def problems_line(name: str, problems: Sequence[str]) -> str | None:
    """``problems`` of the session file ``name`` as one line, ``None`` when there are none."""
    if not problems:
        return None
    more = f" (and {len(problems) - 2} more)" if len(problems) > 2 else ""
    return f"Session file {name}: {'; '.join(problems[:2])}{more}."


def with_parent(entry: SessionEntry, parent: str | None) -> SessionEntry:
    """``entry`` with another ``parentId`` (a copy)."""
    if isinstance(entry, UnknownEntry):
        return UnknownEntry(raw={**entry.raw, "parentId": parent})
    return entry.model_copy(update={"parent_id": parent})


def reattach_orphans(entries: list[SessionEntry], problems: list[str]) -> list[SessionEntry]:
    """Entries whose parent is in none of ``entries`` (its line was torn or skipped) get the
    entry before them in file order as parent (the root when there is none); one line in
    ``problems`` says how many. Pi stops a resume at such a gap and drops what came before."""
    ids = {e.id for e in entries}
    out: list[SessionEntry] = []
    moved = 0
    for entry in entries:
        orphan = entry.parent_id is not None and entry.parent_id not in ids
        out.append(with_parent(entry, out[-1].id if out else None) if orphan else entry)
        moved += orphan
    if moved:
        problems.append(
            f"{moved} {'entry follows an entry' if moved == 1 else 'entries follow entries'} missing "
            "from the file (a write torn by a crash or a full disk): attached to the entry before, "
            "so the history before the tear is kept"
        )
    return out


# --- migrations (on raw dicts, in place) -----------------------------------------------------


def _migrate_v1_to_v2(rows: list[dict[str, Any]]) -> None:
    """v1 files are a flat list: chain them in file order, give every entry an id."""
    ids: set[str] = set()
    previous: str | None = None
    for row in rows:
        if row.get("type") == "session":
            row["version"] = 2
            continue
        row["id"] = new_entry_id(ids)
        ids.add(row["id"])
        row["parentId"] = previous
        previous = row["id"]
        if row.get("type") == "compaction" and "firstKeptEntryIndex" in row:
            index = row.pop("firstKeptEntryIndex")
            if isinstance(index, int) and 0 <= index < len(rows):
                target = rows[index]
                # ``firstKeptEntryIndex`` counts file lines (header included); the target
                # got its id earlier in this same pass.
                if target.get("type") != "session" and isinstance(target.get("id"), str):
                    row["firstKeptEntryId"] = target["id"]


def _migrate_v2_to_v3(rows: list[dict[str, Any]]) -> None:
    """v3 renamed the message role ``hookMessage`` to ``custom``."""
    for row in rows:
        if row.get("type") == "session":
            row["version"] = 3
        elif row.get("type") == "message":
            message = row.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"


def migrate_to_current_version(rows: list[dict[str, Any]]) -> bool:
    """Bring raw rows to version 3 in place; True when anything changed."""
    header = next((r for r in rows if r.get("type") == "session"), None)
    version = header.get("version", 1) if header is not None else 1
    if not isinstance(version, int) or version >= CURRENT_SESSION_VERSION:
        return False
    if version < 2:
        _migrate_v1_to_v2(rows)
    _migrate_v2_to_v3(rows)
    return True


# --- writing ------------------------------------------------------------------------------

Redactor = Callable[[dict[str, Any]], dict[str, Any]]
"""Takes an entry's JSON object, returns the object to write (secrets replaced)."""


def redact_strings(redact_text: Callable[[str], str]) -> Redactor:
    """A :data:`Redactor` applying ``redact_text`` to every string value of an entry, except the
    tree's own fields (``type``, ids, timestamps), so a redacted file still loads as a tree."""
    structural = {"type", "id", "parentId", "timestamp", "targetId", "firstKeptEntryId", "fromId"}

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return redact_text(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    def redactor(entry: dict[str, Any]) -> dict[str, Any]:
        return {k: (v if k in structural else walk(v)) for k, v in entry.items()}

    return redactor


def apply_redactor(redact: Redactor | None, entry: SessionEntry) -> dict[str, Any]:
    data = entry_to_dict(entry)
    if redact is None:
        return data
    if isinstance(entry, UnknownEntry):
        data = copy.deepcopy(data)
    return redact(data)


def dumps_line(value: dict[str, Any]) -> bytes:
    """One JSONL line as ``JSON.stringify`` writes it (compact, non-ASCII kept)."""
    return (json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


os_write: Callable[[int, bytes | memoryview], int] = os.write
"""Every byte of a session file goes through this (``os.write``'s signature): tests replace it
with a writer that fails part-way, as a full disk or a Ctrl-C in a slow write does."""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os_write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def create_file(path: str, lines: Iterable[bytes]) -> None:
    """Create ``path`` (it must not exist) holding ``lines``, durably; a write that fails
    (full disk, interrupt) removes the partial file, so no empty or torn file is left behind."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        _write_all(fd, b"".join(lines))
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)
    _fsync_dir(path)


FileIdentity = tuple[int, int, int, int]
"""``(device, inode, size, mtime_ns)`` of a session file: another writer changes it."""


def _identity(st: os.stat_result) -> FileIdentity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def file_identity(path: str) -> FileIdentity | None:
    try:
        return _identity(os.stat(path))
    except OSError:
        return None


class AppendHandle:
    """A session file opened for appending under an exclusive ``flock`` (other writers of this
    package wait; Pi does not lock). See :func:`open_append`."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def identity(self) -> FileIdentity:
        return _identity(os.fstat(self.fd))

    def append(self, lines: Sequence[bytes]) -> FileIdentity:
        """Append whole lines and fsync; returns the file's identity after. A torn last line
        gets a newline first. A write that fails part-way (full disk, ``KeyboardInterrupt``)
        truncates the file back to its size before, so it never ends in a torn entry."""
        size = os.fstat(self.fd).st_size
        prefix = b"\n" if size and os.pread(self.fd, 1, size - 1) != b"\n" else b""
        try:
            _write_all(self.fd, prefix + b"".join(lines))
            os.fsync(self.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, size)
            raise
        return self.identity()


@contextlib.contextmanager
def open_append(path: str) -> Iterator[AppendHandle]:
    """``path`` opened for appending and locked until the block ends."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        if fcntl is not None:
            with contextlib.suppress(OSError):  # a file system without locks: append unlocked
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield AppendHandle(fd)
    finally:
        os.close(fd)  # releases the lock


def append_lines(path: str, lines: Sequence[bytes]) -> None:
    """Append whole lines to ``path`` and fsync (see :meth:`AppendHandle.append`)."""
    with open_append(path) as handle:
        handle.append(lines)


def rewrite_file(path: str, lines: Iterable[bytes]) -> None:
    """Replace ``path`` atomically (temporary file in the same folder, fsync, rename); a failed
    write leaves the old file as it was and no temporary file."""
    write_atomic(path, b"".join(lines), 0o600)


def write_atomic(path: str, data: bytes, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data``: written to a temporary file in the same folder, fsynced,
    renamed over ``path`` (so a reader sees the old file or the new one, never a torn one).
    On any failure the temporary file is removed and ``path`` is untouched."""
    tmp = f"{path}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path)


_HEADER_SCAN_BYTES = 1024 * 1024


def read_header(path: str) -> dict[str, Any] | None:
    """The header of ``path`` if its first parsed line (within 1 MiB) is one; else ``None``."""
    try:
        with open(path, "rb") as f:
            data = f.read(_HEADER_SCAN_BYTES)
    except OSError:
        return None
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        return value if isinstance(value, dict) and _is_header(value) else None
    return None


def file_size(path: str) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0
