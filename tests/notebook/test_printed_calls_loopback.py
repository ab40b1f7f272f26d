"""Calls a local model printed in its text, over HTTP: a loopback ``llama-server`` replays what
the real one streams (``llama_replies.py``) to a ``%%pi`` cell on a real ``InteractiveShell``,
where nobody can click. Each form (JSON, ``<tool_call>`` tags, fenced Python): left as text
with one line by default; run under ``--recovered-calls policy --approve auto``, the next
request carries it as an ordinary tool call and its result (no marker on the wire); code mode
sends no tools and the output as a user message. Clicks: ``test_printed_calls_kernel.py``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401
from llama_replies import FORMS, VARIABLES, dumped, llama_reply, request_roles
from loopback import LoopbackServer, json_reply, serving

from pi_notebook.ai.local_probe import clear_probe_cache
from pi_notebook.ai.models import openai_compatible_model, register_models, unregister_models

LOCAL = "--model llama.cpp:qwen"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    with serving(LoopbackServer()) as srv:
        monkeypatch.setenv("LLAMA_CPP_BASE_URL", srv.url)
        clear_probe_cache()
        srv.queue(json_reply(404, {"error": "no /props here"}))  # the context-window probe
        try:
            yield srv
        finally:
            clear_probe_cache()
            unregister_models("llama.cpp")


def chats(server: LoopbackServer) -> list[Any]:
    return [r.json for r in server.requests if r.path.endswith("/chat/completions")]


def pi(ip: Any, line: str, body: str) -> str:
    result, captured = run(ip, f"%%pi {line}\n{body}")
    assert result.error_in_exec is None, result.error_in_exec
    [found] = outputs(captured)
    return str(found["text/plain"])


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_printed_call_is_not_run_where_nobody_can_click(ip: Any, server: LoopbackServer, form: str) -> None:
    server.queue_sse(llama_reply(FORMS[form]))
    shown = pi(ip, f"{LOCAL} --approve auto", "compute it")
    name, _ = VARIABLES[form]
    assert name not in ip.user_ns
    assert "The model wrote a call of run_code in its text instead of making it; it was not run" in shown
    assert len(chats(server)) == 1
    assert [m.role for m in ip.user_ns["_pi"].messages] == ["user", "assistant"]


@pytest.mark.parametrize("form", sorted(FORMS))
def test_policy_runs_a_printed_call_and_the_model_answers_its_result(
    ip: Any, server: LoopbackServer, form: str
) -> None:
    name, value = VARIABLES[form]
    server.queue_sse(llama_reply(FORMS[form]))
    server.queue_sse(llama_reply(f"The result is {value}."))
    shown = pi(ip, f"{LOCAL} --approve auto --recovered-calls policy", "compute it")
    assert ip.user_ns[name] == value
    assert "[tool] run_code (done) · recovered from the model's text" in shown
    assert ip.user_ns["_pi"].text == f"The result is {value}."
    first, second = chats(server)
    assert "tools" in first  # tools mode: the schemas were sent
    assert request_roles(second) == ["system", "user", "assistant", "tool"]
    [call] = second["messages"][2]["tool_calls"]
    assert call["function"]["name"] == "run_code"
    assert second["messages"][3]["tool_call_id"] == call["id"]
    assert str(value) in second["messages"][3]["content"]
    assert "recovered" not in dumped(second)  # the marker stays in the transcript, off the wire


def test_policy_under_approve_deny_tells_the_model(ip: Any, server: LoopbackServer) -> None:
    """A large-window model is sent run_code even under deny: its printed call is denied."""
    wide = openai_compatible_model("wide", f"{server.url}/v1", provider="wide", context_window=128_000)
    register_models([wide])
    try:
        server.replies.clear()  # not a local server: nothing probes it
        server.queue_sse(llama_reply(FORMS["json"]))
        server.queue_sse(llama_reply("I was not allowed to run it."))
        shown = pi(ip, "--model wide:wide --approve deny --recovered-calls policy", "compute it")
    finally:
        unregister_models("wide")
    assert "llama_mean" not in ip.user_ns
    assert "[tool] run_code (denied) · recovered from the model's text" in shown
    second = chats(server)[1]
    assert "denied" in second["messages"][3]["content"]


def test_a_small_local_model_is_not_sent_what_deny_blocks(ip: Any, server: LoopbackServer) -> None:
    """A local model gets only the tools the run can use (``run/fit.py``): under deny no
    run_code, so a call of it it prints anyway stays text, and the card says why."""
    server.queue_sse(llama_reply(FORMS["json"]))
    shown = pi(ip, f"{LOCAL} --approve deny --recovered-calls policy", "compute it")
    assert "llama_mean" not in ip.user_ns
    assert "run_code" not in [t["function"]["name"] for t in chats(server)[0]["tools"]]
    assert "Not sent: run_code, insert_cell, set_variable, " in shown
    assert "(this run's approval policy blocks them; --approve auto allows them)." in shown
    assert len(chats(server)) == 1


def test_code_mode_over_http_sends_no_tools_and_the_output_as_a_user_message(
    ip: Any, server: LoopbackServer
) -> None:
    server.queue_sse(llama_reply(FORMS["fenced"]))
    server.queue_sse(llama_reply("2 ** 10 is 1024."))
    pi(ip, f"{LOCAL} --tool-mode code --approve auto", "what is 2 ** 10?")
    assert ip.user_ns["llama_fenced"] == 1024
    first, second = chats(server)
    assert "tools" not in first
    assert "tools" not in second
    assert first["messages"][0]["content"].startswith("You work in a live Jupyter notebook")
    assert request_roles(second) == ["system", "user", "assistant", "user"]
    assert second["messages"][2]["content"] == FORMS["fenced"]
    assert second["messages"][3]["content"] == "Output:\n```\nstdout:\n1024\n```"
    assert ip.user_ns["_pi"].text == "2 ** 10 is 1024."
