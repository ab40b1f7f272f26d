"""What llama.cpp's ``llama-server`` streams on ``/v1/chat/completions`` for a small model that
prints its tool call instead of making it (Qwen2.5-Coder-0.5B, a template the server does not
parse calls from): the text in small ``content`` deltas, then a ``finish_reason: "stop"`` chunk
with ``timings`` and the ``usage`` of the request, then ``[DONE]``. The three forms seen: a JSON
object, Hermes ``<tool_call>`` tags, a fenced Python block."""

from __future__ import annotations

import json
from typing import Any

from loopback import sse

PRINTED_JSON = (
    "To find the mean I will run code.\n"
    '{"name": "run_code", "arguments": {"code": "import statistics\\n'
    'llama_mean = statistics.mean([3, 5, 10])\\nprint(llama_mean)"}}'
)
PRINTED_TAGGED = (
    '<tool_call>\n{"name": "run_code", "arguments": {"code": "llama_tagged = sum(range(5))\\n'
    'print(llama_tagged)"}}\n</tool_call>'
)
PRINTED_FENCED = "Here is the code:\n```python\nllama_fenced = 2 ** 10\nprint(llama_fenced)\n```"
FORMS = {"json": PRINTED_JSON, "tagged": PRINTED_TAGGED, "fenced": PRINTED_FENCED}
VARIABLES = {"json": ("llama_mean", 6), "tagged": ("llama_tagged", 10), "fenced": ("llama_fenced", 1024)}


def llama_reply(text: str, prompt_tokens: int = 412, piece: int = 7) -> list[bytes]:
    """The SSE frames of one streamed answer of ``text``, as llama-server sends them."""
    head = {"id": "chatcmpl-Ab3", "object": "chat.completion.chunk", "created": 1765000000, "model": "qwen"}
    head["system_fingerprint"] = "b7100-3f2a1c9"
    opening = {"role": "assistant", "content": None}
    frames: list[dict[str, Any]] = [
        {**head, "choices": [{"index": 0, "finish_reason": None, "delta": opening}]}
    ]
    frames += [
        {**head, "choices": [{"index": 0, "finish_reason": None, "delta": {"content": text[i : i + piece]}}]}
        for i in range(0, len(text), piece)
    ]
    completion = max(1, len(text) // 4)
    frames.append(
        {
            **head,
            "choices": [{"index": 0, "finish_reason": "stop", "delta": {}}],
            "usage": {
                "completion_tokens": completion,
                "prompt_tokens": prompt_tokens,
                "total_tokens": prompt_tokens + completion,
            },
            "timings": {"prompt_n": prompt_tokens, "predicted_n": completion, "predicted_per_second": 21.5},
        }
    )
    return [sse(frame) for frame in frames] + [b"data: [DONE]\n\n"]


def request_roles(body: Any) -> list[str]:
    return [m["role"] for m in body["messages"]]


def dumped(body: Any) -> str:
    return json.dumps(body)


UNPARSED = "The model produced output that does not match the expected Hermes 2 Pro format"


def unparsed_reply(code: str, model: str = "qwen") -> list[bytes]:
    """What llama-server streams when the text after a complete tool call does not parse: the
    call's deltas, then an error event, and no ``[DONE]``."""
    head = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": model}
    call = {"index": 0, "id": "t1", "type": "function", "function": {"name": "run_code", "arguments": ""}}
    args = {"index": 0, "function": {"arguments": json.dumps({"code": code})}}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]},
        {**head, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]},
        {**head, "choices": [{"index": 0, "delta": {"tool_calls": [args]}}]},
    ]
    error = {"error": {"code": 500, "message": UNPARSED, "type": "server_error"}}
    return [sse(c) for c in chunks] + [sse(error)]
