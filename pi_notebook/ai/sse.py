"""The one Server-Sent Events decoder every provider reads its response body with.

Incremental over raw byte chunks: LF, CRLF and CR line endings (also split across chunks),
``:`` comments, multi-line ``data:`` fields and blank-line dispatch. Data stays ``bytes`` so
callers can hand it straight to ``jiter.from_json`` without a decode/encode round trip.

Two ways to read it: :meth:`SSEDecoder.feed` gives :class:`SSEEvent` objects (name and data),
for APIs whose event names matter (Anthropic's ``event: error``); :meth:`SSEDecoder.feed_data`
gives only the data and carries the per-token fast path. Servers that stream one token per event
usually send exactly one complete ``data: ...`` event per HTTP chunk; ``feed_data`` recognises
that chunk with a handful of ``bytes`` checks instead of splitting it into lines and building an
event object. That object alone costs 2-3 % of ``openai-completions``' CPU per token (see
``bench/README.md``), which is why the fast path does not live in ``feed``.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass


@dataclass(slots=True)
class SSEEvent:
    event: str
    data: bytes


class SSEDecoder:
    __slots__ = ("_buffer", "_data", "_event")

    def __init__(self) -> None:
        self._buffer = b""
        self._event = ""
        self._data: list[bytes] = []

    def feed_data(self, chunk: bytes) -> list[bytes]:
        """The ``data`` of each event that ``chunk`` completes, for APIs that ignore event names.

        The per-token fast path: with nothing pending, a chunk that is exactly one complete
        one-line ``data: ...`` event is recognised by a few ``bytes`` checks and returned
        without splitting it into lines or building an :class:`SSEEvent`.
        """
        if (
            not self._buffer
            and not self._data
            and not self._event
            and chunk.startswith(b"data: ")
            and chunk.endswith(b"\n\n")
            and chunk.count(b"\n") == 2
            and b"\r" not in chunk
        ):
            return [chunk[6:-2]]
        return [event.data for event in self.feed(chunk)]

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events that ``chunk`` completes, in order."""
        buf = self._buffer + chunk if self._buffer else chunk
        if b"\r" in buf:
            # a trailing CR may be the first half of a CRLF split across chunks
            keep_cr = buf.endswith(b"\r")
            if keep_cr:
                buf = buf[:-1]
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            if keep_cr:
                buf += b"\r"
        lines = buf.split(b"\n")
        self._buffer = lines.pop()
        out: list[SSEEvent] = []
        for line in lines:
            if not line:
                if self._data or self._event:
                    out.append(SSEEvent(self._event or "message", b"\n".join(self._data)))
                self._event = ""
                self._data = []
            elif line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
            elif line.startswith(b"event:"):
                self._event = line[6:].strip().decode("utf-8", "replace")
            # comments (":"), "id:" and "retry:" need no handling here
        return out

    def flush(self) -> list[SSEEvent]:
        """Dispatch what is left when the body ends without a final blank line."""
        out = self.feed(b"\n\n") if (self._buffer or self._data) else []
        self._buffer = b""
        return out


async def iter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[SSEEvent]:
    decoder = SSEDecoder()
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.flush():
        yield event
