"""The lines of a Pi session file (format version 3) as typed models.

Line 1 is a :class:`SessionHeader`; every other line is an entry with an 8-hex ``id``, the
``parentId`` of the entry it follows on its branch (``null`` for a root) and an ISO
``timestamp``. The field names and JSON shapes are Pi's: :func:`entry_to_dict` gives exactly
the object Pi's ``JSON.stringify`` writes (``parentId: null`` kept, absent optionals left out).

Message entries hold the three LLM roles of :mod:`pi_notebook.ai.types` plus the coding
agent's own roles (``bashExecution``, ``custom``, ``branchSummary``, ``compactionSummary``);
a role this reader does not know is kept as :class:`OtherMessage` with all its fields.
An entry type this reader does not know (a newer Pi) becomes an :class:`UnknownEntry`: it
stays in the tree and is written back unchanged, but contributes nothing to the context.
"""

from __future__ import annotations

import secrets
import time
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, Discriminator, Field, Tag, TypeAdapter, model_serializer
from pydantic import ValidationError as _ValidationError

from ..ai.types import (
    AssistantMessage,
    ImageContent,
    PiModel,
    TextContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)

CURRENT_SESSION_VERSION = 3

ValidationError = _ValidationError

# --- the coding agent's extra message roles ---------------------------------------------


class BashExecutionMessage(PiModel):
    """A shell command the user ran (``!cmd``); ``exclude_from_context`` for ``!!cmd``."""

    role: Literal["bashExecution"] = "bashExecution"
    command: str
    output: str = ""
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    timestamp: int = 0
    exclude_from_context: bool | None = None


class CustomMessage(PiModel):
    """An extension's message that the model sees as user text (``display`` is for UIs)."""

    role: Literal["custom"] = "custom"
    custom_type: str
    content: str | list[Annotated[TextContent | ImageContent, Field(discriminator="type")]]
    display: bool = True
    details: Any = None
    timestamp: int = 0


class BranchSummaryMessage(PiModel):
    role: Literal["branchSummary"] = "branchSummary"
    summary: str
    from_id: str
    timestamp: int = 0


class CompactionSummaryMessage(PiModel):
    role: Literal["compactionSummary"] = "compactionSummary"
    summary: str
    tokens_before: int
    timestamp: int = 0


class OtherMessage(PiModel):
    """A message whose role this reader does not know; every field is kept as is."""

    role: str


_ROLE_TAGS = frozenset(
    {"user", "assistant", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary"}
)


def _role_tag(value: Any) -> str:
    role = value.get("role") if isinstance(value, dict) else getattr(value, "role", None)
    return role if isinstance(role, str) and role in _ROLE_TAGS else "other"


SessionMessage: TypeAlias = Annotated[
    Annotated[UserMessage, Tag("user")]
    | Annotated[AssistantMessage, Tag("assistant")]
    | Annotated[ToolResultMessage, Tag("toolResult")]
    | Annotated[BashExecutionMessage, Tag("bashExecution")]
    | Annotated[CustomMessage, Tag("custom")]
    | Annotated[BranchSummaryMessage, Tag("branchSummary")]
    | Annotated[CompactionSummaryMessage, Tag("compactionSummary")]
    | Annotated[OtherMessage, Tag("other")],
    Discriminator(_role_tag),
]
"""Any message a session can hold, discriminated by ``role``."""

# --- header and entries -------------------------------------------------------------------


class SessionHeader(PiModel):
    type: Literal["session"] = "session"
    version: int = CURRENT_SESSION_VERSION
    id: str
    timestamp: str
    cwd: str = ""
    parent_session: str | None = None


class _Entry(PiModel):
    id: str
    parent_id: str | None = None
    timestamp: str

    @model_serializer(mode="wrap")
    def _pi_layout(self, handler: Any) -> dict[str, Any]:
        # Pi writes ``"parentId": null`` for a root; the base class leaves out every None.
        data: dict[str, Any] = handler(self)
        head = {"type": data.pop("type"), "id": data.pop("id")}
        data.pop("parentId", None)
        head["parentId"] = self.parent_id
        head["timestamp"] = data.pop("timestamp")
        head.update(data)
        return head


class MessageEntry(_Entry):
    type: Literal["message"] = "message"
    message: SessionMessage


class ThinkingLevelChangeEntry(_Entry):
    type: Literal["thinking_level_change"] = "thinking_level_change"
    thinking_level: str


class ModelChangeEntry(_Entry):
    type: Literal["model_change"] = "model_change"
    provider: str
    model_id: str


class CompactionEntry(_Entry):
    """``first_kept_entry_id``: context keeps entries from this one on; ``details`` holds
    ``{readFiles, modifiedFiles}`` when Pi wrote it; ``from_hook`` when an extension did."""

    type: Literal["compaction"] = "compaction"
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: Any = None
    usage: Usage | None = None
    from_hook: bool | None = None


class BranchSummaryEntry(_Entry):
    """``from_id`` is the entry the new branch starts from, ``"root"`` for a new root."""

    type: Literal["branch_summary"] = "branch_summary"
    from_id: str
    summary: str
    details: Any = None
    usage: Usage | None = None
    from_hook: bool | None = None


class CustomEntry(_Entry):
    """Extension state: never part of the model's context."""

    type: Literal["custom"] = "custom"
    custom_type: str
    data: Any = None


class CustomMessageEntry(_Entry):
    """An extension message that is part of the context (as a ``custom`` message)."""

    type: Literal["custom_message"] = "custom_message"
    custom_type: str
    content: str | list[Annotated[TextContent | ImageContent, Field(discriminator="type")]]
    display: bool = True
    details: Any = None


class LabelEntry(_Entry):
    """Sets (or, with no label, clears) the bookmark label of ``target_id``."""

    type: Literal["label"] = "label"
    target_id: str
    label: str | None = None


class SessionInfoEntry(_Entry):
    """The session's display name (the latest one wins; empty clears)."""

    type: Literal["session_info"] = "session_info"
    name: str | None = None


class UnknownEntry(BaseModel):
    """An entry of a type this reader does not know, kept verbatim in ``raw``."""

    raw: dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.raw.get("type"))

    @property
    def id(self) -> str:
        return str(self.raw.get("id"))

    @property
    def parent_id(self) -> str | None:
        parent = self.raw.get("parentId")
        return parent if isinstance(parent, str) else None

    @property
    def timestamp(self) -> str:
        value = self.raw.get("timestamp")
        return value if isinstance(value, str) else ""


