"""Every tool result is capped before it joins the context and before it is recorded, whatever
tool returned it: here a user's ``@tool`` returning 200 MB of text, one raising an exception
with a 20 MB message, and one returning 20 MB of ``details``, through ``AgentSession`` with its
session file. The model's next request, the transcript and the session line all hold Pi's
2,000 lines / 50 KB at most, with a note saying what was cut. (An MCP server's result:
``tests/mcp/test_mcp_result_cap.py``.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pi_notebook import AgentSession
from pi_notebook.agent import AgentToolResult, tool
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_tool_call
from pi_notebook.ai.types import TextContent, ToolResultMessage
from pi_notebook.session import SessionManager

LINE = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-200MB-of-text-line\n"  # 82 chars
HUGE = LINE * (200 * 1024 * 1024 // len(LINE))  # ~200 MB, made by one repetition
LIMIT = 50 * 1024 + 1_000  # Pi's 50 KB of kept text, plus the note


@tool
def dump() -> str:
    """Return a very large text."""
    return HUGE


@tool
def explode() -> str:
    """Fail with a very long message."""
    raise RuntimeError("x" * 20_000_000)


@tool
def detailed() -> AgentToolResult:
    """A short answer with huge details."""
    return AgentToolResult(
        content=[TextContent(text="ok")], details={"log": "y\n" * 10_000_000, "rows": list(range(10**6))}
    )


def run_tools(faux: FauxRegistration, tmp_path: Path, *names: str) -> tuple[AgentSession, list[Any]]:
    calls = [faux_tool_call(name, {}, id=f"call-{i}") for i, name in enumerate(names)]
    seen: list[Any] = []

    def answer(context: Any, *_: Any) -> Any:
        seen.append(context)
        return faux_assistant_message("done")

    faux.set_responses([faux_assistant_message(calls, stop_reason="toolUse"), answer])
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    session = AgentSession.create(
        cwd=str(tmp_path), model=faux.get_model(), session_manager=manager, tools=[dump, explode, detailed]
    )
    return session, seen


def session_lines(session: AgentSession) -> list[str]:
    assert session.session_file is not None
    return Path(session.session_file).read_text().splitlines()


async def test_a_200_mb_tool_result_is_capped_in_context_and_session(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    session, seen = run_tools(faux, tmp_path, "dump")
    await session.prompt("go")
    [result] = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    text = "".join(b.text for b in result.content if isinstance(b, TextContent))
    assert len(text.encode()) < LIMIT
    assert text.startswith(LINE * 10)
    assert "Tool result truncated: showing 624 of " in text  # whole lines only: 624 * 82 <= 51,200
    assert text.count(LINE) == 624
    [context] = seen  # what the model was sent next
    sent = context.messages[-1]
    assert sent.role == "toolResult"
    assert len(json.dumps(sent.model_dump(by_alias=True))) < LIMIT + 1_000
    lines = session_lines(session)
    assert max(len(line) for line in lines) < LIMIT + 2_000, "a session line holds the whole result"
    assert any("Tool result truncated" in line for line in lines)
    assert session.messages[-1].content[0].text == "done"


async def test_an_error_and_huge_details_are_capped_too(faux: FauxRegistration, tmp_path: Path) -> None:
    session, _ = run_tools(faux, tmp_path, "explode", "detailed")
    await session.prompt("go")
    failed, detailed_result = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert failed.is_error
    error = failed.content[0]
    assert isinstance(error, TextContent)
    assert len(error.text) <= 50 * 1024
    assert "Tool result truncated" in "".join(b.text for b in failed.content if isinstance(b, TextContent))
    details = detailed_result.details
    assert details["log"].startswith("y\n")
    assert "Tool result truncated" in details["log"]
    assert len(details["rows"]) == 2_001
    assert "more items" in details["rows"][-1]
    lines = session_lines(session)
    assert max(len(line) for line in lines) < 300_000, "huge details reached the session file"
