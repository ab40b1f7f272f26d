"""The approval bypass of reused tool-call ids, end to end in a real kernel, per wire API.

A ``%%pi`` cell talks to a loopback server of each wire API whose model calls ``run_code``
twice under the same id (``call_0``, as servers that number the calls of each response send
it every turn). The test clicks Approve on the first (benign) call; the second must ask
again (the test clicks Deny), and its code must not run. Before the fix the second call ran
without asking and wrote into the kernel's namespace.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from faults.wire import APIS, WIRES
from kernel_driver import Kernel, Watch
from loopback import LoopbackServer, Reply, json_reply, serving
from test_run_retry import call_then_parse_error, chat_reply

pytestmark = pytest.mark.kernel

SHORT = {
    "openai-completions": "cc",
    "openai-responses": "rs",
    "anthropic-messages": "an",
    "google-generative-ai": "gg",
}
RESULTS = "[(m.tool_call_id, m.is_error) for m in _pi.messages if m.role == 'toolResult']"


def register_models(url: str) -> str:
    """Kernel code: the model ``ids-<short>:<id>`` per wire API, served at ``url``, with a key."""
    return f"""\
import os, sys
sys.path[:0] = [{str(Path(__file__).parent.parent)!r}]
from faults.wire import WIRES
from pi_notebook.ai.models import register_models
for api, short in {SHORT!r}.items():
    provider = f"ids-{{short}}"
    register_models([WIRES[api].model({url!r}).model_copy(update={{"provider": provider}})])
    os.environ[provider.upper().replace("-", "_") + "_API_KEY"] = "test-key"
hits = []
"""


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with serving(LoopbackServer()) as srv:
        yield srv


@pytest.fixture(scope="module")
def ik(kernel: Kernel, server: LoopbackServer) -> Kernel:
    reply = kernel.run(register_models(server.url))
    assert reply["status"] == "ok", reply
    return kernel


def click_in_order(k: Kernel, answers: list[str]) -> tuple[list[str], Any]:
    """A reaction answering the n-th approval prompt with ``answers[n]``, recording the view's
    text when each prompt appeared."""
    seen: list[str] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        n = len(seen)
        prompts = min(len(watch.find("ButtonModel", description=d)) for d in ("Approve", "Deny"))
        if prompts > n and n < len(answers):
            seen.append(watch.shown_text())
            label = answers[len(seen) - 1]
            k.click(watch.find("ButtonModel", description=label)[len(seen) - 1].comm_id)

    return seen, react


@pytest.mark.parametrize("api", APIS)
def test_a_second_run_code_under_an_approved_id_asks_again(
    api: str, ik: Kernel, server: LoopbackServer
) -> None:
    k = ik.fresh()
    assert k.run("hits.clear()")["status"] == "ok"
    wire = WIRES[api]
    for code in ("hits.append('benign')", "hits.append('injected')"):
        script = wire.tool_script("call_0", with_text=False, name="run_code", args={"code": code})
        server.queue(Reply(200, script.parts()))
    server.queue(Reply(200, wire.text_script("Done.").parts()))
    cell = k.execute(f"%%pi --model ids-{SHORT[api]}:{wire.model_id} --tools run_code\ngo")
    seen, react = click_in_order(k, ["Approve", "Deny"])
    watch = Watch(k).until_replies([cell], react, timeout=60)
    assert watch.replies[cell][1]["status"] == "ok"
    assert k.value("hits") == "['benign']", "the second call ran without asking"
    assert len(seen) == 2
    assert "injected" in seen[1]  # the question showed the second call's own code
    results = k.value(RESULTS)
    assert results.count("False") == 1
    assert results.count("True") == 1
    assert "call_0" in results  # the first call kept the server's id; the second got its own


def test_a_call_offered_after_a_parse_error_asks_once_and_keeps_its_card(
    ik: Kernel, server: LoopbackServer
) -> None:
    """llama-server's parse error after a complete ``run_code`` call: the card offers the call,
    and that one Approve runs it (the gate counts the click for that exact call: no second
    question), on the same card."""
    k = ik.fresh()
    assert k.run(f"import os; os.environ['LLAMA_CPP_BASE_URL'] = {server.url!r}")["status"] == "ok"
    server.queue(json_reply(404, {"error": "no /props here"}))
    server.queue(Reply(200, call_then_parse_error("x = 6 * 7")))
    server.queue(Reply(200, chat_reply("It is 42.")))
    cell = k.execute("%%pi --name local --model llama.cpp:tiny --approve ask\ncompute")
    seen, react = click_in_order(k, ["Approve", "Approve"])
    watch = Watch(k).until_replies([cell], react, timeout=60)
    assert watch.replies[cell][1]["status"] == "ok"
    assert len(seen) == 1
    assert k.value("x") == "42"
    text = watch.final_bundle()["text/plain"]
    assert text.count("[tool] run_code") == 1, text
    assert "It is 42." in text
