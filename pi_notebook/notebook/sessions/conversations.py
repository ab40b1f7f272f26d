"""The kernel's conversations: name -> ``Conversation``, an ``AgentSession`` plus what the
notebook adds to it (its tag in the session file, the restart note it still owes the model).

``Conversations`` (one per shell, ``NotebookState.conversations``) is the only place a
conversation is created, replaced (``--new``), reset (``%pi reset``: Pi's new session),
resumed (``%pi resume``, ``--resume``) or moved to another recording (``--replay``). Every
command, the live view's buttons, the tools and Python code then act on the conversation's
``AgentSession``: ``pi_notebook.current()`` returns it (the agent is ``.agent``), so a prompt
from Python retries, compacts, records and honours budgets as a ``%%pi`` cell does.

A new conversation takes its model, thinking level and system prompt from the defaults
(``c.PiMagics.*``, ``$PI_NOTEBOOK_MODEL``, Pi's ``settings.json``: ``defaults.py``); options
given on a cell (``--model``, ``--thinking``, ``--system``) change it through the session and
stay for its later cells. Where its file goes and how the notebook finds its recordings is
``files.py``'s (``SessionFiles``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..config import DEFAULT_NAME
from .grants import Grants

if TYPE_CHECKING:
    from ...agent import Agent
    from ...ai.types import Model
    from ...runtime import AgentSession
    from ...session import SessionManager
    from ..config import PiConfig
    from ..defaults import Effective
    from ..pi_extensions import NotebookExtensions
    from ..resources import NotebookResources
    from .files import SessionFiles
    from .observer import StateObserver


class Host(Protocol):
    """What the registry uses of its shell's ``NotebookState`` (``state.py``, which holds it)."""

    observers: list[StateObserver]
    model_problem: str

    @property
    def config(self) -> PiConfig: ...

    @property
    def sessions(self) -> SessionFiles: ...

    @property
    def resources(self) -> NotebookResources: ...

    @property
    def extensions(self) -> NotebookExtensions: ...

    def defaults(self) -> Effective: ...

    def forget_conversations(self) -> None: ...

    def thinking_told_forget(self, name: str) -> None: ...

__all__ = ["Conversation", "Conversations", "Host", "use_model"]


@dataclass
class Conversation:
    """One conversation: its ``AgentSession`` and what the notebook still writes into its file."""

    name: str
    session: AgentSession
    tagged: bool = False
    """The file has its ``pi-notebook`` entry (which notebook, which conversation)."""
    restart_note: bool = False
    """Its messages come from another kernel: the model is told before the next prompt."""
    recorded: tuple[str, str] | None = None
    """The model and thinking level the file was last checked for (``begin``)."""
    grants: Grants = field(default_factory=Grants)
    """"Allow for this conversation" given on its tool cards (``sessions/grants.py``; not in the file)."""

    @property
    def agent(self) -> Agent:
        return self.session.agent

    @property
    def manager(self) -> SessionManager:
        return self.session.session_manager


