"""What the model sees from a session: the root-to-leaf path, compaction applied.

Pure functions over a list of entries, used by the manager, compaction and tests alike:

* the path is followed from the leaf up through ``parentId`` (``leaf_id=None`` means the
  empty context, an omitted or unknown leaf means the last entry);
* thinking level and model come from the last ``thinking_level_change`` / ``model_change``
  or assistant message on the path (thinking level ``"off"`` when never set);
* if the path holds compactions, the latest one stands in for everything before it except
  the entries from its ``firstKeptEntryId`` on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .entries import (
    CompactionEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    ThinkingLevelChangeEntry,
)
from .messages import entry_to_context_messages

UNSET: Any = object()
"""Default of ``leaf_id``: the last entry is the leaf (``None`` means "before the first")."""


@dataclass(frozen=True, slots=True)
class ModelRef:
    provider: str
    model_id: str

    def to_dict(self) -> dict[str, str]:
        return {"provider": self.provider, "modelId": self.model_id}


@dataclass(slots=True)
class SessionContext:
    """The resolved context: messages for the agent, its thinking level and model."""

    messages: list[Any] = field(default_factory=list)
    thinking_level: str = "off"
    model: ModelRef | None = None

    def to_dict(self) -> dict[str, Any]:
        """Pi's ``SessionContext`` JSON."""
        return {
            "messages": [m.model_dump() for m in self.messages],
            "thinkingLevel": self.thinking_level,
            "model": self.model.to_dict() if self.model else None,
        }


def _index(entries: Sequence[SessionEntry]) -> dict[str, SessionEntry]:
    return {e.id: e for e in entries}


def build_session_path(
    entries: Sequence[SessionEntry],
    leaf_id: str | None = UNSET,
    by_id: Mapping[str, SessionEntry] | None = None,
) -> list[SessionEntry]:
    """The entries from the root down to ``leaf_id`` (see the module docstring)."""
    if leaf_id is None:
        return []
    index = by_id if by_id is not None else _index(entries)
    leaf = index.get(leaf_id) if leaf_id is not UNSET else None
    if leaf is None:
        if not entries:
            return []
        leaf = entries[-1]
    path: list[SessionEntry] = []
    seen: set[str] = set()
    current: SessionEntry | None = leaf
    while current is not None and current.id not in seen:  # a cycle in a bad file ends the walk
        seen.add(current.id)
        path.append(current)
        parent = current.parent_id
        current = index.get(parent) if parent else None
    path.reverse()
    return path


def context_settings(path: Sequence[SessionEntry]) -> tuple[str, ModelRef | None]:
    thinking_level = "off"
    model: ModelRef | None = None
    for entry in path:
        if isinstance(entry, ThinkingLevelChangeEntry):
            thinking_level = entry.thinking_level
        elif isinstance(entry, ModelChangeEntry):
            model = ModelRef(entry.provider, entry.model_id)
        elif isinstance(entry, MessageEntry) and entry.message.role == "assistant":
            message: Any = entry.message
            model = ModelRef(message.provider, message.model)
    return thinking_level, model


def context_entries_of_path(path: Sequence[SessionEntry]) -> list[SessionEntry]:
    """The entries of ``path`` that make up the context, compaction applied."""
    latest = -1
    for i, entry in enumerate(path):
        if isinstance(entry, CompactionEntry):
            latest = i
    if latest < 0:
        return list(path)
    compaction = path[latest]
    assert isinstance(compaction, CompactionEntry)
    kept: list[SessionEntry] = [compaction]
    found = False
    for entry in path[:latest]:
        found = found or entry.id == compaction.first_kept_entry_id
        if found:
            kept.append(entry)
    kept.extend(path[latest + 1 :])
    return kept


def build_context_entries(
    entries: Sequence[SessionEntry],
    leaf_id: str | None = UNSET,
    by_id: Mapping[str, SessionEntry] | None = None,
) -> list[SessionEntry]:
    return context_entries_of_path(build_session_path(entries, leaf_id, by_id))


def build_session_context(
    entries: Sequence[SessionEntry],
    leaf_id: str | None = UNSET,
    by_id: Mapping[str, SessionEntry] | None = None,
) -> SessionContext:
    """The messages, thinking level and model at ``leaf_id`` (the last entry by default)."""
    path = build_session_path(entries, leaf_id, by_id)
    thinking_level, model = context_settings(path)
    messages = [m for e in context_entries_of_path(path) for m in entry_to_context_messages(e)]
    return SessionContext(messages=messages, thinking_level=thinking_level, model=model)
