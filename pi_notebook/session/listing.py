"""Finding sessions: the summary a picker shows, for one directory or every project.

A file counts as a session when its first parsed line is a session header; anything else
in the directory (or a file that cannot be read) is left out rather than failing the list.
``modified`` is the time of the last user or assistant message (the header time when there
is none), so a session sorts by conversation activity rather than by file writes.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..ai.text import js_trim
from .entries import iso_to_ms
from .storage import default_session_dir, expand_path, get_sessions_dir, read_header, resolve_path


@dataclass(slots=True)
class SessionInfo:
    path: str
    id: str
    cwd: str
    name: str | None
    parent_session_path: str | None
    created: datetime
    modified: datetime
    message_count: int
    first_message: str
    all_messages_text: str
    size: int


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = (b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return " ".join(t for t in texts if isinstance(t, str))


def _activity_ms(entry: dict[str, Any], message: dict[str, Any]) -> int | None:
    if message.get("role") not in ("user", "assistant") or "content" not in message:
        return None
    stamp = message.get("timestamp")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool) and math.isfinite(stamp):
        return int(stamp)
    value = entry.get("timestamp")
    return iso_to_ms(value) or None if isinstance(value, str) else None


def _dt(ms: int) -> datetime:
    """A time from epoch milliseconds; one out of range (a hostile or broken file) is the epoch."""
    try:
        return datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return datetime.fromtimestamp(0, UTC)


def _rows(path: str) -> list[dict[str, Any]]:
    rows = []
    with open(path, "rb") as f:
        for raw in f:
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError):  # bad bytes, torn or too deep: not counted
                continue
            if isinstance(value, dict):
                rows.append(value)
    return rows


def read_session_info(path: str) -> SessionInfo | None:
    """The listing summary of one file, ``None`` when it is not a session."""
    try:
        rows = _rows(path)
        stat = os.stat(path)
    except OSError:
        return None
    if not rows or rows[0].get("type") != "session":
        return None
    header = rows[0]
    name: str | None = None
    count, first, texts, last = 0, "", [], 0
    for entry in rows[1:]:
        if entry.get("type") == "session_info":
            name = js_trim(str(entry.get("name") or "")) or None
        message = entry.get("message")
        if entry.get("type") != "message" or not isinstance(message, dict):
            continue
        count += 1
        last = max(last, _activity_ms(entry, message) or 0)
        if message.get("role") not in ("user", "assistant") or "content" not in message:
            continue
        text = _text_of(message["content"])
        if text:
            texts.append(text)
            if not first and message.get("role") == "user":
                first = text
    created_ms = iso_to_ms(str(header.get("timestamp", "")))
    modified = _dt(last) if last > 0 else _dt(created_ms) if created_ms else _dt(int(stat.st_mtime * 1000))
    return SessionInfo(
        path=path,
        id=str(header.get("id")),
        cwd=header["cwd"] if isinstance(header.get("cwd"), str) else "",
        name=name,
        parent_session_path=parent if isinstance(parent := header.get("parentSession"), str) else None,
        created=_dt(created_ms),
        modified=modified,
        message_count=count,
        first_message=first or "(no messages)",
        all_messages_text=" ".join(texts),
        size=stat.st_size,
    )


def _infos(directory: str) -> list[SessionInfo]:
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".jsonl"))
    except OSError:
        return []
    infos = [read_session_info(os.path.join(directory, n)) for n in names]
    return [i for i in infos if i is not None]


def list_sessions(cwd: str, session_dir: str | None = None) -> list[SessionInfo]:
    """The sessions of ``cwd``, most recently active first.

    With a ``session_dir`` other than Pi's default one for ``cwd``, only sessions whose header
    names ``cwd`` are listed (a shared directory holds several projects).
    """
    directory = expand_path(session_dir) if session_dir else default_session_dir(cwd, create=False)
    filter_cwd = session_dir is not None and directory != default_session_dir(cwd, create=False)
    resolved = resolve_path(cwd)
    infos = [i for i in _infos(directory) if not filter_cwd or (i.cwd and resolve_path(i.cwd) == resolved)]
    infos.sort(key=lambda i: i.modified, reverse=True)
    return infos


def list_all_sessions(session_dir: str | None = None) -> list[SessionInfo]:
    """Every session in ``session_dir``, or in every project under the agent dir."""
    if session_dir:
        infos = _infos(expand_path(session_dir))
    else:
        root = get_sessions_dir()
        try:
            dirs = sorted(os.path.join(root, d) for d in os.listdir(root))
        except OSError:
            return []
        infos = [i for d in dirs if os.path.isdir(d) for i in _infos(d)]
    infos.sort(key=lambda i: i.modified, reverse=True)
    return infos


def read_custom_data(path: str, custom_type: str, max_lines: int = 50) -> dict[str, Any] | None:
    """The ``data`` of the first ``custom`` entry of ``custom_type`` among the first ``max_lines``
    lines of ``path`` (``{}`` when its data is not an object), ``None`` when there is none or
    the file cannot be read. Any bytes, any nesting: a line it cannot parse is passed over."""
    needle = json.dumps(custom_type).encode()
    try:
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle):
                if number > max_lines:
                    return None
                if needle not in raw:
                    continue
                try:
                    row = json.loads(raw)
                except (ValueError, RecursionError):
                    continue
                if not isinstance(row, dict) or row.get("type") != "custom":
                    continue
                if row.get("customType") == custom_type:
                    data = row.get("data")
                    return data if isinstance(data, dict) else {}
    except OSError:
        return None
    return None


def find_most_recent_session(session_dir: str, cwd: str | None = None) -> str | None:
    """The session file of ``session_dir`` (of ``cwd`` when given) modified last on disk."""
    try:
        names = [n for n in os.listdir(session_dir) if n.endswith(".jsonl")]
    except OSError:
        return None
    resolved = resolve_path(cwd) if cwd else None
    best: tuple[float, str] | None = None
    for name in names:
        path = os.path.join(session_dir, name)
        header = read_header(path)
        if header is None:
            continue
        header_cwd = header.get("cwd")
        same = isinstance(header_cwd, str) and header_cwd and resolve_path(header_cwd) == resolved
        if resolved and not same:
            continue
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            continue
        if best is None or mtime > best[0]:
            best = (mtime, path)
    return best[1] if best else None
