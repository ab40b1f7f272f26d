"""Approvals that remember ("Allow for this conversation") and the loop guard asking before a
repeated call, on the real ``ApprovalGate`` with a recording stand-in for the live view's side
(``GrantUI``), and the identical-call note from the pure reducer. The clicks in a real kernel
are ``test_approval_grants_kernel.py``; in JupyterLab, ``test_browser_grants.py``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture  # noqa: F401

from pi_notebook.agent import AgentTool, AgentToolResult, tool
from pi_notebook.agent.types import AgentContext, BeforeToolCallContext, TurnContext
from pi_notebook.ai.faux import FauxRegistration
from pi_notebook.ai.types import AssistantMessage, TextContent, ToolCall
from pi_notebook.notebook.run.approval import ApprovalGate
from pi_notebook.notebook.run.loop_guard import LoopGuard
from pi_notebook.notebook.sessions.grants import GRANTED, Grants, offer_label
from pi_notebook.notebook.view.reduce import ViewState, reduce
from pi_notebook.notebook.view.render import render_text


class Cards:
    """The live view's grant side, recorded: what was offered, shown, and which click granted."""

    def __init__(self) -> None:
        self.offered: dict[str, str] = {}
        self.shown: dict[str, str] = {}
        self.grant_clicks: set[str] = set()

    def offer_grant(self, tool_call_id: str, label: str) -> None:
        self.offered[tool_call_id] = label

    def took_grant(self, tool_call_id: str) -> bool:
        return tool_call_id in self.grant_clicks

    def show_granted(self, tool_call_id: str, text: str) -> None:
        self.shown[tool_call_id] = text


def deciding(call: ToolCall, tools: list[AgentTool] | None = None) -> BeforeToolCallContext:
    message = AssistantMessage(content=[call], api="faux", provider="faux", model="m")
    return BeforeToolCallContext(
        assistant_message=message,
        tool_call=call,
        args=call.arguments,
        context=AgentContext(tools=tools or []),
    )


def code(call_id: str, source: str = "x = 1") -> ToolCall:
    return ToolCall(id=call_id, name="run_code", arguments={"code": source})


class Clicks:
    """Answers each question with the next answer; records which call was asked."""

    def __init__(self, cards: Cards, answers: list[str]) -> None:
        self.cards, self.answers, self.asked = cards, iter(answers), list[str]()

    async def __call__(self, call_id: str) -> bool:
        self.asked.append(call_id)
        answer = next(self.answers)
        if answer == "grant":
            self.cards.grant_clicks.add(call_id)
        return answer != "deny"


def test_a_grant_lets_later_calls_of_that_tool_through_and_says_so() -> None:
    cards, grants = Cards(), Grants()
    clicks = Clicks(cards, ["grant", "approve"])

    async def scenario() -> list[Any]:
        gate = ApprovalGate("ask", request=clicks, grants=grants, grant_ui=cards)
        first = await gate(deciding(code("c1")))
        second = await gate(deciding(code("c2", "y = 2")))  # another call of run_code: no card
        other = await gate(deciding(ToolCall(id="i1", name="insert_cell", arguments={"source": "1"})))
        return [first, second, other]

    assert asyncio.run(scenario()) == [None, None, None]
    assert clicks.asked == ["c1", "i1"]  # insert_cell is another tool: it asks
    assert cards.offered == {"c1": "Allow for this conversation", "i1": "Allow for this conversation"}
    assert cards.shown == {"c1": GRANTED, "c2": GRANTED}
    assert grants.lines() == ["tool run_code: allowed for this conversation"]
    assert grants.clear() == 1
    assert grants.lines() == []


def test_delete_cells_and_deny_keep_asking_or_blocking_despite_a_grant() -> None:
    cards, grants = Cards(), Grants(tools={"delete_cells", "run_code"})
    clicks = Clicks(cards, ["approve"])

    async def scenario() -> list[Any]:
        gate = ApprovalGate("ask", request=clicks, grants=grants, grant_ui=cards)
        delete = await gate(deciding(ToolCall(id="d1", name="delete_cells", arguments={"cell_ids": ["a"]})))
        blocked = ApprovalGate("deny", grants=grants, grant_ui=cards)
        denied = await blocked(deciding(code("c1")))
        return [delete, denied]

    delete, denied = asyncio.run(scenario())
    assert delete is None
    assert clicks.asked == ["d1"]
    assert "d1" not in cards.offered  # and no grant is offered for it
    assert denied is not None
    assert denied.block
    assert cards.shown == {}


def test_a_headless_gate_offers_and_applies_no_grant() -> None:
    """The runner gives a run nobody can click no grants: the policy alone decides."""
    cards = Cards()

    async def scenario() -> Any:
        gate = ApprovalGate("deny", headless=True, grants=None, grant_ui=None)
        return await gate(deciding(code("c1")))

    result = asyncio.run(scenario())
    assert result is not None
    assert result.block
    assert "headless" in (result.reason or "")
    assert cards.offered == {}
    assert cards.shown == {}


