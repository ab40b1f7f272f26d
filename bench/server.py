"""A fake OpenAI Chat Completions server for benchmarks, meant to run in its own process.

``POST /n/<N>/chat/completions`` streams N content chunks in OpenAI's exact wire shape (about
290 bytes each, like ``gpt-4.1-mini``), then a ``finish_reason`` chunk, a usage chunk and
``data: [DONE]``, as fast as the socket takes them. Every SSE event is its own HTTP/1.1 chunk,
as real providers send them. Bodies are built once per N so the server's own cost per token is
a few hundred nanoseconds. Connections are kept alive.

Run: ``python -m bench.server --port 0`` prints ``PORT <n>`` and serves until terminated.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import sys
from typing import Any

_PATH = re.compile(rb"^/n/(\d+)/chat/completions$")
_bodies: dict[int, list[bytes]] = {}


def event(
    content: str | None = None,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    choices: bool = True,
) -> bytes:
    """One SSE event carrying one ``chat.completion.chunk``."""
    delta: dict[str, Any] = {} if content is None else {"content": content}
    obj = {
        "id": "chatcmpl-BenchAbCdEfGhIjKlMnOpQrStUvWx",
        "object": "chat.completion.chunk",
        "created": 1755000000,
        "model": "gpt-4.1-mini-2025-04-14",
        "service_tier": "default",
        "system_fingerprint": "fp_6f2eabb9a5",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        if choices
        else [],
        "usage": usage,
        "obfuscation": "x4Kq9",
    }
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def body_chunks(n: int) -> list[bytes]:
    """The HTTP chunks (framed) of a stream of ``n`` tokens."""
    cached = _bodies.get(n)
    if cached is not None:
        return cached
    events = [event(f" w{i % 997}") for i in range(n)]
    events.append(event(finish="stop"))
    events.append(
        event(
            usage={
                "prompt_tokens": 12,
                "completion_tokens": n,
                "total_tokens": n + 12,
                "prompt_tokens_details": {"cached_tokens": 0},
            },
            choices=False,
        )
    )
    events.append(b"data: [DONE]\n\n")
    framed = [b"%x\r\n%s\r\n" % (len(e), e) for e in events]
    framed.append(b"0\r\n\r\n")
    _bodies[n] = framed
    return framed


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            path = lines[0].split(b" ")[1]
            length = 0
            for line in lines[1:]:
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if length:
                await reader.readexactly(length)
            match = _PATH.match(path)
            if match is None:
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                continue
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            )
            for i, chunk in enumerate(body_chunks(int(match.group(1)))):
                writer.write(chunk)
                if i % 256 == 255:
                    await writer.drain()
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def serve(port: int) -> None:
    server = await asyncio.start_server(_handle, "127.0.0.1", port)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.port))
    sys.exit(0)


if __name__ == "__main__":
    main()
