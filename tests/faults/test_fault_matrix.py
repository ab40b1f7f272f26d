"""The fault matrix: every wire API x every network or protocol fault x where it strikes, run
through the real stack (provider over loopback HTTP -> agent loop -> ``Agent`` with one tool).

A fault strikes either the first request of the run (``first``) or the request after a
successful tool turn (``after_tool``, so the transcript holds a call and its result when the
fault hits). Every case must end the same way: ``prompt()`` returns, the run's events pair up,
the transcript replays into every API's request, and the last assistant message is an error
whose first line names the status or the failure.

How a request is bounded: ``Agent`` has no timeout option of its own; the loop hands its
config to the stream function as the stream options, so the stream function sets
``timeout_ms`` (httpx's connect/read/write/pool timeout) for the faulted request.
"""

from __future__ import annotations

import asyncio
import copy
import re
from typing import Any

import httpx
import pytest
from faults.invariants import Recorder, check_run, reason_line
from faults.wire import (
    APIS,
    FAULTS,
    STALL_SECONDS,
    TOOL_ARGS,
    TOOL_NAME,
    WIRES,
    closed_port_url,
    fault_reply,
)
from loopback import LoopbackServer, Reply

from pi_notebook.agent import Agent, AgentTool, AgentToolResult
from pi_notebook.ai import stream_simple
from pi_notebook.ai.types import AssistantMessage, TextContent, ToolResultMessage

PHASES = ("first", "after_tool")
CASES = [(api, fault, phase) for api in APIS for fault in FAULTS for phase in PHASES]
MATRIX_SIZE = len(CASES)
MATRIX_SUMMARY = (
    f"fault matrix: {len(APIS)} APIs x {len(FAULTS)} faults x {len(PHASES)} phases = {MATRIX_SIZE} cases"
)
"""Printed under the test summary (``tests/conftest.py``) when these tests ran."""

RUN_BOUND_S = 20.0  # a case that takes longer than this hangs
FAULT_TIMEOUT_MS = 400  # the faulted request's timeout (only the stalled stream ever reaches it)
NORMAL_TIMEOUT_MS = 10_000

# What the first line of the error message must say, per fault.
_DROPPED = r"connection|peer closed|incomplete|ended|terminated|closed"
REASONS: dict[str, str] = {
    "refused": r"connect",
    "drop_after_headers": _DROPPED,
    "drop_mid_text": _DROPPED,
    "drop_mid_tool_args": _DROPPED,
    "drop_before_final": _DROPPED,
    "malformed_sse": r"parse|json",
    "json_not_an_object": r"ended without|ended before|no terminal|stop reason|finish reason",
    "json_wrong_field_types": r"unexpected shape",
    "json_body_not_sse": r"ended without|ended before|error",
    "never_finishes": r"time(d)? ?out",
    "empty_body": r"ended without|ended before|no terminal|stop reason|finish reason|empty",
}


