"""MCP tools as agent tools: names, results, and the bridge from the caller's loop.

* Names: ``SERVER__TOOL``. Providers accept ``^[a-zA-Z0-9_-]{1,64}$`` at the strictest, so a
  name that breaks that rule has every other character replaced by ``_``, is cut to fit, and
  ends in ``_`` plus eight hex digits of a SHA-256 of the original pair: deterministic, and
  two different tools never end up with the same name.
* Results: text and images become content blocks (audio, resource links and embedded
  resources become short text, since the model cannot take them); ``details`` keeps the
  server and tool names, the structured content and the raw result. A result with
  ``isError`` raises, and the agent loop turns the exception into an error tool result.
* Progress notifications become ``on_update`` calls (``tool_execution_update`` events).
* The call's abort signal cancels the request on the background loop; the SDK then sends
  ``notifications/cancelled`` to the server, and the call returns at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types
from mcp.shared.dispatcher import ProgressFnT

from ..agent.types import AgentTool, AgentToolResult, AgentToolUpdateCallback
from ..ai.abort import AbortError, AbortSignal
from ..ai.types import ImageContent, TextContent
from .config import DEFAULT_APPROVAL, ApprovalPolicy, ServerConfig
from .runtime import BackgroundLoop


class ToolHost(Protocol):
    """What a tool needs of its server (``server.McpServer`` is one): its name and config, the
    background loop its session lives on, and ``call``. A protocol rather than an import, so
    this module and ``server`` do not import each other."""

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> ServerConfig: ...

    @property
    def runtime(self) -> BackgroundLoop: ...

    async def call(
        self, tool: str, arguments: dict[str, Any], progress: ProgressFnT | None
    ) -> mcp_types.CallToolResult: ...

__all__ = ["McpTool", "McpToolError", "agent_tool_name", "progress_result", "to_agent_result"]

MAX_NAME = 64
SEPARATOR = "__"
_VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


class McpToolError(Exception):
    """A failed MCP call: the message is what the model reads as the error result."""


def agent_tool_name(server: str, tool: str, *, force_hash: bool = False) -> str:
    """The agent-side name of ``tool`` on ``server`` (see the module docstring)."""
    raw = f"{server}{SEPARATOR}{tool}"
    if _VALID_NAME.match(raw) and not force_hash:
        return raw
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    clean = _INVALID_CHARS.sub("_", raw)
    return f"{clean[: MAX_NAME - len(digest) - 1]}_{digest}"


@dataclass(kw_only=True, eq=False)
class McpTool(AgentTool):
    """An ``AgentTool`` backed by a tool of an MCP server, with its approval metadata:
    ``approval`` is the tool's own policy, ``ask`` unless the server's config says otherwise;
    ``requires_approval`` (the ``AgentTool`` field) follows it: true unless it is ``auto``."""

    server_name: str = ""
    mcp_name: str = ""
    approval: ApprovalPolicy = DEFAULT_APPROVAL
    annotations: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.requires_approval = self.approval != "auto"


# --- results -------------------------------------------------------------------------------------


def _block_text(block: Any) -> TextContent | ImageContent:
    if isinstance(block, mcp_types.TextContent):
        return TextContent(text=block.text)
    if isinstance(block, mcp_types.ImageContent):
        return ImageContent(data=block.data, mime_type=block.mime_type)
    if isinstance(block, mcp_types.AudioContent):
        return TextContent(text=f"[audio ({block.mime_type}) omitted: the model cannot take audio]")
    if isinstance(block, mcp_types.ResourceLink):
        return TextContent(text=f"[resource link: {block.uri}" + (f" ({block.name})]" if block.name else "]"))
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return TextContent(text=f"[resource {resource.uri}]\n{resource.text}")
        return TextContent(text=f"[binary resource {resource.uri} ({resource.mime_type or 'unknown type'})]")
    return TextContent(text=f"[unsupported content block {getattr(block, 'type', type(block).__name__)}]")


def _error_text(server: str, tool: str, result: mcp_types.CallToolResult) -> str:
    texts = [b.text for b in result.content if isinstance(b, mcp_types.TextContent) and b.text]
    detail = "\n".join(texts) or "no message"
    return f"MCP tool {tool} on server '{server}' reported an error: {detail}"


def to_agent_result(server: str, tool: str, result: mcp_types.CallToolResult) -> AgentToolResult:
    """Map a ``CallToolResult``; an ``isError`` result raises :class:`McpToolError`."""
    if result.is_error:
        raise McpToolError(_error_text(server, tool, result))
    content = [_block_text(block) for block in result.content]
    if not content and result.structured_content is not None:
        content = [TextContent(text=json.dumps(result.structured_content, ensure_ascii=False))]
    details: dict[str, Any] = {
        "server": server,
        "tool": tool,
        "structuredContent": result.structured_content,
        "result": _raw(result),
    }
    return AgentToolResult(content=content, details=details)


def _raw(result: mcp_types.CallToolResult) -> dict[str, Any]:
    """The result as JSON, image data left out: it is in ``content`` already, and details are
    kept with the transcript, where a second copy of every screenshot would double its size."""
    raw: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    for block in raw.get("content", []):
        if block.get("type") == "image" and isinstance(block.get("data"), str):
            block["data"] = f"<{len(block['data'])} base64 characters, in the result's content>"
    return raw


def progress_result(progress: float, total: float | None, message: str | None) -> AgentToolResult:
    """A partial result for one progress notification."""
    amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
    text = f"{message} ({amount})" if message else f"progress {amount}"
    details = {"progress": progress, "total": total, "message": message}
    return AgentToolResult(content=[TextContent(text=text)], details=details)


# --- execution -----------------------------------------------------------------------------------

def _progress_forwarder(
    caller: asyncio.AbstractEventLoop, on_update: AgentToolUpdateCallback | None
) -> ProgressFnT | None:
    """A progress callback for the SDK (it runs on the background loop) that hands each
    update to ``on_update`` on the caller's loop."""
    if on_update is None:
        return None

    async def forward(progress: float, total: float | None, message: str | None) -> None:
        partial = progress_result(progress, total, message)
        if not caller.is_closed():
            caller.call_soon_threadsafe(on_update, partial)

    return forward


