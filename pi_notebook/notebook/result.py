"""``PiResult``: what ``_pi`` holds after a ``%%pi`` cell, computed from the run's messages; and
the code a run executed (``executed_calls``), which ``_pi.code``, ``%pi export`` and the
"Insert as cell" buttons share (``ExportedCell``: one such call as a marked code cell)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ai.abort import ABORT_MESSAGE
from ..ai.types import Cost, ToolCall, Usage, content_text

EXPORTED_TOOLS = ("run_code", "set_variable", "run_cell")
"""The tools whose successful calls are code a notebook can run again (``_pi.code``,
``%pi export``)."""


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
    code: list[str] = field(default_factory=list)
    """The code the run executed, in order: one string per successful ``run_code`` (its code),
    ``set_variable`` (``name = expression``) and ``run_cell`` (the cell's source); denied and
    failed calls are left out. ``"\n\n".join(_pi.code)`` is one cell of all of it."""

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
        code=[call.code for call in executed_calls(messages)[0]],
    )


def sum_usage(messages: list[Any]) -> Usage:
    """The usage of ``messages`` (assistant messages) added up, cost breakdown included."""
    tokens = [0, 0, 0, 0, 0]  # input, output, cache_read, cache_write, total_tokens
    dollars = [0.0, 0.0, 0.0, 0.0, 0.0]  # the same for the cost, total last
    estimated = False
    for message in messages:
        u, c = message.usage, message.usage.cost
        for i, value in enumerate((u.input, u.output, u.cache_read, u.cache_write, u.total_tokens)):
            tokens[i] += value
        for i, value in enumerate((c.input, c.output, c.cache_read, c.cache_write, c.total)):
            dollars[i] += value
        # one answer completed by the session's estimate makes the sum one
        estimated = estimated or bool(u.estimated)
    names = ("input", "output", "cache_read", "cache_write")
    cost = Cost(**dict(zip(names, dollars, strict=False)), total=dollars[4])
    total = Usage(**dict(zip(names, tokens, strict=False)), total_tokens=tokens[4], cost=cost)
    if estimated:
        total.estimated = True
    return total


TAG = "pi-export"


@dataclass(frozen=True)
class ExportedCell:
    """One code cell of an export: where it came from and its source (marker line first)."""

    run: int
    tool: str
    call: int
    """The call's number among the run's tool calls (1: the first, whatever its tool)."""
    code: str

    @property
    def source(self) -> str:
        return f"# from %%pi run {self.run} ({self.tool}, call {self.call})\n{self.code.rstrip()}\n"

    @property
    def metadata(self) -> dict[str, Any]:
        return {"tags": [TAG], "pi_notebook": {"run": self.run, "tool": self.tool, "call": self.call}}


@dataclass(frozen=True)
class ExecutedCall:
    tool: str
    call: int
    """The call's number among the run's tool calls (1: the first, whatever its tool)."""
    code: str


def executed_calls(messages: list[Any]) -> tuple[list[ExecutedCall], list[str]]:
    """The code of each ``EXPORTED_TOOLS`` call of ``messages`` that ran successfully, in
    order, and one phrase per such call left out (``"run_code call 3 (denied)"``): its result
    is an error (denied, failed) or missing (a stopped run)."""
    results = {m.tool_call_id: m for m in messages if getattr(m, "role", None) == "toolResult"}
    calls = [
        block
        for m in messages
        if getattr(m, "role", None) == "assistant"
        for block in m.content
        if isinstance(block, ToolCall)
    ]
    done: list[ExecutedCall] = []
    skipped: list[str] = []
    for index, call in enumerate(calls, 1):
        if call.name not in EXPORTED_TOOLS:
            continue
        result = results.get(call.id)
        code = call_code(call, result.details) if result is not None else None
        if result is None or result.is_error or code is None:
            skipped.append(f"{call.name} call {index} ({_left_out(result)})")
        else:
            done.append(ExecutedCall(call.name, index, code))
    return done, skipped


def _left_out(result: Any) -> str:
    if result is None:
        return "no result recorded"
    if not result.is_error:
        return "its code was not recorded"
    text = " ".join(getattr(block, "text", "") for block in result.content)
    return "denied" if text.startswith("Tool call denied") else "failed"


def call_code(call: ToolCall, details: Any) -> str | None:
    """The code that does what the successful ``call`` did, or ``None`` (not recorded)."""
    args = call.arguments if isinstance(call.arguments, dict) else {}
    if call.name == "run_code":
        code = args.get("code")
        return code if isinstance(code, str) else None
    if call.name == "set_variable":
        name, expression = args.get("name"), args.get("expression")
        if not isinstance(name, str):
            return None
        if isinstance(expression, str):
            return f"{name.strip()} = {expression}"
        return f"{name.strip()} = {args.get('value')!r}"  # a JSON value: its repr is a literal
    if call.name == "run_cell":
        source = details.get("source") if isinstance(details, dict) else None
        return source if isinstance(source, str) else None
    return None
