"""Local servers report their real context window and whether their chat template takes tool
calls: each server's own endpoint, spoken by a loopback server with the exact JSON shape the
real server returns, and the model that results; a server that never answers costs one bounded
wait, once."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from loopback import LoopbackServer, json_reply

from pi_notebook.ai import get_model, local_probe
from pi_notebook.ai.local_probe import (
    clear_probe_cache,
    probe_context_window,
    probe_server,
    probe_tool_calls,
    probed_model,
)
from pi_notebook.ai.models import openai_compatible_model, unregister_models


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    clear_probe_cache()
    yield
    clear_probe_cache()
    for provider in ("llama.cpp", "ollama", "lmstudio", "vllm"):
        unregister_models(provider)


async def test_llama_cpp_props(loopback: LoopbackServer) -> None:
    loopback.queue(json_reply(200, {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}))
    model = openai_compatible_model("local", f"{loopback.url}/v1", provider="llama.cpp")
    probed = await probed_model(model)
    assert (probed.context_window, probed.max_tokens) == (4096, 1024)
    assert [(r.method, r.path) for r in loopback.requests] == [("GET", "/props")]
    assert model.context_window == 32_768  # the input model is not changed


async def test_a_result_is_cached_but_a_failure_is_not(loopback: LoopbackServer) -> None:
    model = openai_compatible_model("local", f"{loopback.url}/v1", provider="llama.cpp")
    loopback.queue(json_reply(503, {"error": {"message": "Loading model"}}))
    assert await probe_context_window(model) is None
    loopback.queue(json_reply(200, {"default_generation_settings": {"n_ctx": 8192}}))
    assert await probe_context_window(model) == 8192
    assert await probe_context_window(model) == 8192
    assert len(loopback.requests) == 2


async def test_ollama_prefers_the_loaded_context(loopback: LoopbackServer) -> None:
    loopback.queue(
        json_reply(200, {"models": [{"name": "llama3.2:latest", "context_length": 8192}]}),
        json_reply(200, {"model_info": {"llama.context_length": 131072}, "capabilities": ["completion"]}),
    )
    model = openai_compatible_model("llama3.2", f"{loopback.url}/v1", provider="ollama")
    assert await probe_context_window(model) == 8192
    assert [(r.method, r.path) for r in loopback.requests] == [("GET", "/api/ps"), ("POST", "/api/show")]


@pytest.mark.parametrize(
    ("show", "expected"),
    [
        (
            {"parameters": 'stop "<|eot|>"\nnum_ctx 16384', "model_info": {"llama.context_length": 131072}},
            16384,
        ),
        ({"model_info": {"general.architecture": "llama", "llama.context_length": 131072}}, 4096),
        ({"model_info": {"qwen2.context_length": 2048}}, 2048),
        ({"license": "..."}, None),
    ],
)
async def test_ollama_show(loopback: LoopbackServer, show: dict[str, object], expected: int | None) -> None:
    loopback.queue(json_reply(200, {"models": []}), json_reply(200, show))
    model = openai_compatible_model("llama3.2", f"{loopback.url}/v1", provider="ollama")
    assert await probe_context_window(model) == expected
    assert loopback.requests[1].json == {"model": "llama3.2"}


async def test_lmstudio_and_vllm(loopback: LoopbackServer) -> None:
    loopback.queue(
        json_reply(200, {"id": "qwen", "max_context_length": 32768, "loaded_context_length": 4096}),
        json_reply(200, {"object": "list", "data": [{"id": "meta/llama", "max_model_len": 2048}]}),
    )
    lm = openai_compatible_model("qwen", f"{loopback.url}/v1", provider="lmstudio")
    vllm = openai_compatible_model("meta/llama", f"{loopback.url}/v1", provider="vllm")
    assert await probe_context_window(lm) == 4096
    probed = await probed_model(vllm)
    assert (probed.context_window, probed.max_tokens) == (2048, 512)
    assert [r.path for r in loopback.requests] == ["/api/v0/models/qwen", "/v1/models"]


async def test_down_wrong_shape_and_other_providers_keep_the_model(loopback: LoopbackServer) -> None:
    loopback.queue(json_reply(200, ["not", "an", "object"]))
    model = openai_compatible_model("x", f"{loopback.url}/v1", provider="llama.cpp")
    assert await probed_model(model) is model
    down = openai_compatible_model("x", "http://127.0.0.1:9/v1", provider="ollama")
    assert await probed_model(down) is down
    cloud = get_model("openai", "gpt-4o-mini")
    assert await probed_model(cloud) is cloud
    assert len(loopback.requests) == 1


# --- whether the server takes tool calls ---------------------------------------------------------

# What llama-server (b11434, Qwen2.5-Coder-0.5B, --chat-template-file) answers on /props, cut to
# the fields read here and a few around them.
LLAMA_PROPS = {
    "default_generation_settings": {"n_ctx": 4096, "params": {"temperature": 0.8}},
    "total_slots": 1,
    "model_alias": "local",
    "chat_template": "{%- if tools %}...",
    "chat_template_caps": {
        "supports_object_arguments": True,
        "supports_parallel_tool_calls": True,
        "supports_preserve_reasoning": False,
        "supports_reasoning_effort": False,
        "supports_string_content": True,
        "supports_system_role": True,
        "supports_tool_calls": True,
        "supports_tools": True,
        "supports_typed_content": False,
    },
    "build_info": "b0-unknown",
}


@pytest.mark.parametrize(
    ("caps", "expected"),
    [
        (LLAMA_PROPS["chat_template_caps"], True),
        ({"supports_tools": False, "supports_tool_calls": False, "supports_system_role": True}, False),
        ({"supports_tools": True, "supports_tool_calls": False}, False),
        (None, None),  # an older server: no chat_template_caps at all
    ],
)
async def test_llama_cpp_chat_template_caps(
    loopback: LoopbackServer, caps: object, expected: bool | None
) -> None:
    props = {**LLAMA_PROPS, "chat_template_caps": caps}
    if caps is None:
        del props["chat_template_caps"]
    loopback.queue(json_reply(200, props))
    model = openai_compatible_model("local", f"{loopback.url}/v1", provider="llama.cpp")
    assert await probe_tool_calls(model) is expected
    assert await probe_context_window(model) == 4096  # the same answer, from the cache
    assert [(r.method, r.path) for r in loopback.requests] == [("GET", "/props")]


@pytest.mark.parametrize(
    ("capabilities", "expected"),
    [(["completion", "tools"], True), (["completion", "vision"], False), (None, None)],
)
async def test_ollama_capabilities(
    loopback: LoopbackServer, capabilities: list[str] | None, expected: bool | None
) -> None:
    show: dict[str, object] = {"parameters": "num_ctx 8192", "model_info": {"qwen2.context_length": 32768}}
    if capabilities is not None:
        show["capabilities"] = capabilities
    loopback.queue(json_reply(200, {"models": []}), json_reply(200, show))
    model = openai_compatible_model("qwen2.5-coder:0.5b", f"{loopback.url}/v1", provider="ollama")
    assert await probe_server(model) == local_probe.ServerFacts(8192, expected)


async def test_lmstudio_says_nothing_about_tools(loopback: LoopbackServer) -> None:
    loopback.queue(json_reply(200, {"id": "qwen", "loaded_context_length": 4096}))
    model = openai_compatible_model("qwen", f"{loopback.url}/v1", provider="lmstudio")
    assert await probe_server(model) == local_probe.ServerFacts(4096, None)


async def test_a_server_that_never_answers_is_waited_for_once(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_probe, "PROBE_TIMEOUT_S", 0.3)
    monkeypatch.setattr(local_probe, "PROBE_BUDGET_S", 0.5)
    loopback.queue(json_reply(200, LLAMA_PROPS))
    loopback.replies[0].head_delay = 30  # takes the request, answers nothing in time
    model = openai_compatible_model("local", f"{loopback.url}/v1", provider="llama.cpp")
    start = time.monotonic()
    assert await probe_tool_calls(model) is None  # unknown, no exception
    assert time.monotonic() - start < 2.0
    start = time.monotonic()
    assert await probed_model(model) is model  # the next run does not wait again
    assert time.monotonic() - start < 0.1
    assert len(loopback.requests) == 1


async def test_a_whole_probe_is_bounded_even_when_each_read_is_quick(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ollama asks twice: the budget bounds both requests together."""
    monkeypatch.setattr(local_probe, "PROBE_TIMEOUT_S", 0.4)
    monkeypatch.setattr(local_probe, "PROBE_BUDGET_S", 0.5)
    loopback.queue(json_reply(200, {"models": []}), json_reply(200, {"capabilities": ["tools"]}))
    loopback.replies[0].head_delay = loopback.replies[1].head_delay = 0.3
    model = openai_compatible_model("llama3.2", f"{loopback.url}/v1", provider="ollama")
    start = time.monotonic()
    assert await probe_server(model) == local_probe.UNKNOWN
    assert time.monotonic() - start < 1.5
