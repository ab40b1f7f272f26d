"""A subset of the fault matrix (``tests/faults``) run the way a user meets it: a ``%%pi`` cell in a
real ipykernel, whose model is served by the loopback server in this process.

Each case runs one ``%%pi`` cell whose model call (after a successful tool turn, so the
transcript holds a call and its result when the fault strikes) meets a fault: an HTTP error, a
refused connection, a stream that drops or carries garbage, a server that goes silent, a tool
that raises or hangs, a Stop or a kernel interrupt. Whatever happened, these must hold:

* the cell finishes, and nothing escapes as a traceback: an interactive cell ends ``ok``, a
  headless one (nbclient) raises ``RunFailed`` shown as one line, an interrupted one ends with
  the one-line ``KeyboardInterrupt``;
* the output shows one ``Error:`` line that gives the reason and says what to do;
* every tool call in the conversation has exactly one result, and the transcript replays into
  every wire API's request;
* the next ``%%pi`` cell of the same conversation works against a good server, and the kernel
  runs plain code.

One kernel serves the whole module; retries are off (``tests/notebook/test_run_retry.py``
covers them) except in the case that shows a retry recovering.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from faults.wire import WIRES, closed_port_url, fault_reply
from kernel_driver import LOOPBACK_SHORT, Kernel, Watch, loopback_models
from loopback import Delay, LoopbackServer, Reply, serving

from pi_notebook.notebook.run.errors import INTERRUPTED

pytestmark = pytest.mark.kernel

SHORT = LOOPBACK_SHORT
RUN_BOUND_S = 30.0  # a cell still running after this hangs
SILENT_S = 60.0  # how long a silent server or a hung tool holds out: past RUN_BOUND_S, so a run
# that waits for it instead of ending by its timeout, Stop or interrupt fails the test

KERNEL_SETUP = """\
import asyncio
from faults.invariants import check_replays, check_tool_results
from pi_notebook.agent import tool
mode = {{"lookup": "ok"}}

@tool
async def lookup(key: str) -> str:
    \"\"\"Look a key up.\"\"\"
    if mode["lookup"] == "raise":
        raise RuntimeError(f"the {{key}} store is down")
    if mode["lookup"] == "hang":
        print("lookup hangs")
        await asyncio.sleep({silent})
    return f"value of {{key}}"

def prepare(lookup_mode="ok"):
    mode["lookup"] = lookup_mode
    conversations.current().state.tools = [lookup]

def tool_result(call_id):
    messages = conversations.current().state.messages
    [result] = [m for m in messages if getattr(m, "tool_call_id", None) == call_id]
    return result.content[0].text

def transcript_ok():
    state = conversations.current().state
    check_tool_results(state.messages)
    check_replays(state.messages, state.tools, state.system_prompt, state.model)
    return "ok"
