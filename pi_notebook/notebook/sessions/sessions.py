"""``NotebookSessions``: every conversation of a shell recorded as a Pi session file.

One object per ``NotebookState`` (it is the state's observer). Each conversation is an
``AgentSession`` (``pi_notebook.runtime``): its agent with a ``SessionManager``, auto-retry and
auto-compaction. The session appends every message as it ends, so a kernel that dies leaves a
file Pi's CLI can list and resume; this module decides where the file goes and what the notebook
adds to it. Rules:

* **Where.** Pi's own place for the notebook's folder, ``<agent dir>/sessions/--<folder>--/``
  (the agent dir is ``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``), so ``pi --resume`` started in
  that folder lists them and nothing lands in the user's repository. ``c.PiMagics.session_dir``
  or ``$PI_NOTEBOOK_SESSION_DIR`` move them. The folder is the notebook's (from the frontend:
  ``__vsc_ipynb_file__``, ``__session__``, ``$JPY_SESSION_NAME``), else the working directory.
* **Which notebook.** Each file starts with a ``custom`` entry ``pi-notebook`` naming the
  notebook and the conversation; each ``%%pi`` cell adds a ``pi-notebook-run`` entry with its
  prompt and model (replay matches cells on them). Pi keeps ``custom`` entries out of the
  model's context.
* **Secrets.** Every line passes through ``redact_strings`` with the notebook's redactor (key
  patterns, and the values of secret-named environment variables and notebook variables).
* **Off.** ``c.PiMagics.record = False`` or ``$PI_NOTEBOOK_RECORD=0``: conversations keep an
  in-memory session (compaction and branching still work) and nothing is written.
* **Restart note.** A conversation resumed from a file tells the model once, as a hidden
  ``custom_message`` (``display: false``) before the next prompt, that the kernel restarted.
  The other way round, the first cell of an empty conversation tells the user once when a
  recorded session of it exists (``recorded_notice``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...agent import Agent
from ...ai.models import recorded_model
from ...ai.types import Model
from ...runtime import AgentSession, AgentSessionSettings
from ...runtime.resources.loader import ResourceLoader
from ...session import (
    CustomEntry,
    CustomMessage,
    MessageEntry,
    Redactor,
    SessionInfo,
    SessionManager,
    convert_to_llm,
    list_sessions,
    redact_strings,
    resume,
)
from ...session.storage import default_session_dir
from ..config import DEFAULT_NAME, PiConfig, env_flag, timeout_ms
from ..defaults import effective
from ..observer import StateObserver
from ..tools.cells import notebook_path
from ..tools.references import redact_known, secret_values

SESSION_DIR_ENV = "PI_NOTEBOOK_SESSION_DIR"
RECORD_ENV = "PI_NOTEBOOK_RECORD"
NOTEBOOK_ENTRY = "pi-notebook"
RUN_ENTRY = "pi-notebook-run"
RESTART_MESSAGE = "pi-notebook-restart"
RESTART_NOTE = (
    "Note: the notebook's Python kernel was restarted since the messages above. Variables, "
    "imports and objects you saw in it may be gone or different; look again before relying on them."
)


@dataclass
class Tracked:
    """The ``AgentSession`` of one conversation (its agent, session file, retry and compaction)
    and what the notebook still has to write into the file."""

    session: AgentSession
    tagged: bool = False
    restart_note: bool = False

    @property
    def manager(self) -> SessionManager:
        return self.session.session_manager


@dataclass(frozen=True)
class Listed:
    """A session of this folder, with the notebook and conversation it was recorded for."""

    info: SessionInfo
    notebook: str | None
    conversation: str | None


class NotebookSessions(StateObserver):
    """See the module docstring."""

    def __init__(
        self,
        shell: Any,
        config: Callable[[], PiConfig],
        conversation: Callable[[str], Agent],
        message_ended: Callable[[str, Agent, Any], None] | None = None,
        *,
        resources: Callable[[], ResourceLoader | None] = lambda: None,
        extensions: Callable[[], Any] | None = None,
    ) -> None:
        self.shell = shell
        self._config = config
        self._conversation = conversation
        """The state's conversation of a name (created on first use, which tracks it here)."""
        self._message_ended = message_ended if message_ended is not None else self.message_appended
        """Told of every message a conversation ends (the state relays it to its observers)."""
        self._resources = resources
        """The resource loader of the notebook's folder, for every conversation's session."""
        self._extensions = extensions
        """The kernel's ``NotebookExtensions`` (``pi_extensions.py``): its runner goes into every
        new ``AgentSession``, which it then watches (``session_shutdown`` at exit)."""
        self.tracked: dict[str, Tracked] = {}
        self.replay_cursors: dict[str, Any] = {}
        """Where ``--replay`` stands in each conversation's recording (``replay.py``)."""
        self.looked_up: set[str] = set()
        """Conversations whose recordings ``recorded_notice`` has looked for in this kernel."""

    # --- settings ---------------------------------------------------------------------------

    @property
    def config(self) -> PiConfig:
        return self._config()

    @property
    def recording(self) -> bool:
        env = env_flag(RECORD_ENV)
        return bool(self.config.record) if env is None else env

    def notebook(self) -> str | None:
        return notebook_path(self.shell)

    def folder(self) -> str:
        path = self.notebook()
        return os.path.dirname(path) if path else os.getcwd()

    def session_dir(self) -> str | None:
        """The configured directory, or ``None`` for Pi's default one of the folder."""
        configured = self.config.session_dir.strip() or os.environ.get(SESSION_DIR_ENV, "").strip()
        return os.path.abspath(os.path.expanduser(configured)) if configured else None

    def directory(self) -> str:
        return self.session_dir() or default_session_dir(self.folder(), create=False)

    def redact(self, text: str) -> str:
        """The notebook's redactor: key patterns, then secret values known to the kernel."""
        return redact_known(text, secret_values(self.shell.user_ns))

    def redactor(self) -> Redactor:
        """What every session line passes through before it is written; the secret values are
        collected once per line, not once per string in it."""

        def redact_entry(entry: dict[str, Any]) -> dict[str, Any]:
            secrets = secret_values(self.shell.user_ns)
            return redact_strings(lambda text: redact_known(text, secrets))(entry)

        return redact_entry

    # --- one session per conversation ------------------------------------------------------------

    def new_manager(self) -> SessionManager:
        folder = self.folder()
        if not self.recording:
            return SessionManager.in_memory(folder)
        return SessionManager.create(folder, self.session_dir(), redact=self.redactor())

    def open_manager(self, path: str) -> SessionManager:
        return SessionManager.open(path, redact=self.redactor())

    def settings(self) -> AgentSessionSettings:
        """Retry, compaction and the default thinking level as configured (``c.PiMagics``, else
        Pi's ``settings.json``: ``defaults.py``); a cell's options adjust them."""
        loader = self._resources()
        chosen = effective(self.config, loader.current().project_settings_dir if loader is not None else None)
        return AgentSessionSettings(
            retry=chosen.retry,
            compaction=chosen.compaction,
            summary_timeout_ms=timeout_ms(self.config.timeout),
            default_thinking_level=chosen.default_thinking_level,
        )

    def track(self, name: str, agent: Agent, manager: SessionManager | None = None) -> Tracked:
        """Make ``manager`` (default: a new session) the session of conversation ``name``: an
        ``AgentSession`` over its agent records it from now on; the previous one stops."""
        manager = manager if manager is not None else self.new_manager()
        previous = self.tracked.get(name)
        if previous is not None:
            previous.session.dispose()
        host = self._extensions() if self._extensions is not None else None
        session = AgentSession(
            agent,
            manager,
            settings=self.settings(),
            cwd=self.folder(),
            resources=self._resources(),
            extensions=host.runner if host is not None else None,
        )
        if host is not None:
            host.watch(session)
        session.subscribe(
            lambda event: self._message_ended(name, agent, getattr(event, "message", None)), {"message_end"}
        )
        tracked = self.tracked[name] = Tracked(session)
        return tracked

    def forget(self) -> None:
        """Stop recording every conversation (their ``AgentSession``s stop listening); the next
        use of a conversation starts a new session, as after a kernel restart."""
        for tracked in self.tracked.values():
            tracked.session.dispose()
        self.tracked.clear()
        self.looked_up.clear()

    def get(self, name: str) -> Tracked:
        found = self.tracked.get(name)
        if found is None:
            agent = self._conversation(name)  # a new conversation is tracked as it is created
            found = self.tracked.get(name) or self.track(name, agent)
        return found

    def session(self, name: str) -> AgentSession:
        """The ``AgentSession`` of conversation ``name``, with the settings ``c.PiMagics`` has
        now (a ``%%pi`` cell's own options then apply for its run)."""
        session = self.get(name).session
        session.settings = self.settings()
        session.resource_loader = self._resources()  # the folder's (c.PiMagics.project_folder may change)
        return session

    def begin(self, name: str, agent: Agent) -> Tracked:
        """Write the notebook tag (once) and the conversation's current model and thinking
        (as Pi's sessions start); the messages themselves are the ``AgentSession``'s to record."""
        tracked = self.get(name)
        manager = tracked.manager
        tracked.session.record_settings()
        if not tracked.tagged:
            tracked.tagged = True
            if not _has_custom(manager, NOTEBOOK_ENTRY):
                manager.append_custom_entry(
                    NOTEBOOK_ENTRY, {"notebook": self.notebook(), "conversation": name}
                )
        return tracked

    # --- observer hooks ---------------------------------------------------------------------------

    def conversation_created(self, name: str, agent: Agent) -> None:
        self.track(name, agent)
        use_session_messages(agent)

    def conversation_reset(self, name: str, agent: Agent) -> None:
        self.track(name, agent)  # a cleared conversation is a new session, as Pi's /new

    def begin_run(self, name: str, agent: Agent, prompt: str) -> None:
        """A ``%%pi`` cell starts (not a replayed one): its ``pi-notebook-run`` entry with the
        prompt as typed and the model, which replay matches cells on; and the restart note,
        once, when the conversation was resumed from another kernel."""
        tracked = self.begin(name, agent)
        tracked.manager.append_custom_entry(RUN_ENTRY, {"prompt": prompt, "model": _spec(agent.state.model)})
        if tracked.restart_note:
            tracked.restart_note = False
            note = CustomMessage(custom_type=RESTART_MESSAGE, content=RESTART_NOTE, display=False)
            tracked.manager.append_custom_message_entry(RESTART_MESSAGE, RESTART_NOTE, display=False)
            agent.state.messages = [*agent.state.messages, note]

    def message_appended(self, name: str, agent: Agent, message: Any) -> None:
        """Before the ``AgentSession`` records the first message (it is told of ``message_end``
        first), the file gets its tag: a run started from Python code, not ``%%pi``, too."""
        tracked = self.tracked.get(name)
        if tracked is None or not tracked.tagged:
            self.begin(name, agent)

    # --- finding, resuming -------------------------------------------------------------------------

    def listed(self, *, every: bool = False) -> list[Listed]:
        """This notebook's sessions (``every``: all of the folder), most recent first."""
        notebook = self.notebook()
        rows = []
        for info in list_sessions(self.folder(), self.session_dir()):
            tag = read_tag(info.path)
            owner = tag.get("notebook") if tag else None
            if every or (tag is not None and owner == notebook):
                conversation = tag.get("conversation") if tag else None
                rows.append(Listed(info, owner if isinstance(owner, str) else None, conversation))
        return rows

    def find(self, name: str, choice: str = "") -> str:
        """The session file ``choice`` names (a number from ``%pi sessions``, a session name,
        an id prefix or a path); without a choice, the latest one of conversation ``name``
        other than the one it records into now. Raises ``LookupError`` with what to do."""
        if not choice:
            latest = self.latest(name)
            if latest is None:
                raise LookupError(
                    f"no recorded conversation {name!r} of this notebook in {self.directory()}; "
                    "%pi sessions lists what there is"
                )
            return latest.info.path
        rows = self.listed(every=not choice.isdigit())  # numbers are %pi sessions'
        return _pick(rows, choice, self.directory())

    def latest(self, name: str) -> Listed | None:
        """The latest recorded session of conversation ``name`` of this notebook other than the
        one it records into now: what ``%pi resume`` continues."""
        current = self.tracked[name].manager.session_file if name in self.tracked else None
        mine = [r for r in self.listed() if r.conversation in (name, None) and r.info.path != current]
        return mine[0] if mine else None

    def recorded_notice(self, name: str) -> str | None:
        """On the first ``%%pi`` cell of an empty conversation: the line that says this notebook
        has a recorded session of it (after a kernel restart, the cell would otherwise start a
        new conversation without a word). Once per conversation until ``forget``, and only when
        the frontend names the notebook: otherwise every session of the folder counts as this
        notebook's, and the line could name another notebook's conversation."""
        if name in self.looked_up or self.notebook() is None:
            return None
        self.looked_up.add(name)
        found = self.latest(name)  # reads the folder's session files: once, not every cell
        if found is None:
            return None
        label = found.info.name or found.conversation or name
        command = "%pi resume" if name == DEFAULT_NAME else f"%pi --name {name} resume"
        count = found.info.message_count
        return (
            f"A recorded conversation of this notebook exists ({label}, {count} message"
            f"{'s' if count != 1 else ''}): {command} continues it."
        )

    def resume_into(self, name: str, agent: Agent, path: str) -> int:
        """Continue the session at ``path`` in conversation ``name``; returns its message count."""
        manager = self.open_manager(path)
        resume(agent, manager, resolve_model=resolve_recorded)
        tracked = self.track(name, agent, manager)
        tracked.tagged = _has_custom(manager, NOTEBOOK_ENTRY)
        tracked.restart_note = bool(agent.state.messages)
        return len(agent.state.messages)

    def resume_for_cell(self, name: str, agent: Agent) -> str:
        """``%%pi --resume``: the latest recording of conversation ``name``, or a fresh start."""
        try:
            path = self.find(name)
        except LookupError:
            return "Nothing recorded to resume for this notebook: a new conversation starts."
        count = self.resume_into(name, agent, path)
        note = recorded_model_note(self.tracked[name].manager, agent)
        return f"Resumed {os.path.basename(path)} ({count} messages)." + (f" {note}" if note else "")

    def adopt(self, name: str, agent: Agent, manager: SessionManager, *, restarted: bool = False) -> None:
        """Make ``manager`` (moved to another leaf or file) the conversation's session;
        ``restarted``: its messages come from another kernel (the restart note is due)."""
        resume(agent, manager, resolve_model=resolve_recorded)
        tracked = self.track(name, agent, manager)
        tracked.tagged = _has_custom(manager, NOTEBOOK_ENTRY)
        tracked.restart_note = restarted and bool(agent.state.messages)


