"""A small model's run sends a prompt its server can afford: on a real ``InteractiveShell``
with a loopback llama.cpp server (``/props`` as llama-server answers it, then the chat stream),
what the request carries (which tools, their schemas, the system prompt) and the card's line;
a model with a large window gets everything, unchanged."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401
from loopback import LoopbackServer, json_reply, serving, sse

from pi_notebook.agent import tool
from pi_notebook.ai.local_probe import clear_probe_cache
from pi_notebook.ai.models import openai_compatible_model, register_models, unregister_models
from pi_notebook.notebook.config import DEFAULT_SYSTEM_PROMPT
from pi_notebook.notebook.run.fit import COMPACT_SYSTEM_PROMPT, compact_schema, compact_tool, trimmed_line

PROPS = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1,
         "chat_template_caps": {"supports_tools": True, "supports_tool_calls": True}}


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with serving(LoopbackServer()) as srv:
        yield srv


@pytest.fixture
def local(server: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    monkeypatch.setenv("LLAMA_CPP_BASE_URL", server.url)
    monkeypatch.setenv("PI_NOTEBOOK_HEADLESS", "1")
    clear_probe_cache()
    try:
        yield server
    finally:
        clear_probe_cache()
        unregister_models("llama.cpp")
        unregister_models("big")


def chat_reply(text: str) -> list[bytes]:
    head = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "tiny"}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    return [sse(c) for c in chunks] + [b"data: [DONE]\n\n"]


def shown(captured: Any) -> str:
    return "\n".join(str(o.get("text/plain", "")) for o in outputs(captured))


def sent_tools(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["function"]["name"]: t["function"] for t in body.get("tools", [])}


def test_a_local_model_gets_the_tools_it_can_use_in_compact_form(ip: Any, local: LoopbackServer) -> None:
    local.queue(json_reply(200, PROPS))
    local.queue_sse(chat_reply("Hi!"))
    _, captured = run(ip, "%%pi --model llama.cpp:tiny --approve auto\nHello")
    body = local.requests[-1].json
    tools = sent_tools(body)
    # headless: nothing to edit in an open notebook; the rest can be used (auto allows run_code)
    assert sorted(tools) == sorted(
        ["list_variables", "inspect_variable", "read_cells", "read_notebook", "run_code", "set_variable"]
    )
    run_code = tools["run_code"]
    assert run_code["description"] == (
        "Run Python code in the notebook's kernel namespace (like a cell, not added to history)."
    )
    what = "Python (IPython syntax allowed) to run in the notebook's namespace."
    assert run_code["parameters"] == {
        "properties": {"code": {"description": what, "type": "string"}},
        "required": ["code"], "type": "object",
    }
    assert all("default" not in json.dumps(t["parameters"]) for t in tools.values())
    assert body["messages"][0] == {"role": "system", "content": COMPACT_SYSTEM_PROMPT}
    text = shown(captured)
    assert "Prompt trimmed for a small context window: 6 tools, ~" in text
    after, before = (int(n.replace(",", "")) for n in text.split("~")[1:3] for n in [n.split(" ")[0]])
    assert after * 3 < before  # the compact prompt is under a third of the full one
    sent = len(json.dumps([t["function"] for t in body["tools"]])) + len(COMPACT_SYSTEM_PROMPT)
    assert 0.8 < sent / (4 * after) < 1.25  # the line's estimate is what was sent


def test_blocked_tools_are_not_sent_and_the_calls_still_validate(ip: Any, local: LoopbackServer) -> None:
    local.queue(json_reply(200, PROPS))
    local.queue_sse(chat_reply("Hi!"))
    _, captured = run(ip, "%%pi --model llama.cpp:tiny --approve ask\nHello")  # headless: ask became deny
    assert sorted(sent_tools(local.requests[-1].json)) == [
        "inspect_variable", "list_variables", "read_cells", "read_notebook"
    ]
    assert (
        "in full). Not sent: run_code, set_variable (this run's approval policy blocks them; "
        "--approve auto allows them). Not sent: insert_cell, insert_cells, edit_cell, delete_cells, "
        "run_cell (no open notebook in a headless run)."
    ) in shown(captured)


def test_a_system_prompt_the_user_set_is_kept(ip: Any, local: LoopbackServer) -> None:
    local.queue(json_reply(200, PROPS))
    local.queue_sse(chat_reply("Hi!"))
    run(ip, "%%pi --model llama.cpp:tiny --tools run_code --approve auto --system 'Answer in French.'\nHello")
    body = local.requests[-1].json
    assert body["messages"][0]["content"] == "Answer in French."
    assert list(sent_tools(body)) == ["run_code"]


def test_a_run_without_tools_is_left_as_it_is(ip: Any, local: LoopbackServer) -> None:
    local.queue(json_reply(200, PROPS))
    local.queue_sse(chat_reply("Hi!"))
    _, captured = run(ip, "%%pi --model llama.cpp:tiny --tools none\nHello")
    body = local.requests[-1].json
    assert body["messages"][0]["content"] == DEFAULT_SYSTEM_PROMPT
    assert "tools" not in body
    assert "Prompt trimmed" not in shown(captured)


def test_a_large_window_model_gets_everything(ip: Any, local: LoopbackServer) -> None:
    model = openai_compatible_model("wide", f"{local.url}/v1", provider="big", context_window=128_000)
    register_models([model])
    local.queue_sse(chat_reply("Hi!"))
    _, captured = run(ip, "%%pi --model big:wide --approve auto\nHello")
    body = local.requests[-1].json
    assert len(sent_tools(body)) == 11
    assert body["messages"][0]["content"].startswith(DEFAULT_SYSTEM_PROMPT)
    assert "Prompt trimmed" not in shown(captured)


def test_compact_schema_and_tool() -> None:
    @tool
    def lookup(city: str, days: int = 3) -> str:
        """Look up the weather. Returns a table; for example lookup("Paris").

        Args:
            city: The city. Any spelling works.
            days: How many days ahead.
        """
        return city

    small = compact_tool(lookup)
    assert small.to_tool().description == "Look up the weather."
    assert small.json_schema() == {
        "properties": {"city": {"description": "The city.", "type": "string"},
                       "days": {"type": "integer"}},  # optional: its type only
        "required": ["city"], "type": "object",
    }
    assert small.parameters is lookup.parameters  # the arguments are checked as before
    assert compact_schema({"title": "T", "examples": [1], "anyOf": [{"type": "string", "default": "x"}]}) == {
        "anyOf": [{"type": "string"}]
    }
    nullable = {"properties": {"p": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "P."}}}
    assert compact_schema(nullable) == {"properties": {"p": {"type": "string"}}}
    assert trimmed_line(1, 90, 1200) == (
        "Prompt trimmed for a small context window: 1 tool, ~90 tokens of instructions and tool "
        "schemas (~1,200 in full)."
    )
    assert trimmed_line(2, 90, 1200, {"why": ["a", "b"]}).endswith("in full). Not sent: a, b (why).")


def test_the_trimmed_tools_still_run(ip: Any, local: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    head = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "tiny"}
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "run_code", "arguments": json.dumps({"code": "x_fit = 6 * 7"})}}
    local.queue(json_reply(200, PROPS))
    local.queue_sse([sse({**head, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}),
                     sse({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
                     b"data: [DONE]\n\n"])
    local.queue_sse(chat_reply("Done: 42"))
    _, captured = run(ip, "%%pi --model llama.cpp:tiny --approve auto\nset x_fit")
    assert ip.user_ns.pop("x_fit") == 42
    assert "Done: 42" in shown(captured)
