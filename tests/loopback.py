"""A real HTTP/1.1 server on 127.0.0.1 for provider tests and benchmarks.

It speaks raw HTTP over asyncio sockets (chunked transfer encoding, one chunk per write, as
real providers stream SSE), records every request (method, path, headers, JSON body) and
plays scripted responses in order: a status, headers and a list of body parts. A part may be
``bytes``/``str`` (sent as one chunk), ``Delay(seconds)`` or ``DROP`` (close the socket
mid-stream without the terminating chunk). A reply with ``hang_up`` closes the connection
right after reading the request, before any response byte (what a server does to a kept-alive
connection it has just timed out); ``head_delay`` waits before the status line.

Used from tests as the ``loopback`` fixture (see ``conftest.py``), on a thread of its own with
``serving`` (for tests that are not async: a shell cell, a kernel, a browser), or standalone in
``bench/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Delay:
    seconds: float


DROP = object()


@dataclass
class Reply:
    status: int = 200
    parts: list[Any] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream"})
    hang_up: bool = False
    head_delay: float = 0.0


def hang_up() -> Reply:
    """Close the connection after reading the request, without answering."""
    return Reply(hang_up=True)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)
    """``time.monotonic()`` when the request had been read (for tests of waits between requests)."""

    @property
    def json(self) -> Any:
        return json.loads(self.body)


def sse(data: Any, event: str | None = None) -> bytes:
    """One SSE event: ``event:`` line (optional) + ``data:`` line + blank line."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def json_reply(status: int, body: Any, headers: dict[str, str] | None = None) -> Reply:
    text = body if isinstance(body, str) else json.dumps(body)
    return Reply(
        status=status, parts=[text.encode()], headers={"content-type": "application/json", **(headers or {})}
    )


class LoopbackServer:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self._server: asyncio.AbstractServer | None = None
        self.port = 0
        self.default: Reply | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def queue_sse(
        self, events: Iterable[bytes | Any], status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        self.replies.append(
            Reply(
                status=status,
                parts=list(events),
                headers={"content-type": "text/event-stream", **(headers or {})},
            )
        )

    async def start(self) -> LoopbackServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        for writer in list(self._writers):
            writer.close()
        for handler in list(self._handlers):
            handler.cancel()  # one still pausing (``head_delay``, ``Delay``) would outlive the loop
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    async def __aenter__(self) -> LoopbackServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _read_request(self, reader: asyncio.StreamReader) -> Recorded | None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        length = int(headers.get("content-length", "0"))
        body = await reader.readexactly(length) if length else b""
        return Recorded(method, path, headers, body)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
            task.add_done_callback(self._handlers.discard)
        try:
            while True:
                try:
                    request = await self._read_request(reader)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                if request is None:
                    return
                self.requests.append(request)
                reply = self.replies.pop(0) if self.replies else self.default
                if reply is None:
                    reply = json_reply(500, {"error": {"message": "loopback: no reply queued"}})
                if not await self._send(writer, reply):
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    async def _send(self, writer: asyncio.StreamWriter, reply: Reply) -> bool:
        if reply.hang_up:
            writer.close()
            return False
        if reply.head_delay:
            await asyncio.sleep(reply.head_delay)
        head = [f"HTTP/1.1 {reply.status} X", "transfer-encoding: chunked"]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        for part in reply.parts:
            if isinstance(part, Delay):
                await writer.drain()
                await asyncio.sleep(part.seconds)
                continue
            if part is DROP:
                await writer.drain()
                writer.transport.abort()
                return False
            data = part.encode() if isinstance(part, str) else part
            if data:
                writer.write(b"%x\r\n%s\r\n" % (len(data), data))
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


@contextlib.contextmanager
def serving(server: LoopbackServer) -> Iterator[LoopbackServer]:
    """``server`` started on its own thread and event loop, stopped at the end: a cell runs on
    the shell's loop, and a kernel or a browser test has none."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="loopback", daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(5)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
