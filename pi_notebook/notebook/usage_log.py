"""``UsageLog``: the tokens and cost of every ``%%pi`` run of this shell, as ``%pi usage``
shows them (``commands/usage.py``). An observer of the shell's ``NotebookState``: it hears
each run's end with its ``PiResult`` and keeps one small record per run (never the messages).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .sessions.observer import StateObserver

if TYPE_CHECKING:  # annotations only: this module loads with ``state.py``, at %load_ext
    from ..runtime import AgentSession
    from .result import PiResult

__all__ = ["MAX_RUNS", "RunUsage", "UsageLog"]

MAX_RUNS = 1000
"""Runs kept (the oldest go first): a long-lived kernel must not grow without bound."""


@dataclass(frozen=True, slots=True)
class RunUsage:
    """One run's usage: its answers' tokens added up and their cost."""

    number: int
    """The run's number in this shell, from 1."""
    cell: int | None
    """The execution count of the cell that ran it (``In [n]``)."""
    conversation: str
    model: str
    input: int
    output: int
    cached: int
    """Cache reads plus cache writes (input the provider cached or read from its cache)."""
    cost: float
    budget_reason: str | None
    estimated: bool = False
    """Some of the tokens are the session's estimate (the server did not say)."""

    @property
    def tokens(self) -> int:
        """What a budget counts: input, cached or not, plus output."""
        return self.input + self.output + self.cached


class UsageLog(StateObserver):
    """See the module docstring."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.runs: list[RunUsage] = []
        self.count = 0

    def run_ended(self, name: str, session: AgentSession, result: PiResult) -> None:
        self.count += 1
        usage = result.usage
        cell = getattr(self.shell, "execution_count", None)
        self.runs.append(
            RunUsage(
                number=self.count,
                cell=cell if isinstance(cell, int) else None,
                conversation=name,
                model=result.model,
                input=usage.input,
                output=usage.output,
                cached=usage.cache_read + usage.cache_write,
                cost=usage.cost.total,
                budget_reason=result.budget_reason,
                estimated=bool(usage.estimated),
            )
        )
        del self.runs[:-MAX_RUNS]
