"""Pi's event traces, recorded by running Pi 0.83.0, as exact event sequences (``Agent`` + faux
provider with a fixed chunk size of 4 characters). Labels follow a compact notation (see
``agent_helpers.label``); ``message_update`` events are left out where the recorded traces
leave them out. A.8 is checked in its fixed form (docs/design.md, deviations 2 and 3)."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest
from agent_helpers import ECHO_SCHEMA, label, message_text

from pi_notebook.agent import Agent, AgentEvent, AgentTool, AgentToolResult, BeforeToolCallResult
from pi_notebook.ai.abort import AbortSignal
from pi_notebook.ai.entry import stream_simple
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_text, faux_tool_call
from pi_notebook.ai.types import TextContent

USER_PROMPT = ["agent_start", "turn_start", "message_start(user go)", "message_end(user go)"]
FINAL_TURN = [
    "turn_start",
    "message_start(assistant:pending)",
    "message_end(assistant:stop)",
    "turn_end(tr=)",
]


def chunks(text: str) -> int:
    return math.ceil(len(text) / 4)


def json_chunks(args: dict[str, Any]) -> int:
    return chunks(json.dumps(args, separators=(",", ":")))


def text_updates(text: str) -> list[str]:
    return [
        "message_update(text_start)",
        *["message_update(text_delta)"] * chunks(text),
        "message_update(text_end)",
    ]


def call_updates(args: dict[str, Any]) -> list[str]:
    deltas = ["message_update(toolcall_delta)"] * json_chunks(args)
    return ["message_update(toolcall_start)", *deltas, "message_update(toolcall_end)"]


class Run:
    """An ``Agent`` on the faux model that records labelled events."""

    def __init__(self, faux: FauxRegistration, tools: list[AgentTool] | None = None, **options: Any) -> None:
        self.agent = Agent(
            stream_fn=stream_simple,
            initial_state={"model": faux.get_model(), "tools": tools or []},
            **options,
        )
        self.events: list[AgentEvent] = []
        self.agent.subscribe(lambda event, signal: self.events.append(event))

    async def prompt(self, text: str = "go") -> None:
        await self.agent.prompt(text)

    def labels(self, updates: bool = False) -> list[str]:
        return [label(e) for e in self.events if updates or e.type != "message_update"]

    def roles(self) -> list[str]:
        out = []
        for m in self.agent.state.messages:
            role = m.role
            if role == "assistant":
                role = f"assistant:{m.stop_reason}"
            elif role == "toolResult":
                role = f"toolResult:{m.tool_call_id}{'(err)' if m.is_error else ''}"
            out.append(role)
        return out


def tool(name: str, behaviour: Any, schema: dict[str, Any] | None = None, **extra: Any) -> AgentTool:
    async def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        result: AgentToolResult = await behaviour(tool_call_id, params, signal, on_update)
        return result

    return AgentTool(name=name, description=name, parameters=schema or ECHO_SCHEMA, execute=execute, **extra)


def ok(text: str = "ok") -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=text)], details={})


async def test_a1_text_answer_with_streaming(faux: FauxRegistration) -> None:
    faux.set_responses([faux_assistant_message("Hello world!")])
    run = Run(faux)
    await run.prompt()
    assert run.labels(updates=True) == [
        *USER_PROMPT,
        "message_start(assistant:pending)",
        *text_updates("Hello world!"),
        "message_end(assistant:stop)",
        "turn_end(tr=)",
        "agent_end",
    ]
    assert run.roles() == ["user", "assistant:stop"]


async def test_a2_text_and_two_parallel_tool_calls_then_text(faux: FauxRegistration) -> None:
    async def wait(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        await asyncio.sleep(0.03 if params["value"] == "slow" else 0.001)
        return ok()

    t1, t2 = {"value": "slow"}, {"value": "fast"}
    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_text("Working."),
                    faux_tool_call("wait", t1, id="t1"),
                    faux_tool_call("wait", t2, id="t2"),
                ],
                stop_reason="toolUse",
            ),
            faux_assistant_message("Done."),
        ]
    )
    run = Run(faux, [tool("wait", wait)])
    await run.prompt()
    assert run.labels(updates=True) == [
        *USER_PROMPT,
        "message_start(assistant:pending)",
        *text_updates("Working."),
        *call_updates(t1),
        *call_updates(t2),
        "message_end(assistant:toolUse)",
        "tool_execution_start(t1)",
        "tool_execution_start(t2)",
        "tool_execution_end(t2,ok)",
        "tool_execution_end(t1,ok)",
        "message_start(toolResult t1)",
        "message_end(toolResult t1)",
        "message_start(toolResult t2)",
        "message_end(toolResult t2)",
        "turn_end(tr=t1,t2)",
        "turn_start",
        "message_start(assistant:pending)",
        *text_updates("Done."),
        "message_end(assistant:stop)",
        "turn_end(tr=)",
        "agent_end",
    ]


async def test_a3_parallel_batch_mixing_failures(faux: FauxRegistration) -> None:
    async def echo(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        on_update(ok("working"))
        if params["v"] == "boom":
            raise RuntimeError("echo exploded")
        if params["v"] == "slow":
            await asyncio.sleep(0.02)
        return ok(f"echo {params['v']}")

    schema = {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]}
    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_tool_call("nope", {}, id="a"),
                    faux_tool_call("echo", {"v": 5, "w": 1}, id="b"),
                    faux_tool_call("echo", {}, id="c"),
                    faux_tool_call("echo", {"v": "boom"}, id="d"),
                    faux_tool_call("echo", {"v": "slow"}, id="e"),
                ],
                stop_reason="toolUse",
            ),
            faux_assistant_message("Done."),
        ]
    )
    run = Run(faux, [tool("echo", echo, schema)])
    await run.prompt()
    results = [f"message_start(toolResult {i})|message_end(toolResult {i})".split("|") for i in "abcde"]
    assert run.labels() == [
        *USER_PROMPT,
        "message_start(assistant:pending)",
        "message_end(assistant:toolUse)",
        "tool_execution_start(a)",
        "tool_execution_end(a,err)",
        "tool_execution_start(b)",
        "tool_execution_start(c)",
        "tool_execution_end(c,err)",
        "tool_execution_start(d)",
        "tool_execution_start(e)",
        "tool_execution_update(b)",
        "tool_execution_update(d)",
        "tool_execution_update(e)",
        "tool_execution_end(b,ok)",
        "tool_execution_end(d,err)",
        "tool_execution_end(e,ok)",
        *[x for pair in results for x in pair],
        "turn_end(tr=a,b,c,d,e)",
        *FINAL_TURN,
        "agent_end",
    ]
    assert run.roles() == [
        "user",
        "assistant:toolUse",
        "toolResult:a(err)",
        "toolResult:b",
        "toolResult:c(err)",
        "toolResult:d(err)",
        "toolResult:e",
        "assistant:stop",
    ]
    by_id = {m.tool_call_id: message_text(m) for m in run.agent.state.messages if m.role == "toolResult"}
    assert by_id["a"] == "Tool nope not found"
    assert by_id["b"] == "echo 5"  # the number was converted to the schema's string
    assert by_id["c"].startswith('Validation failed for tool "echo":\n')
    assert by_id["d"] == "echo exploded"


async def _echo_with_update(
    tool_call_id: str, params: Any, signal: AbortSignal, on_update: Any
) -> AgentToolResult:
    on_update(ok("working"))
    await asyncio.sleep(0)
    return ok(params["value"])


async def test_a4_sequential_two_calls(faux: FauxRegistration) -> None:
    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_tool_call("echo", {"value": "1"}, id="a"),
                    faux_tool_call("echo", {"value": "2"}, id="b"),
                ],
                stop_reason="toolUse",
            ),
            faux_assistant_message("Done."),
        ]
    )
    run = Run(faux, [tool("echo", _echo_with_update)], tool_execution="sequential")
    await run.prompt()
    assert run.labels() == [
        *USER_PROMPT,
        "message_start(assistant:pending)",
        "message_end(assistant:toolUse)",
        "tool_execution_start(a)",
        "tool_execution_update(a)",
        "tool_execution_end(a,ok)",
        "message_start(toolResult a)",
        "message_end(toolResult a)",
        "tool_execution_start(b)",
        "tool_execution_update(b)",
        "tool_execution_end(b,ok)",
        "message_start(toolResult b)",
        "message_end(toolResult b)",
        "turn_end(tr=a,b)",
        *FINAL_TURN,
        "agent_end",
    ]


async def test_a5_error_stop_with_partial_content(faux: FauxRegistration) -> None:
    faux.set_responses(
        [faux_assistant_message("Half an ans", stop_reason="error", error_message="Provider melted")]
    )
    run = Run(faux)
    await run.prompt()
    assert run.labels() == [
        *USER_PROMPT,
        "message_start(assistant:pending)",
        "message_end(assistant:error)",
        "turn_end(tr=)",
        "agent_end",
    ]
    assert [m.role for m in run.events[-1].messages] == ["user", "assistant"]  # type: ignore[union-attr]
    assert run.agent.state.error_message == "Provider melted"


async def test_a5_error_without_a_start_event(faux: FauxRegistration) -> None:
    run = Run(faux)  # nothing queued: the faux provider answers with a lone error event
    await run.prompt()
    assert run.labels() == [
        *USER_PROMPT,
        "message_start(assistant:error)",
        "message_end(assistant:error)",
        "turn_end(tr=)",
        "agent_end",
    ]
    assert run.agent.state.error_message == "No more faux responses queued"


def _steering_tool(run_ref: list[Run], follow_up: bool) -> AgentTool:
    async def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        on_update(ok("working"))
        agent = run_ref[0].agent
        agent.steer("s1")
        agent.steer("s2")
        if follow_up:
            agent.follow_up("f1")
        return ok()

    return tool("steer", execute, {"type": "object", "properties": {}})


def _user_turn(text: str) -> list[str]:
    return [
        "turn_start",
        f"message_start(user {text})",
        f"message_end(user {text})",
        "message_start(assistant:pending)",
        "message_end(assistant:stop)",
        "turn_end(tr=)",
    ]


async def test_a6_steering_during_a_tool_one_at_a_time_plus_a_follow_up(faux: FauxRegistration) -> None:
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("steer", {}, id="a")], stop_reason="toolUse"),
            faux_assistant_message("r1"),
            faux_assistant_message("r2"),
            faux_assistant_message("r3"),
        ]
    )
    ref: list[Run] = []
    run = Run(faux, [_steering_tool(ref, follow_up=True)])
    ref.append(run)
    await run.prompt()
    assert run.labels() == [
        *USER_PROMPT,
        "message_start(assistant:pending)",
        "message_end(assistant:toolUse)",
        "tool_execution_start(a)",
        "tool_execution_update(a)",
        "tool_execution_end(a,ok)",
        "message_start(toolResult a)",
        "message_end(toolResult a)",
        "turn_end(tr=a)",
        *_user_turn("s1"),
        *_user_turn("s2"),
        *_user_turn("f1"),
        "agent_end",
    ]
    assert [m.role for m in run.events[-1].messages] == [  # type: ignore[union-attr]
        "user",
        "assistant",
        "toolResult",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]


async def test_a7_steering_mode_all(faux: FauxRegistration) -> None:
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("steer", {}, id="a")], stop_reason="toolUse"),
            faux_assistant_message("r1"),
        ]
    )
    ref: list[Run] = []
    run = Run(faux, [_steering_tool(ref, follow_up=False)], steering_mode="all")
    ref.append(run)
    await run.prompt()
    after_tool_turn = run.labels()[run.labels().index("turn_end(tr=a)") + 1 :]
    assert after_tool_turn == [
        "turn_start",
        "message_start(user s1)",
        "message_end(user s1)",
        "message_start(user s2)",
        "message_end(user s2)",
        "message_start(assistant:pending)",
        "message_end(assistant:stop)",
        "turn_end(tr=)",
        "agent_end",
    ]


async def _reject_on_abort(
    tool_call_id: str, params: Any, signal: AbortSignal, on_update: Any
) -> AgentToolResult:
    await signal.wait()
    raise RuntimeError(f"{params['value']} aborted")


@pytest.mark.parametrize("mode", ["parallel", "sequential"])
async def test_a8_abort_while_tools_run_fixed(faux: FauxRegistration, mode: str) -> None:
    """A.8 with deviations 2 and 3 of docs/design.md. Pi continues after ``turn_end(tr=a,b)``
    with ``turn_start, message_start(assistant:aborted), message_end(assistant:aborted),
    turn_end(tr=)`` (deviation 2 ends the run at the turn boundary instead), and in sequential
    mode gives ``b`` no events and no result (deviation 3 gives it start/end and an ``Operation
    aborted`` result). The run still leaves ``state.error_message == "Request was aborted"``, as
    in Pi."""
    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_tool_call("wait", {"value": "a"}, id="a"),
                    faux_tool_call("wait", {"value": "b"}, id="b"),
                ],
                stop_reason="toolUse",
            ),
            faux_assistant_message("never requested"),
        ]
    )
    run = Run(faux, [tool("wait", _reject_on_abort)], tool_execution=mode)
    starts = 0

    def abort_when_running(event: AgentEvent, signal: AbortSignal) -> None:
        nonlocal starts
        if event.type == "tool_execution_start":
            starts += 1
            if starts == (2 if mode == "parallel" else 1):
                asyncio.get_running_loop().call_later(0.01, run.agent.abort)

    run.agent.subscribe(abort_when_running)
    await run.prompt()
    if mode == "parallel":
        tools = [
            "tool_execution_start(a)",
            "tool_execution_start(b)",
            "tool_execution_end(a,err)",
            "tool_execution_end(b,err)",
            "message_start(toolResult a)",
            "message_end(toolResult a)",
            "message_start(toolResult b)",
            "message_end(toolResult b)",
        ]
    else:
        tools = [
            "tool_execution_start(a)",
            "tool_execution_end(a,err)",
            "message_start(toolResult a)",
            "message_end(toolResult a)",
            "tool_execution_start(b)",
            "tool_execution_end(b,err)",
            "message_start(toolResult b)",
            "message_end(toolResult b)",
        ]
    assert run.labels() == [
        *USER_PROMPT,
        "message_start(assistant:pending)",
        "message_end(assistant:toolUse)",
        *tools,
        "turn_end(tr=a,b)",
        "agent_end",
    ]
    texts = [message_text(m) for m in run.agent.state.messages if m.role == "toolResult"]
    assert texts == (["a aborted", "b aborted"] if mode == "parallel" else ["a aborted", "Operation aborted"])
    assert faux.state.call_count == 1  # no request after the abort
    assert run.agent.state.error_message == "Request was aborted"
    assert run.agent.state.is_streaming is False


async def test_a9_length_stop_with_a_tool_call(faux: FauxRegistration) -> None:
    executed: list[Any] = []

    async def record(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        executed.append(params)
        return ok()

    faux.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("echo", {"value": "trunc"}, id="a")], stop_reason="length"
            ),
            faux_assistant_message("Done."),
        ]
    )
    run = Run(faux, [tool("echo", record)])
    await run.prompt()
    assert run.labels() == [
        *USER_PROMPT,
        "message_start(assistant:pending)",
        "message_end(assistant:length)",
        "tool_execution_start(a)",
        "tool_execution_end(a,err)",
        "message_start(toolResult a)",
        "message_end(toolResult a)",
        "turn_end(tr=a)",
        *FINAL_TURN,
        "agent_end",
    ]
    assert executed == []
    result = next(m for m in run.agent.state.messages if m.role == "toolResult")
    assert message_text(result) == (
        'Tool call "echo" was not executed: the response hit the output token limit, so its arguments may be '
        "truncated. Re-issue the tool call with complete arguments."
    )


async def test_a10_before_tool_call_blocks(faux: FauxRegistration) -> None:
    async def never(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        raise AssertionError("a blocked tool must not run")

    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("echo", {"value": "x"}, id="a")], stop_reason="toolUse"),
            faux_assistant_message("Done."),
        ]
    )
    run = Run(
        faux, [tool("echo", never)], before_tool_call=lambda ctx, signal: BeforeToolCallResult(block=True)
    )
    await run.prompt()
    assert run.labels() == [
        *USER_PROMPT,
        "message_start(assistant:pending)",
        "message_end(assistant:toolUse)",
        "tool_execution_start(a)",
        "tool_execution_end(a,err)",
        "message_start(toolResult a)",
        "message_end(toolResult a)",
        "turn_end(tr=a)",
        *FINAL_TURN,
        "agent_end",
    ]
    result = next(m for m in run.agent.state.messages if m.role == "toolResult")
    assert message_text(result) == "Tool execution was blocked"


async def test_a11_steer_before_prompt(faux: FauxRegistration) -> None:
    faux.set_responses([faux_assistant_message("Hi.")])
    run = Run(faux)
    run.agent.steer("early")
    await run.prompt()
    assert run.labels() == [
        *USER_PROMPT,
        "message_start(user early)",
        "message_end(user early)",
        "message_start(assistant:pending)",
        "message_end(assistant:stop)",
        "turn_end(tr=)",
        "agent_end",
    ]


async def test_a12_convert_to_llm_throws(faux: FauxRegistration) -> None:
    def convert(messages: list[Any]) -> list[Any]:
        raise RuntimeError("convert failed")

    run = Run(faux, convert_to_llm=convert)
    await run.prompt()
    assert run.labels() == [
        *USER_PROMPT,
        "message_start(assistant:error)",
        "message_end(assistant:error)",
        "turn_end(tr=)",
        "agent_end",
    ]
    failure = run.agent.state.messages[-1]
    assert run.roles() == ["user", "assistant:error"]
    assert [b.model_dump() for b in failure.content] == [{"type": "text", "text": ""}]
    assert run.agent.state.error_message == "convert failed"


async def test_a12_listener_throws_on_assistant_message_end(faux: FauxRegistration) -> None:
    faux.set_responses([faux_assistant_message("Fine.")])
    run = Run(faux)

    def boom(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type == "message_end" and getattr(event.message, "stop_reason", None) == "stop":
            raise RuntimeError("listener boom")

    run.agent.subscribe(boom)
    await run.prompt()
    assert run.labels() == [
        *USER_PROMPT,
        "message_start(assistant:pending)",
        "message_end(assistant:stop)",
        "message_start(assistant:error)",
        "message_end(assistant:error)",
        "turn_end(tr=)",
        "agent_end",
    ]
    assert run.roles() == ["user", "assistant:stop", "assistant:error"]
    assert run.agent.state.error_message == "listener boom"
    assert run.agent.state.is_streaming is False
