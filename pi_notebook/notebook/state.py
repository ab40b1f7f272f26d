"""``NotebookState``: everything ``pi_notebook`` keeps for one IPython shell.

One object per ``InteractiveShell`` (``state_for(shell)``) owns the conversations (one
``Agent`` per name), the configured defaults (``PiConfig``, the ``PiMagics`` of a loaded
extension), the notebook tools and the cell error log they read, and how a run's approval
policy is chosen. It is also the place where a recorder of the conversations plugs in: an
observer added with ``observe`` hears when a conversation is created or reset, when a run
starts and ends, and every message appended to a conversation (a ``message_end`` event,
whether the run came from ``%%pi`` or from Python code awaiting the ``Agent``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from ..agent import Agent
from ..agent.types import MessageEndEvent
from ..ai.abort import AbortSignal
from ..ai.entry import stream_simple
from ..ai.types import UserMessage
from .approval import ApprovalSetup, Policy, RunMode, explain_policy, resolve_policy, run_mode
from .cells import CellErrorLog
from .observer import StateObserver
from .options import DEFAULT_NAME, PiConfig, resolve_model
from .result import PiResult
from .sessions import NotebookSessions
from .tools import NotebookTools

__all__ = ["NotebookState", "StateObserver", "has_model", "state_for"]


class NotebookState:
    """The conversations, defaults, tools and approval setup of one shell."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.conversations: dict[str, Agent] = {}
        self.errors = CellErrorLog()
        self.tools = NotebookTools(shell, self.errors)
        self.observers: list[StateObserver] = []
        self._config: PiConfig | None = None
        # Records every conversation into a Pi session file (and keeps it for resume,
        # compaction and replay); ``sessions.py`` owns where and how.
        self.sessions = NotebookSessions(shell, lambda: self.config)
        self.observe(self.sessions)

    # --- configuration ---------------------------------------------------------------------------

    @property
    def config(self) -> PiConfig:
        """The ``PiMagics`` of the loaded extension, else a ``PiConfig`` reading the same section."""
        if self._config is None:
            parent = self.shell if self.shell is not None and hasattr(self.shell, "config") else None
            self._config = PiConfig(parent=parent)
        return self._config

    @config.setter
    def config(self, config: PiConfig) -> None:
        self._config = config

    # --- conversations ----------------------------------------------------------------------------

    def conversation(self, name: str | None = None) -> Agent:
        """The conversation ``name`` (default ``"default"``), created on first use."""
        key = name or DEFAULT_NAME
        agent = self.conversations.get(key)
        return agent if agent is not None else self._create(key)

    def new_conversation(self, name: str | None = None) -> Agent:
        """Replace conversation ``name`` by a fresh one (an active run of the old one is aborted)."""
        key = name or DEFAULT_NAME
        old = self.conversations.pop(key, None)
        if old is not None:
            old.abort()
        return self._create(key)

    def reset_conversation(self, name: str | None = None) -> Agent:
        """Clear conversation ``name`` in place (the same ``Agent``, hooks and tools kept)."""
        key = name or DEFAULT_NAME
        agent = self.conversation(key)
        agent.reset()
        for observer in self.observers:
            observer.conversation_reset(key, agent)
        return agent

    def names(self) -> list[str]:
        return list(self.conversations)

    def clear(self) -> None:
        """Forget every conversation (aborting active runs); the next use starts fresh."""
        for agent in self.conversations.values():
            agent.abort()
        self.conversations.clear()

    def _create(self, name: str) -> Agent:
        defaults = self.config.defaults()
        state: dict[str, Any] = {"system_prompt": defaults.system, "thinking_level": defaults.thinking}
        if defaults.model:
            state["model"] = resolve_model(defaults.model)
        agent = Agent(stream_fn=stream_simple, initial_state=state)
        agent.subscribe(self._message_listener(name, agent))
        self.conversations[name] = agent
        for observer in self.observers:
            observer.conversation_created(name, agent)
        return agent

    def _message_listener(self, name: str, agent: Agent) -> Callable[[Any, AbortSignal], None]:
        def on_event(event: Any, signal: AbortSignal) -> None:
            if self.observers and isinstance(event, MessageEndEvent):  # runs for every streamed token
                for observer in self.observers:
                    observer.message_appended(name, agent, event.message)

        return on_event

    # --- runs -----------------------------------------------------------------------------------

    def observe(self, observer: StateObserver) -> Callable[[], None]:
        """Add ``observer``; returns a function that removes it."""
        self.observers.append(observer)
        return lambda: self.observers.remove(observer) if observer in self.observers else None

    def run_started(self, name: str, agent: Agent, prompt: UserMessage) -> None:
        for observer in self.observers:
            observer.run_started(name, agent, prompt)

    def run_ended(self, name: str, agent: Agent, result: PiResult) -> None:
        for observer in self.observers:
            observer.run_ended(name, agent, result)

    # --- approvals ------------------------------------------------------------------------------

    def run_mode(self, *, awaited: bool, text: bool) -> RunMode:
        """How a run started now could be watched (live or static, can anyone click)."""
        return run_mode(self.shell, awaited=awaited, text=text)

    def approval(self, requested: Policy | None, mode: RunMode) -> ApprovalSetup:
        """The policy in force for a run in ``mode`` and the notice that explains it."""
        return resolve_policy(
            requested, can_ask=mode.can_ask, headless=mode.headless, inactive_reason=mode.reason
        )

    def explain_approval(self, mode: RunMode) -> str:
        """The configured policy as a run in ``mode`` would apply it, and why (``%pi status``)."""
        return explain_policy(self.config.approve or None, mode)  # type: ignore[arg-type]


_states: weakref.WeakKeyDictionary[Any, NotebookState] = weakref.WeakKeyDictionary()
_without_shell: NotebookState | None = None


def state_for(shell: Any = None) -> NotebookState:
    """The ``NotebookState`` of ``shell`` (default: the running IPython, if any), created on
    first use. Outside IPython there is one process-wide state without a shell."""
    global _without_shell
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    if shell is None:
        if _without_shell is None:
            _without_shell = NotebookState(None)
        return _without_shell
    found = _states.get(shell)
    if found is None:
        found = _states[shell] = NotebookState(shell)
    return found


def has_model(agent: Agent) -> bool:
    """False while the agent still has Pi's placeholder model (``unknown``)."""
    model = agent.state.model
    return bool(model and model.provider != "unknown" and model.api != "unknown")
