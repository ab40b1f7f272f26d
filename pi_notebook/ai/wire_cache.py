"""The wire form of a conversation's earlier turns, converted and encoded once.

A request carries the whole transcript, and a provider's conversion (``transform_messages``
and the API's message builder) and ``json.dumps`` of it cost tens of microseconds per message
and request. Messages do not change once they have ended, so :func:`cached_history` keeps, per
conversation and wire shape (the ``key``), the converted dicts and their JSON text up to the
last **turn boundary** (a user message right after a finished text-only answer: every
provider's conversion starts afresh there, except for a count ``openai-responses`` numbers its
items by, which the cache carries; so converting the history in pieces cut at boundaries gives
the same dicts as converting it whole). The next request converts only what
follows; :func:`encode_body` splices the cached JSON text into the body, byte for byte what
``json.dumps(body, ensure_ascii=False)`` gives.

Mutation: a cached message is checked on every request against a snapshot taken when it was
converted (its fields, its content list and each block's fields by identity, a tool call's
arguments by value), so a message edited in place (``block.text = ...``,
``message.content.append(...)``, ``call.arguments["path"] = ...``) is converted again from
there on, never sent stale. A message replaced by another object is a miss at its place too.
Callers that hand the body to user code (``on_payload``) must not use the cache: that code may
change the dicts.

A conversation is converted whole the first time it is seen and after its cached turns
changed; the cache is (re)built when the next request brings the same message objects back, so
a caller that makes new message objects for every request (an extension's ``context`` handler
that copies the transcript) pays nothing for snapshots it could never use.
"""

from __future__ import annotations

import copy
import json
import operator
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

__all__ = ["WireMessages", "cached_history", "encode_body", "is_boundary"]

_MAX_ENTRIES = 32


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


class WireMessages(list):  # type: ignore[type-arg]
    """The converted messages: ``head`` items of their own (a system message), then the cached
    dicts ``prefix_items``, encoded as ``prefix_chunks`` (UTF-8 JSON, each chunk the items of
    one converted piece joined by ``", "``), then the rest."""

    __slots__ = ("flag", "head", "prefix_chunks", "prefix_items")

    def __init__(
        self,
        items: list[Any],
        prefix_items: list[Any],
        prefix_chunks: list[bytes],
        flag: bool,
        head: int = 0,
    ) -> None:
        super().__init__(items)
        self.prefix_items = prefix_items
        self.prefix_chunks = prefix_chunks
        self.flag = flag
        """``any(flag(m))`` over the input messages (see :func:`cached_history`)."""
        self.head = head

    def with_head(self, items: list[Any]) -> WireMessages:
        """``items`` + these messages, the cached text kept."""
        return WireMessages(
            items + self, self.prefix_items, self.prefix_chunks, self.flag, len(items) + self.head
        )

    def encoded(self) -> list[bytes] | None:
        """The pieces of ``json.dumps(self)`` in UTF-8, the cached ones as they are (a large
        body is copied once, when the pieces are joined); ``None`` when the list was changed."""
        head, n = self.head, len(self.prefix_items)
        if (
            n == 0
            or len(self) < head + n
            or not all(map(operator.is_, self[head : head + n], self.prefix_items))
        ):
            return None
        pieces = [_dumps(item) for item in self[:head]]
        pieces += self.prefix_chunks
        pieces += [_dumps(item) for item in self[head + n :]]
        out = [b"["]
        for piece in pieces:
            out += (piece, b", ")
        out[-1] = b"]"
        return out


def encode_body(body: Any) -> bytes:
    """``json.dumps(body, ensure_ascii=False)`` in UTF-8, with a :class:`WireMessages` value
    spliced from its cached text."""
    if type(body) is dict:
        for value in body.values():
            if isinstance(value, WireMessages):
                pieces = _pieces_with_cached(body)
                if pieces is not None:
                    return b"".join(pieces)
                break
    return _dumps(body)


def _pieces_with_cached(body: dict[str, Any]) -> list[bytes] | None:
    out = [b"{"]
    for key, value in body.items():
        if not isinstance(key, str):
            return None
        out += (_dumps(key), b": ")
        if isinstance(value, WireMessages):
            pieces = value.encoded()
            if pieces is None:
                return None
            out += pieces
        else:
            out.append(_dumps(value))
        out.append(b", ")
    out[-1] = b"}"
    return out