def test_an_mcp_grant_covers_the_servers_tools() -> None:
    @tool
    def plain(text: str) -> str:
        """Not an MCP tool."""
        return text

    tools = [plain]
    echo = type("Echo", (), {"server_name": "files", "approval": "ask"})()
    assert offer_label("files__echo", echo) == "Allow files's tools for this conversation"
    grants = Grants()
    grants.allow("files__echo", echo)
    other = type("Other", (), {"server_name": "files"})()
    assert grants.covers("files__write", other)
    assert not grants.covers("web__get", type("W", (), {"server_name": "web"})())
    assert not grants.covers("plain", tools[0])
    assert grants.lines() == ["MCP server files: its tools allowed for this conversation"]


def _turn(*calls: ToolCall) -> TurnContext:
    message = AssistantMessage(content=list(calls), api="faux", provider="faux", model="m")
    return TurnContext(message=message, tool_results=[], context=AgentContext(), new_messages=[])


def test_the_loop_guard_asks_before_the_third_identical_call() -> None:
    cards = Cards()
    clicks = Clicks(cards, ["approve", "deny"])
    guard = LoopGuard(3)
    peek = ToolCall(id="p", name="inspect_variable", arguments={"name": "x"})

    async def scenario() -> list[Any]:
        gate = ApprovalGate("ask", request=clicks, grants=Grants(), grant_ui=cards, guard=guard)
        out = []
        for n in range(1, 5):
            call = ToolCall(id=f"p{n}", name=peek.name, arguments=peek.arguments)
            out.append(await gate(deciding(call)))
            out.append(guard.after_turn(_turn(call)))
        return out

    out = asyncio.run(scenario())
    assert out[:4] == [None, False, None, False]  # two in a row run without asking
    assert out[4:6] == [None, False]  # the third: asked, approved, runs
    assert clicks.asked == ["p3", "p4"]
    blocked, stop = out[6], out[7]
    assert blocked is not None
    assert blocked.block
    assert "4th identical call" in (blocked.reason or "")
    assert stop is True
    assert "the 4th did not run" in (guard.notice() or "")
    assert cards.offered == {}  # a loop question offers no grant


def test_where_nobody_can_click_the_third_identical_call_does_not_run() -> None:
    guard = LoopGuard(3)

    async def scenario() -> list[Any]:
        gate = ApprovalGate("deny", guard=guard)
        return [
            await gate(deciding(ToolCall(id=f"p{n}", name="list_variables", arguments={})))
            for n in range(3)
        ]

    first, second, third = asyncio.run(scenario())
    assert first is None
    assert second is None
    assert third is not None
    assert third.block
    assert guard.tripped == "list_variables"


def _tool_call_events(state: ViewState, call: ToolCall, *, error: bool) -> None:
    from pi_notebook.agent.types import ToolExecutionEndEvent, ToolExecutionStartEvent

    reduce(state, ToolExecutionStartEvent(tool_call_id=call.id, tool_name=call.name, args=call.arguments))
    result = AgentToolResult(content=[TextContent(text="boom" if error else "ok")])
    reduce(
        state,
        ToolExecutionEndEvent(tool_call_id=call.id, tool_name=call.name, result=result, is_error=error),
    )


def test_a_card_says_it_repeats_an_earlier_call_and_how_that_ended() -> None:
    state = ViewState(prompt="p")
    _tool_call_events(state, code("a", "1/0"), error=True)
    _tool_call_events(state, code("b", "2"), error=False)
    _tool_call_events(state, code("c", "1/0"), error=False)
    card = state.tool_card("c")
    assert card is not None
    assert card.same_as == "same as call 1, which failed"
    assert "[tool] run_code (done) · same as call 1, which failed" in render_text(state)


def _line(shell: Any, text: str) -> str:
    from IPython.utils.capture import capture_output

    with capture_output() as captured:
        shell.run_line_magic("pi", text)
    return str(captured.stdout)


def test_pi_approvals_lists_clears_and_reset_forgets(ip: Any, faux: FauxRegistration) -> None:
    from IPython.core.error import UsageError

    from pi_notebook.notebook.state import state_for

    assert "no grants (it has not started yet)" in _line(ip, "--name other approvals")
    grants = state_for(ip).conversations.get().grants
    assert "no grants; every call that needs approval asks" in _line(ip, "approvals")
    grants.tools.add("run_code")
    grants.servers.add("files")
    listed = _line(ip, "approvals")
    assert "  tool run_code: allowed for this conversation" in listed
    assert "  MCP server files: its tools allowed for this conversation" in listed
    assert "granted: run_code, files's tools (%pi approvals)" in _line(ip, "status")
    assert "cleared 2 grants; its tools ask again" in _line(ip, "approvals clear")
    assert grants.lines() == []
    assert "granted:" not in _line(ip, "status")
    grants.tools.add("run_code")
    _line(ip, "reset")  # a new conversation asks again
    assert grants.lines() == []
    with pytest.raises(UsageError, match="takes nothing or 'clear'"):
        ip.run_line_magic("pi", "approvals forget")
    assert "approvals [clear]" in _line(ip, "help")
