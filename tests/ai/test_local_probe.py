"""Local servers report their real context window: each server's own endpoint, spoken by a
loopback server with the exact JSON shape the real server returns, and the model that results."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from loopback import LoopbackServer, json_reply

from pi_notebook.ai import get_model
from pi_notebook.ai.local_probe import clear_probe_cache, probe_context_window, probed_model
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
    loopback.queue(json_reply(200, {"models": [{"name": "llama3.2:latest", "context_length": 8192}]}))
    model = openai_compatible_model("llama3.2", f"{loopback.url}/v1", provider="ollama")
    assert await probe_context_window(model) == 8192
    assert [(r.method, r.path) for r in loopback.requests] == [("GET", "/api/ps")]


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