def make_execute(server: ToolHost, mcp_name: str) -> Callable[..., Awaitable[AgentToolResult]]:
    async def execute(
        tool_call_id: str,
        params: Any,
        signal: AbortSignal | None,
        on_update: AgentToolUpdateCallback | None,
    ) -> AgentToolResult:
        if signal is not None:
            signal.throw_if_aborted()
        progress = _progress_forwarder(asyncio.get_running_loop(), on_update)
        arguments = dict(params) if isinstance(params, dict) else {}
        future = server.runtime.submit(server.call(mcp_name, arguments, progress))
        remove = signal.add_listener(future.cancel) if signal is not None else None
        try:
            result = await asyncio.wrap_future(future)
        except (asyncio.CancelledError, concurrent.futures.CancelledError):
            future.cancel()  # the caller was cancelled (a kernel interrupt): stop the call too
            if signal is not None and signal.aborted:
                raise AbortError() from None
            raise
        finally:
            if remove is not None:
                remove()
        return to_agent_result(server.name, mcp_name, result)

    return execute


def build_tool(server: ToolHost, tool: mcp_types.Tool, name: str) -> McpTool:
    annotations = tool.annotations.model_dump(mode="json", exclude_none=True) if tool.annotations else None
    return McpTool(
        name=name,
        label=f"{server.name}: {tool.title or tool.name}",
        description=tool.description or tool.title or f"The {tool.name} tool of MCP server {server.name}.",
        parameters=dict(tool.input_schema),
        execute=make_execute(server, tool.name),
        server_name=server.name,
        mcp_name=tool.name,
        approval=server.config.approval_for(tool.name),
        annotations=annotations,
        output_schema=tool.output_schema,
    )
