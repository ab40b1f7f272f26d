"""A server that closes the connection without answering (a kept-alive connection it had just
timed out, as llama-server does) costs nothing: every wire API's request is sent again once on
a fresh connection, and the run ends as if nothing happened. Real stack: provider over loopback
HTTP -> agent loop -> ``Agent`` with one tool."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from faults.invariants import Recorder, check_run, reason_line
from faults.test_fault_matrix import PHASES, faulted_stream_fn, lookup_tool, run_bounded
from faults.wire import APIS, TOOL_ARGS, WIRES
from loopback import LoopbackServer, Reply, hang_up

from pi_notebook.agent import Agent


def _agent(api: str, loopback: LoopbackServer, client: httpx.AsyncClient, calls: list[Any]) -> Agent:
    return Agent(
        stream_fn=faulted_stream_fn(client, -1, None),
        get_api_key=lambda provider: "test-key",
        initial_state={"model": WIRES[api].model(loopback.url), "tools": [lookup_tool(calls)]},
    )


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("api", APIS)
async def test_one_hang_up_is_survived(
    api: str, phase: str, loopback: LoopbackServer, client: httpx.AsyncClient, loop_errors: list[Any]
) -> None:
    wire = WIRES[api]
    if phase == "after_tool":  # the hang-up then strikes the connection this reply kept alive
        loopback.queue(Reply(200, wire.tool_script("call_1", with_text=False).parts()))
    loopback.queue(hang_up(), Reply(200, wire.text_script("Alpha is 1.").parts()))
    calls: list[Any] = []
    agent = _agent(api, loopback, client, calls)
    recorder = Recorder()
    agent.subscribe(recorder)
    await run_bounded(agent, "Look up alpha.")
    last = check_run(agent, recorder, expect_stop="stop")
    assert "Alpha is 1." in str(last.content)
    assert calls == ([TOOL_ARGS] if phase == "after_tool" else []), "the tool ran once"
    sent = loopback.requests[-2:]
    assert sent[0].body == sent[1].body, "the resend is the same request"
    assert not loop_errors, loop_errors


@pytest.mark.parametrize("api", APIS)
async def test_two_hang_ups_are_an_error(
    api: str, loopback: LoopbackServer, client: httpx.AsyncClient, loop_errors: list[Any]
) -> None:
    loopback.queue(hang_up(), hang_up())
    loopback.default = Reply(200, WIRES[api].text_script("Should never be asked.").parts())
    agent = _agent(api, loopback, client, [])
    recorder = Recorder()
    agent.subscribe(recorder)
    await run_bounded(agent, "Look up alpha.")
    last = check_run(agent, recorder, expect_stop="error")
    assert "Server disconnected without sending a response" in reason_line(last)
    assert len(loopback.requests) == 2
    assert not loop_errors, loop_errors
