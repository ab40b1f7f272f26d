"""A fake OpenAI Chat Completions server for benchmarks, meant to run in its own process.

``POST /n/<N>/chat/completions`` streams N content chunks in OpenAI's exact wire shape (about
290 bytes each, like ``gpt-4.1-mini``), then a ``finish_reason`` chunk, a usage chunk and
``data: [DONE]``, as fast as the socket takes them. Every SSE event is its own HTTP/1.1 chunk,
as real providers send them. Bodies are built once per N so the server's own cost per token is
a few hundred nanoseconds. Connections are kept alive.

``POST /tool/chat/completions`` is one tool round trip: while the request holds no ``tool``
message it streams a ``get_weather`` tool call (``{"city": "Paris"}`` in four argument
fragments, ``finish_reason: "tool_calls"``), and once it does, a six-token answer.

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
_TOOL_PATH = b"/tool/chat/completions"
_TOOL_MESSAGE = re.compile(rb'"role":\s*"tool"')
_bodies: dict[int, list[bytes]] = {}
_USAGE = {"prompt_tokens": 12, "prompt_tokens_details": {"cached_tokens": 0}}


def event(
    content: str | None = None,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    choices: bool = True,
    delta: dict[str, Any] | None = None,
) -> bytes:
    """One SSE event carrying one ``chat.completion.chunk`` (``delta`` overrides ``content``)."""
    if delta is None:
        delta = {} if content is None else {"content": content}
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


def _framed(events: list[bytes], finish: str, completion_tokens: int) -> list[bytes]:
    """``events`` + the ``finish`` chunk, the usage chunk and ``[DONE]``, as HTTP chunks."""
    usage = {**_USAGE, "completion_tokens": completion_tokens, "total_tokens": completion_tokens + 12}
    events = [*events, event(finish=finish), event(usage=usage, choices=False), b"data: [DONE]\n\n"]
    framed = [b"%x\r\n%s\r\n" % (len(e), e) for e in events]
    framed.append(b"0\r\n\r\n")
    return framed


def body_chunks(n: int) -> list[bytes]:
    """The HTTP chunks (framed) of a stream of ``n`` tokens."""
    cached = _bodies.get(n)
    if cached is None:
        cached = _bodies[n] = _framed([event(f" w{i % 997}") for i in range(n)], "stop", n)
    return cached


TOOL_ANSWER = "It is sunny in Paris."


def _tool_call_chunks() -> list[bytes]:
    """A ``get_weather`` call as OpenAI streams one: id and name first, then argument pieces."""
    head = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "index": 0,
                "id": "call_BenchAbCdEfGhIjKlMnOp",
                "type": "function",
                "function": {"name": "get_weather", "arguments": ""},
            }
        ],
        "refusal": None,
    }
    pieces = ['{"', "city", '":"', 'Paris"}']
    events = [event(delta=head)]
    events += [event(delta={"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces]
    return _framed(events, "tool_calls", len(pieces) + 4)


_TOOL_BODIES = (
    _tool_call_chunks(),
    _framed([event(w) for w in ["It", " is", " sunny", " in", " Paris", "."]], "stop", 6),
)


def _chunks_for(path: bytes, body: bytes) -> list[bytes] | None:
    if path == _TOOL_PATH:
        return _TOOL_BODIES[1 if _TOOL_MESSAGE.search(body) else 0]
    match = _PATH.match(path)
    return None if match is None else body_chunks(int(match.group(1)))


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
            body = await reader.readexactly(length) if length else b""
            chunks = _chunks_for(path, body)
            if chunks is None:
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                continue
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            )
            for i, chunk in enumerate(chunks):
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
