"""A session a budget stopped is still a session Pi 0.83.0 loads: Pi's ``SessionManager.open``
reads the file an ``AgentSession`` wrote when its run was stopped by a budget, once in the
middle of an answer (a tool call still streaming) and once between tool calls (an answer's
tool call given an "Operation aborted" result instead of running), and rebuilds the same
entries and context as we do."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "ai"))

from anthropic_fixtures import make_model, message_end, message_start, tool_block
from loopback import Delay, LoopbackServer
from pi_node import require_pi, run_node
from test_session_interop import CWD, same_json, snapshot

from pi_notebook import AgentSession
from pi_notebook.agent import tool
from pi_notebook.ai.faux import faux_assistant_message, faux_tool_call, register_faux_provider
from pi_notebook.runtime import Budget
from pi_notebook.session import SessionManager


@pytest.fixture(scope="module", autouse=True)
def _pi() -> None:
    require_pi()


@tool
def step(n: int) -> str:
    """Record step n."""
    return f"step {n} done"


def _session(directory: Path, model: Any) -> AgentSession:
    manager = SessionManager.create(CWD, str(directory))
    session = AgentSession.create(cwd=CWD, model=model, session_manager=manager, tools=[step])
    session.agent.get_api_key = lambda provider: "test-key-not-real"
    return session


async def _stopped_mid_answer(directory: Path) -> AgentSession:
    faux = register_faux_provider(token_size={"min": 1, "max": 1})
    try:
        turns = [
            faux_assistant_message([faux_tool_call("step", {"n": n}, id=f"c{n}")], stop_reason="toolUse")
            for n in (1, 2)
        ]
        faux.set_responses(turns)
        session = _session(directory, faux.get_model())
        await session.prompt("go", budget=Budget(max_total_tokens=60))  # 44 + 58: the second answer
        return session
    finally:
        faux.unregister()


async def _stopped_between_tool_calls(directory: Path) -> AgentSession:
    server = LoopbackServer()
    await server.start()
    try:
        for n, tokens in ((1, 900), (2, 1000)):
            parts = [
                message_start(input_tokens=tokens),
                *tool_block(0, f"toolu_{n}", "step", f'{{"n": {n}}}'),
            ]
            parts += message_end("tool_use", {"output_tokens": 100})
            server.queue_sse([p for part in parts for p in (part, Delay(0.01))])
        session = _session(directory, make_model(server))
        await session.prompt("go", budget=Budget(max_total_tokens=2050))  # at the second answer's end
        return session
    finally:
        await server.stop()


def test_pi_loads_a_session_a_budget_stopped(tmp_path: Path) -> None:
    mid = asyncio.run(_stopped_mid_answer(tmp_path / "mid"))
    between = asyncio.run(_stopped_between_tool_calls(tmp_path / "between"))
    for session in (mid, between):
        assert session.budget_reason is not None
    assert mid.messages[-1].stop_reason == "aborted"
    assert [m.role for m in between.messages][-2:] == ["assistant", "toolResult"]
    assert between.messages[-1].is_error
    files = [mid.session_file, between.session_file]
    loaded = run_node("session_interop.mjs", {"actions": [{"kind": "load", "path": f} for f in files]})
    for session, pi in zip((mid, between), loaded, strict=True):
        ours = snapshot(SessionManager.open(str(session.session_file)))
        assert same_json(pi["entries"], ours["entries"])
        assert same_json(pi["context"], ours["context"])
        assert pi["leafId"] == ours["leafId"]
