"""``SessionManager``: a conversation as an append-only tree in a Pi-compatible JSONL file.

Every ``append_*`` adds a child of the current leaf and moves the leaf to it; ``branch``
moves the leaf back to an earlier entry so the next append starts a sibling branch; history
is never rewritten. The leaf itself is not stored: a reopened file's leaf is its last entry.

Persistence follows Pi: nothing is written until the session holds an assistant message
(sessions that never got a reply leave no file); then the header and all entries are written
at once, and every later entry is appended as one fsynced line. An optional ``redact`` hook
sees each entry's JSON object before it is written (the in-memory entries keep the original).
Unlike Pi, a failed write never raises nor loses an entry (:mod:`.writer`: entries wait in
memory, the failure is told once) and the folder is made by the first write, not on creation.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ai.text import js_trim
from ..ai.types import Usage
from .context import SessionContext, build_context_entries, build_session_context
from .entries import (
    CURRENT_SESSION_VERSION,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionHeader,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
    UnknownEntry,
    iso_now,
    iso_to_ms,
    new_entry_id,
    parse_message,
    uuidv7,
)
from .storage import (
    Redactor,
    SessionError,
    apply_redactor,
    assert_valid_session_id,
    create_file,
    default_session_dir,
    dumps_line,
    expand_path,
    file_identity,
    file_size,
    load_session_file,
    read_header,
    resolve_path,
    session_file_name,
    with_parent,
)
from .writer import FileState, SessionWriter, merge_plan

_SUMMARY_ROLES = ("branchSummary", "compactionSummary")


class SessionFormatWarning(UserWarning):
    """A session file had lines this reader skipped or did not understand."""


@dataclass(slots=True)
class SessionTreeNode:
    entry: SessionEntry
    children: list[SessionTreeNode] = field(default_factory=list)
    label: str | None = None
    label_timestamp: str | None = None


class SessionManager(FileState):
    """See the module docstring. Build one with :meth:`create`, :meth:`open`,
    :meth:`continue_recent`, :meth:`in_memory` or :meth:`fork_from`."""

    def __init__(
        self,
        cwd: str,
        session_dir: str,
        session_file: str | None,
        persist: bool,
        *,
        session_id: str | None = None,
        parent_session: str | None = None,
        redact: Redactor | None = None,
    ) -> None:
        self._cwd = resolve_path(cwd)
        self._session_dir = expand_path(session_dir) if session_dir else ""
        self._persist = persist
        self._redact = redact
        self._session_file: str | None = None
        self._header = SessionHeader(id="-", timestamp=iso_now())
        self._entries: list[SessionEntry] = []
        self._by_id: dict[str, SessionEntry] = {}
        self._compaction_at: dict[str, CompactionEntry | None] = {}
        self._labels: dict[str, str] = {}
        self._label_times: dict[str, str] = {}
        self._leaf_id: str | None = None
        self._has_assistant = False
        self._writer = SessionWriter(self._lines, self._merge_foreign)
        self.problems: list[str] = []
        """What the last load skipped, did not understand or repaired, one line each."""
        if session_file:
            self._set_session_file(session_file)
        else:
            self.new_session(session_id=session_id, parent_session=parent_session)

    # --- constructors --------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        cwd: str,
        session_dir: str | None = None,
        *,
        session_id: str | None = None,
        parent_session: str | None = None,
        redact: Redactor | None = None,
    ) -> SessionManager:
        """A new session of ``cwd`` (in Pi's default directory unless ``session_dir``)."""
        directory = expand_path(session_dir) if session_dir else default_session_dir(cwd, create=False)
        return cls(
            cwd, directory, None, True, session_id=session_id, parent_session=parent_session, redact=redact
        )

    @classmethod
    def open(
        cls,
        path: str,
        session_dir: str | None = None,
        cwd_override: str | None = None,
        *,
        redact: Redactor | None = None,
    ) -> SessionManager:
        """Open ``path`` (created on the first assistant message if it does not exist)."""
        resolved = resolve_path(path)
        cwd = cwd_override
        if cwd is None and os.path.exists(resolved):
            header = read_header(resolved) or {}
            cwd = header["cwd"] if isinstance(header.get("cwd"), str) and header["cwd"] else None
        directory = expand_path(session_dir) if session_dir else os.path.dirname(resolved)
        return cls(cwd or os.getcwd(), directory, resolved, True, redact=redact)

    @classmethod
    def continue_recent(
        cls, cwd: str, session_dir: str | None = None, *, redact: Redactor | None = None
    ) -> SessionManager:
        """The most recently modified session of ``cwd``, or a new one."""
        from .listing import find_most_recent_session

        directory = expand_path(session_dir) if session_dir else default_session_dir(cwd, create=False)
        filter_cwd = session_dir is not None and directory != default_session_dir(cwd, create=False)
        recent = find_most_recent_session(directory, cwd if filter_cwd else None)
        return cls(cwd, directory, recent, True, redact=redact)

    @classmethod
    def in_memory(cls, cwd: str | None = None, *, session_id: str | None = None) -> SessionManager:
        """A session that is never written to disk."""
        return cls(cwd or os.getcwd(), "", None, False, session_id=session_id)

    @classmethod
    def fork_from(
        cls,
        source_path: str,
        target_cwd: str,
        session_dir: str | None = None,
        *,
        session_id: str | None = None,
        redact: Redactor | None = None,
    ) -> SessionManager:
        """Copy every entry of another session into a new session of ``target_cwd``."""
        source = resolve_path(source_path)
        loaded = load_session_file(source) if os.path.exists(source) else None
        if loaded is None or loaded.header is None:
            raise SessionError(
                f"Cannot fork: source session file is empty or invalid: {source} "
                "(pass the path of a .jsonl session file)"
            )
        target = resolve_path(target_cwd)
        directory = expand_path(session_dir) if session_dir else default_session_dir(target)
        os.makedirs(directory, exist_ok=True)
        if session_id is not None:
            assert_valid_session_id(session_id)
        header = SessionHeader(
            id=session_id or uuidv7(), timestamp=iso_now(), cwd=target, parent_session=source
        )
        path = os.path.join(directory, session_file_name(header.timestamp, header.id))
        lines = [dumps_line(header.model_dump())]
        lines += [dumps_line(apply_redactor(redact, e)) for e in loaded.entries]
        create_file(path, lines)
        return cls(target, directory, path, True, redact=redact)

    # --- files ---------------------------------------------------------------------------

    def set_session_file(self, session_file: str) -> None:
        """Switch to another session file (resume)."""
        self._set_session_file(session_file)

    def _set_session_file(self, session_file: str) -> None:
        path = resolve_path(session_file)
        if not os.path.lexists(path):
            self.new_session()
            self._session_file = path
            self._writer.reset(path, flushed=False)
            return
        identity = file_identity(path)  # before reading: a write in between is seen as another's
        loaded = load_session_file(path)  # a folder, a loop, no permission: SessionError
        if loaded.header is None:
            if file_size(path) > 0:
                raise SessionError(
                    f"Session file is not a valid pi session: {path} "
                    "(its first JSON line is not a session header; open a file Pi or pi_notebook wrote)"
                )
            self.new_session()
            self._session_file = path
            self._writer.reset(path, flushed=True)
            self._rewrite()
            return
        self._session_file = path
        self._header = loaded.header
        self._entries = loaded.entries
        self._build_index()
        self._writer.reset(path, flushed=True)
        self._writer.identity, self._writer.last_written = identity, self._leaf_id
        self.problems = loaded.problems
        if loaded.migrated:
            self._rewrite()
        if self.problems:
            _warn(path, self.problems)

    def new_session(self, session_id: str | None = None, parent_session: str | None = None) -> str | None:
        """Start an empty session (a new file name when persisting); returns the file."""
        if session_id is not None:
            assert_valid_session_id(session_id)
        self._header = SessionHeader(
            version=CURRENT_SESSION_VERSION,
            id=session_id or uuidv7(),
            timestamp=iso_now(),
            cwd=self._cwd,
            parent_session=parent_session,
        )
        self._entries = []
        self._build_index()
        self.problems = []
        if self._persist:
            name = session_file_name(self._header.timestamp, self._header.id)
            self._session_file = os.path.join(self._session_dir, name)
        self._writer.reset(self._session_file if self._persist else None, flushed=False)
        return self._session_file

    def _build_index(self) -> None:
        self._by_id = {}
        self._compaction_at = {}
        self._labels = {}
        self._label_times = {}
        self._leaf_id = None
        self._has_assistant = False
        for entry in self._entries:
            self._by_id[entry.id] = entry
            self._leaf_id = entry.id
            if isinstance(entry, LabelEntry):
                self._set_label(entry)
            elif isinstance(entry, MessageEntry) and entry.message.role == "assistant":
                self._has_assistant = True

    def _set_label(self, entry: LabelEntry) -> None:
        if entry.label:
            self._labels[entry.target_id] = entry.label
            self._label_times[entry.target_id] = entry.timestamp
        else:
            self._labels.pop(entry.target_id, None)
            self._label_times.pop(entry.target_id, None)

    def _lines(self, entries: Sequence[SessionEntry]) -> list[bytes]:
        if self._redact is None:
            # pydantic writes the same compact JSON as json.dumps, without the dict detour
            return [
                dumps_line(e.raw) if isinstance(e, UnknownEntry) else e.model_dump_json().encode() + b"\n"
                for e in entries
            ]
        return [dumps_line(apply_redactor(self._redact, e)) for e in entries]

    def _all_lines(self) -> list[bytes]:
        return [dumps_line(self._header.model_dump()), *self._lines(self._entries)]

    def _rewrite(self) -> None:
        if self._persist and self._session_file:
            self._writer.rewrite(self._all_lines())

    def _write(self, entry: SessionEntry | None) -> None:
        """Write ``entry`` (and whatever is still pending); a failure is the writer's to tell."""
        writer = self._writer
        if not self._persist or not self._session_file:
            return
        if entry is not None:
            writer.pending.append(entry)
        if writer.flushed and writer.append():
            return
        if not writer.flushed and self._has_assistant:  # Pi keeps a session without a reply in memory
            writer.create(self._all_lines())

    def _merge_foreign(self, file_entries: list[SessionEntry]) -> int:
        """Another process wrote our file: its new entries join the tree (``merge_plan``)."""
        w = self._writer
        foreign, moved = merge_plan(self._entries, w.pending, w.last_written, file_entries)
        for entry in foreign:
            self._entries.append(entry)
            self._by_id[entry.id] = entry
            if isinstance(entry, LabelEntry):
                self._set_label(entry)
        if moved is not None:
            self._entries[self._entries.index(moved[0])] = self._by_id[moved[1].id] = moved[1]
        return len(foreign)

    def _append(self, entry: SessionEntry) -> str:
        self._entries.append(entry)
        self._by_id[entry.id] = entry
        self._leaf_id = entry.id
        if isinstance(entry, MessageEntry) and entry.message.role == "assistant":
            self._has_assistant = True
        self._write(entry)
        return entry.id

    def _head(self) -> dict[str, Any]:
        return {"id": new_entry_id(self._by_id), "parent_id": self._leaf_id, "timestamp": iso_now()}

    # --- appends -------------------------------------------------------------------------

    def append_message(self, message: Any) -> str:
        """Append a user / assistant / toolResult / bashExecution / custom message (a model or
        Pi's JSON dict). Summaries have their own entries: use :meth:`append_compaction` and
        :meth:`branch_with_summary`."""
        typed = parse_message(message)
        if typed.role in _SUMMARY_ROLES:
            raise SessionError(
                f"{typed.role} messages are stored as their own entries: "
                "use append_compaction() or branch_with_summary()"
            )
        return self._append(MessageEntry(message=typed, **self._head()))

    def append_thinking_level_change(self, thinking_level: str) -> str:
        return self._append(ThinkingLevelChangeEntry(thinking_level=thinking_level, **self._head()))

    def append_model_change(self, provider: str, model_id: str) -> str:
        return self._append(ModelChangeEntry(provider=provider, model_id=model_id, **self._head()))

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int,
        details: Any = None,
        *,
        from_hook: bool | None = None,
        usage: Usage | None = None,
    ) -> str:
        entry = CompactionEntry(
            summary=summary,
            first_kept_entry_id=first_kept_entry_id,
            tokens_before=tokens_before,
            details=details,
            usage=usage,
            from_hook=from_hook,
            **self._head(),
        )
        return self._append(entry)

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        """Extension state that the model never sees."""
        return self._append(CustomEntry(custom_type=custom_type, data=data, **self._head()))

    def append_custom_message_entry(
        self, custom_type: str, content: Any, display: bool, details: Any = None
    ) -> str:
        """A message from an extension that the model sees as user text."""
        entry = CustomMessageEntry(
            custom_type=custom_type, content=content, display=display, details=details, **self._head()
        )
        return self._append(entry)

    def append_session_info(self, name: str) -> str:
        """Set the display name (line breaks become spaces; empty clears it)."""
        sanitized = js_trim(re.sub(r"[\r\n]+", " ", name))
        return self._append(SessionInfoEntry(name=sanitized, **self._head()))

    def append_label_change(self, target_id: str, label: str | None) -> str:
        """Set (or with ``None``/``""`` clear) the label of an entry."""
        if target_id not in self._by_id:
            raise SessionError(f"Entry {target_id} not found")
        entry = LabelEntry(target_id=target_id, label=label, **self._head())
        self._append(entry)
        self._set_label(entry)
        return entry.id

    # --- reading ---------------------------------------------------------------------------

    @property
    def cwd(self) -> str:
        return self._cwd

    @property
    def session_dir(self) -> str:
        return self._session_dir

    @property
    def session_id(self) -> str:
        return self._header.id

    @property
    def session_file(self) -> str | None:
        return self._session_file

    def is_persisted(self) -> bool:
        return self._persist

    def get_header(self) -> SessionHeader:
        return self._header

    def get_entries(self) -> list[SessionEntry]:
        """All entries in file order (a copy of the list)."""
        return list(self._entries)

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        return self._by_id.get(entry_id)

    def get_leaf_id(self) -> str | None:
        return self._leaf_id

    def get_leaf_entry(self) -> SessionEntry | None:
        return self._by_id.get(self._leaf_id) if self._leaf_id else None

    def get_children(self, parent_id: str) -> list[SessionEntry]:
        return [e for e in self._by_id.values() if e.parent_id == parent_id]

    def get_label(self, entry_id: str) -> str | None:
        return self._labels.get(entry_id)

    def get_session_name(self) -> str | None:
        """The name set by the latest ``session_info`` entry (``None`` when cleared or unset)."""
        for entry in reversed(self._entries):
            if isinstance(entry, SessionInfoEntry):
                return js_trim(entry.name or "") or None
        return None

    def get_branch(self, from_id: str | None = None) -> list[SessionEntry]:
        """The entries from the root to ``from_id`` (the leaf by default)."""
        path: list[SessionEntry] = []
        start = from_id or self._leaf_id
        current = self._by_id.get(start) if start else None
        seen: set[str] = set()
        while current is not None and current.id not in seen:
            seen.add(current.id)
            path.append(current)
            current = self._by_id.get(current.parent_id) if current.parent_id else None
        path.reverse()
        return path

    def latest_compaction(self, from_id: str | None = None) -> CompactionEntry | None:
        """The newest compaction on the branch to ``from_id`` (the leaf by default), as a walk
        back over :meth:`get_branch` finds it; remembered per entry (an entry's parent never
        changes), so each check after an answer costs the entries added since the last."""
        start = from_id or self._leaf_id
        current = self._by_id.get(start) if start else None
        walked: list[str] = []
        found: CompactionEntry | None = None
        while current is not None and len(walked) <= len(self._by_id):
            if current.id in self._compaction_at:
                found = self._compaction_at[current.id]
                break
            walked.append(current.id)
            if isinstance(current, CompactionEntry):
                found = current
                break
            current = self._by_id.get(current.parent_id) if current.parent_id else None
        else:
            if current is not None:  # a cycle in a damaged file: answer, remember nothing
                return found
        for entry_id in walked:
            self._compaction_at[entry_id] = found
        return found

    def build_context_entries(self) -> list[SessionEntry]:
        return build_context_entries(self._entries, self._leaf_id, self._by_id)

    def build_session_context(self) -> SessionContext:
        """Messages, thinking level and model at the current leaf, compaction applied."""
        return build_session_context(self._entries, self._leaf_id, self._by_id)

    def get_tree(self) -> list[SessionTreeNode]:
        """Root nodes (entries with no or an unknown parent), children oldest first."""
        nodes = {
            e.id: SessionTreeNode(e, [], self._labels.get(e.id), self._label_times.get(e.id))
            for e in self._entries
        }
        roots: list[SessionTreeNode] = []
        for entry in self._entries:
            node = nodes[entry.id]
            parent = nodes.get(entry.parent_id) if entry.parent_id not in (None, entry.id) else None
            (parent.children if parent is not None else roots).append(node)
        stack = list(roots)
        while stack:
            node = stack.pop()
            node.children.sort(key=lambda n: iso_to_ms(n.entry.timestamp))
            stack.extend(node.children)
        return roots

    # --- branching -------------------------------------------------------------------------

    def branch(self, branch_from_id: str) -> None:
        """Move the leaf to an earlier entry; the next append starts a new branch there."""
        if branch_from_id not in self._by_id:
            raise SessionError(f"Entry {branch_from_id} not found")
        self._leaf_id = branch_from_id

    def reset_leaf(self) -> None:
        """Move the leaf before the first entry; the next append is a new root."""
        self._leaf_id = None

    def branch_with_summary(
        self,
        branch_from_id: str | None,
        summary: str,
        details: Any = None,
        *,
        from_hook: bool | None = None,
        usage: Usage | None = None,
    ) -> str:
        """Branch from ``branch_from_id`` (``None``: a new root) and record a summary of the
        branch being left as the first entry of the new branch."""
        if branch_from_id is not None and branch_from_id not in self._by_id:
            raise SessionError(f"Entry {branch_from_id} not found")
        self._leaf_id = branch_from_id
        entry = BranchSummaryEntry(
            from_id=branch_from_id or "root",
            summary=summary,
            details=details,
            usage=usage,
            from_hook=from_hook,
            **self._head(),
        )
        return self._append(entry)

    def create_branched_session(self, leaf_id: str) -> str | None:
        """Make the root-to-``leaf_id`` path a session of its own (labels re-applied) and switch
        to it; returns its file (``None`` in memory). Its header names this file as parent."""
        path = self.get_branch(leaf_id)
        if not path:
            raise SessionError(f"Entry {leaf_id} not found")
        kept: list[SessionEntry] = []
        parent: str | None = None
        for entry in path:
            if isinstance(entry, LabelEntry):
                continue  # labels are re-created below; entries after them are re-chained
            kept.append(with_parent(entry, parent))
            parent = entry.id
        ids = {e.id for e in kept}
        previous_file = self._session_file
        labels: list[SessionEntry] = []
        for target, label in self._labels.items():
            if target in ids:
                new_id = new_entry_id(ids)
                ids.add(new_id)
                stamp = self._label_times.get(target, iso_now())
                labels.append(
                    LabelEntry(id=new_id, parent_id=parent, timestamp=stamp, target_id=target, label=label)
                )
                parent = new_id
        self._header = SessionHeader(
            id=uuidv7(),
            timestamp=iso_now(),
            cwd=self._cwd,
            parent_session=previous_file if self._persist else None,
        )
        self._entries = kept + labels
        self._build_index()
        if not self._persist:
            return None
        self._session_file = os.path.join(
            self._session_dir, session_file_name(self._header.timestamp, self._header.id)
        )
        self._writer.reset(self._session_file, flushed=False)
        self._writer.pending = list(self._entries)
        self._write(None)
        return self._session_file


def _warn(path: str, problems: list[str]) -> None:
    shown = "; ".join(problems[:3])
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    warnings.warn(f"session {path}: {shown}{more}", SessionFormatWarning, stacklevel=4)