def lookup_tool(calls: list[Any]) -> AgentTool:
    async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        calls.append(args)
        return AgentToolResult(content=[TextContent(text=f"value of {args['key']}")])

    return AgentTool(
        name=TOOL_NAME,
        description="Look a key up.",
        parameters={"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
        execute=execute,
    )


def faulted_stream_fn(client: httpx.AsyncClient, fault_call: int, refused_url: str | None) -> Any:
    """``stream_simple`` with the test's client; call ``fault_call`` (0-based) gets the short
    timeout, and for ``refused`` a base URL where nothing listens."""
    count = [0]

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        index, count[0] = count[0], count[0] + 1
        options = copy.copy(options)
        options.http_client = client
        options.timeout_ms = FAULT_TIMEOUT_MS if index == fault_call else NORMAL_TIMEOUT_MS
        if index == fault_call and refused_url is not None:
            model = model.model_copy(update={"base_url": refused_url + WIRES[model.api].path})
        return stream_simple(model, context, options)

    return stream_fn


async def run_bounded(agent: Agent, text: str) -> None:
    """``prompt()`` must return (not raise, not hang) within ``RUN_BOUND_S``."""
    task = asyncio.ensure_future(agent.prompt(text))
    done, _ = await asyncio.wait({task}, timeout=RUN_BOUND_S)
    if task not in done:
        task.cancel()
        await asyncio.wait({task}, timeout=2)
        task.cancel()
        pytest.fail(f"prompt() did not return within {RUN_BOUND_S} s")
    task.result()  # nothing escapes


def test_matrix_size() -> None:
    assert MATRIX_SIZE >= 170
    print(f"\n{MATRIX_SUMMARY}")


@pytest.mark.parametrize(("api", "fault", "phase"), CASES)
async def test_fault(
    api: str,
    fault: str,
    phase: str,
    *,
    loopback: LoopbackServer,
    client: httpx.AsyncClient,
    loop_errors: list[dict[str, Any]],
) -> None:
    wire = WIRES[api]
    fault_call = 0 if phase == "first" else 1
    if phase == "after_tool":
        loopback.queue(Reply(200, wire.tool_script("call_1", with_text=False).parts()))
    faulted = wire.tool_script("call_2", with_text=True)
    if fault != "refused":
        loopback.queue(fault_reply(wire, fault, faulted))
    loopback.default = Reply(200, wire.text_script("Should never be asked.").parts())
    calls: list[Any] = []
    agent = Agent(
        stream_fn=faulted_stream_fn(client, fault_call, closed_port_url() if fault == "refused" else None),
        get_api_key=lambda provider: "test-key",
        initial_state={
            "model": wire.model(loopback.url),
            "tools": [lookup_tool(calls)],
            "system_prompt": "You look things up.",
        },
    )
    recorder = Recorder()
    agent.subscribe(recorder)

    await run_bounded(agent, "Look up alpha.")

    last = check_run(agent, recorder, expect_stop="error")
    line = reason_line(last)
    if fault.startswith("http_"):
        assert fault.split("_")[1] in line, line
    else:
        assert re.search(REASONS[fault], line, re.IGNORECASE), line
    assert not loop_errors, loop_errors
    # the turn before the fault ran its tool once and fed the result back
    assert calls == ([TOOL_ARGS] if phase == "after_tool" else [])
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == ([False] if phase == "after_tool" else [])
    requests = len(loopback.requests)
    assert requests == fault_call + (0 if fault == "refused" else 1), "no retry, no extra request"
    assert isinstance(agent.state.messages[-1], AssistantMessage)


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("api", APIS)
async def test_user_abort_while_the_answer_streams(
    api: str,
    phase: str,
    loopback: LoopbackServer,
    client: httpx.AsyncClient,
    loop_errors: list[dict[str, Any]],
) -> None:
    """``abort()`` while the reply's body stalls mid-text: the stream ends at once, aborted."""
    wire = WIRES[api]
    if phase == "after_tool":
        loopback.queue(Reply(200, wire.tool_script("call_1", with_text=False).parts()))
    loopback.queue(fault_reply(wire, "never_finishes", wire.tool_script("call_2", with_text=True)))
    agent = Agent(
        stream_fn=faulted_stream_fn(client, -1, None),  # no short timeout: only the abort ends it
        get_api_key=lambda provider: "test-key",
        initial_state={"model": wire.model(loopback.url), "tools": [lookup_tool([])]},
    )
    fault_call = 0 if phase == "first" else 1
    starts: list[int] = []

    def abort_while_stalled(index: int, event: Any) -> None:
        message = getattr(event, "message", None)
        if event.type == "message_start" and getattr(message, "role", None) == "assistant":
            starts.append(index)
            if len(starts) == fault_call + 1:  # the faulted reply's headers are in, its body stalls
                asyncio.get_running_loop().call_later(0.1, agent.abort)

    recorder = Recorder(abort_while_stalled)
    agent.subscribe(recorder)
    started = asyncio.get_running_loop().time()
    await run_bounded(agent, "Look up alpha.")
    assert asyncio.get_running_loop().time() - started < STALL_SECONDS / 2, "the abort did not end the stream"
    last = check_run(agent, recorder, expect_stop="aborted")
    assert last.error_message == "Request was aborted"
    assert len(starts) == fault_call + 1
    assert not loop_errors, loop_errors
