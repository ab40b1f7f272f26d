"""``SessionFiles``: where a shell's conversations are recorded as Pi session files, and how
this notebook's recordings are found.

One object per ``NotebookState``. Each conversation is an ``AgentSession``
(``conversations.py``) that appends every message as it ends, so a kernel that dies leaves a
file Pi's CLI can list and resume; this module decides where the file goes, what the notebook
adds to it (``Conversations.begin`` writes it) and which recordings are this notebook's. Rules:

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

import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...ai.models import get_model
from ...ai.types import Model
from ...runtime import AgentSessionSettings
from ...runtime.resources.loader import ResourceLoader
from ...session import (
    CustomEntry,
    MessageEntry,
    Redactor,
    SessionFormatWarning,
    SessionInfo,
    SessionManager,
    list_sessions,
    read_custom_data,
    redact_strings,
)
from ...session.storage import default_session_dir
from ..config import DEFAULT_NAME, PiConfig, env_flag
from ..defaults import effective, session_settings
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


@dataclass(frozen=True)
class Listed:
    """A session of this folder, with the notebook and conversation it was recorded for."""

    info: SessionInfo
    notebook: str | None
    conversation: str | None


class SessionFiles:
    """See the module docstring."""

    def __init__(
        self,
        shell: Any,
        config: Callable[[], PiConfig],
        *,
        resources: Callable[[], ResourceLoader | None] = lambda: None,
    ) -> None:
        self.shell = shell
        self._config = config
        self._resources = resources
        """The resource loader of the notebook's folder (its trust decides the settings)."""
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
        """The session at ``path``; what its load skipped or repaired is its ``problem_line()``,
        which the resume shows (not a Python warning)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SessionFormatWarning)
            return SessionManager.open(path, redact=self.redactor())

    def settings(self) -> AgentSessionSettings:
        """Retry, compaction and the default thinking level as configured (``c.PiMagics``, else
        Pi's ``settings.json``: ``defaults.py``); a cell's options adjust them."""
        loader = self._resources()
        chosen = effective(self.config, loader.current().project_settings_dir if loader is not None else None)
        return session_settings(chosen, self.config.timeout)

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

    def find(self, name: str, choice: str = "", current: str | None = None) -> str:
        """The session file ``choice`` names (a number from ``%pi sessions``, a session name,
        an id prefix or a path); without a choice, the latest one of conversation ``name``
        other than the one it records into now. Raises ``LookupError`` with what to do."""
        if not choice:
            latest = self.latest(name, current)
            if latest is None:
                raise LookupError(
                    f"no recorded conversation {name!r} of this notebook in {self.directory()}; "
                    "%pi sessions lists what there is"
                )
            return latest.info.path
        rows = self.listed(every=not choice.isdigit())  # numbers are %pi sessions'
        return _pick(rows, choice, self.directory())

    def latest(self, name: str, current: str | None = None) -> Listed | None:
        """The latest recorded session of conversation ``name`` of this notebook other than
        ``current`` (the one it records into now): what ``%pi resume`` continues."""
        mine = [r for r in self.listed() if r.conversation in (name, None) and r.info.path != current]
        return mine[0] if mine else None

    def recorded_notice(self, name: str, current: str | None = None) -> str | None:
        """On the first ``%%pi`` cell of an empty conversation: the line that says this notebook
        has a recorded session of it (after a kernel restart, the cell would otherwise start a
        new conversation without a word). Once per conversation until ``forget``, and only when
        the frontend names the notebook: otherwise every session of the folder counts as this
        notebook's, and the line could name another notebook's conversation."""
        if name in self.looked_up or self.notebook() is None:
            return None
        self.looked_up.add(name)
        found = self.latest(name, current)  # reads the folder's session files: once, not every cell
        if found is None:
            return None
        label = found.info.name or found.conversation or name
        command = "%pi resume" if name == DEFAULT_NAME else f"%pi --name {name} resume"
        count = found.info.message_count
        return (
            f"A recorded conversation of this notebook exists ({label}, {count} message"
            f"{'s' if count != 1 else ''}): {command} continues it."
        )



def resolve_recorded(provider: str, model_id: str) -> Model | None:
    """The recorded model when this kernel knows it (else the conversation keeps its own)."""
    try:
        return get_model(provider, model_id)
    except Exception:
        return None


def has_custom(manager: SessionManager, custom_type: str) -> bool:
    return any(isinstance(e, CustomEntry) and e.custom_type == custom_type for e in manager.get_entries())


def read_tag(path: str) -> dict[str, Any] | None:
    """The ``pi-notebook`` entry's data of a session file (among its first lines), or ``None``."""
    return read_custom_data(path, NOTEBOOK_ENTRY)


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
