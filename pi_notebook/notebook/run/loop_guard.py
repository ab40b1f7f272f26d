"""The loop guard of a ``%%pi`` run (``c.PiMagics.loop_guard``, default 3; 0: off).

A small model can call the same tool with the same arguments over and over (19 identical
``inspect_variable`` calls in 116 s, for one question). The notebook tools read state that
nothing else changes between two consecutive calls, so a repeated call gets the answer the
model already has; two in a row still pass (one retry after a tool error or a timeout is
reasonable), and the third ends the run. The turn that made it keeps its tool results, so
the transcript stays valid and the conversation can continue in the next cell.

"In a row" counts tool calls in the order the model made them, across the run's turns; a
call of another tool, other arguments, or a turn without tool calls starts the count again.
The guard is asked after each turn through the run's ``should_stop_after_turn`` (composed
with ``--max-turns`` in ``runner.py``); the agent is not changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ...agent.types import TurnContext

__all__ = ["LoopGuard"]


def _key(name: str, arguments: object) -> tuple[str, str]:
    """One call as a comparable value: its tool and its arguments in a canonical form."""
    return name, json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=repr)


@dataclass
class LoopGuard:
    """The count of identical consecutive tool calls in one run."""

    limit: int
    """Identical calls in a row that stop the run; 0 or less: never."""
    streak: int = 0
    last: tuple[str, str] | None = None
    tripped: str | None = None
    """The tool whose repeated calls stopped the run."""

    def after_turn(self, ctx: TurnContext) -> bool:
        """Count the turn's tool calls; True when the run is to stop after this turn."""
        if self.limit <= 0:
            return False
        calls = [block for block in ctx.message.content if block.type == "toolCall"]
        if not calls:
            self.streak, self.last = 0, None
            return False
        for call in calls:
            key = _key(call.name, call.arguments)
            self.streak = self.streak + 1 if key == self.last else 1
            self.last = key
        if self.streak >= self.limit:
            self.tripped = self.last[0] if self.last is not None else None
            return True
        return False

    def notice(self) -> str | None:
        """The line under a run the guard stopped."""
        if self.tripped is None:
            return None
        return (
            f"Stopped: the model called {self.tripped} {self.streak} times in a row with the same "
            "arguments. %config PiMagics.loop_guard = 0 turns this check off."
        )
