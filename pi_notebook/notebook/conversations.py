"""The kernel's conversations for Python code: ``current(name)`` is the ``AgentSession`` that
``%%pi`` cells of that name use (``"default"`` unless ``--name`` says otherwise), created on
first use; ``new`` replaces one, ``names`` lists them, ``clear`` forgets them all. They are the
shell's ``NotebookState.conversations`` (``sessions/conversations.py``); these functions use
the running IPython's (``shell`` picks another).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import DEFAULT_NAME, DEFAULT_SYSTEM_PROMPT, MODEL_ENV, Defaults

if TYPE_CHECKING:
    from ..runtime import AgentSession
    from .sessions.conversations import Conversations

__all__ = [
    "DEFAULT_NAME", "DEFAULT_SYSTEM_PROMPT", "MODEL_ENV", "Defaults", "clear", "current", "names", "new"
]


# --- the functions behind ``pi_notebook.current()`` ---------------------------------------------


def _conversations(shell: Any) -> Conversations:
    from .state import state_for

    return state_for(shell).conversations


def current(name: str | None = None, *, shell: Any = None) -> AgentSession:
    """The conversation ``name`` (default ``"default"``), created on first use: its
    ``AgentSession`` (the agent is ``.agent``)."""
    return _conversations(shell).session(name)


def new(name: str | None = None, *, shell: Any = None) -> AgentSession:
    """Replace conversation ``name`` by a fresh one (an active run of the old one is aborted)
    that keeps its model and thinking level, as ``%%pi --new`` does."""
    return _conversations(shell).new(name).session


def names(*, shell: Any = None) -> list[str]:
    return _conversations(shell).names()


def clear(*, shell: Any = None) -> None:
    """Forget every conversation (aborting active runs); the next ``current()`` starts fresh."""
    _conversations(shell).clear()