class Conversations:
    """See the module docstring. The constructor only stores."""

    def __init__(self, state: Host) -> None:
        self._state = state
        self._by_name: dict[str, Conversation] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def names(self) -> list[str]:
        return list(self._by_name)

    def items(self) -> list[tuple[str, Conversation]]:
        return list(self._by_name.items())

    def find(self, name: str | None = None) -> Conversation | None:
        """Conversation ``name`` if it exists (nothing is created)."""
        return self._by_name.get(name or DEFAULT_NAME)

    def get(self, name: str | None = None) -> Conversation:
        """Conversation ``name`` (default ``"default"``), created on first use. A bad default
        model of ``c.PiMagics.model`` / ``$PI_NOTEBOOK_MODEL`` raises ``ValueError``."""
        key = name or DEFAULT_NAME
        found = self._by_name.get(key)
        return found if found is not None else self._create(key)

    def session(self, name: str | None = None) -> AgentSession:
        return self.get(name).session

    # --- replacing, resetting, resuming ----------------------------------------------------------

    def new(self, name: str | None = None) -> Conversation:
        """Replace conversation ``name`` by a fresh one (an active run of the old one is
        aborted) with the old one's model and thinking level: ``--new`` starts over, it does not
        go back to the defaults."""
        key = name or DEFAULT_NAME
        old = self._by_name.pop(key, None)
        if old is None:
            return self._create(key)
        old.session.interrupt()
        old.session.dispose()
        model = old.session.model
        return self._create(key, None if model is None else (model, old.session.thinking_level))

    def reset(self, name: str | None = None) -> Conversation:
        """Clear conversation ``name`` in place (the same session object, agent, hooks and
        tools) into a new session file, as Pi's ``/new``."""
        found = self.get(name)
        found.session.interrupt()
        found.session.new_session(self._state.sessions.new_manager())
        found.tagged = found.restart_note = False
        found.recorded = None
        found.grants.clear()  # a new conversation asks again
        for observer in self._state.observers:
            observer.conversation_reset(found.name, found.session)
        return found

    def resume(self, name: str | None, path: str) -> int:
        """Continue the session file at ``path`` in conversation ``name``; its message count."""
        return self.adopt(name, self._state.sessions.open_manager(path), restarted=True)

    def resume_latest(self, name: str | None = None) -> str:
        """``%%pi --resume``: the latest recording of conversation ``name``, or a fresh start."""
        import os

        found = self.get(name)
        try:
            path = self._state.sessions.find(found.name, current=found.session.session_file)
        except LookupError:
            return "Nothing recorded to resume for this notebook: a new conversation starts."
        count = self.resume(found.name, path)
        from .files import recorded_model_note

        # what the load skipped or repaired; a recorded model this kernel cannot reach
        problem = found.session.session_manager.problem_line()
        notes = [n for n in (problem, recorded_model_note(found.session)) if n]
        return " ".join([f"Resumed {os.path.basename(path)} ({count} messages).", *notes])

    def adopt(self, name: str | None, manager: SessionManager, *, restarted: bool) -> int:
        """Make ``manager`` (another file, or moved to another leaf) the conversation's session;
        ``restarted``: its messages come from another kernel (the restart note is due)."""
        from .files import NOTEBOOK_ENTRY, has_custom, resolve_recorded

        found = self.get(name)
        found.session.switch_session(manager, resolve_model=resolve_recorded)
        found.tagged = has_custom(manager, NOTEBOOK_ENTRY)
        found.restart_note = restarted and bool(found.session.messages)
        found.recorded = None
        return len(found.session.messages)

    def configure(self) -> None:
        """Give every conversation the session settings and the conversation budget configured
        now (``c.PiMagics`` changed: ``NotebookState.config``)."""
        from ..defaults import conversation_budget

        if self._by_name:
            settings = self._state.sessions.settings()
            budget = conversation_budget(self._state.config)
            for found in self._by_name.values():
                found.session.settings = settings
                found.session.budget = budget

    def clear(self) -> None:
        """Forget every conversation (aborting active runs); the next use starts a new one and
        a new session file, as after a kernel restart."""
        for found in self._by_name.values():
            found.session.interrupt()
            found.session.dispose()
        self._by_name.clear()
        self._state.forget_conversations()

    # --- what the notebook writes into the file ----------------------------------------------------

    def begin(self, name: str | None = None) -> Conversation:
        """Write the notebook tag (once) and the conversation's model and thinking level where
        the file does not have them yet (as Pi's sessions start)."""
        from .files import NOTEBOOK_ENTRY, has_custom

        found = self.get(name)
        session = found.session
        model = session.state.model
        now = (f"{model.provider}:{model.id}", session.thinking_level)
        if now != found.recorded:  # set_model records itself; this catches a direct assignment
            session.record_settings()
            found.recorded = now
        if not found.tagged:
            found.tagged = True
            if not has_custom(found.manager, NOTEBOOK_ENTRY):
                tag = {"notebook": self._state.sessions.notebook(), "conversation": found.name}
                found.manager.append_custom_entry(NOTEBOOK_ENTRY, tag)
        return found

    def begin_run(self, name: str, prompt: str) -> None:
        """A ``%%pi`` cell starts (not a replayed one): its ``pi-notebook-run`` entry with the
        prompt as typed and the model, which replay matches cells on; and the restart note,
        once, when the conversation was resumed from another kernel."""
        from ...session import CustomMessage
        from .files import RESTART_MESSAGE, RESTART_NOTE, RUN_ENTRY

        found = self.begin(name)
        model = found.session.state.model
        entry = {"prompt": prompt, "model": f"{model.provider}:{model.id}"}
        found.manager.append_custom_entry(RUN_ENTRY, entry)
        if found.restart_note:
            found.restart_note = False
            note = CustomMessage(custom_type=RESTART_MESSAGE, content=RESTART_NOTE, display=False)
            found.session.append_message(note)

    # --- creating -------------------------------------------------------------------------------

    def _create(self, name: str, kept: tuple[Any, str] | None = None) -> Conversation:
        """A conversation from the defaults, or with the ``kept`` model and thinking level."""
        from ...agent import Agent
        from ...ai.entry import stream_simple
        from ...runtime import AgentSession
        from ...session import convert_to_llm
        from ..defaults import conversation_budget

        state = self._state
        files = state.sessions
        initial = self._initial_state() if kept is None else {
            "system_prompt": state.config.system, "model": kept[0], "thinking_level": kept[1]
        }
        agent = Agent(stream_fn=stream_simple, convert_to_llm=convert_to_llm, initial_state=initial)
        host = state.extensions
        session = AgentSession(
            agent,
            files.new_manager(),
            settings=files.settings(),
            cwd=files.folder(),
            resources=state.resources.loader(),
            extensions=host.runner,
        )
        host.watch(session)
        session.budget = conversation_budget(state.config)  # a prompt from Python honours it too
        found = self._by_name[name] = Conversation(name, session)
        session.subscribe(
            lambda event: self._message_ended(found, getattr(event, "message", None)), {"message_end"}
        )
        state.thinking_told_forget(name)
        for observer in state.observers:
            observer.conversation_created(name, session)
        return found

    def _initial_state(self) -> dict[str, Any]:
        """The defaults (``defaults.py``); a bad model of Pi's ``settings.json`` leaves the
        conversation without a model and ``model_problem`` says why (the file must never break
        the notebook), a bad one of ``c.PiMagics.model`` raises ``ValueError``."""
        from ...ai.models import clamp_thinking_level
        from ..options import resolve_model

        state = self._state
        chosen = state.defaults()
        initial: dict[str, Any] = {"system_prompt": chosen.system, "thinking_level": chosen.thinking}
        state.model_problem = ""
        if not chosen.model:
            return initial
        try:
            initial["model"] = model = resolve_model(chosen.model)
        except ValueError as exc:
            if not chosen.model_from_pi:
                raise
            state.model_problem = f"Pi's default model {chosen.model} ({chosen.pi.path}) is unknown: {exc}"
            return initial
        if chosen.thinking_from_pi:  # Pi clamps its saved level to what the model can do
            initial["thinking_level"] = clamp_thinking_level(model, chosen.thinking)  # type: ignore[arg-type]
        return initial

    def _message_ended(self, found: Conversation, message: Any) -> None:
        """Every message the session ends, before it records it: the file gets its tag first
        (a run started from Python code, not ``%%pi``, too); then the shell's observers hear it."""
        if not found.tagged and self._by_name.get(found.name) is found:
            self.begin(found.name)
        for observer in self._state.observers:
            observer.message_appended(found.name, found.session, message)


def use_model(session: AgentSession, model: Model) -> None:
    """Make ``model`` the conversation's: another model through ``set_model`` (recorded, told to
    extensions), the same one with other details (a changed ``base_url``) without a record."""
    from ...ai.models import models_are_equal

    current = session.state.model
    if model is current:  # the catalogue's same object: nothing changes
        return
    if models_are_equal(current, model):
        session.refresh_model(model)
    else:
        session.set_model(model)


