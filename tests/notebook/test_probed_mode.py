"""The run's tool mode from what the server says: a loopback llama-server whose ``/props``
reports a chat template with or without tool calls, on a real ``InteractiveShell``. Without
tool calls the run is code-first (no tool sent, the code prompt, the footer says so); with
them, or when the server says nothing, tools. The user's ``--tool-mode`` and the models file's
``toolMode`` come first."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401
from llama_replies import FORMS, llama_reply
from loopback import LoopbackServer, json_reply, serving

from pi_notebook.ai.local_probe import clear_probe_cache
from pi_notebook.ai.models import openai_compatible_model, register_models, unregister_models

LOCAL = "--model llama.cpp:qwen --approve auto"


def props(tool_calls: bool | None) -> dict[str, Any]:
    """``/props`` as llama-server answers it: with ``chat_template_caps`` (``None``: an older
    server without them)."""
    found: dict[str, Any] = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}
    if tool_calls is not None:
        found["chat_template_caps"] = {
            "supports_tools": tool_calls, "supports_tool_calls": tool_calls, "supports_system_role": True
        }
    return found


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    with serving(LoopbackServer()) as srv:
        monkeypatch.setenv("LLAMA_CPP_BASE_URL", srv.url)
        clear_probe_cache()
        try:
            yield srv
        finally:
            clear_probe_cache()
            unregister_models("llama.cpp")


def chats(server: LoopbackServer) -> list[Any]:
    return [r.json for r in server.requests if r.path.endswith("/chat/completions")]


def pi(ip: Any, line: str, body: str) -> str:
    """The cell's output, text and HTML (the footer is in the HTML)."""
    result, captured = run(ip, f"%%pi {line}\n{body}")
    assert result.error_in_exec is None, result.error_in_exec
    return "\n".join(f"{o.get('text/plain', '')}\n{o.get('text/html', '')}" for o in outputs(captured))


def test_a_template_without_tool_calls_makes_the_run_code_first(ip: Any, server: LoopbackServer) -> None:
    server.queue(json_reply(200, props(False)))
    server.queue_sse(llama_reply(FORMS["fenced"]))
    server.queue_sse(llama_reply("2 ** 10 is 1024."))
    shown = pi(ip, LOCAL, "what is 2 ** 10?")
    assert ip.user_ns.pop("llama_fenced") == 1024
    first, second = chats(server)
    assert "tools" not in first
    assert "tools" not in second
    assert first["messages"][0]["content"].startswith("You work in a live Jupyter notebook")
    assert "tool mode: code" in shown
    assert "Prompt trimmed" not in shown  # code mode sends no tool: nothing to trim
    assert [r.path for r in server.requests].count("/props") == 1


@pytest.mark.parametrize("tool_calls", [True, None])
def test_a_template_with_tool_calls_or_none_said_keeps_tools(
    ip: Any, server: LoopbackServer, tool_calls: bool | None
) -> None:
    server.queue(json_reply(200, props(tool_calls)))
    server.queue_sse(llama_reply("Hello."))
    shown = pi(ip, LOCAL, "hi")
    [first] = chats(server)
    assert "run_code" in [t["function"]["name"] for t in first["tools"]]
    assert "tool mode: code" not in shown
    assert "tool mode: tools" in shown  # a local model's run names its mode


def test_the_users_choice_and_the_models_file_come_first(ip: Any, server: LoopbackServer) -> None:
    server.queue(json_reply(200, props(False)))  # asked once: the answer is cached
    server.queue_sse(llama_reply("Hello."))
    pi(ip, f"{LOCAL} --tool-mode tools", "hi")
    assert "tools" in chats(server)[-1]
    model = openai_compatible_model("qwen", f"{server.url}/v1", provider="llama.cpp")
    register_models([model.model_copy(update={"tool_mode": "tools"})])  # a models file's "toolMode"
    server.queue_sse(llama_reply("Hello again."))
    pi(ip, "--model llama.cpp:qwen --approve auto --new", "hi")
    assert "tools" in chats(server)[-1]
    assert [r.path for r in server.requests].count("/props") == 1


def test_a_server_that_never_answers_props_costs_one_bounded_wait(
    ip: Any, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_notebook.ai import local_probe

    monkeypatch.setattr(local_probe, "PROBE_TIMEOUT_S", 0.3)
    monkeypatch.setattr(local_probe, "PROBE_BUDGET_S", 0.5)
    server.queue(json_reply(200, props(False)))
    server.replies[0].head_delay = 30  # takes the request, never answers in time
    server.queue_sse(llama_reply("Hello."))
    server.queue_sse(llama_reply("Hello again."))
    pi(ip, LOCAL, "hi")
    pi(ip, LOCAL, "hi again")
    assert [r.path for r in server.requests].count("/props") == 1  # not asked again
    assert all("tools" in body for body in chats(server))  # unknown: tools, the API's way
