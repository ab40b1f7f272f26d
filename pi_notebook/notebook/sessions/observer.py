"""``StateObserver``: the hooks through which a recorder hears what a shell's conversations do.

``NotebookState`` (``state.py``) and its ``Conversations`` call them with the conversation's
name and ``AgentSession``; the usage log (``usage_log.py``) is one. Kept apart from ``state.py``
so an observer can be written without importing the state that owns it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: ``state.py`` re-exports this class and loads at %load_ext
    from ...ai.types import UserMessage
    from ...runtime import AgentSession
    from ..result import PiResult


class StateObserver:
    """Hooks a recorder overrides; every method does nothing by default.

    Called on the kernel's main thread for conversation changes and run boundaries, and from
    the agent's listener (the loop that runs it) for messages.
    """

    def conversation_created(self, name: str, session: AgentSession) -> None:
        """A new, empty conversation ``name`` (first use, ``--new``)."""

    def conversation_reset(self, name: str, session: AgentSession) -> None:
        """``%pi reset`` cleared the conversation."""

    def run_started(self, name: str, session: AgentSession, prompt: UserMessage) -> None:
        """A ``%%pi`` run is about to prompt the agent with ``prompt``."""

    def run_ended(self, name: str, session: AgentSession, result: PiResult) -> None:
        """A ``%%pi`` run ended (normally, with an error, or interrupted)."""

    def message_appended(self, name: str, session: AgentSession, message: Any) -> None:
        """``message`` was appended to the conversation's transcript."""