%config PiMagics.retries = 0
"""


@dataclass(frozen=True)
class Case:
    """One fault: what the server plays (``replies``), the cell's extra options, how the run
    ends (``stop``), the reason its ``Error:`` line gives, and what the test does meanwhile."""

    name: str
    replies: Callable[[Any], list[Reply]] = lambda wire: []
    api: str = "openai-completions"
    options: str = ""
    stop: str = "error"
    reason: str = ""
    action: str = ""  # "interrupt" or "stop" once ``ready`` shows in the output
    ready: str = ""  # empty: interrupt once the server holds the faulted request
    headless: bool = False
    lookup: str = "ok"
    refused: bool = False
    result: str = ""  # the start of the text the model got as the tool's result (call_1)
    shown: str = ""  # a line the output must show besides the answer


def tool_turn(wire: Any) -> Reply:
    return Reply(200, wire.tool_script("call_1", with_text=False).parts())


def after_tool(fault: str) -> Callable[[Any], list[Reply]]:
    def replies(wire: Any) -> list[Reply]:
        return [tool_turn(wire), fault_reply(wire, fault, wire.tool_script("call_2", with_text=True))]

    return replies


def stalled(wire: Any) -> list[Reply]:
    """Headers and the start of an answer, then nothing (the stall outlasts the test)."""
    script = wire.tool_script("call_2", with_text=True)
    return [tool_turn(wire), Reply(200, [*script.head, *script.text[:1], Delay(SILENT_S)])]


def silent(wire: Any) -> list[Reply]:
    """The connection is accepted and the request read; no byte comes back."""
    return [tool_turn(wire), Reply(head_delay=SILENT_S)]


def only_the_tool_turn(wire: Any) -> list[Reply]:
    return [tool_turn(wire)]


def told_the_model(wire: Any) -> list[Reply]:
    return [tool_turn(wire), Reply(200, wire.text_script("The store is down.").parts())]


# The Error: line of each kind of failure: the reason, then what to do.
AGAIN = r"[Rr]un the cell again"
SAID = r": Upstream said no \(HTTP \d+\)"
FAILED_THERE = rf"The server failed on its side: {AGAIN}"
BROKE = rf"^The connection to http://\S+ broke before the answer was complete \(.+\)\. {AGAIN}"
API = r"(openai-completions|anthropic-messages)"
UNREADABLE = rf"\. {AGAIN}; if it keeps failing, check that http://\S+ speaks the {API} API"
CUT_SHORT = rf"(ended without|ended before).*: the answer was cut short\. {AGAIN}\.$"
SLOW = rf"The server is overloaded or stuck\. {AGAIN}, or allow longer with %%pi --timeout SECONDS"
SILENT = rf"^No answer from http://\S+ in 0\.5 s \(ReadTimeout\)\. {SLOW}"
STALLED = rf"^The answer stalled, nothing more from http://\S+ in 0\.5 s \(ReadTimeout\)\. {SLOW}"
STOPPED = "Stopped with the Stop button."
REFUSED = r"^Cannot connect to http://127\.0\.0\.1:\d+/v1 \(ConnectError: .*\)\. Check the network"


def http(fault: str, said: str, advice: str, name: str = "", **fields: Any) -> Case:
    """An HTTP error after the tool turn; its line is ``HTTP <status> from <url><said>. <advice>``."""
    status = fault.split("_")[1]
    reason = rf"^HTTP {status} from http://\S+{said}\. {advice}"
    return Case(name or fault, replies=after_tool(fault), reason=reason, **fields)


def wire_fault(api: str, fault: str, reason: str) -> Case:
    return Case(f"{fault}-{SHORT[api]}", api=api, replies=after_tool(fault), reason=reason)


def stopped(what: str, action: str) -> Case:
    """A Stop click or a kernel interrupt while the answer stalls (``stream``) or a tool hangs."""
    if what == "stream":
        shown = STOPPED if action == "stop" else ""
        return Case(f"{action}_stream", stalled, stop="aborted", action=action, ready="Let me", shown=shown)
    return Case(
        f"{action}_tool",
        replies=only_the_tool_turn,
        stop="aborted",
        action=action,
        ready="lookup hangs",
        lookup="hang",
        result="Operation aborted: lookup did not stop within 1 s of the abort and was cancelled.",
        shown=STOPPED if action == "stop" else "",
    )


CASES = [
    http("http_400", SAID, "The server rejected the request: check --model"),
    http("http_401", SAID, r"The server did not accept the API key: check LOOP_CC_API_KEY\.$"),
    http("http_429", SAID, r"Rate limited: wait a moment, then run the cell again\.$"),
    http("http_500", SAID, FAILED_THERE),
    http("http_503", SAID, FAILED_THERE),
    http("http_500", SAID, FAILED_THERE, name="headless_500", headless=True),
    http("http_502_html", ": 502 Bad Gateway", FAILED_THERE),
    http("http_500_no_body", "", FAILED_THERE),
    Case("refused", refused=True, reason=REFUSED),
    *(
        wire_fault(api, fault, reason)
        for api in SHORT
        for fault, reason in (
            ("drop_after_headers", BROKE),
            ("drop_mid_text", BROKE),
            ("drop_mid_tool_args", BROKE),
            ("malformed_sse", rf"^Could not parse .*{UNREADABLE}"),
            ("json_wrong_field_types", rf"sent a response of an unexpected shape .*{UNREADABLE}"),
            ("empty_body", CUT_SHORT),
        )
    ),
    Case("silent", replies=silent, options="--timeout 0.5", reason=SILENT),
    Case("headless_silent", replies=silent, options="--timeout 0.5", headless=True, reason=SILENT),
    Case("stall", replies=stalled, options="--timeout 0.5", reason=STALLED),
    Case("tool_raises", replies=told_the_model, lookup="raise", stop="stop", result="the alpha store"),
    *(stopped(what, action) for what in ("stream", "tool") for action in ("interrupt", "stop")),
    # no --timeout: only the interrupt ends it, and nothing else wakes the kernel's loop
    Case("headless_interrupt", replies=silent, stop="aborted", action="interrupt", headless=True),
]
MATRIX_SUMMARY = f"%%pi fault subset in a real kernel: {len(CASES)} cases"
"""Printed under the test summary (``tests/conftest.py``) when these tests ran."""


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with serving(LoopbackServer()) as srv:
        yield srv


@pytest.fixture(scope="module")
def fk(kernel: Kernel, server: LoopbackServer) -> Kernel:
    """The module's kernel with the loopback models, the ``lookup`` tool and the checks."""
    code = loopback_models(server.url, closed_port_url()) + KERNEL_SETUP.format(silent=SILENT_S)
    reply = kernel.run(code)
    assert reply["status"] == "ok", reply
    return kernel


