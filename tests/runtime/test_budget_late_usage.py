"""Budgets on a server that reports usage only at the end of a stream (an OpenAI-compatible
local server: llama.cpp, vLLM, Ollama), over real HTTP: the request is estimated before it is
sent (one that alone reaches the budget is not sent), the answer is counted as it streams and
cut near the budget, a finished answer is never labelled aborted, and a stopped answer's usage
counts what was sent and streamed, marked estimated."""

from __future__ import annotations

import asyncio
from pathlib import Path

from loopback import LoopbackServer
from openai_fixtures import DONE, chunk
from openai_fixtures import make_model as openai_model
from runtime.test_budget import assert_replays, make, paced, reached

from pi_notebook.runtime import Budget
from pi_notebook.runtime.estimate import payload_tokens

WORD = "abcdefghijklmnopqrs "  # 20 characters: five tokens by the estimate
LATE = {"prompt_tokens": 6_500, "completion_tokens": 766, "total_tokens": 7_266}


def late_usage_answer(words: int) -> list[object]:
    """``words`` chunks of text, then the finish and the usage only in the last chunk."""
    return paced(
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": WORD}) for _ in range(words)),
        chunk({}, "stop"),
        chunk(None, usage=LATE, choices=False),
        DONE,
    )


async def test_the_answer_is_cut_near_the_budget_as_it_streams(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.queue_sse(late_usage_answer(200))  # 1,000 tokens of answer, were it all sent
    session = make(openai_model(loopback), tmp_path)
    seen = reached(session)
    await session.prompt("tell me a long story", budget=Budget(max_total_tokens=300))
    sent = payload_tokens(loopback.requests[0].json)
    answer = session.messages[-1]
    assert answer.stop_reason == "aborted"
    streamed = len(answer.content[0].text) if answer.content else 0
    assert 0 < streamed < 200 * len(WORD)  # cut mid-stream, the partial answer kept
    # cut at the first chunk whose estimate reaches the budget: within one chunk of it
    assert 300 <= sent + streamed // 4 < 300 + len(WORD) // 4 + 1
    assert answer.usage.estimated is True  # the server never said: what was sent and streamed
    assert (answer.usage.input, answer.usage.output) == (sent, streamed // 4)
    [reason] = seen
    assert reason == session.budget_reason
    assert reason.startswith("stopped: the run reached its budget of 300 tokens (")
    assert reason.endswith(" used, estimated: the server had not said yet)")
    assert session.spent.tokens == sent + streamed // 4  # the conversation counts it too
    assert len(loopback.requests) == 1
    assert_replays(session)


async def test_a_first_request_over_the_budget_is_not_sent(loopback: LoopbackServer, tmp_path: Path) -> None:
    session = make(openai_model(loopback), tmp_path)
    seen = reached(session)
    await session.prompt("summarise: " + "lorem ipsum dolor " * 1_500, budget=Budget(max_total_tokens=300))
    assert loopback.requests == []  # nothing was sent, nothing spent
    [reason] = seen
    sent = int(reason.split("about ")[1].split(" ")[0].replace(",", ""))
    assert 6_750 < sent < 8_000  # 27,000 characters of prompt, and the system prompt and tool
    assert reason == (
        f"stopped before sending: the first request is about {sent:,} tokens (estimated: prompt, tools "
        "and conversation), which would reach the run's budget of 300 tokens; raise the budget or send less"
    )
    answer = session.messages[-1]
    assert answer.role == "assistant"
    assert answer.stop_reason == "aborted"
    assert answer.usage.input == answer.usage.output == 0
    assert session.spent.tokens == 0


async def test_a_finished_answer_whose_late_usage_passes_the_budget_is_not_aborted(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.queue_sse(late_usage_answer(3))
    session = make(openai_model(loopback), tmp_path)
    session.agent.follow_up("and then?")
    await session.prompt("hi", budget=Budget(max_total_tokens=300))
    answer = session.messages[-1]
    assert answer.stop_reason == "stop"  # whole: the usage came after its last word
    assert answer.content[0].text == WORD * 3
    assert (answer.usage.input, answer.usage.output, answer.usage.estimated) == (6_500, 766, None)
    assert session.budget_reason == "stopped: the run reached its budget of 300 tokens (7,266 used)"
    assert len(loopback.requests) == 1  # the follow-up does not run
    assert session.agent.has_queued_messages()


async def test_a_stopped_answer_counts_what_was_sent_and_streamed(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.queue_sse(late_usage_answer(200))
    session = make(openai_model(loopback), tmp_path)
    updates: list[object] = []
    session.subscribe(updates.append, {"message_update"})
    running = asyncio.create_task(session.prompt("tell me a long story"))
    for _ in range(500):  # bounded: 5 s at most
        if len(updates) >= 10:
            break
        await asyncio.sleep(0.01)
    await session.abort()  # Stop
    await asyncio.wait_for(running, 10)
    answer = session.messages[-1]
    assert answer.stop_reason == "aborted"
    streamed = len(answer.content[0].text)
    assert streamed > 0
    assert answer.usage.estimated is True
    assert (answer.usage.input, answer.usage.output) == (
        payload_tokens(loopback.requests[0].json),
        streamed // 4,
    )
    assert session.spent.tokens == answer.usage.input + answer.usage.output
    assert session.spent.estimated == 1
