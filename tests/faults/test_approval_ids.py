"""Approvals bound to the call, over a loopback server of each wire API.

A server may send a tool call with no id, or the id of an earlier call (servers that number the
calls of each response send ``call_0`` every turn). Before the fix, the gate remembered an
approval by id alone: a second call under an approved id ran without asking, whatever its
tool and arguments, and ``delete_cells`` did not ask again. Here the real stack runs (provider
over loopback HTTP -> agent loop -> ``Agent``) with the notebook's approval gate as its
``before_tool_call`` hook and a user who answers each question from a script; the view's
reducer hears the events, as the tool cards do.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from faults.invariants import Recorder, check_run
from faults.wire import APIS, WIRES
from loopback import LoopbackServer, Reply

from pi_notebook.agent import Agent, AgentTool, AgentToolResult
from pi_notebook.ai import stream_simple
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_tool_call
from pi_notebook.ai.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage
from pi_notebook.notebook.run.approval import ApprovalGate
from pi_notebook.notebook.view.reduce import reduce
from pi_notebook.notebook.view.state import ToolCard, ViewState

RUN_BOUND_S = 20.0
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}


def gated_tool(name: str, ran: list[str]) -> AgentTool:
    """A state-changing tool (``requires_approval``) that records the code it was given."""

    async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        ran.append(args["code"])
        return AgentToolResult(content=[TextContent(text=f"ran {args['code']}")])

    return AgentTool(
        name=name, description="Changes state.", parameters=SCHEMA, execute=execute, requires_approval=True
    )


class User:
    """Answers the gate's questions in order, recording the card each one was asked on."""

    def __init__(self, view: ViewState, answers: list[bool]) -> None:
        self.view = view
        self.answers: Iterator[bool] = iter(answers)
        self.asked: list[tuple[str, Any]] = []

    async def request(self, tool_call_id: str) -> bool:
        card = self.view.tool_card(tool_call_id)
        self.asked.append((tool_call_id, card.args if card is not None else None))
        return next(self.answers, False)


def stream_fn(client: httpx.AsyncClient) -> Any:
    def stream(model: Any, context: Any, options: Any) -> Any:
        options = copy.copy(options)
        options.http_client = client
        options.timeout_ms = 10_000
        return stream_simple(model, context, options)

    return stream


async def run(
    api: str,
    loopback: LoopbackServer,
    client: httpx.AsyncClient,
    turns: list[tuple[str | None, str]],
    *,
    tool: str,
    policy: Any,
    answers: list[bool],
) -> tuple[Agent, User, list[str], ViewState, Recorder]:
    """One prompt whose model makes one ``tool`` call per turn of ``turns`` (its id, ``None``
    for none, and its code), then answers; the user answers the questions with ``answers``."""
    wire = WIRES[api]
    for call_id, code in turns:
        loopback.queue(
            Reply(200, wire.tool_script(call_id, with_text=False, name=tool, args={"code": code}).parts())
        )
    loopback.queue(Reply(200, wire.text_script("Done.").parts()))
    ran: list[str] = []
    view = ViewState(prompt="go")
    user = User(view, answers)
    gate = ApprovalGate(policy, request=user.request if policy == "ask" or tool == "delete_cells" else None)
    agent = Agent(
        stream_fn=stream_fn(client),
        get_api_key=lambda provider: "test-key",
        before_tool_call=gate,
        initial_state={"model": wire.model(loopback.url), "tools": [gated_tool(tool, ran)]},
    )
    recorder = Recorder()
    agent.subscribe(recorder)

    def show(event: Any, *rest: Any) -> None:
        reduce(view, event)

    agent.subscribe(show)
    await asyncio.wait_for(agent.prompt("go"), RUN_BOUND_S)
    return agent, user, ran, view, recorder


def calls_and_results(agent: Agent) -> tuple[list[ToolCall], list[ToolResultMessage]]:
    messages = agent.state.messages
    calls = [
        b for m in messages if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, ToolCall)
    ]
    return calls, [m for m in messages if isinstance(m, ToolResultMessage)]


