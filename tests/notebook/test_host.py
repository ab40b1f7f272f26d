"""``%%pi`` as a host over the conversation's ``AgentSession``, on a real ``InteractiveShell``:
the lines under a run survive a retry, the user's hooks are never patched (one set during a run
is still there after it), and a streamed token reaches the session and the view only."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401

from pi_notebook.agent import Agent, tool
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_tool_call
from pi_notebook.notebook import conversations
from pi_notebook.notebook.state import state_for

MODEL = "--model faux:faux-1"
NOTHING_TO_RESUME = "Nothing recorded to resume for this notebook: a new conversation starts."


@pytest.fixture
def fast_retries(ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_NOTEBOOK_SESSION_DIR", str(tmp_path / "sessions"))
    magics = ip.magics_manager.registry["PiMagics"]
    monkeypatch.setattr(magics, "retry_base_delay", 0.001)
    monkeypatch.setattr(magics, "retries", 3)
    conversations.clear()


def frozen(captured: Any) -> str:
    return "\n".join(str(b.get("text/plain", "")) for b in outputs(captured))


def test_the_resume_line_survives_a_retried_error(
    ip: Any, faux: FauxRegistration, fast_retries: None
) -> None:
    failed = faux_assistant_message([], stop_reason="error", error_message="503 Service Unavailable")
    faux.set_responses([failed, "answered"])
    result, captured = run(ip, f"%%pi {MODEL} --resume --tools none\nhello")
    assert result.error_in_exec is None
    shown = frozen(captured)
    assert NOTHING_TO_RESUME in shown  # the retry's lines replace only their own line
    assert "Recovered on retry 1 of 3 after: 503 Service Unavailable" in shown
    assert shown.index(NOTHING_TO_RESUME) < shown.index("Recovered on retry")
    assert ip.user_ns["_pi"].text == "answered"


def test_a_hook_the_user_sets_during_a_run_survives_it(ip: Any, faux: FauxRegistration) -> None:
    conversations.clear()
    agent: Agent = conversations.current().agent
    before_run = agent.before_tool_call, agent.should_stop_after_turn, agent.stream_fn, agent.on_payload

    def own_hook(ctx: Any, signal: Any = None) -> None:
        return None

    @tool
    def set_hook() -> str:
        """Set the conversation's before_tool_call, as a user might in the middle of a run."""
        agent.before_tool_call = own_hook
        return "set"

    agent.state.tools = [set_hook]
    call = faux_assistant_message([faux_tool_call("set_hook", {}, id="h1")], stop_reason="toolUse")
    faux.set_responses([call, "done"])
    result, _ = run(ip, f"%%pi {MODEL} --tools none --temperature 0.5 --seed 3 --max-turns 5\ngo")
    assert result.error_in_exec is None
    assert ip.user_ns["_pi"].text == "done"
    assert agent.before_tool_call is own_hook  # not put back to what it was before the run
    assert (agent.should_stop_after_turn, agent.stream_fn, agent.on_payload) == before_run[1:]
    assert [t.name for t in agent.state.tools] == ["set_hook"]


def test_a_streamed_token_reaches_the_session_and_the_view_only(ip: Any, faux: FauxRegistration) -> None:
    """While the answer streams, the agent has one listener (its ``AgentSession``) and the
    session sends ``message_update`` to one listener (the run's view): nothing else does work
    per token. (Read from the listener tables, which have no public view.)"""
    conversations.clear()
    agent = conversations.current().agent
    seen: dict[str, Any] = {}

    def answer(context: Any, options: Any, state: Any, model: Any) -> Any:
        session = state_for(ip).conversations.session("default")
        seen["agent"] = list(agent._listener_list)
        seen["tokens"] = [
            fn for fn, types in session._listeners if types is None or "message_update" in types
        ]
        return faux_assistant_message("one two three")

    faux.set_responses([answer])
    result, _ = run(ip, f"%%pi {MODEL} --tools none\nhi")
    assert result.error_in_exec is None
    assert len(seen["agent"]) == 1
    [view_handle] = seen["tokens"]
    assert getattr(view_handle, "__name__", "") == "handle"
