"""Approval policies per tool on a real ``InteractiveShell`` with the faux provider: a user's own
``@tool(requires_approval=True)`` behind ``--approve``, the ``c.PiMagics.approvals`` map and its
precedence over a tool's own policy (``McpTool.approval``) and over ``--approve``, and
``ask_approval`` from a user hook. Nobody can click here (no kernel), so ``ask`` ends as a
denial; the clicks themselves are tested in a real kernel (``test_approval_kernel.py``)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401

from pi_notebook.agent import AgentTool, AgentToolResult, BeforeToolCallResult, tool
from pi_notebook.agent.types import AgentContext, BeforeToolCallContext
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_tool_call
from pi_notebook.ai.types import AssistantMessage, TextContent, ToolCall
from pi_notebook.notebook import conversations
from pi_notebook.notebook.config import check_approvals
from pi_notebook.notebook.run.approval import ApprovalGate, activate, ask_approval, deactivate, tool_policy

MODEL = "--model faux:faux-1"


@pytest.fixture
def magics(ip: Any) -> Iterator[Any]:
    found = ip.magics_manager.registry["PiMagics"]
    try:
        yield found
    finally:
        found.approvals = {}


def tool_use(name: str, args: dict[str, Any], call_id: str = "call-1") -> Any:
    return faux_assistant_message([faux_tool_call(name, args, id=call_id)], stop_reason="toolUse")


def results(ip: Any) -> list[tuple[str, bool, str]]:
    return [
        (m.tool_name, m.is_error, m.content[0].text)
        for m in ip.user_ns["_pi"].messages
        if m.role == "toolResult"
    ]


def plain(captured: Any) -> str:
    [found] = outputs(captured)
    return str(found["text/plain"])


touched: list[str] = []


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (pretend)."""
    touched.append(path)
    return f"deleted {path}"


@tool
def read_file(path: str) -> str:
    """Read a file (pretend)."""
    return f"contents of {path}"


def mcp_tool(name: str, approval: Any) -> AgentTool:
    """A real ``McpTool`` with its own policy; its execute stands in for the server call.
    (The MCP SDK is an optional extra: without it these tests skip.)"""
    pytest.importorskip("mcp_types")
    from pi_notebook.mcp import McpTool

    async def execute(*_: Any) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text=f"{name} ran")])

    return McpTool(
        name=name,
        description="An MCP tool.",
        parameters={"type": "object"},
        execute=execute,
        approval=approval,
    )


def with_tools(*tools: AgentTool) -> None:
    conversations.current().state.tools = list(tools)


# --- a user's tool behind --approve ----------------------------------------------------------------


def test_a_tool_that_requires_approval_is_denied_where_nobody_can_click(
    ip: Any, faux: FauxRegistration
) -> None:
    touched.clear()
    with_tools(delete_file, read_file)
    faux.set_responses(
        [tool_use("delete_file", {"path": "a.txt"}), tool_use("read_file", {"path": "b"}), "ok"]
    )
    _, captured = run(ip, f"%%pi {MODEL}\nclean up")
    assert touched == []
    [denied, read] = results(ip)
    assert denied[:2] == ("delete_file", True)
    assert "approval policy is 'deny'" in denied[2]
    assert read == ("read_file", False, "contents of b")
    assert "[tool] delete_file (denied)" in plain(captured)


def test_approve_auto_runs_a_tool_that_requires_approval(ip: Any, faux: FauxRegistration) -> None:
    touched.clear()
    with_tools(delete_file)
    faux.set_responses([tool_use("delete_file", {"path": "a.txt"}), "ok"])
    run(ip, f"%%pi {MODEL} --approve auto\nclean up")
    assert touched == ["a.txt"]
    assert results(ip) == [("delete_file", False, "deleted a.txt")]


def test_the_notice_names_the_gated_tools_of_the_run(ip: Any, faux: FauxRegistration) -> None:
    """The approval notice names what ``--approve`` governs in this run: the user's own
    ``requires_approval`` tools too, and it is left out when the run offers none of them."""
    with_tools(delete_file, read_file)
    faux.set_responses(["ok", "ok"])
    _, captured = run(ip, f"%%pi {MODEL} --tools none\nclean up")
    [notice] = [line for line in plain(captured).splitlines() if "--approve" in line]
    assert notice.endswith(": delete_file is blocked."), notice
    assert "run_code" not in notice
    with_tools(read_file)
    _, captured = run(ip, f"%%pi {MODEL} --tools none\nread only")
    assert "--approve" not in plain(captured)


