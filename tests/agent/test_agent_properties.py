"""Property tests: random scripts of text, tool calls (ok, failing, slow, unknown, invalid,
sync), error and length stops, in parallel or sequential mode, with an abort at a random event
index. Whatever happens: no exception escapes ``prompt``, exactly one ``agent_end`` closes the
run, every ``*_start`` pairs with its ``*_end``, and every tool call of a completed assistant
message in the transcript has exactly one result (aborted/failed messages, which providers
never replay, have none)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

from agent_helpers import ECHO_SCHEMA
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_notebook.agent import Agent, AgentEvent, AgentTool, AgentToolResult, ToolExecutionMode
from pi_notebook.ai.abort import AbortSignal
from pi_notebook.ai.entry import stream_simple
from pi_notebook.ai.faux import faux_assistant_message, faux_text, faux_tool_call, register_faux_provider
from pi_notebook.ai.types import TextContent


async def _ok(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
    on_update(AgentToolResult(content=[TextContent(text="half")]))
    await asyncio.sleep(0)
    return AgentToolResult(content=[TextContent(text=f"ok {params['value']}")], details={})


async def _fail(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
    raise RuntimeError("tool failed")


async def _slow(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
    try:
        await asyncio.wait_for(signal.wait(), 0.005)
    except TimeoutError:
        return AgentToolResult(content=[TextContent(text="slept")], details={})
    raise RuntimeError("aborted while sleeping")


def _sync(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
    on_update(AgentToolResult(content=[TextContent(text="thread")]))
    time.sleep(0.001)
    return AgentToolResult(content=[TextContent(text="sync")], details={})


TOOLS = [
    AgentTool(name=name, description=name, parameters=ECHO_SCHEMA, execute=fn)
    for name, fn in (("ok", _ok), ("fail", _fail), ("slow", _slow), ("sync", _sync))
]

call_kind = st.sampled_from(["ok", "fail", "slow", "sync", "unknown", "invalid"])
turn = st.one_of(
    st.tuples(st.just("text"), st.text(alphabet="abc xyz", min_size=0, max_size=12)),
    st.tuples(
        st.just("tools"), st.lists(call_kind, min_size=1, max_size=3), st.sampled_from(["toolUse", "length"])
    ),
    st.tuples(st.just("error"), st.text(alphabet="ab", min_size=0, max_size=6)),
)
scripts = st.lists(turn, min_size=1, max_size=4)
# An abort at a random event index, or at the n-th event of one kind (which lands in tool
# preflight, mid-batch or between turns far more often than a uniform index does).
abort_points = st.one_of(
    st.none(),
    st.tuples(st.just("index"), st.integers(min_value=1, max_value=60)),
    st.tuples(
        st.sampled_from(
            [
                "message_update",
                "message_end",
                "tool_execution_start",
                "tool_execution_update",
                "tool_execution_end",
                "turn_end",
                "turn_start",
            ]
        ),
        st.integers(min_value=1, max_value=3),
    ),
)


def build_response(step: tuple[Any, ...], index: int) -> Any:
    if step[0] == "text":
        return faux_assistant_message(step[1] or "ok")
    if step[0] == "error":
        return faux_assistant_message(step[1] or "x", stop_reason="error", error_message="scripted failure")
    calls = []
    for n, kind in enumerate(step[1]):
        name = {"unknown": "missing", "invalid": "ok"}.get(kind, kind)
        args: dict[str, Any] = {"value": []} if kind == "invalid" else {"value": f"v{n}"}
        calls.append(faux_tool_call(name, args, id=f"t{index}-{n}"))
    return faux_assistant_message([faux_text("calling"), *calls], stop_reason=step[2])


def check_pairs(events: list[AgentEvent]) -> None:
    kinds = [e.type for e in events]
    assert kinds.count("agent_end") == 1
    assert kinds[0] == "agent_start"
    assert kinds[-1] == "agent_end"
    turn_open = message_open = False
    open_tools: set[str] = set()
    for event in events[1:-1]:
        kind = event.type
        if kind in ("turn_start", "turn_end"):
            assert turn_open == (kind == "turn_end"), kinds
            turn_open = kind == "turn_start"
        elif kind in ("message_start", "message_end"):
            assert message_open == (kind == "message_end"), kinds
            message_open = kind == "message_start"
        elif kind == "message_update":
            assert message_open
        elif kind == "tool_execution_start":
            assert event.tool_call_id not in open_tools  # type: ignore[union-attr]
            open_tools.add(event.tool_call_id)  # type: ignore[union-attr]
        elif kind in ("tool_execution_update", "tool_execution_end"):
            assert event.tool_call_id in open_tools  # type: ignore[union-attr]
            if kind == "tool_execution_end":
                open_tools.discard(event.tool_call_id)  # type: ignore[union-attr]
        assert kind not in ("agent_start", "agent_end")
    assert not turn_open
    assert not message_open
    assert not open_tools


def check_transcript(messages: list[Any]) -> None:
    results = Counter(m.tool_call_id for m in messages if m.role == "toolResult")
    expected: Counter[str] = Counter()
    for m in messages:
        if m.role == "assistant":
            ids = [b.id for b in m.content if b.type == "toolCall"]
            if m.stop_reason in ("error", "aborted"):
                assert not any(results[i] for i in ids)
            else:
                expected.update(ids)
    assert results == expected


async def scenario(
    script: list[tuple[Any, ...]], abort_point: tuple[str, int] | None, mode: ToolExecutionMode
) -> None:
    faux = register_faux_provider(token_size={"min": 1, "max": 1})
    try:
        faux.set_responses([build_response(step, i) for i, step in enumerate(script)])
        agent = Agent(
            stream_fn=stream_simple,
            initial_state={"model": faux.get_model(), "tools": TOOLS},
            tool_execution=mode,
        )
        events: list[AgentEvent] = []
        aborted_before_end = False

        def listener(event: AgentEvent, signal: AbortSignal) -> None:
            nonlocal aborted_before_end
            events.append(event)
            if abort_point is None or signal.aborted:
                return
            kind, n = abort_point
            seen = len(events) if kind == "index" else sum(e.type == kind for e in events)
            if kind in ("index", event.type) and seen == n:
                agent.abort()
                aborted_before_end = event.type != "agent_end"

        agent.subscribe(listener)
        await asyncio.wait_for(agent.prompt("go"), 10)  # no exception may escape
        check_pairs(events)
        check_transcript(agent.state.messages)
        assert agent.state.is_streaming is False
        assert agent.state.pending_tool_calls == frozenset()
        if aborted_before_end:
            assert agent.state.error_message is not None
    finally:
        faux.unregister()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=scripts, abort_point=abort_points, mode=st.sampled_from(["parallel", "sequential"]))
def test_every_run_is_complete_and_replayable(
    script: list[tuple[Any, ...]], abort_point: tuple[str, int] | None, mode: ToolExecutionMode
) -> None:
    asyncio.run(scenario(script, abort_point, mode))
