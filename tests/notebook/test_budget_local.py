"""Budgets and honest numbers on a local server that reports usage only at the end of a stream
(llama-server's Chat Completions over a loopback server), on a real ``InteractiveShell``:
``--max-total-tokens`` cuts the answer near the budget, a first request over the budget is not
sent, and stopped and failed runs show the tokens sent and streamed, marked estimated, in the
footer, in ``_pi`` and in ``%pi usage``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.utils.capture import capture_output

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401
from loopback import DROP, Delay, LoopbackServer, json_reply, serving, sse

from pi_notebook.ai.local_probe import clear_probe_cache
from pi_notebook.ai.models import unregister_models

LOCAL = "--model llama.cpp:tiny --tools none"
WORD = "abcdefghijklmnopqrs "  # five tokens by the estimate
HEAD = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "tiny"}


def delta(text: str) -> bytes:
    return sse({**HEAD, "choices": [{"index": 0, "delta": {"content": text}}]})


def late_usage_answer(words: int, *, drop_after: int | None = None) -> list[Any]:
    """``words`` chunks, then the finish and the usage in the last chunk (llama-server's way);
    ``drop_after``: the connection drops after that many chunks instead."""
    parts: list[Any] = []
    for index in range(words):
        if index == drop_after:
            return [*parts, DROP]
        parts += [delta(WORD), Delay(0.005)]
    usage = {"prompt_tokens": 6_500, "completion_tokens": 766, "total_tokens": 7_266}
    parts += [
        sse({**HEAD, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        sse({**HEAD, "choices": [], "usage": usage}),
        b"data: [DONE]\n\n",
    ]
    return parts


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    """A llama-server stand-in on its own thread (a cell runs on the shell's loop) that
    ``llama.cpp:`` points at; it has no ``/props`` (the model keeps its guessed window)."""
    clear_probe_cache()
    with serving(LoopbackServer()) as srv:
        monkeypatch.setenv("LLAMA_CPP_BASE_URL", srv.url)
        srv.queue(json_reply(404, {}))
        try:
            yield srv
        finally:
            clear_probe_cache()
            unregister_models("llama.cpp")


def posts(server: LoopbackServer) -> list[Any]:
    return [r for r in server.requests if r.method == "POST"]


def pi(ip: Any, line: str, body: str) -> str:
    """The run's output: its text, and its HTML (where the footer is)."""
    result, captured = run(ip, f"%%pi {line}\n{body}")
    assert result.error_in_exec is None, result.error_in_exec
    [found] = outputs(captured)
    return str(found["text/plain"]) + str(found.get("text/html", ""))


def usage_table(ip: Any) -> str:
    with capture_output() as captured:
        ip.run_line_magic("pi", "usage")
    return captured.stdout


def last_run_row(table: str) -> list[str]:
    runs = table.split("\n\n", maxsplit=1)[0].splitlines()
    return runs[-1].split()


def test_max_total_tokens_cuts_a_late_usage_answer_near_the_budget(ip: Any, server: LoopbackServer) -> None:
    server.queue_sse(late_usage_answer(200))  # 1,000 tokens of answer, were it all sent
    shown = pi(ip, f"{LOCAL} --max-total-tokens 300", "tell me a long story")
    result = ip.user_ns["_pi"]
    assert len(result.text) < 200 * len(WORD)  # cut mid-stream
    tokens = result.usage.input + result.usage.output
    assert 300 <= tokens <= 305  # within one chunk of the budget
    assert result.usage.estimated is True
    assert result.budget_reason.startswith("stopped: the run reached its budget of 300 tokens (")
    assert result.budget_reason.endswith("used, estimated: the server had not said yet)")
    assert result.budget_reason in shown
    assert f"{result.usage.input:,} in / {result.usage.output:,} out tokens (estimated)" in shown
    assert len(posts(server)) == 1
    table = usage_table(ip)
    assert last_run_row(table)[7] == f"~{tokens:,}"  # the tokens column, marked
    assert "~ estimated: a stopped or failed answer" in table


def test_a_first_request_over_the_budget_is_not_sent(ip: Any, server: LoopbackServer) -> None:
    shown = pi(ip, f"{LOCAL} --max-total-tokens 300", "summarise: " + "lorem ipsum dolor " * 1_500)
    assert posts(server) == []
    assert "stopped before sending: the first request is about " in shown
    assert "which would reach the run's budget of 300 tokens; raise the budget or send less" in shown
    assert "0 in / 0 out tokens" in shown  # nothing was sent: nothing counted


def test_a_failed_run_counts_what_was_sent_and_streamed(ip: Any, server: LoopbackServer) -> None:
    server.queue_sse(late_usage_answer(40, drop_after=20))  # the connection drops mid-answer
    shown = pi(ip, "--model llama.cpp:tiny --tools none --no-raise-on-error", "tell me a story")
    result = ip.user_ns["_pi"]
    assert result.error_message  # failed
    assert result.usage.input > 0
    assert result.usage.output == 20 * len(WORD) // 4
    assert result.usage.estimated is True
    assert f"{result.usage.input:,} in / {result.usage.output:,} out tokens (estimated)" in shown
    assert last_run_row(usage_table(ip))[7] == f"~{result.usage.input + result.usage.output:,}"
