"""Replay: a ``%%pi`` cell shows its recorded answer instead of calling a model.

``%%pi --replay`` (or ``c.PiMagics.replay = True``, or ``$PI_NOTEBOOK_REPLAY=1``) makes a
notebook re-run deterministically under Run All, nbval or papermill. Matching rules:

* The recordings are this notebook's session files of the cell's conversation (``--name``),
  newest first; within one, the ``pi-notebook-run`` entries of its latest branch, in order.
* A cell matches the first run entry after the previous match (per conversation) whose prompt
  equals the cell's prompt as typed (``# NBVAL_*`` lines and surrounding blank space removed)
  and, when the cell has a model (``--model``, the conversation's or the default one), whose
  model is the same ``provider:id``. Re-running a cell searches that file again from its start;
  ``--new`` starts over in the newest file.
* The answer is every message recorded after that run entry up to the next one; it is fed to
  the view through the session layer's ``replay``, and the conversation continues from the end
  of that run (the next live cell branches from there in the same file).
* No match is a one-line ``UsageError``; a replayed cell never calls a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ...agent.types import AgentEndEvent, AgentEvent, AgentStartEvent, MessageStartEvent, TurnStartEvent
from ...session import CustomEntry, CustomMessageEntry, MessageEntry, SessionEntry, SessionManager, replay
from .files import RUN_ENTRY, SessionFiles, resolve_recorded

if TYPE_CHECKING:
    from .conversations import Conversations


@dataclass
class Cursor:
    """Where replay of a conversation stands in one recorded file."""

    manager: SessionManager
    path: list[SessionEntry]
    index: int = 0


@dataclass
class Recording:
    manager: SessionManager
    entries: list[SessionEntry]
    """The run entry's followers up to the next run entry."""
    model: str
    prompt: str = ""
    started: str = ""
    """The run entry's timestamp (ISO 8601): when the cell started."""


def replayed_notice(recording: Recording, how: str) -> str:
    """The line under a replayed run (``how``: ``%pi show``, ``--replay``): it looks like a
    live run otherwise, and is not one."""
    when = f" at {recording.started}" if recording.started else ""
    return f"Replayed ({how}): the answer recorded{when}, not a new run; no model was called."


def _run_data(entry: SessionEntry) -> dict[str, Any] | None:
    if isinstance(entry, CustomEntry) and entry.custom_type == RUN_ENTRY and isinstance(entry.data, dict):
        return entry.data
    return None


def _match(cursor: Cursor, start: int, prompts: set[str], model: str | None) -> Recording | None:
    path = cursor.path
    for i in range(start, len(path)):
        data = _run_data(path[i])
        if data is None or data.get("prompt") not in prompts:
            continue
        if model is not None and data.get("model") != model:
            continue
        end = next((j for j in range(i + 1, len(path)) if _run_data(path[j]) is not None), len(path))
        cursor.index = end
        model_id, prompt = str(data.get("model", "")), str(data.get("prompt", ""))
        return Recording(cursor.manager, path[i + 1 : end], model_id, prompt, path[i].timestamp)
    return None


def find_recording(
    sessions: SessionFiles, name: str, prompt: str, model: str | None, *, new: bool
) -> Recording:
    """The recorded run this cell replays (see the module docstring); ``UsageError`` if none."""
    cursors: dict[str, Cursor] = sessions.replay_cursors
    prompts = {prompt, sessions.redact(prompt)}
    current = None if new else cursors.get(name)
    if current is not None:
        found = _match(current, current.index, prompts, model) or _match(current, 0, prompts, model)
        if found is not None:
            return found
    for row in sessions.listed():
        if row.conversation not in (name, None) or (
            current and row.info.path == current.manager.session_file
        ):
            continue
        manager = sessions.open_manager(row.info.path)
        cursor = Cursor(manager, manager.get_branch())
        found = _match(cursor, 0, prompts, model)
        if found is not None:
            cursors[name] = cursor
            return found
    with_model = f" with model {model}" if model else ""
    raise UsageError(
        f"--replay: no recorded answer for this prompt{with_model} in conversation {name!r} of this "
        f"notebook ({sessions.directory()}); run the cell without --replay to record it"
    )


def recorded_runs(manager: SessionManager) -> list[Recording]:
    """Every ``%%pi`` run on the session's current branch, oldest first, with its prompt."""
    path = manager.get_branch()
    starts = [i for i, entry in enumerate(path) if _run_data(entry) is not None]
    runs = []
    for k, i in enumerate(starts):
        data = _run_data(path[i]) or {}
        end = starts[k + 1] if k + 1 < len(starts) else len(path)
        model, prompt = str(data.get("model", "")), str(data.get("prompt", ""))
        found = Recording(manager, path[i + 1 : end], model, prompt, path[i].timestamp)
        runs.append(found)
    return runs


def replayed_messages(recording: Recording) -> list[Any]:
    return [
        e.message if isinstance(e, MessageEntry) else _custom(e)
        for e in recording.entries
        if isinstance(e, MessageEntry | CustomMessageEntry)
    ]


def _custom(entry: CustomMessageEntry) -> Any:
    from ...session import CustomMessage

    return CustomMessage(
        custom_type=entry.custom_type, content=entry.content, display=entry.display, details=entry.details
    )


async def play(recording: Recording, sink: Any) -> list[Any]:
    """Feed the recorded run to ``sink`` as the agent would have emitted it (a turn per
    assistant message, ``agent_end`` last). Returns the messages."""
    messages = replayed_messages(recording)
    scratch = SessionManager.in_memory()
    for message in messages:
        if getattr(message, "role", None) == "custom":
            scratch.append_custom_message_entry(message.custom_type, message.content, message.display)
        else:
            scratch.append_message(message)

    def with_turns(event: AgentEvent) -> None:
        if isinstance(event, MessageStartEvent) and getattr(event.message, "role", None) == "assistant":
            sink(TurnStartEvent())
        sink(event)

    sink(AgentStartEvent())
    await replay(scratch, with_turns)
    sink(AgentEndEvent(messages=list(messages)))
    return messages


def continue_after(conversations: Conversations, name: str, recording: Recording) -> int:
    """The conversation goes on from the end of the replayed run; returns where the run's
    messages start in its transcript."""
    manager = recording.manager
    last = recording.entries[-1].id if recording.entries else None
    if last is not None:
        manager.branch(last)
    # The recorded tool calls did not run in this kernel: a live cell after it gets the note.
    conversations.adopt(name, manager, restarted=True)
    session = conversations.session(name)
    if session.model is None and ":" in recording.model:
        provider, _, model_id = recording.model.partition(":")
        model = resolve_recorded(provider, model_id)
        if model is not None:
            session.set_model(model)
    count = len(replayed_messages(recording))
    return max(0, len(session.messages) - count)
