"""An MCP server's huge result is capped like any tool's (``agent/result_cap.py``): the test
server's ``echo`` returns a 420 KB text of 15,000 lines, which arrives as content, as
``structuredContent`` and as the raw result in ``details``; the context gets Pi's 50 KB at most,
with a note, and the details kept for the session are bounded too."""

from __future__ import annotations

import json

from test_mcp_tools import results, run_agent

from pi_notebook.ai.faux import FauxRegistration
from pi_notebook.ai.types import TextContent
from pi_notebook.mcp import McpServer

BIG = "mcp-line-of-text-0123456789\n" * 15_000  # 420 KB, 15,000 lines


async def test_a_huge_mcp_result_is_capped(server: McpServer, faux: FauxRegistration) -> None:
    agent, _ = await run_agent(faux, list(server.tools), [(f"{server.name}__echo", {"text": BIG})])
    (result,) = results(agent)
    assert not result.is_error
    text = "".join(b.text for b in result.content if isinstance(b, TextContent))
    assert text.startswith("echo: mcp-line-of-text")
    assert len(text.encode()) < 52 * 1024
    assert "Tool result truncated" in text
    assert len(json.dumps(result.details)) < 300_000
    assert len(result.model_dump_json()) < 400_000
