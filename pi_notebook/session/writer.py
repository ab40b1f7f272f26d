"""``SessionWriter``: the file side of a :class:`~.manager.SessionManager`, so that nothing is
lost when the file cannot be written and nobody's entries become unreachable when two
processes write one file.

* **Pending entries.** Every entry appended in memory joins ``pending`` and leaves it only when
  its line is in the file (fsynced). A write that fails (full disk, read-only folder, a path
  that is a folder, ``KeyboardInterrupt``) truncates the file back to its last whole line
  (``storage.AppendHandle``) and keeps the entries pending: the file is always a prefix of the
  tree in memory, and the next append writes them all, in order, once the disk allows it.
* **One line, once.** A failure is told once to the listeners (``WriteNotice``) until a write
  succeeds again, which is told too; with no listener it is a :class:`SessionWriteWarning`.
  The caller never sees the ``OSError``: recording is best effort, the conversation goes on.
* **Another writer.** Before each append (under ``flock``) the file's identity (device, inode,
  size, mtime) is compared with the one this writer left. When another process wrote, the file
  is read again: its new entries join the tree, and the next entry that continues this
  writer's last one is chained onto the file's real last entry, so a resume (which follows
  ``parentId`` from the last line) reaches both processes' turns. That is said once per file.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from .entries import SessionEntry
from .storage import (
    FileIdentity,
    SessionError,
    create_file,
    file_identity,
    load_session_file,
    open_append,
    problems_line,
    read_header,
    with_parent,
    write_atomic,
)

NoticeKind = Literal["write_failed", "write_recovered", "shared"]
STALE: FileIdentity = (-1, -1, -1, -1)
"""An identity no file has: the next append reads the file first."""


@dataclass(frozen=True, slots=True)
class WriteNotice:
    """One line about the session file: it cannot be written (``write_failed``), it is
    written again (``write_recovered``), or another process writes it too (``shared``)."""

    kind: NoticeKind
    path: str
    text: str


class SessionWriteWarning(UserWarning):
    """A session file could not be written (the session goes on in memory)."""


class SessionWriter:
    """See the module docstring. ``lines`` turns entries into JSONL lines (redacted);
    ``merge`` takes the entries of a file another process wrote and returns how many were new."""

    def __init__(
        self,
        lines: Callable[[Sequence[SessionEntry]], list[bytes]],
        merge: Callable[[list[SessionEntry]], int],
    ) -> None:
        self._lines = lines
        self._merge = merge
        self.path: str | None = None
        self.flushed = False
        """The file exists with our header (written by us, or loaded)."""
        self.pending: list[SessionEntry] = []
        self.identity: FileIdentity | None = None
        self.failure: str | None = None
        """The line of the write failure in progress, ``None`` when the file is up to date."""
        self.last_written: str | None = None
        self._shared_told = False
        self.listeners: list[Callable[[WriteNotice], None]] = []

    def reset(self, path: str | None, *, flushed: bool) -> None:
        """A new file (or a loaded one, ``flushed``): nothing pending, identity as it is now."""
        self.path = path
        self.flushed = flushed
        self.pending = []
        self.failure = None
        self._shared_told = False
        self.identity = file_identity(path) if flushed and path else None

    # --- writing --------------------------------------------------------------------------------

    def create(self, all_lines: list[bytes]) -> bool:
        """Write a new file holding ``all_lines`` (header and every entry); False when it failed
        (told once; the entries stay pending)."""
        assert self.path is not None
        if os.path.isfile(self.path) and read_header(self.path) == json.loads(all_lines[0]):
            # ours, created before an interrupt cut the bookkeeping short: add what it lacks
            self.flushed, self.identity = True, STALE
            return self.append()
        try:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            create_file(self.path, all_lines)
        except OSError as exc:
            self._failed(exc)
            return False
        self.flushed = True
        self._written()
        return True

    def append(self) -> bool:
        """Append the pending entries; False when that failed (told once; they stay pending) or
        the file is gone (``flushed`` is then False: the caller creates it again)."""
        assert self.path is not None
        if not self.pending:
            return True
        try:
            with open_append(self.path) as handle:
                if self.identity is None or handle.identity() != self.identity:  # None: interrupted
                    self._other_writer()
                identity = handle.append(self._lines(self.pending))
        except FileNotFoundError:  # removed since: the caller writes it again, whole
            self.flushed = False
            return False
        except (OSError, SessionError) as exc:
            self._failed(exc)
            return False
        self._written(identity)
        return True

    def rewrite(self, all_lines: list[bytes]) -> bool:
        """Replace the file atomically (a migrated or emptied file); False when that failed."""
        assert self.path is not None
        try:
            write_atomic(self.path, b"".join(all_lines))
        except OSError as exc:
            self._failed(exc)
            return False
        self.flushed = True
        self._written()
        return True

    def _written(self, identity: FileIdentity | None = None) -> None:
        """The pending entries are in the file. In this order, so that an interrupt in between
        leaves an identity that does not match: the next append then reads the file and drops
        what it already holds (:func:`merge_plan`)."""
        count = len(self.pending)
        if self.pending:
            self.last_written = self.pending[-1].id
        self.pending = []
        self.identity = identity if identity is not None else file_identity(self.path or "")
        if self.failure is not None:
            self.failure = None
            saved = f"The session file {self.path} is written again ({count} entries saved)."
            self._tell("write_recovered", saved)

    def _failed(self, exc: BaseException) -> None:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if self.path and os.path.isdir(self.path):
            reason = "a folder has its name"
        first = self.failure is None
        self.failure = (
            f"Cannot write the session file {self.path} ({reason}): the conversation goes on in memory, "
            "and what is not saved yet is written when the file can be written again"
        )
        if first:
            self._tell("write_failed", self.failure)

    def _other_writer(self) -> None:
        """Another process wrote the file since our last write: read its entries into the tree."""
        assert self.path is not None
        loaded = load_session_file(self.path)
        added = self._merge(loaded.entries) if loaded.header is not None else 0
        if added and not self._shared_told:
            self._shared_told = True
            self._tell(
                "shared",
                f"Another process also writes the session file {self.path}: its {added} new entries "
                "were read, and this conversation's next entries follow them in the file, so a resume "
                "sees both (this conversation's own context is unchanged)",
            )

    def _tell(self, kind: NoticeKind, text: str) -> None:
        notice = WriteNotice(kind, self.path or "", text)
        if not self.listeners:
            warnings.warn(text, SessionWriteWarning, stacklevel=5)
        for listener in list(self.listeners):
            listener(notice)


def merge_plan(
    ours: list[SessionEntry],
    pending: list[SessionEntry],
    last_written: str | None,
    file_entries: list[SessionEntry],
) -> tuple[list[SessionEntry], tuple[SessionEntry, SessionEntry] | None]:
    """What to do with a file that changed behind this writer (another process wrote, or an
    interrupt came between our write and its bookkeeping): the entries it has that ``ours``
    lacks (returned first), pending ones it already has (dropped from ``pending``), ours it
    lacks (put back in front of ``pending``, written again), and, when
    it has new entries, the first pending entry that continues ``last_written`` chained onto the
    file's last entry (replaced in ``pending``; returned as ``(old, new)`` for the tree)."""
    known = {e.id for e in ours}
    in_file = {e.id for e in file_entries}
    pending[:] = [e for e in pending if e.id not in in_file]  # written, then interrupted: not twice
    waiting = {e.id for e in pending}
    pending[:0] = [e for e in ours if e.id not in in_file and e.id not in waiting]
    foreign = [e for e in file_entries if e.id not in known]
    if not foreign:
        return foreign, None
    for index, entry in enumerate(pending):
        if entry.parent_id == last_written:
            pending[index] = with_parent(entry, file_entries[-1].id)
            return foreign, (entry, pending[index])
    return foreign, None


class FileState:
    """What a :class:`~.manager.SessionManager` says about its file: write notices, the failure
    in progress, what is not saved yet, and the problems of the last load as one line."""

    _writer: SessionWriter
    _session_file: str | None
    problems: list[str]

    def on_write_notice(self, listener: Callable[[WriteNotice], None]) -> Callable[[], None]:
        """Call ``listener`` with each :class:`WriteNotice` (the file cannot be written, is
        written again, another process writes it); returns the function that stops it. With no
        listener a notice is a :class:`SessionWriteWarning`."""
        listeners = self._writer.listeners
        listeners.append(listener)
        return lambda: listeners.remove(listener) if listener in listeners else None

    @property
    def write_failure(self) -> str | None:
        """The line saying why the file cannot be written now, ``None`` when it is up to date."""
        return self._writer.failure

    @property
    def unsaved_entries(self) -> int:
        """Entries in memory whose line is not in the file yet (Pi's rule keeps a session with
        no answer in memory; a failed write keeps them until the next one succeeds)."""
        return len(self._writer.pending)

    def problem_line(self) -> str | None:
        """The problems of the last load as one line (``None`` when there were none)."""
        return problems_line(os.path.basename(self._session_file or ""), self.problems)
