"""A session with calls read from the model's text is still a session Pi 0.83.0 loads: Pi's
``SessionManager.open`` reads the files an ``AgentSession`` wrote in code mode (a fenced block
run as ``run_code``) and with a recovered JSON call, rebuilds the same entries and context as
we do, and keeps the tool call's ``recovered`` key, which it ignores."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pi_node import require_pi, run_node
from test_session_interop import CWD, same_json, snapshot

from pi_notebook import AgentSession
from pi_notebook.agent import AgentRunOptions, tool
from pi_notebook.agent.printed_turns import printed_turns
from pi_notebook.ai.faux import register_faux_provider
from pi_notebook.session import SessionManager


@pytest.fixture(scope="module", autouse=True)
def _pi() -> None:
    require_pi()


@tool
def run_code(code: str) -> str:
    """Run Python code."""
    return f"ran {len(code)} characters"


async def _recorded(directory: Path, answers: list[str], mode: str) -> AgentSession:
    faux = register_faux_provider(token_size={"min": 1, "max": 1})
    try:
        faux.set_responses(answers)
        manager = SessionManager.create(CWD, str(directory))
        session = AgentSession.create(
            cwd=CWD, model=faux.get_model(), session_manager=manager, tools=[run_code]
        )

        def wrap(own: Any) -> Any:
            if mode == "code":
                return printed_turns(own, mode="code", system_prompt=lambda s: "code first")
            return printed_turns(own, mode="tools", accept=lambda calls: True)

        await session.prompt("go", run=AgentRunOptions(wrap_stream=wrap))
        return session
    finally:
        faux.unregister()


def test_pi_loads_sessions_with_calls_read_from_the_text(tmp_path: Path) -> None:
    code = asyncio.run(_recorded(tmp_path / "code", ["```python\nx = 1\n```", "x is 1."], "code"))
    printed = '{"name": "run_code", "arguments": {"code": "y = 2"}}'
    recovered = asyncio.run(_recorded(tmp_path / "json", [printed, "y is 2."], "tools"))
    sessions = (code, recovered)
    for session in sessions:
        assert [m.role for m in session.messages] == ["user", "assistant", "toolResult", "assistant"]
    files = [s.session_file for s in sessions]
    loaded = run_node("session_interop.mjs", {"actions": [{"kind": "load", "path": f} for f in files]})
    for session, pi, mark in zip(sessions, loaded, ("code", "json"), strict=True):
        ours = snapshot(SessionManager.open(str(session.session_file)))
        assert same_json(pi["entries"], ours["entries"])
        assert same_json(pi["context"], ours["context"])
        assert pi["leafId"] == ours["leafId"]
        [call] = [
            b for m in pi["context"]["messages"] for b in m.get("content", []) if b.get("type") == "toolCall"
        ]
        assert (call["name"], call["recovered"]) == ("run_code", mark)
