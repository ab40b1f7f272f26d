"""Wire helpers and fixtures for the ``anthropic-messages`` provider tests: Anthropic's SSE
events (``event: <type>`` + ``data: <json>``), a model on the loopback server, a client per test."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from loopback import LoopbackServer, sse

from pi_notebook.ai import (
    Model,
    ModelCost,
)

KEY = "fake-anthropic-key-0123456789-not-real"
# One SSL context for every test's client: building one per client costs ~0.2 s.
SSL_CONTEXT = ssl.create_default_context()
CLIENT: httpx.AsyncClient | None = None


@pytest.fixture(autouse=True)
async def http_client() -> AsyncIterator[httpx.AsyncClient]:
    """A client per test (and event loop); ``opts()`` passes it as ``http_client``."""
    global CLIENT
    async with httpx.AsyncClient(verify=SSL_CONTEXT) as client:
        CLIENT = client
        yield client
    CLIENT = None


def client() -> httpx.AsyncClient | None:
    """The current test's client (set by the autouse ``http_client`` fixture)."""
    return CLIENT


def opts(**options: Any) -> dict[str, Any]:
    return {"api_key": KEY, "http_client": CLIENT, **options}


# --- wire helpers -----------------------------------------------------------------------


def ev(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields}, event=kind)


def message_start(input_tokens: int = 12, msg_id: str = "msg_01", **usage: Any) -> bytes:
    return ev(
        "message_start",
        message={
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-test",
            "stop_reason": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1, **usage},
        },
    )


def block_start(index: int, block: dict[str, Any]) -> bytes:
    return ev("content_block_start", index=index, content_block=block)


def delta(index: int, **d: Any) -> bytes:
    return ev("content_block_delta", index=index, delta=d)


def block_stop(index: int) -> bytes:
    return ev("content_block_stop", index=index)


def text_block(index: int, *parts: str) -> list[bytes]:
    return [
        block_start(index, {"type": "text", "text": ""}),
        *(delta(index, type="text_delta", text=p) for p in parts),
        block_stop(index),
    ]


def tool_block(index: int, tool_id: str, name: str, *fragments: str) -> list[bytes]:
    return [
        block_start(index, {"type": "tool_use", "id": tool_id, "name": name, "input": {}}),
        *(delta(index, type="input_json_delta", partial_json=f) for f in fragments),
        block_stop(index),
    ]


def message_end(stop_reason: str = "end_turn", usage: dict[str, Any] | None = None, **d: Any) -> list[bytes]:
    fields: dict[str, Any] = {"delta": {"stop_reason": stop_reason, "stop_sequence": None, **d}}
    if usage is not None:
        fields["usage"] = usage
    return [ev("message_delta", **fields), ev("message_stop")]


def make_model(server: LoopbackServer, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "claude-test",
        "name": "Claude Test",
        "api": "anthropic-messages",
        "provider": "anthropic",
        "base_url": server.url,
        "reasoning": True,
        "input": ["text", "image"],
        "cost": ModelCost(input=5, output=25, cache_read=0.5, cache_write=6.25),
        "context_window": 200_000,
        "max_tokens": 32_000,
    }
    fields.update(overrides)
    return Model(**fields)
