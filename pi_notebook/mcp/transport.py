"""Opening an SDK transport for a ``ServerConfig``, with what the SDK leaves to the client:

* ``StderrTail``: a stdio server's stderr goes to a pipe whose last lines are kept in a ring
  buffer (shown when the server fails), never to the kernel's stderr.
* ``watched``: wraps the transport's read stream to learn that the connection ended (the
  process exited, the stream closed) or that the server wrote something that is not JSON-RPC
  on stdout, even while no call is pending.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any, TextIO, cast

import anyio
import httpx2
from mcp.client._transport import TransportStreams
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.message import SessionMessage

from .config import ServerConfig

__all__ = ["StderrTail", "open_transport", "watched"]

STDERR_LINES = 200


class StderrTail:
    """The write end of a pipe for the child's stderr and a thread keeping its last lines."""

    def __init__(self, max_lines: int = STDERR_LINES) -> None:
        read_fd, write_fd = os.pipe()
        self.lines: deque[str] = deque(maxlen=max_lines)
        self.done = threading.Event()
        self.writer: TextIO | None = cast(TextIO, os.fdopen(write_fd, "w"))
        self._reader = os.fdopen(read_fd, "rb")
        threading.Thread(target=self._read, name="pi-mcp-stderr", daemon=True).start()

    def _read(self) -> None:
        try:
            for raw in self._reader:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\r\n"))
        except (OSError, ValueError):
            pass
        finally:
            self._reader.close()
            self.done.set()

    def close_writer(self) -> None:
        """Drop our copy of the write end once the child has its own (so EOF means it exited)."""
        writer, self.writer = self.writer, None
        if writer is not None:
            with contextlib.suppress(OSError):
                writer.close()

    def tail(self, count: int) -> list[str]:
        lines = [line for line in self.lines if line.strip()]
        return lines[-count:]


class _WatchedReadStream:
    """A read stream that reports its end and non-JSON-RPC items (see the module docstring)."""

    def __init__(
        self, inner: Any, on_end: Callable[[], None], on_garbage: Callable[[Exception], None]
    ) -> None:
        self._inner = inner
        self._on_end = on_end
        self._on_garbage = on_garbage

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise
        if isinstance(item, Exception):
            self._on_garbage(item)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        return None


@contextlib.asynccontextmanager
async def watched(
    transport: contextlib.AbstractAsyncContextManager[TransportStreams],
    on_end: Callable[[], None],
    on_garbage: Callable[[Exception], None],
) -> AsyncIterator[TransportStreams]:
    async with transport as (read_stream, write_stream):
        yield _WatchedReadStream(read_stream, on_end, on_garbage), write_stream


@contextlib.asynccontextmanager
async def _http(url: str, headers: dict[str, str]) -> AsyncIterator[TransportStreams]:
    client: httpx2.AsyncClient = create_mcp_http_client(headers=headers or None)
    async with client, streamable_http_client(url, http_client=client) as streams:
        yield streams


def open_transport(
    config: ServerConfig, stderr: StderrTail | None, env: dict[str, str], headers: dict[str, str]
) -> contextlib.AbstractAsyncContextManager[TransportStreams]:
    """The SDK transport for ``config``, with its environment references already resolved
    into ``env`` (stdio) and ``headers`` (HTTP)."""
    if config.url:
        return _http(config.url, headers)
    assert stderr is not None
    assert stderr.writer is not None
    params = StdioServerParameters(
        command=config.command[0],
        args=list(config.command[1:]),
        env=env or None,
        cwd=config.cwd,
    )
    return stdio_client(params, errlog=stderr.writer)