def sent_ids(api: str, body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The ids of the calls and of the results the last request replays, in the API's fields."""
    if api == "openai-completions":
        msgs = body["messages"]
        calls = [c["id"] for m in msgs if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        return calls, [m["tool_call_id"] for m in msgs if m["role"] == "tool"]
    if api == "openai-responses":
        items = body["input"]
        calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
        return calls, [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    if api == "anthropic-messages":
        blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
        calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
        return calls, [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    parts = [p for c in body["contents"] for p in c["parts"]]  # Gemini matches by order, not id
    calls = [p["functionCall"].get("id", "") for p in parts if "functionCall" in p]
    return calls, [p["functionResponse"].get("id", "") for p in parts if "functionResponse" in p]


def check_ids(api: str, agent: Agent, loopback: LoopbackServer, view: ViewState, turns: int) -> list[str]:
    """Every call has its own non-empty id, its result references it, the last request replays
    both alike, and every call has its own card (its arguments, not another call's)."""
    calls, results = calls_and_results(agent)
    ids = [c.id for c in calls]
    assert len(ids) == turns, ids
    assert all(ids), ids
    assert len(set(ids)) == turns, f"two calls share an id: {ids}"
    assert [r.tool_call_id for r in results] == ids
    sent_calls, sent_results = sent_ids(api, loopback.requests[-1].json)
    assert sent_calls == sent_results, (sent_calls, sent_results)
    if api != "google-generative-ai":  # Gemini 2.5 gets no ids: calls and results pair by order
        assert len(set(sent_calls)) == turns, sent_calls
        assert all(sent_calls), sent_calls
    cards = [item for item in view.items if isinstance(item, ToolCard)]
    assert [c.tool_call_id for c in cards] == ids
    assert [c.args for c in cards] == [c.arguments for c in calls]
    return ids


@pytest.mark.parametrize("api", APIS)
async def test_a_reused_id_asks_again_and_a_missing_id_gets_a_fresh_one(
    api: str, loopback: LoopbackServer, client: httpx.AsyncClient, loop_errors: list[dict[str, Any]]
) -> None:
    turns: list[tuple[str | None, str]] = [("call_0", "print(1)"), ("call_0", "rm -rf ~"), (None, "x = 2")]
    agent, user, ran, view, recorder = await run(
        api, loopback, client, turns, tool="run_code", policy="ask", answers=[True, False, True]
    )
    # three questions, each on its own call's card: the reused id asked again, and was denied
    assert [args for _, args in user.asked] == [{"code": code} for _, code in turns]
    assert ran == ["print(1)", "x = 2"]
    ids = check_ids(api, agent, loopback, view, 3)
    assert ids[0].split("|")[0] == "call_0"  # a server's unique id passes unchanged (Responses: call part)
    _, results = calls_and_results(agent)
    assert [r.is_error for r in results] == [False, True, False]
    check_run(agent, recorder, expect_stop="stop")
    assert not loop_errors, loop_errors


@pytest.mark.parametrize("api", APIS)
async def test_delete_cells_asks_every_time_even_under_auto(
    api: str, loopback: LoopbackServer, client: httpx.AsyncClient, loop_errors: list[dict[str, Any]]
) -> None:
    turns: list[tuple[str | None, str]] = [("call_0", "cell 1"), ("call_0", "every cell")]
    agent, user, ran, view, recorder = await run(
        api, loopback, client, turns, tool="delete_cells", policy="auto", answers=[True, False]
    )
    assert [args for _, args in user.asked] == [{"code": "cell 1"}, {"code": "every cell"}]
    assert ran == ["cell 1"]
    check_ids(api, agent, loopback, view, 2)
    check_run(agent, recorder, expect_stop="stop")
    assert not loop_errors, loop_errors


async def test_a_provider_that_keeps_a_reused_id_still_asks_and_gets_a_card_per_call(
    faux: FauxRegistration,
) -> None:
    """The faux provider keeps the ids it is given: the gate and the cards hold on their own."""
    turns = [("call_0", "print(1)"), ("call_0", "rm -rf ~")]
    faux.set_responses(
        [
            *(
                faux_assistant_message(
                    [faux_tool_call("run_code", {"code": code}, id=i)], stop_reason="toolUse"
                )
                for i, code in turns
            ),
            faux_assistant_message("Done."),
        ]
    )
    ran: list[str] = []
    view = ViewState(prompt="go")
    user = User(view, [True, False])

    def show(event: Any, *rest: Any) -> None:
        reduce(view, event)

    agent = Agent(
        before_tool_call=ApprovalGate("ask", request=user.request),
        initial_state={"model": faux.get_model(), "tools": [gated_tool("run_code", ran)]},
    )
    agent.subscribe(show)
    await asyncio.wait_for(agent.prompt("go"), RUN_BOUND_S)
    assert [args for _, args in user.asked] == [{"code": code} for _, code in turns]
    assert ran == ["print(1)"]
    cards = [item for item in view.items if isinstance(item, ToolCard)]
    assert [(c.args, c.status) for c in cards] == [
        ({"code": "print(1)"}, "done"),
        ({"code": "rm -rf ~"}, "error"),
    ]
