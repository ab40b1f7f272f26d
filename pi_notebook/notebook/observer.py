"""``StateObserver``: the hooks through which a recorder hears what a shell's conversations do.

``NotebookState`` (``state.py``) calls them; ``sessions/sessions.py`` implements them to record every
conversation into a session file. Kept apart from ``state.py`` so an observer can be written
without importing the state that owns it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: ``state.py`` re-exports this class and loads at %load_ext
    from ..agent import Agent
    from ..ai.types import UserMessage
    from .result import PiResult


class StateObserver:
    """Hooks a recorder overrides; every method does nothing by default.

    Called on the kernel's main thread for conversation changes and run boundaries, and from
    the agent's listener (the loop that runs it) for messages.
    """

    def conversation_created(self, name: str, agent: Agent) -> None:
        """A new, empty conversation ``name`` (first use, ``--new``)."""

    def conversation_reset(self, name: str, agent: Agent) -> None:
        """``%pi reset`` cleared the conversation."""

    def run_started(self, name: str, agent: Agent, prompt: UserMessage) -> None:
        """A ``%%pi`` run is about to prompt the agent with ``prompt``."""

    def run_ended(self, name: str, agent: Agent, result: PiResult) -> None:
        """A ``%%pi`` run ended (normally, with an error, or interrupted)."""

    def message_appended(self, name: str, agent: Agent, message: Any) -> None:
        """``message`` was appended to the conversation's transcript."""