# --- the per-tool map and its precedence --------------------------------------------------------


def test_a_map_entry_beats_approve_auto_and_patterns_match(
    ip: Any, magics: Any, faux: FauxRegistration
) -> None:
    touched.clear()
    magics.approvals = {"delete_*": "deny", "read_file": "deny"}
    with_tools(delete_file, read_file)
    faux.set_responses([tool_use("delete_file", {"path": "x"}), tool_use("read_file", {"path": "y"}), "ok"])
    run(ip, f"%%pi {MODEL} --approve auto\ngo")
    assert touched == []
    assert results(ip) == [
        (
            "delete_file",
            True,
            "Tool call denied: delete_file is blocked by c.PiMagics.approvals['delete_*'] ('deny').",
        ),
        (
            "read_file",
            True,
            "Tool call denied: read_file is blocked by c.PiMagics.approvals['read_file'] ('deny').",
        ),
    ]


def test_a_map_entry_auto_runs_run_code_under_approve_deny(
    ip: Any, magics: Any, faux: FauxRegistration
) -> None:
    magics.approvals = {"run_code": "auto"}
    faux.set_responses([tool_use("run_code", {"code": "allowed_by_map = 7"}), "ok"])
    run(ip, f"%%pi {MODEL} --approve deny\nset it")
    assert ip.user_ns["allowed_by_map"] == 7


def test_a_tools_own_policy_beats_approve(ip: Any, faux: FauxRegistration) -> None:
    with_tools(mcp_tool("srv__auto", "auto"), mcp_tool("srv__ask", "ask"), mcp_tool("srv__deny", "deny"))
    faux.set_responses(
        [tool_use("srv__auto", {}, "a"), tool_use("srv__ask", {}, "b"), tool_use("srv__deny", {}, "c"), "ok"]
    )
    run(ip, f"%%pi {MODEL} --approve auto\ngo")  # auto for the run; the MCP tools keep their own
    assert results(ip) == [
        ("srv__auto", False, "srv__auto ran"),
        (
            "srv__ask",
            True,
            "Tool call denied: srv__ask needs approval (its own approval policy is 'ask') and nobody can "
            "click Approve in this run.",
        ),
        ("srv__deny", True, "Tool call denied: srv__deny is blocked by its own approval policy ('deny')."),
    ]
    faux.set_responses([tool_use("srv__auto", {}, "d"), "ok"])
    run(ip, f"%%pi {MODEL} --approve deny\ngo")
    assert results(ip) == [("srv__auto", False, "srv__auto ran")]


def test_a_map_entry_beats_a_tools_own_policy(ip: Any, magics: Any, faux: FauxRegistration) -> None:
    magics.approvals = {"srv__*": "auto"}
    with_tools(mcp_tool("srv__deny", "deny"))
    faux.set_responses([tool_use("srv__deny", {}), "ok"])
    run(ip, f"%%pi {MODEL}\ngo")
    assert results(ip) == [("srv__deny", False, "srv__deny ran")]


def test_the_approvals_map_is_validated(magics: Any) -> None:
    with pytest.raises(Exception, match=r"PiMagics.approvals\['x'\] must be one of ask, auto, deny"):
        magics.approvals = {"x": "sometimes"}
    magics.approvals = {"X": "AUTO"}
    assert magics.approvals == {"X": "auto"}
    assert check_approvals({}) == {}


def test_precedence_table() -> None:
    ask, auto = mcp_tool("m", "ask"), mcp_tool("m", "auto")
    assert tool_policy("m", ask, {}, "auto").policy == "ask"  # own beats --approve
    assert tool_policy("m", auto, {"m": "deny"}, "auto").policy == "deny"  # map beats own
    assert tool_policy("m", auto, {"m*": "ask", "m": "deny"}, "auto").policy == "deny"  # exact beats pattern
    assert tool_policy("m", auto, {"*": "ask", "m*": "deny"}, "auto").policy == "deny"  # longer pattern
    assert tool_policy("delete_file", delete_file, {}, "ask").policy == "ask"  # the run's policy
    assert tool_policy("run_code", None, {}, "deny").policy == "deny"
    assert tool_policy("read_file", read_file, {}, "deny") is None  # not gated


# --- ask_approval from a user hook ---------------------------------------------------------------