def use_session_messages(agent: Agent) -> None:
    """Give the agent the session layer's ``convert_to_llm`` (unless it has its own), so
    compaction summaries, branch summaries and the restart note reach the model as user text."""
    if getattr(agent.convert_to_llm, "__module__", "") == "pi_notebook.agent.types":
        agent.convert_to_llm = convert_to_llm


def _spec(model: Model) -> str:
    return f"{model.provider}:{model.id}"


def resolve_recorded(provider: str, model_id: str) -> Model | None:
    """The recorded model when this kernel can reach it: catalogue, models file, extension
    providers, local servers by id (else the conversation keeps its own)."""
    try:
        return recorded_model(provider, model_id)
    except Exception:
        return None


def recorded_model_note(manager: SessionManager, agent: Agent) -> str | None:
    """After a resume: the one line saying the session's recorded model could not be restored
    and which ``--model`` to pass (``None`` when the agent runs the recorded model)."""
    recorded = manager.build_session_context().model
    if recorded is None:
        return None
    current = agent.state.model
    if (current.provider, current.id) == (recorded.provider, recorded.model_id):
        return None
    try:
        recorded_model(recorded.provider, recorded.model_id)
    except Exception as exc:
        return str(exc)
    return None


def _has_custom(manager: SessionManager, custom_type: str) -> bool:
    return any(isinstance(e, CustomEntry) and e.custom_type == custom_type for e in manager.get_entries())


