"""``PiResult``: what ``_pi`` holds after a ``%%pi`` cell, computed from the run's messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ai.abort import ABORT_MESSAGE
from ..ai.types import Cost, Usage, content_text


@dataclass
class PiResult:
    """What ``_pi`` holds after a ``%%pi`` cell."""

    text: str
    """The final assistant message's text."""
    messages: list[Any]
    """The run's new messages (prompt, assistant, tool results, injected user messages)."""
    stop_reason: str | None
    usage: Usage
    """Summed over the run's assistant messages (``usage.cost`` holds the breakdown)."""
    cost: float
    """Total cost of the run in USD."""
    error_message: str | None = None
    conversation: str = "default"
    model: str = ""
    turns: int = 0
    budget_reason: str | None = None
    """Set when a budget stopped the run: ``"stopped: the run reached its budget of $0.50
    ($0.52 spent)"`` (``--max-cost``, ``--max-total-tokens``, the conversation's budget)."""

    def __str__(self) -> str:
        return self.text

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(f"PiResult(stop_reason={self.stop_reason!r}, text={self.text!r})")

    def _repr_markdown_(self) -> str | None:
        return self.text or None


def run_result(
    messages: list[Any], *, aborted: bool, conversation: str, model: str, budget_reason: str | None = None
) -> PiResult:
    """The result of a run whose new messages are ``messages``.

    ``aborted``: the run was stopped. When that happened between turns, no assistant message
    says so, and the result still reports ``stop_reason "aborted"``.
    """
    assistants = [m for m in messages if getattr(m, "role", None) == "assistant"]
    last = assistants[-1] if assistants else None
    usage = sum_usage(assistants)
    stop_reason = last.stop_reason if last is not None else None
    error_message = last.error_message if last is not None else None
    if aborted and stop_reason != "aborted":
        stop_reason, error_message = "aborted", error_message or ABORT_MESSAGE
    return PiResult(
        text=content_text(last.content) if last is not None else "",
        messages=messages,
        stop_reason=stop_reason,
        usage=usage,
        cost=usage.cost.total,
        error_message=error_message,
        conversation=conversation,
        model=model,
        turns=len(assistants),
        budget_reason=budget_reason,
    )


def sum_usage(messages: list[Any]) -> Usage:
    """The usage of ``messages`` (assistant messages) added up, cost breakdown included."""
    total = Usage(cost=Cost())
    for message in messages:
        u = message.usage
        total.input += u.input
        total.output += u.output
        total.cache_read += u.cache_read
        total.cache_write += u.cache_write
        total.total_tokens += u.total_tokens
        if u.estimated:  # one answer completed by the session's estimate makes the sum one
            total.estimated = True
        for name in ("input", "output", "cache_read", "cache_write", "total"):
            setattr(total.cost, name, getattr(total.cost, name) + getattr(u.cost, name))
    return total
