"""Helpers shared by the provider tests: a one-message context and a stream drain that
asserts the "exactly one terminal event, and it is the last" contract."""

from __future__ import annotations

import asyncio
from typing import Any

from pi_notebook.ai import AssistantMessage, Context, UserMessage


def ctx(text: str = "hi", **kwargs: Any) -> Context:
    return Context(messages=[UserMessage(content=text)], **kwargs)


async def collect(s: Any) -> tuple[list[Any], AssistantMessage]:
    """Drain a stream (it must never raise) and return its events and final message."""
    events = [event async for event in s]
    final = await asyncio.wait_for(s.result(), 5)
    terminal = [e for e in events if e.type in ("done", "error")]
    assert terminal == [events[-1]], "exactly one terminal event, and it is the last"
    assert (terminal[0].message if terminal[0].type == "done" else terminal[0].error) is final
    return events, final


def kinds(events: list[Any]) -> list[str]:
    return [e.type for e in events]
