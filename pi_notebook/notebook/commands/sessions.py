"""The session subcommands of ``%pi``: sessions, resume, branch, fork, name, compact.

Each takes ``(state, name, rest)`` like the other subcommands in ``conversation.py``, which adds
``SESSION_SUBCOMMANDS`` to its table. They act on the conversation ``name`` (``--name``) and
its ``AgentSession`` (``sessions/conversations.py``). A command that needs a model (``compact``,
``branch --summarize``) runs it on a private event loop in a worker thread: a line magic
cannot await.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any, TypeVar

from IPython.core.error import UsageError

from ...runtime import AgentSession
from ...session import CompactionError, SessionError
from ..config import DEFAULT_NAME, MODEL_ENV
from ..sessions.files import SessionFiles, user_turns
from ..state import NotebookState
from ..tools.references import single_line, truncate
from ..view.notices import compaction_text

_T = TypeVar("_T")

HELP = """\
  sessions [--all]        this notebook's recorded conversations (--all: the whole folder)
  resume [N|NAME]         continue the latest recorded conversation (or one from %pi sessions)
  branch N [--summarize]  go back to just after user turn N (numbers from %pi history)
  fork                    copy the current path into a new session file and continue there
  name [TEXT]             show or set the session's display name
  compact [INSTRUCTIONS]  summarize older messages now (the model writes the summary)
"""


def run_coroutine(factory: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run a coroutine to completion from synchronous code, even under a running loop."""
    out: list[_T] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            out.append(asyncio.run(factory()))
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=work, name="pi-notebook-session", daemon=True)
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    return out[0]


def _idle(state: NotebookState, name: str | None) -> AgentSession:
    """The session of conversation ``name``, which must not be running."""
    try:
        session = state.conversations.session(name)
    except ValueError as exc:
        raise UsageError(f"default model (c.PiMagics.model / {MODEL_ENV}): {exc}") from None
    if session.is_streaming:
        raise UsageError(f"conversation {name or DEFAULT_NAME!r} is running; wait for it to end")
    return session


def _size(size: int) -> str:
    for unit in ("B", "kB", "MB"):
        if size < 1024 or unit == "MB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size //= 1024
    return f"{size} MB"


def _when(moment: datetime) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def sessions_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    if rest not in ("", "--all"):
        raise UsageError(f"sessions takes --all or nothing, not {rest!r}")
    sessions = state.sessions
    rows = sessions.listed(every=rest == "--all")
    if not rows:
        print(f"no recorded conversations of this notebook in {sessions.directory()}")
        return
    current = {found.manager.session_file for _, found in state.conversations.items()}
    print(f"   #  {'name':<18} {'first prompt':<40} {'msgs':>4} {'size':>8}  last change")
    for number, row in enumerate(rows, 1):
        info = row.info
        mark = "*" if info.path in current else " "
        label = truncate(info.name or row.conversation or "-", 18)
        first = single_line(info.first_message, 40)
        print(
            f"{mark}{number:>3}  {label:<18} {first:<40} {info.message_count:>4} "
            f"{_size(info.size):>8}  {_when(info.modified)}"
        )
    print(f"({sessions.directory()}; * = in use; %pi resume N continues one)")


def resume_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    key = name or DEFAULT_NAME
    session = _idle(state, name)
    try:
        path = state.sessions.find(key, rest.strip(), session.session_file)
        count = state.conversations.resume(key, path)
    except (LookupError, SessionError) as exc:
        raise UsageError(str(exc)) from None
    model = session.state.model
    print(
        f"conversation {key!r} resumed from {os.path.basename(path)}: {count} messages, "
        f"model {model.provider}:{model.id}. The model will be told the kernel restarted."
    )
    problem = state.conversations.session(key).session_manager.problem_line()
    if problem:  # what the load skipped or repaired, one line
        print(problem)


def session_line(sessions: SessionFiles, session: AgentSession) -> str:
    """Where the conversation of ``session`` is recorded, for ``%pi status``."""
    if not sessions.recording:
        return "not recorded (c.PiMagics.record / $PI_NOTEBOOK_RECORD)"
    manager = session.session_manager
    path = manager.session_file or ""
    if manager.write_failure is not None:  # the disk refused: say so here too
        return f"{path} (cannot be written now; {manager.unsaved_entries} entries wait in memory)"
    written = "" if os.path.exists(path) else " (written with the first answer)"
    return f"{path}{written}"


def turn_offset(session: AgentSession) -> int:
    """How many user turns of the session's branch the transcript no longer shows (compacted)."""
    shown = sum(1 for m in session.messages if getattr(m, "role", None) == "user")
    return max(0, len(user_turns(session.session_manager)) - shown)


def branch_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    words = rest.split()
    summarize = "--summarize" in words
    words = [w for w in words if w != "--summarize"]
    if len(words) != 1 or not words[0].isdigit():
        raise UsageError("branch needs a user turn number N from %pi history (0: the start)")
    number = int(words[0])
    key = name or DEFAULT_NAME
    session = _idle(state, name)
    turns = user_turns(session.session_manager)
    if number > len(turns):
        raise UsageError(f"there are {len(turns)} user turns; %pi history numbers them")
    if number == len(turns):
        print(f"conversation {key!r} is already at turn {number}")
        return
    target = turns[number]  # the turn after N: the branch leaves just before it
    try:  # choosing a user message moves to its parent, as Pi's tree navigation does
        run_coroutine(lambda: session.navigate_tree(target.id, summarize=summarize))
    except SessionError as exc:
        raise UsageError(f"branch: {exc}") from None
    kept = "the start" if number == 0 else f"turn {number}"
    print(
        f"conversation {key!r} continues after {kept} ({len(session.messages)} messages); "
        "the later turns stay in the session file as another branch"
    )


def fork_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    key = name or DEFAULT_NAME
    session = _idle(state, name)
    old = session.session_file
    leaf = session.session_manager.get_leaf_id()
    if leaf is None:
        raise UsageError("nothing to fork yet: the conversation is empty")
    path = session.fork(leaf, position="at").session_file
    if path is None:
        print(f"conversation {key!r} forked (in memory: recording is off)")
        return
    note = "" if os.path.exists(path) else " (written with the next answer)"
    kept = os.path.basename(old or "")
    print(f"conversation {key!r} continues in {os.path.basename(path)}{note}; {kept} is kept")


def name_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    session = state.conversations.session(name)
    if rest:
        session.set_session_name(rest)
    print(session.session_name or "(no name; %pi name TEXT sets one)")


def compact_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    session = _idle(state, name)
    try:
        result = run_coroutine(lambda: session.compact(rest or None))
    except CompactionError as exc:
        raise UsageError(f"compact: {exc}") from None
    print(
        compaction_text("manual", result.tokens_before)
        + f" {len(session.messages)} messages in the context now."
    )


SESSION_SUBCOMMANDS: dict[str, Callable[[NotebookState, str | None, str], None]] = {
    "sessions": sessions_cmd,
    "resume": resume_cmd,
    "branch": branch_cmd,
    "fork": fork_cmd,
    "name": name_cmd,
    "compact": compact_cmd,
}