# --- snapshots ------------------------------------------------------------------------------------


def _snapshot(message: Any) -> tuple[Any, ...] | None:
    """What :func:`_unchanged` compares; ``None`` for a message that cannot be snapshotted."""
    fields = getattr(message, "__dict__", None)
    if fields is None:
        return None
    content = fields.get("content")
    if not isinstance(content, list):
        return (fields.copy(), None, None)
    blocks = list(content)
    inner: list[Any] = []
    for block in blocks:
        block_fields = getattr(block, "__dict__", None)
        if block_fields is None:
            return None
        arguments = block_fields.get("arguments")
        inner.append((block_fields.copy(), None if arguments is None else copy.deepcopy(arguments)))
    return (fields.copy(), blocks, inner)


def _unchanged(message: Any, snapshot: tuple[Any, ...]) -> bool:
    """The message's fields equal the snapshot's, and what the snapshot watches in place (the
    content list, its blocks, a call's arguments) is still the very same object: one replaced
    by an equal object would go unwatched, and a later change to it unseen."""
    fields, blocks, inner = snapshot
    live = message.__dict__
    if live != fields:
        return False
    if blocks is None:
        return True
    content = live["content"]
    if content is not fields["content"] or len(content) != len(blocks):
        return False
    if not all(map(operator.is_, content, blocks)):
        return False
    for block, (block_fields, arguments) in zip(blocks, inner, strict=False):
        live_block = block.__dict__
        if live_block != block_fields:
            return False
        if arguments is not None and (
            live_block["arguments"] is not block_fields["arguments"] or arguments != block_fields["arguments"]
        ):
            return False
    return True


# --- the cache ------------------------------------------------------------------------------------


def is_boundary(messages: Sequence[Any], index: int) -> bool:
    """``messages[index]`` is a user message right after a finished answer of text only: no
    conversion carries anything across it (no pending tool call, no grouped results, no role
    bridge)."""
    if index <= 0:
        return False
    message, before = messages[index], messages[index - 1]
    if getattr(message, "role", None) != "user" or getattr(before, "role", None) != "assistant":
        return False
    if before.stop_reason != "stop" or not before.content:
        return False
    return all(getattr(b, "type", None) == "text" for b in before.content) and any(
        b.text.strip() for b in before.content
    )


class _Entry:
    __slots__ = ("chunks", "first", "flag", "items", "last_seen", "messages", "snapshots", "state", "witness")

    def __init__(self, witness: Any, messages: Sequence[Any]) -> None:
        self.witness = witness  # an object the key's ids stand for, kept alive with the entry
        self.first = messages[0]  # the same, for the conversation's first message
        self.last_seen: tuple[Any, ...] | None = tuple(messages)
        """The messages of a request served without the cache: the cache is built when the
        next request starts with the same objects (a caller that copies its messages for every
        request, e.g. an extension's ``context`` handler, never pays for snapshots)."""
        self.messages: list[Any] = []
        self.snapshots: list[tuple[Any, ...]] = []
        self.items: list[Any] = []
        self.chunks: list[bytes] = []
        self.flag = False
        self.state = 0
        """What a numbering conversion has counted over the cached messages (``counted``)."""


_entries: OrderedDict[Hashable, _Entry] = OrderedDict()


def _remember(key: Hashable, entry: _Entry) -> None:
    _entries[key] = entry
    _entries.move_to_end(key)
    while len(_entries) > _MAX_ENTRIES:
        _entries.popitem(last=False)


def _valid_prefix(entry: _Entry, messages: Sequence[Any]) -> bool:
    """The entry's messages are still at the start of ``messages``, unchanged."""
    if len(messages) < len(entry.messages):
        return False
    unchanged = _unchanged
    for message, cached, snapshot in zip(messages, entry.messages, entry.snapshots, strict=False):
        if message is not cached or not unchanged(message, snapshot):
            return False
    return True


def _came_back(entry: _Entry, messages: Sequence[Any]) -> bool:
    seen = entry.last_seen
    return seen is not None and len(messages) >= len(seen) and all(map(operator.is_, seen, messages))


