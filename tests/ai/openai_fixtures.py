"""Wire helpers shared by the ``openai-completions`` tests: a model pointing at the loopback
server, Chat Completions chunks in the exact SSE shape, and event collection that checks the
"exactly one terminal event, and it is the last" contract."""

from __future__ import annotations

from typing import Any

from ai.stream_helpers import collect, ctx
from loopback import LoopbackServer, sse

from pi_notebook.ai.providers.openai_completions import OpenAICompletionsOptions, stream
from pi_notebook.ai.types import AssistantMessage, Context, Model, ModelCost

DONE = b"data: [DONE]\n\n"
KEY = "sk-test-SECRET-0123456789"


def make_model(server: LoopbackServer, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "gpt-test",
        "name": "GPT test",
        "api": "openai-completions",
        "provider": "openai",
        "base_url": f"{server.url}/v1",
        "input": ["text", "image"],
        "cost": ModelCost(input=1.0, output=2.0, cache_read=0.5, cache_write=0.0),
        "context_window": 128_000,
        "max_tokens": 4096,
    }
    fields.update(overrides)
    return Model(**fields)


def chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    *,
    usage: Any = None,
    choices: bool = True,
    model: str = "gpt-test",
    **extra: Any,
) -> bytes:
    obj: dict[str, Any] = {
        "id": "chatcmpl-42",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}]
        if choices
        else [],
        **extra,
    }
    if usage is not None:
        obj["usage"] = usage
    return sse(obj)


def text_reply(*tokens: str, finish: str = "stop") -> list[Any]:
    return [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": t}) for t in tokens),
        chunk({}, finish),
        DONE,
    ]


def tool_delta(
    index: int, *, id: str | None = None, name: str | None = None, args: str | None = None
) -> bytes:
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if args is not None:
        function["arguments"] = args
    call: dict[str, Any] = {"index": index, "function": function}
    if id is not None:
        call.update(id=id, type="function")
    return chunk({"tool_calls": [call]})


def opts(**kwargs: Any) -> OpenAICompletionsOptions:
    kwargs.setdefault("api_key", KEY)
    return OpenAICompletionsOptions(**kwargs)


async def run(
    server: LoopbackServer,
    script: list[Any],
    model: Model | None = None,
    context: Context | None = None,
    options: Any = None,
    **reply: Any,
) -> tuple[list[Any], AssistantMessage]:
    server.queue_sse(script, **reply)
    return await collect(stream(model or make_model(server), context or ctx(), options or opts()))
