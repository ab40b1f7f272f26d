"""The invariant checks themselves catch what they claim to (a check that cannot fail proves
nothing): broken pairings, a missing or extra tool result, a reason-less error."""

from __future__ import annotations

from typing import Any

import pytest
from faults.invariants import check_pairing, check_replays, check_tool_results, reason_line

from pi_notebook.agent import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    AgentToolResult,
    MessageEndEvent,
    MessageStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from pi_notebook.ai.types import (
    AssistantMessage,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

USER = UserMessage(content=[TextContent(text="hi")], timestamp=1)


def assistant(stop: StopReason, *calls: str, error: str | None = None) -> AssistantMessage:
    content: list[Any] = [TextContent(text="ok"), *(ToolCall(id=c, name="t", arguments={}) for c in calls)]
    return AssistantMessage(
        content=content,
        api="openai-completions",
        provider="openai",
        model="gpt-x",
        usage=Usage(),
        stop_reason=stop,
        error_message=error,
        timestamp=2,
    )


def result(call_id: str) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call_id, tool_name="t", content=[TextContent(text="r")], is_error=False, timestamp=3
    )


def run(*middle: AgentEvent) -> list[AgentEvent]:
    return [AgentStartEvent(), TurnStartEvent(), *middle, TurnEndEvent(USER, []), AgentEndEvent([])]


def test_a_well_formed_run_passes() -> None:
    tool = AgentToolResult.error("x")
    check_pairing(
        run(
            MessageStartEvent(USER),
            MessageEndEvent(USER),
            ToolExecutionStartEvent("a", "t", {}),
            ToolExecutionEndEvent("a", "t", tool, True),
        )
    )


@pytest.mark.parametrize(
    "events",
    [
        run()[:-1],  # no agent_end
        [*run(), AgentEndEvent([])],  # two agent_ends
        run(MessageStartEvent(USER)),  # a message never ended
        run(MessageEndEvent(USER)),  # an end without a start
        run(ToolExecutionStartEvent("a", "t", {})),  # a tool never ended
        run(TurnStartEvent()),  # a nested turn
        [AgentStartEvent(), MessageStartEvent(USER), MessageEndEvent(USER), AgentEndEvent([])],  # no turn
    ],
    ids=[
        "no-agent-end",
        "two-agent-ends",
        "open-message",
        "stray-end",
        "open-tool",
        "nested-turn",
        "no-turn",
    ],
)
def test_broken_pairings_are_caught(events: list[AgentEvent]) -> None:
    with pytest.raises(AssertionError):
        check_pairing(events)


def test_tool_results_are_counted() -> None:
    check_tool_results([USER, assistant("toolUse", "a", "b"), result("a"), result("b"), assistant("stop")])
    check_tool_results([USER, assistant("error", "a", error="boom")])  # an errored turn runs no tools
    for broken in (
        [USER, assistant("toolUse", "a", "b"), result("a")],  # a call without a result
        [USER, assistant("toolUse", "a"), result("a"), result("a")],  # two results
        [USER, assistant("error", "a", error="boom"), result("a")],  # a result for a call never run
        [USER, result("z")],  # a result answering nothing
    ):
        with pytest.raises(AssertionError):
            check_tool_results(broken)


def test_replay_pairs_calls_with_results() -> None:
    # an unanswered call replays with a synthetic result, so replay alone cannot see it (the
    # result count above does); what replay checks is every API's body pairing calls and results
    check_replays([USER, assistant("toolUse", "a"), result("a"), assistant("stop")], [])
    check_replays([USER, assistant("toolUse", "a")], [])


def test_an_error_needs_a_reason() -> None:
    assert reason_line(assistant("error", error="\n  429 rate limited\nretry later")) == "429 rate limited"
    with pytest.raises(AssertionError):
        reason_line(assistant("error", error="  \n "))
