"""Wire helpers shared by the ``google-generative-ai`` tests: ``streamGenerateContent?alt=sse``
chunks (every ``data:`` a whole ``GenerateContentResponse``) and a model on the loopback server."""

from __future__ import annotations

from typing import Any

from loopback import LoopbackServer, sse

from pi_notebook.ai import Model, ModelCost

KEY = "AIzaSy-test-secret-key-0123456789"
SIG1 = "c2lnLW9uZQ=="
SIG2 = "c2lnLXR3bw=="


def chunk(
    *parts: dict[str, Any],
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    response_id: str = "resp-g1",
) -> bytes:
    candidate: dict[str, Any] = {"index": 0}
    if parts:
        candidate["content"] = {"role": "model", "parts": list(parts)}
    if finish:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": "gemini-2.5-flash",
        "responseId": response_id,
    }
    if usage is not None:
        body["usageMetadata"] = usage
    return sse(body)


USAGE = {
    "promptTokenCount": 100,
    "cachedContentTokenCount": 40,
    "candidatesTokenCount": 20,
    "thoughtsTokenCount": 5,
    "totalTokenCount": 125,
}


def make_model(server: LoopbackServer, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "gemini-2.5-flash",
        "name": "Gemini 2.5 Flash",
        "api": "google-generative-ai",
        "provider": "google",
        "base_url": f"{server.url}/v1beta",
        "reasoning": True,
        "input": ["text", "image"],
        "cost": ModelCost(input=0.3, output=2.5, cache_read=0.075),
        "context_window": 1_048_576,
        "max_tokens": 65_536,
    }
    fields.update(overrides)
    return Model(**fields)