def test_a_hook_can_ask_and_nobody_can_answer_here(ip: Any, faux: FauxRegistration) -> None:
    answers: list[bool] = []

    async def confirm_reads(ctx: BeforeToolCallContext, signal: Any) -> BeforeToolCallResult | None:
        if ctx.tool_call.name != "read_file":
            return None
        approved = await ask_approval(ctx.tool_call, "reads outside the project")
        answers.append(approved)
        return None if approved else BeforeToolCallResult(block=True, reason="The user said no.")

    agent = conversations.current().agent
    with_tools(read_file)
    agent.before_tool_call = confirm_reads
    faux.set_responses([tool_use("read_file", {"path": "/etc/passwd"}), "ok"])
    _, captured = run(ip, f"%%pi {MODEL} --approve auto\nread it")
    assert answers == [False]
    assert results(ip) == [("read_file", True, "The user said no.")]
    assert "[tool] read_file (denied)" in plain(captured)


def test_ask_approval_outside_a_run_says_where_it_works() -> None:
    with pytest.raises(RuntimeError, match="only while a %%pi run is going"):
        asyncio.run(ask_approval("call-1"))


def _context(name: str, call_id: str, tools: list[AgentTool]) -> BeforeToolCallContext:
    call = ToolCall(id=call_id, name=name, arguments={})
    message = AssistantMessage(content=[call], api="faux", provider="faux", model="m")
    return BeforeToolCallContext(
        assistant_message=message, tool_call=call, args={}, context=AgentContext(tools=tools)
    )


def test_the_gate_asks_once_per_call_and_shows_the_hooks_reason() -> None:
    asked: list[str] = []
    notes: list[tuple[str, str]] = []
    answers = iter([True, False])

    async def request(call_id: str) -> bool:
        asked.append(call_id)
        return next(answers)

    async def scenario() -> list[Any]:
        gate = ApprovalGate("ask", request=request, note=lambda i, r: notes.append((i, r)))
        approved = await gate.ask("c1", "because")
        first = await gate(_context("delete_file", "c1", [delete_file]))  # approved already: no 2nd ask
        second = await gate(_context("delete_file", "c2", [delete_file]))
        return [approved, first, second]

    approved, first, second = asyncio.run(scenario())
    assert (approved, first) == (True, None)
    assert second == BeforeToolCallResult(block=True, reason="Tool call denied by the user.")
    assert asked == ["c1", "c2"]
    assert notes == [("c1", "because"), ("c1", "")]  # shown while waiting, cleared once approved


def _deciding(call: ToolCall, tools: list[AgentTool]) -> BeforeToolCallContext:
    message = AssistantMessage(content=[call], api="faux", provider="faux", model="m")
    return BeforeToolCallContext(
        assistant_message=message, tool_call=call, args=call.arguments, context=AgentContext(tools=tools)
    )


def test_an_approval_holds_for_its_exact_call_once_never_for_its_id() -> None:
    """A hook's Approve counts for the call it was given for, once: another call under the
    same id (a server that reuses ids) is asked about, and so is the same call coming back; an
    approval given by id alone lapses at the gate's next decision."""
    asked: list[str] = []

    async def request(call_id: str) -> bool:
        asked.append(call_id)
        return True

    def call(call_id: str, path: str) -> ToolCall:
        return ToolCall(id=call_id, name="delete_file", arguments={"path": path})

    async def scenario() -> None:
        gate = ApprovalGate("ask", request=request)
        token = activate(gate)
        try:
            benign = call("c1", "a.txt")
            assert await ask_approval(benign, "a hook asks")
            assert await gate(_deciding(benign, [delete_file])) is None  # approved: not asked again
            assert await gate(_deciding(call("c1", "/"), [delete_file])) is None  # same id: asked
            assert await gate(_deciding(benign, [delete_file])) is None  # counted once: asked
            assert await ask_approval("c9")
            assert await gate(_deciding(call("c2", "b"), [delete_file])) is None  # c9's approval lapses
            assert await gate(_deciding(call("c9", "c"), [delete_file])) is None  # asked
        finally:
            deactivate(token)

    asyncio.run(scenario())
    assert asked == ["c1", "c1", "c1", "c9", "c2", "c9"]


def test_delete_cells_asks_even_after_a_hook_approved_it() -> None:
    asked: list[str] = []

    async def request(call_id: str) -> bool:
        asked.append(call_id)
        return True

    async def scenario() -> None:
        gate = ApprovalGate("auto", request=request)
        token = activate(gate)
        try:
            delete = ToolCall(id="d1", name="delete_cells", arguments={"cell_ids": ["x"]})
            assert await ask_approval(delete)
            assert await gate(_deciding(delete, [])) is None
        finally:
            deactivate(token)

    asyncio.run(scenario())
    assert asked == ["d1", "d1"]  # --approve auto and a hook's Approve: delete_cells still asks