KnownEntry: TypeAlias = Annotated[
    MessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | CompactionEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry,
    Field(discriminator="type"),
]
SessionEntry: TypeAlias = (
    MessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | CompactionEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry
    | UnknownEntry
)
ENTRY_TYPES = frozenset(
    {
        "message",
        "thinking_level_change",
        "model_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)

_ENTRY_ADAPTER: TypeAdapter[Any] | None = None
_MESSAGE_ADAPTER: TypeAdapter[Any] | None = None


def entry_adapter() -> TypeAdapter[Any]:
    """The validator of the nine known entry types (built on first use)."""
    global _ENTRY_ADAPTER
    if _ENTRY_ADAPTER is None:
        _ENTRY_ADAPTER = TypeAdapter(KnownEntry)
    return _ENTRY_ADAPTER


def parse_message(data: Any) -> Any:
    """A message dict (Pi's JSON) as its typed model; models pass through."""
    global _MESSAGE_ADAPTER
    if isinstance(data, BaseModel):
        return data
    if _MESSAGE_ADAPTER is None:
        _MESSAGE_ADAPTER = TypeAdapter(SessionMessage)
    return _MESSAGE_ADAPTER.validate_python(data)


_NULL_CONTENT_ROLES = ("user", "assistant", "toolResult")


def parse_entry(data: dict[str, Any]) -> SessionEntry:
    """One entry dict as its typed model; an unknown ``type`` gives an :class:`UnknownEntry`.

    Raises ``ValidationError`` when a known type does not have Pi's shape.
    """
    kind = data.get("type")
    if not isinstance(kind, str) or kind not in ENTRY_TYPES:
        return UnknownEntry(raw=data)
    if kind == "message":
        message = data.get("message")
        # Old or hand-edited files can hold a null content; Pi reads it as an empty list.
        if (
            isinstance(message, dict)
            and message.get("content", 0) is None
            and message.get("role") in _NULL_CONTENT_ROLES
        ):
            data = {**data, "message": {**message, "content": []}}
    entry: SessionEntry = entry_adapter().validate_python(data)
    return entry


def entry_to_dict(entry: SessionEntry | SessionHeader) -> dict[str, Any]:
    """The JSON object Pi writes for ``entry``."""
    if isinstance(entry, UnknownEntry):
        return entry.raw
    return entry.model_dump()


# --- ids and timestamps -------------------------------------------------------------------


def iso_now() -> str:
    """``new Date().toISOString()``: UTC, milliseconds, ``Z``."""
    now = time.time_ns() // 1_000_000
    return ms_to_iso(now)


_second: tuple[int, str] = (0, "1970-01-01T00:00:00")
"""The last whole second formatted (entries come in bursts: formatting a date is the slow part)."""


def ms_to_iso(ms: int) -> str:
    global _second
    seconds = ms // 1000
    if _second[0] != seconds:
        _second = (seconds, f"{datetime.fromtimestamp(seconds, UTC):%Y-%m-%dT%H:%M:%S}")
    return f"{_second[1]}.{ms % 1000:03d}Z"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso_to_ms(value: str) -> int:
    """``new Date(value).getTime()`` for ISO strings; 0 when it does not parse."""
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return 0
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return (stamp - _EPOCH) // _ONE_MS


_ONE_MS = datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC) - _EPOCH


def new_entry_id(taken: Any) -> str:
    """8 hex characters, as Pi (the head of a random UUID), unique within ``taken``."""
    for _ in range(100):
        candidate = secrets.token_hex(4)
        if candidate not in taken:
            return candidate
    return str(uuid.uuid4())


def uuidv7() -> str:
    """A time-ordered UUID (version 7), the form of Pi's session ids."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(secrets.token_bytes(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= (rand >> 68 & 0xFFF) << 64
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))
