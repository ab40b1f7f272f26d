"""The loop guard of a ``%%pi`` run (``c.PiMagics.loop_guard``, default 3; 0: off).

A small model can call the same tool with the same arguments over and over (19 identical
``inspect_variable`` calls in 116 s, for one question). The notebook tools read state that
nothing else changes between two consecutive calls, so a repeated call gets the answer the
model already has; two in a row still pass (one retry after a tool error or a timeout is
reasonable). Before the third runs, the run's approval gate asks (Approve / Deny on its card,
which says why); approved, it runs (and the next identical one asks again); denied, or where
nobody can click, it does not run, the model reads why, and the run stops after that turn. The
turn keeps its tool results, so the transcript stays valid and the conversation can continue.

"In a row" counts tool calls in the order the model made them, across the run's turns; a
call of another tool, other arguments, or a turn without tool calls starts the count again.
The gate asks ``before_call`` for every call; the run's ``should_stop_after_turn`` (composed
with ``--max-turns`` in ``runner.py``) asks ``after_turn``; the agent is not changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ...agent.types import TurnContext

__all__ = ["LoopGuard"]


canonical_json = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=repr).encode
"""A tool call's arguments in one canonical form (keys sorted): what ``json.dumps`` with these
options gives, from one encoder (``json.dumps`` builds one per call with them)."""


def _key(name: str, arguments: object) -> tuple[str, str]:
    """One call as a comparable value: its tool and its arguments in a canonical form."""
    return name, canonical_json(arguments)


@dataclass
class LoopGuard:
    """The count of identical consecutive tool calls in one run."""

    limit: int
    """Identical calls in a row that stop the run; 0 or less: never."""
    streak: int = 0
    last: tuple[str, str] | None = None
    tripped: str | None = None
    """The tool whose repeated calls stopped the run."""

    def before_call(self, name: str, arguments: object) -> str | None:
        """Count a call about to run; the question to ask first when it would make ``limit``
        identical calls in a row (``None``: let it run)."""
        if self.limit <= 0:
            return None
        key = _key(name, arguments)
        self.streak = self.streak + 1 if key == self.last else 1
        self.last = key
        if self.streak < self.limit:
            return None
        return (
            f"The model calls {name} with the same arguments for the {_nth(self.streak)} time in a "
            "row (the loop guard asks before it runs). Deny stops the run after this turn."
        )

    def trip(self, name: str) -> None:
        """The user denied the repeated call (or nobody could approve it): stop after the turn."""
        self.tripped = name

    def blocked_reason(self) -> str:
        """What the model reads in place of the result of the call that did not run."""
        return (
            f"Tool call not run: it is the {_nth(self.streak)} identical call of {self.tripped} in "
            "a row and was not approved; its earlier results already answer it."
        )

    def after_turn(self, ctx: TurnContext) -> bool:
        """True when the run is to stop after this turn (a repeated call was not approved)."""
        if self.limit <= 0:
            return False
        if not any(block.type == "toolCall" for block in ctx.message.content):
            self.streak, self.last = 0, None
        return self.tripped is not None

    def notice(self) -> str | None:
        """The line under a run the guard stopped."""
        if self.tripped is None:
            return None
        return (
            f"Stopped: the model called {self.tripped} {self.streak} times in a row with the same "
            f"arguments; the {_nth(self.streak)} did not run (not approved). "
            "%config PiMagics.loop_guard = 0 turns this check off."
        )


def _nth(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