def _extend(
    entry: _Entry,
    added: Sequence[Any],
    convert: Callable[[Sequence[Any]], list[Any]],
    flag: Callable[[Any], bool] | None,
    counted: Callable[[Sequence[Any], int], tuple[list[Any], int]] | None,
) -> bool:
    """Convert ``added`` (whole turns) onto the cached prefix; ``False`` (nothing cached) when a
    message of them cannot be snapshotted."""
    snapshots = [_snapshot(m) for m in added]
    if any(s is None for s in snapshots):
        return False
    if counted is None:
        items = convert(added)
    else:
        items, entry.state = counted(added, entry.state)
    entry.messages.extend(added)
    entry.snapshots.extend(s for s in snapshots if s is not None)
    entry.items = entry.items + items
    if items:  # new lists: a WireMessages handed out earlier keeps what it had
        entry.chunks = [*entry.chunks, b", ".join(_dumps(item) for item in items)]
    entry.flag = entry.flag or (flag is not None and any(flag(m) for m in added))
    return True


def cached_history(
    key: Hashable,
    witness: Any,
    messages: Sequence[Any],
    convert: Callable[[Sequence[Any]], list[Any]],
    *,
    flag: Callable[[Any], bool] | None = None,
    counted: Callable[[Sequence[Any], int], tuple[list[Any], int]] | None = None,
) -> WireMessages:
    """``convert(messages)``, reusing the converted prefix of the last call with this ``key``
    (the wire shape: API, model, compat; the conversation is told apart by its first message).
    ``convert`` must convert any slice that starts at a boundary as it would in the whole.
    ``witness``: the object whose ``id`` the key holds (kept, so the id is not reused).
    ``flag``: a test whose ``any`` over the messages is kept too (``WireMessages.flag``).
    ``counted(messages, start)``: instead of ``convert``, for a conversion that numbers what it
    converts (``openai-responses``): it converts a slice numbered from ``start`` and returns the
    number after it.

    A conversation seen for the first time, or whose cached turns changed, is converted whole
    and only remembered; the cache is built on the next request that brings the same messages
    back, and serves the requests after it."""
    if not messages:
        return WireMessages(convert(messages), [], [], False)
    full_key = (key, id(messages[0]))
    entry = _entries.get(full_key)
    if entry is None or entry.witness is not witness or entry.first is not messages[0]:
        usable = False
    elif entry.last_seen is not None:
        usable = _came_back(entry, messages)
    else:
        usable = _valid_prefix(entry, messages)
    if entry is None or not usable:
        _remember(full_key, _Entry(witness, messages))
        return _uncached(messages, convert, flag)
    entry.last_seen = None
    start = len(entry.messages)
    cut = _last_boundary(messages, start)
    if not (_self_contained(messages[start:cut]) and _self_contained(messages[cut:])):
        return _uncached(messages, convert, flag)
    if cut > start and _extend(entry, messages[start:cut], convert, flag, counted):
        start = cut
    tail = messages[start:]
    _remember(full_key, entry)
    return WireMessages(
        entry.items + (convert(tail) if counted is None else counted(tail, entry.state)[0]),
        entry.items,
        entry.chunks,
        entry.flag or (flag is not None and any(flag(m) for m in tail)),
    )


def _uncached(
    messages: Sequence[Any], convert: Callable[[Sequence[Any]], list[Any]], flag: Callable[[Any], bool] | None
) -> WireMessages:
    return WireMessages(convert(messages), [], [], flag is not None and any(flag(m) for m in messages))


def _self_contained(messages: Sequence[Any]) -> bool:
    """Every tool result in ``messages`` answers a call made in them: one that answers an
    earlier call would be renamed with it when a conversion renames foreign ids."""
    calls: set[str] = set()
    for message in messages:
        role = getattr(message, "role", None)
        if role == "assistant":
            calls.update(b.id for b in message.content if getattr(b, "type", None) == "toolCall")
        elif role == "toolResult" and message.tool_call_id not in calls:
            return False
    return True


def _last_boundary(messages: Sequence[Any], start: int) -> int:
    """The index of the last boundary after ``start`` (``start`` when there is none)."""
    for index in range(len(messages) - 1, start, -1):
        if is_boundary(messages, index):
            return index
    return start