def read_tag(path: str) -> dict[str, Any] | None:
    """The ``pi-notebook`` entry's data of a session file (among its first lines), or ``None``."""
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle):
                if number > 50:
                    return None
                if f'"{NOTEBOOK_ENTRY}"' not in line:
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if row.get("type") == "custom" and row.get("customType") == NOTEBOOK_ENTRY:
                    data = row.get("data")
                    return data if isinstance(data, dict) else {}
    except OSError:
        return None
    return None


def _pick(rows: list[Listed], choice: str, directory: str) -> str:
    if choice.isdigit():
        index = int(choice)
        if 1 <= index <= len(rows):
            return rows[index - 1].info.path
        raise LookupError(f"no session number {index}: %pi sessions lists {len(rows)}")
    if choice.endswith(".jsonl") and os.path.exists(os.path.expanduser(choice)):
        return os.path.abspath(os.path.expanduser(choice))
    for row in rows:
        if row.info.name == choice or row.info.id.startswith(choice):
            return row.info.path
    raise LookupError(f"no session named {choice!r} in {directory}; %pi sessions lists them")


def user_turns(manager: SessionManager) -> list[MessageEntry]:
    """The user messages on the current branch, oldest first (``%pi branch N`` counts them)."""
    return [
        e
        for e in manager.get_branch()
        if isinstance(e, MessageEntry) and getattr(e.message, "role", None) == "user"
    ]
