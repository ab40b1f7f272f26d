"""The kernel's conversations: one ``Agent`` per name, ``"default"`` unless ``--name`` says otherwise.

A conversation continues across ``%%pi`` cells until ``--new`` replaces it or ``%pi reset``
clears it. ``current(name)`` is the same object ``%%pi`` uses, so Python code can subscribe,
set hooks, add tools, steer or read ``state.messages``.

A new conversation takes its model, thinking level and system prompt from the defaults
(``c.PiMagics.*``, the model falling back to ``PI_NOTEBOOK_MODEL``). Options given on a cell
(``--model``, ``--thinking``, ``--system``) change the conversation they run in and stay in
effect for its later cells. The conversations belong to the shell's ``NotebookState``; these
functions use the running IPython's (``shell`` picks another).
"""

from __future__ import annotations

from typing import Any

from ..agent import Agent
from ..agent.agent import has_model
from .config import DEFAULT_NAME, DEFAULT_SYSTEM_PROMPT, MODEL_ENV, Defaults
from .options import resolve_model
from .state import state_for

__all__ = [
    "DEFAULT_NAME",
    "DEFAULT_SYSTEM_PROMPT",
    "MODEL_ENV",
    "Defaults",
    "clear",
    "current",
    "has_model",
    "names",
    "new",
    "resolve_model",
]


def current(name: str | None = None, *, shell: Any = None) -> Agent:
    """The conversation ``name`` (default ``"default"``), created on first use."""
    return state_for(shell).conversation(name)


def new(name: str | None = None, *, shell: Any = None) -> Agent:
    """Replace conversation ``name`` by a fresh one (an active run of the old one is aborted)
    that keeps its model and thinking level, as ``%%pi --new`` does."""
    return state_for(shell).new_conversation(name)


def names(*, shell: Any = None) -> list[str]:
    return state_for(shell).names()


def clear(*, shell: Any = None) -> None:
    """Forget every conversation (aborting active runs); the next ``current()`` starts fresh."""
    state_for(shell).clear()