def interrupt_once_requested(k: Kernel, server: LoopbackServer, requests: int) -> threading.Thread:
    """Interrupt the kernel once the server holds the run's ``requests``-th request: a headless
    run shows nothing while it waits, so nothing in the output can say when."""

    def wait_then_interrupt() -> None:
        deadline = time.monotonic() + RUN_BOUND_S
        while len(server.requests) < requests and time.monotonic() < deadline:
            time.sleep(0.02)
        k.interrupt()

    thread = threading.Thread(target=wait_then_interrupt, daemon=True)
    thread.start()
    return thread


def react_to(case: Case, k: Kernel) -> Callable[[Watch, dict[str, Any]], None] | None:
    if not case.action or not case.ready:
        return None
    done: list[bool] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        seen = watch.shown_text() + "".join(text for _, text in watch.stdout)
        if done or case.ready not in seen:
            return
        done.append(True)
        if case.action == "interrupt":
            k.interrupt()
        else:
            k.click(watch.button("Stop").comm_id)

    return react


def final_text(watch: Watch, headless: bool) -> str:
    if headless:
        [(_, kind, shown)] = watch.displays
        assert kind == "display_data"
        return str(shown["data"]["text/plain"])
    return str(watch.final_bundle()["text/plain"])


def check_cell_end(case: Case, reply: dict[str, Any], watch: Watch) -> None:
    """The cell ended the way its case allows, with no traceback beyond one line."""
    if case.action == "interrupt":
        ended = (reply["status"], reply["ename"], reply["traceback"])
        assert ended == ("error", "KeyboardInterrupt", [INTERRUPTED])
    elif case.headless and case.stop == "error":
        assert (reply["status"], reply["ename"]) == ("error", "RunFailed")
        [line] = reply["traceback"]
        assert line.startswith("RunFailed: The %%pi run ended with an error: ")
    else:
        assert reply["status"] == "ok", reply
        assert watch.errors == []


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fault_in_a_pi_cell(case: Case, fk: Kernel, server: LoopbackServer) -> None:
    k = fk.fresh()
    server.replies.clear()
    server.requests.clear()
    wire = WIRES[case.api]
    model = f"loop-{SHORT[case.api]}{'-refused' if case.refused else ''}:{wire.model_id}"
    assert k.run(f"prepare({case.lookup!r})")["status"] == "ok"
    server.queue(*case.replies(wire))
    cell = k.execute(f"%%pi --model {model} {case.options}\nLook up alpha.", allow_stdin=not case.headless)
    if case.action and not case.ready:
        interrupt_once_requested(k, server, len(case.replies(wire)))
    watch = Watch(k).until_replies([cell], react_to(case, k), timeout=RUN_BOUND_S)
    check_cell_end(case, watch.replies[cell][1], watch)
    shown = final_text(watch, case.headless)
    assert k.value("_pi.stop_reason") == case.stop
    if case.stop == "error":
        [error] = [line for line in shown.splitlines() if line.startswith("Error: ")]
        assert re.search(case.reason, error.removeprefix("Error: ")), error
    if case.shown:
        assert case.shown in shown.splitlines()
    if case.result:
        assert k.value("tool_result('call_1')").startswith(case.result)
    assert k.value("transcript_ok()") == "ok"
    # the conversation goes on: the next cell, against a good server, answers
    server.queue(Reply(200, wire.text_script("All good.").parts()))
    model = f"loop-{SHORT[case.api]}:{wire.model_id}"
    reply = k.run(f"%%pi --model {model}\nAnd now?", timeout=RUN_BOUND_S)
    assert reply["status"] == "ok", reply
    assert k.value("_pi.stop_reason, _pi.text") == "stop All good."
    assert k.value("transcript_ok()") == "ok"
    assert k.value("1 + 1") == "2"


def test_matrix_size() -> None:
    print(f"\n{MATRIX_SUMMARY}")
    assert len(CASES) >= 25
