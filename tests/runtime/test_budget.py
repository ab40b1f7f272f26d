"""Budgets of an ``AgentSession`` run and conversation: on the faux provider (its usage
estimate, priced with a priced faux model) and over real HTTP where usage arrives mid-stream
(OpenAI-compatible chunks that carry usage as they go; Anthropic's ``message_start`` usage).
Every stop must leave a transcript and a session file that replay: each tool call answered."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from anthropic_fixtures import make_model as anthropic_model
from anthropic_fixtures import message_end, message_start, text_block, tool_block
from loopback import Delay, LoopbackServer
from openai_fixtures import DONE, KEY, chunk
from openai_fixtures import make_model as openai_model

from pi_notebook import AgentSession
from pi_notebook.agent import tool
from pi_notebook.ai.faux import (
    FauxRegistration,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from pi_notebook.runtime import AgentSessionSettings, Budget, RetrySettings
from pi_notebook.runtime.budget import format_usd
from pi_notebook.session import SessionManager

FAST = AgentSessionSettings(retry=RetrySettings(base_delay_ms=1))
PRICES = {"input": 1000.0, "output": 1000.0, "cacheRead": 0.0, "cacheWrite": 0.0}
"""USD per million tokens: a tenth of a cent per token, so a short faux run costs cents."""

calls: list[int] = []


@tool
def step(n: int) -> str:
    """Record step n."""
    calls.append(n)
    return f"step {n} done"


@pytest.fixture
def priced() -> Any:
    registration = register_faux_provider(
        provider="faux-priced", models=[{"id": "priced", "cost": PRICES}], token_size={"min": 1, "max": 1}
    )
    yield registration
    registration.unregister()


def make(model: Any, tmp_path: Path, **kw: Any) -> AgentSession:
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    session = AgentSession.create(
        cwd=str(tmp_path), model=model, session_manager=manager, settings=FAST, tools=[step], **kw
    )
    session.agent.get_api_key = lambda provider: KEY
    return session


def reached(session: AgentSession) -> list[str]:
    seen: list[str] = []
    session.subscribe(lambda e: seen.append(e.reason), {"budget_reached"})  # type: ignore[union-attr]
    return seen


def tool_turn(n: int) -> Any:
    return faux_assistant_message([faux_tool_call("step", {"n": n}, id=f"c{n}")], stop_reason="toolUse")


def paced(*parts: Any) -> list[Any]:
    """The parts with a short pause after each, as a network delivers them: the client reads
    each event before the next arrives (unpaced, it can parse a whole reply at once)."""
    return [p for part in parts for p in (part, Delay(0.01))]


def assert_replays(session: AgentSession) -> None:
    """Every tool call of a whole answer has its result, in the live transcript and in the
    reopened file (an aborted answer is never sent again: providers drop it, as Pi does)."""
    assert session.session_file is not None
    reopened = SessionManager.open(session.session_file).build_session_context().messages
    for messages in (session.messages, reopened):
        whole = [m for m in messages if m.role == "assistant" and m.stop_reason not in ("aborted", "error")]
        wanted = [b.id for m in whole for b in m.content if b.type == "toolCall"]
        answered = [m.tool_call_id for m in messages if m.role == "toolResult"]
        assert wanted == answered
    live = [m.role for m in session.messages]  # a test may have cleared the live transcript
    assert [m.role for m in reopened][-len(live) :] == live


# --- the values ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"max_cost": 0},
        {"max_cost": -1.0},
        {"max_cost": math.nan},
        {"max_cost": math.inf},
        {"max_cost": True},
        {"max_total_tokens": 0},
        {"max_total_tokens": 1.5},
    ],
)
def test_a_budget_that_could_never_be_kept_is_refused(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="takes a positive"):
        Budget(**fields)


def test_dollars_read_as_cents_or_two_significant_digits() -> None:
    assert [format_usd(v) for v in (0.5, 0.523, 12.0, 1234.5, 0.0031, 0.00004, 0.0)] == [
        "$0.50",
        "$0.52",
        "$12.00",
        "$1,234.50",
        "$0.0031",
        "$0.000040",
        "$0.00",
    ]


async def test_a_cost_budget_on_a_model_without_prices_is_an_error(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    session = make(faux.get_model(), tmp_path)
    with pytest.raises(ValueError, match=r"max_cost needs the model's prices, and faux:faux-1 has none"):
        await session.prompt("hi", budget=Budget(max_cost=0.5))
    faux.set_responses(["fine"])
    await session.prompt("hi", budget=Budget(max_total_tokens=10_000))  # tokens still work
    assert session.messages[-1].stop_reason == "stop"
    assert session.budget_reason is None


# --- stopping ------------------------------------------------------------------------------------


async def test_a_token_budget_stops_at_the_answer_that_reaches_it(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    """The faux provider reports its whole estimate from an answer's first event, so the
    answer that reaches the budget stops there: its tool call never completes nor runs."""
    calls.clear()
    faux.set_responses([tool_turn(1), tool_turn(2), tool_turn(3), "never sent"])
    session = make(faux.get_model(), tmp_path)
    seen = reached(session)
    await session.prompt("go")
    per_turn = [m.usage for m in session.messages if m.role == "assistant"]
    session.agent.state.messages = []
    faux.set_responses([tool_turn(1), tool_turn(2), tool_turn(3), "never sent"])
    calls.clear()
    limit = sum(u.input + u.output for u in per_turn[:2])  # reached by the second answer exactly
    await session.prompt("go", budget=Budget(max_total_tokens=limit))
    assert calls == [1]
    assert [m.role for m in session.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert session.messages[-1].stop_reason == "aborted"
    assert faux.get_pending_response_count() == 2  # no third request
    reason = f"stopped: the run reached its budget of {limit:,} tokens ({limit:,} used)"
    assert seen == [reason]
    assert session.budget_reason == reason
    assert_replays(session)


async def test_a_cost_budget_stops_mid_answer_on_the_priced_estimate(
    priced: FauxRegistration, tmp_path: Path
) -> None:
    priced.set_responses([tool_turn(1), tool_turn(2), "done"])
    session = make(priced.get_model(), tmp_path)
    await session.prompt("go")  # a run without a budget: what each answer costs
    costs = [m.usage.cost.total for m in session.messages if m.role == "assistant"]
    assert len(costs) == 3
    assert all(c > 0.01 for c in costs)
    session.agent.state.messages = []
    priced.set_responses([tool_turn(1), tool_turn(2), "done"])
    calls.clear()
    limit = round(costs[0] + costs[1] / 2, 4)  # reached while the second answer streams
    await session.prompt("go", budget=Budget(max_cost=limit))
    assert calls == [1]
    second = session.messages[-1]
    assert second.role == "assistant"
    assert second.stop_reason == "aborted"
    spent = format_usd(costs[0] + costs[1])
    assert (
        session.budget_reason == f"stopped: the run reached its budget of {format_usd(limit)} ({spent} spent)"
    )
    assert_replays(session)


async def test_a_conversation_budget_spans_runs_and_refuses_the_next(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    faux.set_responses(["first", "second"])
    session = make(faux.get_model(), tmp_path)
    await session.prompt("one")
    first = session.spent.tokens
    session.budget = Budget(max_total_tokens=first + 1)
    await session.prompt("two")
    used = session.spent.tokens
    assert (
        session.budget_reason
        == f"stopped: the conversation reached its budget of {first + 1:,} tokens ({used:,} used)"
    )
    with pytest.raises(
        RuntimeError, match=r"^The conversation reached its budget .*: raise the session's budget"
    ):
        await session.prompt("three")
    session.budget = None
    faux.set_responses(["third"])
    await session.prompt("three")
    assert session.budget_reason is None
    assert session.spent.answers == 3


async def test_a_budget_stops_the_retries_too(faux: FauxRegistration, tmp_path: Path) -> None:
    failed = faux_assistant_message([], stop_reason="error", error_message="overloaded")
    faux.set_responses([failed, "recovered"])
    session = make(faux.get_model(), tmp_path)
    await session.prompt("hi", budget=Budget(max_total_tokens=3))
    assert faux.get_pending_response_count() == 1  # the budget ended the run: no retry
    assert session.budget_reason is not None
    assert session.is_idle


# --- over HTTP: usage that streams in -----------------------------------------------------------


def usage_chunk(text: str, prompt: int, completion: int) -> bytes:
    return chunk({"content": text}, usage={"prompt_tokens": prompt, "completion_tokens": completion})


async def test_usage_in_every_chunk_stops_mid_answer(loopback: LoopbackServer, tmp_path: Path) -> None:
    words = ["one ", "two ", "three ", "four ", "five "]
    loopback.queue_sse(
        [
            chunk({"role": "assistant", "content": ""}),
            *(part for i, w in enumerate(words) for part in (usage_chunk(w, 100, i + 1), Delay(0.02))),
            chunk({}, "stop"),
            DONE,
        ]
    )
    session = make(openai_model(loopback), tmp_path)
    await session.prompt("count", budget=Budget(max_total_tokens=103))
    answer = session.messages[-1]
    assert answer.stop_reason == "aborted"
    assert answer.content[0].text == "one two three "  # the partial answer is kept
    assert (answer.usage.input, answer.usage.output) == (100, 3)
    assert session.budget_reason == "stopped: the run reached its budget of 103 tokens (103 used)"
    assert_replays(session)


async def test_anthropic_input_usage_stops_a_request_before_its_answer(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """Anthropic reports the input in ``message_start`` and the output in ``message_delta``:
    the second request's input alone passes the budget, so that answer stops at its first
    content event, before any of its text."""
    model = anthropic_model(loopback)  # $5 / $25 per million input / output tokens
    loopback.queue_sse(
        [
            message_start(input_tokens=40_000),
            *tool_block(0, "toolu_1", "step", '{"n": ', "1}"),
            *message_end("tool_use", {"output_tokens": 100}),
        ]
    )
    loopback.queue_sse(
        [
            message_start(input_tokens=80_000),
            *(p for part in text_block(0, "never ", "shown") for p in (part, Delay(0.02))),
            *message_end("end_turn", {"output_tokens": 50}),
        ]
    )
    calls.clear()
    session = make(model, tmp_path)
    await session.prompt("go", budget=Budget(max_cost=0.50))
    assert calls == [1]
    answer = session.messages[-1]
    assert answer.role == "assistant"
    assert answer.stop_reason == "aborted"
    assert answer.usage.input == 80_000
    assert answer.content[0].text == ""
    spent = (40_000 + 80_000) * 5 / 1e6 + 101 * 25 / 1e6
    assert (
        session.budget_reason == f"stopped: the run reached its budget of $0.50 ({format_usd(spent)} spent)"
    )
    assert len(loopback.requests) == 2
    assert_replays(session)


async def test_anthropic_output_usage_stops_between_tool_calls(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    """The output arrives with ``message_delta``, so the second answer reaches the budget as
    it ends: its tool call gets an "Operation aborted" result instead of running, and no
    third request is made."""
    loopback.queue_sse(
        paced(
            message_start(input_tokens=900),
            *tool_block(0, "toolu_1", "step", '{"n": 1}'),
            *message_end("tool_use", {"output_tokens": 50}),
        )
    )
    loopback.queue_sse(
        paced(
            message_start(input_tokens=1000),
            *tool_block(0, "toolu_2", "step", '{"n": 2}'),
            *message_end("tool_use", {"output_tokens": 100}),
        )
    )
    calls.clear()
    session = make(anthropic_model(loopback), tmp_path)
    await session.prompt("go", budget=Budget(max_total_tokens=2000))
    assert calls == [1]
    results = [m for m in session.messages if m.role == "toolResult"]
    assert [(r.tool_call_id, r.is_error) for r in results] == [("toolu_1", False), ("toolu_2", True)]
    assert "Operation aborted" in results[1].content[0].text
    assert session.messages[-2].stop_reason == "toolUse"  # the answer itself is whole
    assert session.budget_reason == "stopped: the run reached its budget of 2,000 tokens (2,050 used)"
    assert len(loopback.requests) == 2
    assert_replays(session)


async def test_a_final_answer_past_the_budget_keeps_its_ending_and_no_follow_up_runs(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.queue_sse(
        paced(
            message_start(input_tokens=900),
            *text_block(0, "all ", "done"),
            *message_end("end_turn", {"output_tokens": 200}),
        )
    )
    session = make(anthropic_model(loopback), tmp_path)
    session.agent.follow_up("and then?")
    await session.prompt("hi", budget=Budget(max_total_tokens=1000))
    assert [m.role for m in session.messages] == ["user", "assistant"]
    answer = session.messages[-1]
    assert answer.stop_reason == "stop"
    assert answer.content[0].text == "all done"
    assert session.agent.state.error_message is None
    assert session.budget_reason == "stopped: the run reached its budget of 1,000 tokens (1,100 used)"
    assert len(loopback.requests) == 1
    assert session.agent.has_queued_messages()
