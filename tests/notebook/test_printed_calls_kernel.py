"""Calls a model printed in its text, and code-first mode, in a real ipykernel driven through
jupyter_client, with clicks: a loopback ``llama-server`` (``llama_replies.py``) streams a printed
call, its card asks even under ``--approve auto`` and says why, Approve runs it (the model
then answers its result), Deny leaves it (its text is the answer); a code-first run on the faux
model asks for its block under the default policy, runs it in the kernel, and answers."""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch
from llama_replies import FORMS, llama_reply, request_roles, unparsed_reply
from loopback import LoopbackServer, json_reply, serving

pytestmark = pytest.mark.kernel

RESULTS = "[(m.tool_name, m.is_error, m.content[0].text) for m in _pi.messages if m.role == 'toolResult']"


def click(k: Kernel, label: str, seen: list[str]) -> Callable[[Watch, dict[str, Any]], None]:
    """Click ``label`` on the first approval prompt, once; ``seen`` gets what the view showed."""

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        if seen or not watch.find("ButtonModel", description=label):
            return
        seen.append(watch.shown_text())
        k.click(watch.find("ButtonModel", description=label)[0].comm_id)

    return react


def run_local(k: Kernel, server: LoopbackServer, line: str, label: str) -> tuple[Watch, str, str]:
    seen: list[str] = []
    assert k.run(f"import os; os.environ['LLAMA_CPP_BASE_URL'] = {server.url!r}")["status"] == "ok"
    cell = k.execute(f"%%pi --model llama.cpp:qwen {line}\ncompute it")
    watch = Watch(k).until_replies([cell], click(k, label, seen), timeout=60)
    assert watch.replies[cell][1]["status"] == "ok"
    assert len(seen) == 1
    return watch, seen[0], watch.final_bundle()["text/plain"]


def test_a_printed_json_call_asks_under_approve_auto_and_approve_runs_it(k: Kernel) -> None:
    server = LoopbackServer()
    server.queue(json_reply(404, {}))  # no /props
    server.queue_sse(llama_reply(FORMS["json"]))
    server.queue_sse(llama_reply("The mean is 6."))
    with serving(server):
        _, asking, final = run_local(k, server, "--approve auto", "Approve")
    assert "the model wrote this call in its text instead of making it" in asking
    assert "[tool] run_code (done) · recovered from the model's text" in final
    assert k.value("llama_mean") == "6"
    assert k.value("_pi.text") == "The mean is 6."
    chats = [r.json for r in server.requests if r.path.endswith("/chat/completions")]
    assert request_roles(chats[1]) == ["system", "user", "assistant", "tool"]


def test_a_tagged_call_denied_is_not_run_and_its_text_is_the_answer(k: Kernel) -> None:
    server = LoopbackServer()
    server.queue(json_reply(404, {}))
    server.queue_sse(llama_reply(FORMS["tagged"]))
    with serving(server):
        _, _, final = run_local(k, server, "--approve auto", "Deny")
    assert "[tool] run_code (denied) · recovered from the model's text" in final
    assert k.value("'llama_tagged' in globals()") == "False"
    assert ast.literal_eval(k.value(RESULTS)) == [("run_code", True, "Tool call denied by the user.")]
    assert k.value("_pi.text") == FORMS["tagged"]
    chats = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert len(chats) == 1  # the model is not asked again


def test_a_code_first_run_asks_for_its_block_runs_it_in_the_kernel_and_answers(k: Kernel) -> None:
    block = "Computing.\n```python\nkernel_x = sum(range(10))\nprint(kernel_x)\n```"
    assert k.run(f"faux.set_responses([{block!r}, 'The sum is 45.'])")["status"] == "ok"
    seen: list[str] = []
    cell = k.execute("%%pi --model faux:faux-1 --tool-mode code\nsum 0..9")
    watch = Watch(k).until_replies([cell], click(k, "Approve", seen), timeout=60)
    assert watch.replies[cell][1]["status"] == "ok"
    assert k.value("kernel_x") == "45"
    assert k.value("_pi.text") == "The sum is 45."
    assert ast.literal_eval(k.value(RESULTS)) == [("run_code", False, "stdout:\n45\n")]
    bundle = watch.final_bundle()
    assert "[tool] run_code (done)" in bundle["text/plain"]
    assert "tool mode: code" in bundle["text/html"]


def test_a_call_the_server_could_not_parse_after_is_offered_and_runs_once(k: Kernel) -> None:
    """The other kind of call the model meant: complete, then the server's parse error."""
    server = LoopbackServer()
    server.queue(json_reply(404, {}))
    server.queue_sse(unparsed_reply("unparsed_x = 42"))
    server.queue_sse(llama_reply("It is 42."))
    with serving(server):
        _, asking, final = run_local(k, server, "--approve auto", "Approve")
    assert "not executed: the server could not parse the model&#x27;s output after this call" in asking
    assert k.value("unparsed_x") == "42"
    assert k.value("_pi.text") == "It is 42."
    assert "recovered from the model's text" not in final
    chats = [r.json for r in server.requests if r.path.endswith("/chat/completions")]
    assert [request_roles(c) for c in chats] == [["system", "user"], ["system", "user", "assistant", "tool"]]
