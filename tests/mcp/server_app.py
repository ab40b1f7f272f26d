"""A real MCP server for the tests, written with the SDK's ``MCPServer``.

Run ``python server_app.py stdio`` or ``python server_app.py http PORT`` (Streamable HTTP on
127.0.0.1). At start it writes ``server_app pid=<pid>`` to stderr, so a test can check that the
process is gone after the client closed it. What the tools see (a cancellation, a crash) is
written to stderr too, where the client's ring buffer keeps it.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from pydantic import BaseModel

# A 1x1 transparent PNG.
TINY_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
LONG_TOOL_NAME = "a_tool_whose_name_is_much_longer_than_any_provider_accepts_for_a_function_name"

server = MCPServer("test-server")
WIRE = 1


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@server.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return f"echo: {text}"


@server.tool(description="A tiny PNG image.")
def image() -> Image:
    return Image(data=TINY_PNG, format="png")


class Weather(BaseModel):
    city: str
    celsius: float


@server.tool(description="Structured weather for a city.")
def weather(city: str) -> Weather:
    return Weather(city=city, celsius=21.5)


@server.tool(description="Every other kind of content block.", structured_output=False)
def mixed() -> list[ContentBlock]:
    return [
        TextContent(text="first"),
        AudioContent(data="UklGRg==", mime_type="audio/wav"),
        ResourceLink(uri="file:///tmp/report.csv", name="report.csv"),
        EmbeddedResource(resource=TextResourceContents(uri="memo://note", text="a note")),
    ]


@server.tool(description="Always fails with the given message.")
def fail(message: str) -> str:
    raise ToolError(message)


@server.tool(description="Sleep in steps, reporting progress; can be cancelled.")
async def slow(steps: int, ctx: Context, step_seconds: float = 0.1) -> str:
    try:
        for step in range(steps):
            await ctx.report_progress(step + 1, steps, f"step {step + 1} of {steps}")
            await asyncio.sleep(step_seconds)
    except asyncio.CancelledError:
        log("slow: cancelled")
        raise
    return f"slept {steps} steps"


@server.tool(description="Crash the server process.")
def crash() -> str:
    log("crash: exiting with status 3")
    os._exit(3)


@server.tool(description="Block the whole server (its event loop) for a while.")
async def hang(seconds: float) -> str:
    time.sleep(seconds)  # noqa: ASYNC251 - on purpose: nothing else on the server runs meanwhile
    return "woke up"


@server.tool(description="Write a line that is not JSON-RPC to stdout.")
async def garbage() -> str:
    # The SDK points fd 1 at stderr while it serves stdio (so a stray print cannot corrupt
    # the protocol); the copy of the real stdout taken at start reaches the client.
    os.write(WIRE, b"this is not json-rpc\n")
    await asyncio.sleep(5)
    return "unreachable"


@server.tool(description="The value of a request header (Streamable HTTP only).")
def header(name: str, ctx: Context) -> str:
    headers = ctx.headers or {}
    return headers.get(name.lower(), headers.get(name, "<missing>"))


@server.tool(description="The server's process id.")
def pid() -> int:
    return os.getpid()


@server.tool(name="x__echo", description="Echo under a name with the separator in it.")
def x_echo(text: str) -> str:
    return f"x echo: {text}"


@server.tool(name="dotted.name", description="A name with a dot.")
def dotted() -> str:
    return "dotted"


@server.tool(name=LONG_TOOL_NAME, description="A name longer than 64 characters.")
def long_name() -> str:
    return "long"


def main() -> None:
    global WIRE
    WIRE = os.dup(1)
    log(f"server_app pid={os.getpid()}")
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
