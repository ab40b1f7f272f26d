"""``%%pi`` retries a model call that failed with a transient error, as Pi's coding agent does,
and ``--timeout`` ends a request to a server that went silent (a transient error too): a real
``InteractiveShell``, an OpenAI-compatible loopback server (llama.cpp) and the faux provider.
Delays and timeouts are configured tiny; the Stop test uses a long delay to show it is cut
short."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401
from llama_replies import unparsed_reply
from loopback import Delay, LoopbackServer, Reply, json_reply, serving, sse

from pi_notebook.agent import Agent
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_tool_call
from pi_notebook.ai.local_probe import clear_probe_cache
from pi_notebook.ai.models import unregister_models
from pi_notebook.notebook.config import DEFAULT_NAME, NO_TIMEOUT_MS
from pi_notebook.notebook.run import runner
from pi_notebook.notebook.state import state_for
from pi_notebook.notebook.view import notices as view_notices
from pi_notebook.notebook.view.run_view import StaticView
from pi_notebook.runtime import AgentSession, AgentSessionSettings, RetrySettings
from pi_notebook.session import SessionManager

LOCAL = "--model llama.cpp:tiny --tools none"
BUSY = {"error": {"message": "Service Unavailable: the model is loading", "type": "server_error"}}
QUOTA = {
    "error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota",
    }
}


def pi(shell: Any, line: str, body: str) -> tuple[Any, Any]:
    return run(shell, f"%%pi {line}\n{body}")


def plain(captured: Any) -> str:
    [found] = outputs(captured)
    return str(found["text/plain"])


def configure(shell: Any, retries: int = 3, base_delay: float = 0.01) -> None:
    magics = shell.magics_manager.registry["PiMagics"]
    magics.retries = retries
    magics.retry_base_delay = base_delay


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    """A loopback server on its own thread (a cell runs on the shell's loop) that ``llama.cpp:``
    points at; its first reply answers the context-window probe with "not llama-server"."""
    with serving(LoopbackServer()) as srv:
        monkeypatch.setenv("LLAMA_CPP_BASE_URL", srv.url)
        clear_probe_cache()
        srv.queue(json_reply(404, {"error": "no /props here"}))
        try:
            yield srv
        finally:
            clear_probe_cache()
            unregister_models("llama.cpp")


def chat_reply(text: str) -> list[bytes]:
    head = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "tiny"}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    return [sse(c) for c in chunks] + [b"data: [DONE]\n\n"]


def chat_requests(server: LoopbackServer) -> list[Any]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


@pytest.fixture
def notices(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every notice line the session's retry events gave the view, in order (the live view
    draws each one)."""
    seen: list[str] = []
    original = view_notices.add_notice

    def record(state: Any, text: str, key: str | None = None) -> Any:
        seen.append(text)
        return original(state, text, key)

    monkeypatch.setattr(view_notices, "add_notice", record)
    return seen


# --- over HTTP ------------------------------------------------------------------------------------


def test_two_503s_then_an_answer(ip: Any, server: LoopbackServer, notices: list[str]) -> None:
    configure(ip)
    server.queue(json_reply(503, BUSY), json_reply(503, BUSY))
    server.queue_sse(chat_reply("All good."))
    _, captured = pi(ip, LOCAL, "hello?")
    shown = plain(captured)
    result = ip.user_ns["_pi"]
    assert result.stop_reason == "stop"
    assert result.text == "All good."
    assert [m.role for m in result.messages] == ["user", "assistant"]  # the failures left the transcript
    first = '503: {"message":"Service Unavailable: the model is loading","type":"server_error"}'
    assert notices[:2] == [f"Retrying in 0.01 s, 1 of 3: {first}", f"Retry 1 of 3 after: {first}"]
    assert f"Retrying in 0.02 s, 2 of 3: {first}" in notices
    assert "All good." in shown
    assert f"Recovered on retry 2 of 3 after: {first}" in shown
    assert "Error" not in shown
    requests = chat_requests(server)
    assert len(requests) == 3
    assert requests[2].json["messages"] == requests[0].json["messages"], "a retry resends the same context"


def test_a_400_is_not_retried(ip: Any, server: LoopbackServer) -> None:
    configure(ip)
    server.queue(json_reply(400, {"error": {"message": "bad request: unknown field"}}))
    server.queue_sse(chat_reply("never"))
    _, captured = pi(ip, LOCAL, "hello?")
    assert ip.user_ns["_pi"].stop_reason == "error"
    assert "Retry" not in plain(captured)
    assert len(chat_requests(server)) == 1


def test_a_quota_429_is_not_retried(ip: Any, server: LoopbackServer) -> None:
    configure(ip)
    server.queue(json_reply(429, QUOTA))
    server.queue_sse(chat_reply("never"))
    _, captured = pi(ip, LOCAL, "hello?")
    assert ip.user_ns["_pi"].stop_reason == "error"
    assert "exceeded your current quota" in ip.user_ns["_pi"].error_message
    assert "Retry" not in plain(captured)
    assert len(chat_requests(server)) == 1


def test_retries_0_turns_retrying_off(ip: Any, server: LoopbackServer) -> None:
    configure(ip, retries=0)
    server.queue(json_reply(503, BUSY))
    server.queue_sse(chat_reply("never"))
    _, captured = pi(ip, LOCAL, "hello?")
    assert ip.user_ns["_pi"].stop_reason == "error"
    assert "Retry" not in plain(captured)
    assert len(chat_requests(server)) == 1


def test_a_server_asking_for_a_long_wait_is_not_retried(ip: Any, server: LoopbackServer) -> None:
    """The wait comes from the server's ``Retry-After`` header (read as data, not from the
    error text): ten minutes is a limit, not a hiccup."""
    configure(ip)
    server.queue(json_reply(429, {"error": {"message": "Rate limit reached."}}, {"retry-after": "600"}))
    _, captured = pi(ip, LOCAL, "hello?")
    assert ip.user_ns["_pi"].stop_reason == "error"
    assert "Retry" not in plain(captured)
    assert len(chat_requests(server)) == 1


# --- timeouts -------------------------------------------------------------------------------------

SILENT_S = 10.0  # how long a silent server holds back; every timeout here is far shorter
RUN_BOUND_S = 8.0  # a run that takes longer waited for the server instead of timing out


def timed_pi(shell: Any, line: str) -> tuple[str, float]:
    started = time.monotonic()
    _, captured = pi(shell, line, "hello?")
    return plain(captured), time.monotonic() - started


def test_a_server_that_never_answers_ends_the_run_at_the_timeout(ip: Any, server: LoopbackServer) -> None:
    server.queue(Reply(head_delay=SILENT_S, parts=chat_reply("too late")))
    shown, took = timed_pi(ip, f"{LOCAL} --timeout 0.3")
    assert took < RUN_BOUND_S
    assert ip.user_ns["_pi"].stop_reason == "error"
    error = ip.user_ns["_pi"].error_message
    assert error == "Request timed out: no answer from the server in 0.3 s (ReadTimeout)"
    assert (
        f"Error: No answer from {server.url}/v1 in 0.3 s (ReadTimeout). Is the llama.cpp server still "
        "loading the model, or busy with a long prompt? Run the cell again, or allow longer with "
        "%%pi --timeout SECONDS (0: no limit)."
    ) in shown


def test_an_answer_that_stalls_ends_at_the_timeout_and_keeps_its_start(
    ip: Any, server: LoopbackServer
) -> None:
    first, *rest = chat_reply("Half an answer")
    server.queue(Reply(parts=[first, Delay(SILENT_S), *rest]))
    shown, took = timed_pi(ip, f"{LOCAL} --timeout 0.3")
    assert took < RUN_BOUND_S
    assert "Half an answer" in shown
    assert f"Error: The answer stalled, nothing more from {server.url}/v1 in 0.3 s (ReadTimeout)." in shown


def test_a_timed_out_call_is_retried_and_the_output_says_so(
    ip: Any, server: LoopbackServer, notices: list[str]
) -> None:
    """A timeout is transient (Pi's rule), so each attempt can take the whole timeout: every
    retry shows a line, and ``%pi status`` adds the attempts up."""
    configure(ip, retries=2)
    ip.magics_manager.registry["PiMagics"].timeout = 0.3
    server.queue(Reply(head_delay=SILENT_S), Reply(head_delay=SILENT_S))
    server.queue_sse(chat_reply("Finally."))
    shown, took = timed_pi(ip, LOCAL)  # the timeout comes from c.PiMagics.timeout
    assert took < RUN_BOUND_S
    error = "Request timed out: no answer from the server in 0.3 s (ReadTimeout)"
    assert notices[0] == f"Retrying in 0.01 s, 1 of 2: {error}"
    assert "Finally." in shown
    assert f"Recovered on retry 2 of 2 after: {error}" in shown
    _, captured = run(ip, "%pi status")
    assert (
        "timeout: 0.3 s without an answer per request; a server that never answers fails a model "
        "call after 0.93 s (3 attempts and the retry waits)"
    ) in captured.stdout


def test_the_timeout_reaches_the_stream_options(ip: Any, faux: FauxRegistration) -> None:
    seen: list[int | None] = []

    def answer(context: Any, options: Any, state: Any, model: Any) -> Any:
        seen.append(options.timeout_ms)
        return faux_assistant_message("ok")

    faux.set_responses([answer, answer, answer])
    for line in ("", "--timeout 2.5", "--timeout 0"):
        pi(ip, f"--model faux:faux-1 --tools none {line}", "q")
    assert seen == [300_000, 2500, NO_TIMEOUT_MS]  # Pi's default idle timeout is 5 minutes
    _, captured = run(ip, "%config PiMagics.timeout = 0\n%pi status")
    assert "timeout: none (a server that never answers is waited on until Stop or an interrupt)" in (
        captured.stdout
    )


def test_a_negative_timeout_is_a_usage_error(ip: Any) -> None:
    with pytest.raises(UsageError, match=r"--timeout must be 0 or more seconds \(0: no limit\), not -1.0"):
        ip.run_cell_magic("pi", "--model faux:faux-1 --timeout -1", "q")
    with pytest.raises(Exception, match="must be 0 or more"):
        ip.magics_manager.registry["PiMagics"].timeout = -1


# --- with the faux provider -----------------------------------------------------------------------


def failure(text: str = "503 Service Unavailable") -> Any:
    return faux_assistant_message([], stop_reason="error", error_message=text)


def test_a_turn_that_ran_tools_is_retried_from_the_failed_call_only(ip: Any, faux: FauxRegistration) -> None:
    configure(ip)
    contexts: list[Any] = []

    def answer(context: Any, options: Any, state: Any, model: Any) -> Any:
        contexts.append(context)
        return faux_assistant_message("Here they are.")

    call = faux_assistant_message([faux_tool_call("list_variables", {}, id="c1")], stop_reason="toolUse")
    faux.set_responses([call, failure(), answer])
    _, captured = pi(ip, "--model faux:faux-1", "what variables?")
    result = ip.user_ns["_pi"]
    assert result.stop_reason == "stop"
    assert [m.role for m in result.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert faux.state.call_count == 3, "the tool turn's model call is not repeated"
    assert [m.role for m in contexts[0].messages] == ["user", "assistant", "toolResult"]
    assert "Recovered on retry 1 of 3" in plain(captured)


def test_a_retried_call_is_one_turn_and_its_tokens_are_counted(ip: Any, faux: FauxRegistration) -> None:
    """One model call retried once is one turn in the footer, not two; the failed attempt's
    usage stays counted (its tokens were spent)."""
    configure(ip)
    spent = faux_assistant_message([], stop_reason="error", error_message="503 Service Unavailable")
    faux.set_responses([spent, "All good."])
    _, captured = pi(ip, "--model faux:faux-1 --tools none", "q")
    [found] = outputs(captured)
    result = ip.user_ns["_pi"]
    assert result.text == "All good."
    shown = f"{result.usage.input:,} in / {result.usage.output:,} out tokens"
    assert "1 turn · " in found["text/html"], found["text/html"][-400:]
    assert shown not in found["text/html"], "the footer also counts the failed attempt's input"
    assert " out tokens" in found["text/html"]


def test_exhausted_retries_leave_the_error(ip: Any, faux: FauxRegistration) -> None:
    configure(ip, retries=2)
    faux.set_responses([failure(), failure(), failure(), "never"])
    _, captured = pi(ip, "--model faux:faux-1 --tools none", "q")
    shown = plain(captured)
    assert ip.user_ns["_pi"].stop_reason == "error"
    assert "Error: 503 Service Unavailable" in shown
    assert "Retry failed after 2 attempts." in shown
    assert faux.state.call_count == 3


def test_a_later_failure_gets_the_whole_budget_again(ip: Any, faux: FauxRegistration) -> None:
    """A successful call resets the count (Pi resets it on every good assistant message)."""
    configure(ip, retries=1)
    call = faux_assistant_message([faux_tool_call("list_variables", {}, id="c1")], stop_reason="toolUse")
    faux.set_responses([failure(), call, failure(), "done"])
    pi(ip, "--model faux:faux-1", "q")
    assert ip.user_ns["_pi"].stop_reason == "stop"
    assert ip.user_ns["_pi"].text == "done"


def test_stop_during_the_wait_ends_the_run_as_aborted_at_once(
    ip: Any, faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(ip, base_delay=30.0)
    runs: list[runner.PiRun] = []
    original = runner.PiRun.__init__

    def remember(self: runner.PiRun, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        runs.append(self)

    monkeypatch.setattr(runner.PiRun, "__init__", remember)

    def fail_then_stop(context: Any, options: Any, state: Any, model: Any) -> Any:
        asyncio.get_running_loop().call_later(0.2, runs[0]._on_stop)  # the Stop button's handler
        return failure()

    faux.set_responses([fail_then_stop, "never"])
    started = time.monotonic()
    _, captured = pi(ip, "--model faux:faux-1 --tools none", "q")
    assert time.monotonic() - started < 5, "Stop must end the 30 s wait"
    shown = plain(captured)
    assert ip.user_ns["_pi"].stop_reason == "aborted"
    assert "Retry 1 of 3 cancelled after: 503 Service Unavailable" in shown
    assert "Stopped with the Stop button." in shown
    assert faux.state.call_count == 1


# --- the session's retry and the view, without a shell --------------------------------------------


def retrying(faux: FauxRegistration, view: Any) -> tuple[AgentSession, asyncio.Event]:
    """An ``AgentSession`` that waits 30 s before each retry, drawn into ``view``, and an event
    set when the first wait begins."""
    agent = Agent(initial_state={"model": faux.get_model()})
    settings = AgentSessionSettings(retry=RetrySettings(base_delay_ms=30_000))
    session = AgentSession(agent, SessionManager.in_memory(), settings=settings)
    session.subscribe(view.handle)
    waiting = asyncio.Event()
    session.subscribe(lambda event: waiting.set(), {"auto_retry_start"})
    return session, waiting


async def test_an_interrupt_during_the_wait_ends_the_view_as_aborted(faux: FauxRegistration) -> None:
    faux.set_responses([failure(), "never"])
    view = StaticView("q")
    session, waiting = retrying(faux, view)
    task = asyncio.ensure_future(session.prompt("q"))
    await asyncio.wait_for(waiting.wait(), 5)
    task.cancel()  # what a kernel interrupt does to the cell
    with pytest.raises(asyncio.CancelledError):
        await task
    assert view.state.stop_reason == "aborted"
    assert view.state.finished
    assert view.state.notice == "Retry 1 of 3 cancelled after: 503 Service Unavailable"


def test_retries_must_not_be_negative(ip: Any) -> None:
    magics = ip.magics_manager.registry["PiMagics"]
    with pytest.raises(Exception, match="must be 0 or more"):
        magics.retries = -1


async def test_the_live_view_shows_the_wait_and_its_stop_button_ends_it(faux: FauxRegistration) -> None:
    from pi_notebook.notebook.view.live import LiveView, ViewControls

    faux.set_responses([failure("529 overloaded_error: Overloaded\nmore detail"), "never"])
    sessions: list[AgentSession] = []
    controls = ViewControls(on_stop=lambda: sessions[0].interrupt(), on_steer=print, on_follow_up=print)
    view = LiveView("q", controls=controls)
    session, waiting = retrying(faux, view)
    sessions.append(session)
    task = asyncio.ensure_future(session.prompt("q"))
    await asyncio.wait_for(waiting.wait(), 5)
    assert "Retrying in 30 s, 1 of 3: 529 overloaded_error: Overloaded<" in view._notice.value
    assert "more detail" not in view._notice.value  # the error's first line only
    assert "Error" not in view._error.value, "a failure being retried is not shown as the run's end"
    view._on_stop()  # the Stop button
    await asyncio.wait_for(task, 2)
    assert "Retry 1 of 3 cancelled after: 529 overloaded_error: Overloaded" in view._notice.value
    assert faux.state.call_count == 1
    view.close()


# --- a tool call the server could not parse after it --------------------------------------------

def call_then_parse_error(code: str = "x = 6 * 7") -> list[bytes]:
    """What llama-server streams when the text after a complete tool call does not parse
    (``llama_replies.unparsed_reply``), for this file's ``tiny`` model."""
    return unparsed_reply(code, model="tiny")


def test_a_parse_error_after_a_complete_call_leaves_it_not_executed_where_nobody_can_click(
    ip: Any, server: LoopbackServer
) -> None:
    configure(ip)
    server.queue_sse(call_then_parse_error())
    _, captured = pi(ip, "--model llama.cpp:tiny --approve auto", "compute")
    shown = plain(captured)
    assert "x" not in ip.user_ns
    assert "[tool] run_code (error)" in shown
    assert "not executed" in shown
    assert "the server could not parse the model's tool call" in shown
    assert len(chat_requests(server)) == 1, "a parse error is not retried"


def test_running_the_cell_again_after_a_failure_sends_the_prompt_once(
    ip: Any, server: LoopbackServer
) -> None:
    configure(ip)
    server.queue_sse(call_then_parse_error())
    server.queue(json_reply(404, {"error": "no /props here"}))  # the cell probes again
    server.queue_sse(chat_reply("Fine now."))
    _, captured = pi(ip, LOCAL, "compute 6 * 7")
    assert "Run the cell again" in plain(captured)
    _, captured = pi(ip, LOCAL, "compute 6 * 7")
    assert "The failed attempt of this prompt was replaced by this run" in plain(captured)
    requests = chat_requests(server)
    assert [[m["role"] for m in r.json["messages"]] for r in requests] == [["system", "user"]] * 2
    result = ip.user_ns["_pi"]
    assert result.text == "Fine now."
    assert [m.role for m in ip.user_ns["_pi"].messages] == ["user", "assistant"]
    # the session file keeps the failed attempts as branches; its current branch has one prompt
    manager = state_for(ip).conversations.session(DEFAULT_NAME).session_manager
    path = [getattr(e, "message", None) for e in manager.get_branch()]
    assert [m.role for m in path if m is not None] == ["user", "assistant"]
    prompts = [e for e in manager.get_entries() if getattr(getattr(e, "message", None), "role", "") == "user"]
    assert len(prompts) == 2


def test_a_429_with_retry_after_waits_what_the_server_asked(ip: Any, server: LoopbackServer) -> None:
    """The server's ``Retry-After: 1`` is longer than the backoff (0.01 s here): the next request
    goes out at least a second after the failed one, whichever layer retries it."""
    configure(ip)
    limited = {"error": {"message": "Rate limit reached for requests."}}
    server.queue(json_reply(429, limited, {"retry-after": "1"}))
    server.queue_sse(chat_reply("All good."))
    pi(ip, LOCAL, "hello?")
    assert ip.user_ns["_pi"].text == "All good."
    first, second = chat_requests(server)
    assert second.at - first.at >= 1.0
