"""Tool, hook and listener faults, and an abort at every event of a run, with the faux model.

Pi has no per-tool timeout: a tool is bounded by the abort signal it is handed. A tool that
honours the signal ends when ``abort()`` is called; one that ignores it ends only when the
task awaiting ``prompt()`` is cancelled twice (the ``Agent``'s hard stop). Either way the run
closes with every start paired with its end and every tool call answered.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from faults.invariants import Recorder, check_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_notebook.agent import Agent, AgentTool, AgentToolResult
from pi_notebook.ai.faux import (
    FauxRegistration,
    faux_assistant_message,
    faux_text,
    faux_tool_call,
    register_faux_provider,
)
from pi_notebook.ai.types import AssistantMessage, TextContent, ToolResultMessage

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
BOUND_S = 10.0


def make_tool(execute: Callable[..., Any], name: str = "work") -> AgentTool:
    return AgentTool(name=name, description="Does work.", parameters=SCHEMA, execute=execute)


def tool_turn(*names: str) -> AssistantMessage:
    calls = [faux_tool_call(name, {"n": i}, id=f"call_{i}") for i, name in enumerate(names)]
    return faux_assistant_message([faux_text("Working on it."), *calls], stop_reason="toolUse")


def script(faux: FauxRegistration, *names: str, answer: str = "All done.") -> None:
    faux.set_responses([tool_turn(*names), faux_assistant_message(answer)])


def make_agent(faux: FauxRegistration, tools: list[AgentTool], **options: Any) -> tuple[Agent, Recorder]:
    agent = Agent(initial_state={"model": faux.get_model(), "tools": tools}, **options)
    recorder = Recorder()
    agent.subscribe(recorder)
    return agent, recorder


async def prompt_bounded(agent: Agent) -> None:
    await asyncio.wait_for(agent.prompt("go"), BOUND_S)


def results(agent: Agent) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


def result_text(result: ToolResultMessage) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


# --- tools that fail ----------------------------------------------------------------------------


async def test_a_tool_that_raises_becomes_an_error_result(faux: FauxRegistration) -> None:
    def explode(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        raise RuntimeError("disk on fire")

    script(faux, "work")
    agent, recorder = make_agent(faux, [make_tool(explode)])
    await prompt_bounded(agent)
    check_run(agent, recorder, expect_stop="stop")
    [result] = results(agent)
    assert result.is_error
    assert result_text(result) == "disk on fire"


INVALID = (
    "Tool work returned an invalid result: content must be a list of TextContent or ImageContent blocks, not "
)


@pytest.mark.parametrize(
    ("value", "expected", "is_error"),
    [
        (None, "null", False),
        (42, "42", False),
        ({"a": 1}, '{"a": 1}', False),
        ({1, 2}, "{1, 2}", False),
        (b"\xff\x00bytes", "b'\\xff\\x00bytes'", False),
        (AgentToolResult(content=[{"type": "text", "text": "a dict"}]), "a dict", False),  # type: ignore[list-item]
        (AgentToolResult(content=None), "", False),  # type: ignore[arg-type]
        (AgentToolResult(content="not a list"), INVALID + "str", True),  # type: ignore[arg-type]
        (AgentToolResult(content=[42]), INVALID + "a list holding int", True),  # type: ignore[list-item]
        (AgentToolResult(content=[{"type": "bogus"}]), INVALID + "a list holding dict", True),  # type: ignore[list-item]
    ],
    ids=["none", "int", "dict", "set", "bytes", "dict-blocks", "none-content", "str", "ints", "bogus-blocks"],
)
async def test_a_tool_that_returns_garbage(
    faux: FauxRegistration, value: Any, expected: str, is_error: bool
) -> None:
    async def garbage(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        return value

    script(faux, "work")
    agent, recorder = make_agent(faux, [make_tool(garbage)])
    await prompt_bounded(agent)
    check_run(agent, recorder, expect_stop="stop")
    [result] = results(agent)
    assert (result.is_error, result_text(result)) == (is_error, expected)
    assert all(isinstance(block, TextContent) for block in result.content), result.content


async def test_an_after_tool_call_hook_that_returns_garbage(faux: FauxRegistration) -> None:
    async def work(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        return "ok"

    def after(context: Any, signal: Any) -> Any:
        return {"content": "replaced by a plain string"}

    script(faux, "work")
    agent, recorder = make_agent(faux, [make_tool(work)], after_tool_call=after)
    await prompt_bounded(agent)
    check_run(agent, recorder, expect_stop="stop")
    [result] = results(agent)
    assert (result.is_error, result_text(result)) == (True, INVALID + "str")


async def test_on_update_after_the_tool_settled_is_dropped(faux: FauxRegistration) -> None:
    late: list[Callable[[AgentToolResult], None]] = []

    async def early_return(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        on_update(AgentToolResult(content=[TextContent(text="halfway")]))
        late.append(on_update)
        return "finished"

    def call_late(index: int, event: Any) -> None:
        if event.type == "tool_execution_end":
            late[0](AgentToolResult(content=[TextContent(text="too late, same thread")]))
            worker = threading.Thread(
                target=late[0], args=(AgentToolResult(content=[TextContent(text="too late, thread")]),)
            )
            worker.start()
            worker.join(10)
            assert not worker.is_alive()

    script(faux, "work")
    agent, recorder = make_agent(faux, [make_tool(early_return)])
    recorder.on_event = call_late
    await prompt_bounded(agent)
    await asyncio.sleep(0.01)  # a late update from the thread would arrive by now
    check_run(agent, recorder, expect_stop="stop")
    updates = [e for e in recorder.events if e.type == "tool_execution_update"]
    assert [u.partial_result.content[0].text for u in updates] == ["halfway"]  # type: ignore[union-attr]


# --- tools that hang ------------------------------------------------------------------------------


def abort_when(agent: Agent, kind: str, delay: float = 0.02) -> Callable[[int, Any], None]:
    def on_event(index: int, event: Any) -> None:
        if event.type == kind:
            asyncio.get_running_loop().call_later(delay, agent.abort)

    return on_event


async def test_a_hanging_async_tool_ends_on_abort(faux: FauxRegistration) -> None:
    async def hang(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        await signal.wait()
        raise RuntimeError("stopped: the run was aborted")

    script(faux, "work", "work")
    agent, recorder = make_agent(faux, [make_tool(hang)])
    recorder.on_event = abort_when(agent, "tool_execution_start")
    started = time.monotonic()
    await prompt_bounded(agent)
    assert time.monotonic() - started < 2
    check_run(agent, recorder)
    assert [r.is_error for r in results(agent)] == [True, True]
    assert agent.state.error_message == "Request was aborted"


async def test_a_hanging_sync_tool_in_a_worker_thread_ends_on_abort(faux: FauxRegistration) -> None:
    def hang(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        deadline = time.monotonic() + 5
        while not signal.aborted and time.monotonic() < deadline:
            time.sleep(0.005)
        raise RuntimeError("stopped: the run was aborted")

    script(faux, "work")
    agent, recorder = make_agent(faux, [make_tool(hang)], tool_execution="sequential")
    recorder.on_event = abort_when(agent, "tool_execution_start")
    started = time.monotonic()
    await prompt_bounded(agent)
    assert time.monotonic() - started < 2
    check_run(agent, recorder)
    [result] = results(agent)
    assert result.is_error


async def test_a_tool_that_ignores_abort_ends_when_the_prompt_is_cancelled_twice(
    faux: FauxRegistration,
) -> None:
    never, both_running = asyncio.Event(), asyncio.Event()
    running: list[str] = []

    async def deaf(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        running.append(tool_call_id)
        if len(running) == 2:
            both_running.set()
        await never.wait()  # ignores the signal
        return "unreachable"

    script(faux, "work", "work")
    agent, recorder = make_agent(faux, [make_tool(deaf)])
    task = asyncio.ensure_future(agent.prompt("go"))
    await asyncio.wait_for(both_running.wait(), BOUND_S)
    assert agent.state.pending_tool_calls == {"call_0", "call_1"}
    agent.abort()
    await asyncio.sleep(0.05)
    assert not task.done(), "abort() alone cannot end a tool that ignores its signal"
    task.cancel()  # the first cancellation aborts the run and waits for it
    await asyncio.sleep(0.05)
    assert not task.done()
    task.cancel()  # the second one stops it
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, BOUND_S)
    check_run(agent, recorder, expect_stop="aborted")
    assert agent.state.messages[-1].error_message == "Request was aborted"


# --- hooks and listeners that raise -----------------------------------------------------------------


async def test_a_before_tool_call_hook_that_raises_blocks_the_call(faux: FauxRegistration) -> None:
    ran: list[Any] = []

    async def work(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        ran.append(args)
        return "ok"

    def before(context: Any, signal: Any) -> Any:
        raise PermissionError("policy service unreachable")

    script(faux, "work")
    agent, recorder = make_agent(faux, [make_tool(work)], before_tool_call=before)
    await prompt_bounded(agent)
    check_run(agent, recorder, expect_stop="stop")
    assert ran == []
    [result] = results(agent)
    assert result.is_error
    assert result_text(result) == "policy service unreachable"


async def test_an_after_tool_call_hook_that_raises_replaces_the_result(faux: FauxRegistration) -> None:
    async def work(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        return "ok"

    async def after(context: Any, signal: Any) -> Any:
        raise ValueError("audit log full")

    script(faux, "work")
    agent, recorder = make_agent(faux, [make_tool(work)], after_tool_call=after)
    await prompt_bounded(agent)
    check_run(agent, recorder, expect_stop="stop")
    [result] = results(agent)
    assert result.is_error
    assert result_text(result) == "audit log full"


LISTENER_EVENTS = [
    "agent_start",
    "turn_start",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "turn_end",
    "agent_end",
]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("kind", LISTENER_EVENTS)
async def test_a_listener_that_raises_once(faux: FauxRegistration, kind: str, is_async: bool) -> None:
    """The listener's error fails the run, which closes with a failure turn whose message
    carries the error; ``prompt()`` returns and the agent takes the next prompt."""
    script(faux, "work")
    agent, recorder = make_agent(faux, [make_tool(_reporting_work)])
    raised: list[str] = []

    def maybe_raise(event: Any) -> None:
        if event.type == kind and not raised:
            raised.append(kind)
            raise RuntimeError(f"listener broke on {kind}")

    async def async_listener(event: Any, signal: Any) -> None:
        await asyncio.sleep(0)
        maybe_raise(event)

    agent.subscribe(async_listener if is_async else (lambda event, signal: maybe_raise(event)))
    await prompt_bounded(agent)
    assert raised == [kind]
    last = check_run(agent, recorder)
    if kind != "agent_end":  # after agent_end the run is over: nothing is left to fail
        assert (last.stop_reason, last.error_message) == ("error", f"listener broke on {kind}")
    if kind == "tool_execution_end":  # the tool did run: its real result is kept
        assert [(r.is_error, result_text(r)) for r in results(agent)] == [(False, "result 0")]
    faux.set_responses([faux_assistant_message("again")])
    recorder.events.clear()
    prior = len(agent.state.messages)
    await prompt_bounded(agent)
    check_run(agent, recorder, expect_stop="stop", prior=prior)


# --- a listener that acts at any event of a scripted run ------------------------------------------

_reference: dict[str, list[str]] = {}


async def _reporting_work(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
    on_update(AgentToolResult(content=[TextContent(text="halfway")]))
    await asyncio.sleep(0)
    if signal.aborted:
        raise RuntimeError("aborted while working")
    return f"result {args['n']}"


def _two_tool_run(faux: FauxRegistration, mode: str) -> tuple[Agent, Recorder]:
    script(faux, "work", "work", answer="Both done, thanks for waiting.")
    return make_agent(faux, [make_tool(_reporting_work)], tool_execution=mode)


async def _reference_types(faux: FauxRegistration, mode: str) -> list[str]:
    """The event types of the undisturbed run (the same every time: chunking is fixed)."""
    if mode not in _reference:
        agent, recorder = _two_tool_run(faux, mode)
        await prompt_bounded(agent)
        check_run(agent, recorder, expect_stop="stop")
        _reference[mode] = recorder.types
    return _reference[mode]


def _act_at(index: int, action: Callable[[], None], async_listener: bool) -> Callable[[int, Any], Any]:
    def on_event(i: int, event: Any) -> Any:
        if i != index:
            return None
        if not async_listener:
            action()
            return None

        async def later() -> None:
            await asyncio.sleep(0)
            action()

        return later()

    return on_event


async def test_the_scripted_run_is_long_enough(faux: FauxRegistration) -> None:
    for mode in ("parallel", "sequential"):
        types = await _reference_types(faux, mode)
        assert len(types) >= 30
        assert types.count("tool_execution_end") == 2


def _run_examples(scenario: Callable[[FauxRegistration], Any]) -> None:
    faux = register_faux_provider(token_size={"min": 1, "max": 1})
    try:
        asyncio.run(scenario(faux))
    finally:
        faux.unregister()


EXAMPLES = settings(
    max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
POSITION = st.floats(0, 1, exclude_max=True)
MODE = st.sampled_from(["parallel", "sequential"])


@EXAMPLES
@given(position=POSITION, mode=MODE, async_listener=st.booleans())
def test_abort_at_any_event(position: float, mode: str, async_listener: bool) -> None:
    """``abort()`` from a listener at any event of a two-tool run: the run closes, and no
    model call starts after the abort."""

    async def scenario(faux: FauxRegistration) -> None:
        types = await _reference_types(faux, mode)
        index = int(position * len(types))
        calls_before = faux.state.call_count
        agent, recorder = _two_tool_run(faux, mode)
        recorder.on_event = _act_at(index, agent.abort, async_listener)
        await prompt_bounded(agent)
        check_run(agent, recorder)
        # message_starts: the prompt, the tool turn, two results, then the second model call's
        second_call = [i for i, t in enumerate(types) if t == "message_start"][4]
        if index < second_call - 1:
            assert faux.state.call_count - calls_before == 1, "a model call after the abort"
            assert agent.state.error_message == "Request was aborted"

    _run_examples(scenario)


@EXAMPLES
@given(position=POSITION, mode=MODE, async_listener=st.booleans())
def test_a_listener_that_raises_at_any_event(position: float, mode: str, async_listener: bool) -> None:
    """A listener that raises at any event of a two-tool run: the run closes with the error."""

    async def scenario(faux: FauxRegistration) -> None:
        types = await _reference_types(faux, mode)
        index = int(position * len(types))
        agent, recorder = _two_tool_run(faux, mode)

        def fail() -> None:
            raise RuntimeError(f"listener broke at event {index}")

        recorder.on_event = _act_at(index, fail, async_listener)
        await prompt_bounded(agent)
        last = check_run(agent, recorder)
        if index < len(types) - 1:
            assert (last.stop_reason, last.error_message) == ("error", f"listener broke at event {index}")

    _run_examples(scenario)
