"""Moving an ``AgentSession`` in its session tree, as Pi does:

* :func:`navigate_tree` (Pi's ``AgentSession.navigateTree``): stay in the same file and move the
  leaf. Choosing a user (or custom) message moves to its parent and hands its text back for
  editing; any other entry becomes the leaf. With ``summarize``, the branch being left is
  summarized into a ``branch_summary`` entry at the new position; ``label`` labels the summary
  (or the target when there is none).
* :func:`fork` (Pi's ``AgentSessionRuntime.fork``): the path up to the entry becomes a session
  file of its own, whose header names the old file as its parent. Pi builds a new runtime for
  it; here the same session switches to the new file (its listeners stay subscribed).

Both give the agent the context of the new position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..ai.abort import AbortController
from ..ai.types import UserMessage, content_text
from ..session import (
    BranchSummaryEntry,
    CustomMessageEntry,
    MessageEntry,
    SessionError,
    SummaryRequest,
    collect_entries_for_branch_summary,
    generate_branch_summary,
)

if TYPE_CHECKING:
    from .agent_session import AgentSession

__all__ = ["ForkResult", "NavigateResult", "fork", "navigate_tree"]

NAVIGATE_BUSY = "Wait for the current response to finish before navigating the session tree."


@dataclass(frozen=True, slots=True)
class NavigateResult:
    cancelled: bool = False
    editor_text: str | None = None
    """The chosen user message's text, to edit and send again."""
    summary_entry: BranchSummaryEntry | None = None
    aborted: bool = False


@dataclass(frozen=True, slots=True)
class ForkResult:
    selected_text: str | None = None
    session_file: str | None = None


def _editable(entry: Any) -> str | None:
    """The text of a user or custom message entry (the ones navigation hands back), else None."""
    message = entry.message if isinstance(entry, MessageEntry) else None
    if isinstance(message, UserMessage):
        return content_text(message.content, "")
    if isinstance(entry, CustomMessageEntry):
        return content_text(entry.content, "")
    return None


async def navigate_tree(
    session: AgentSession,
    target_id: str,
    *,
    summarize: bool = False,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    label: str | None = None,
    controller: AbortController | None = None,
) -> NavigateResult:
    """See the module docstring. Raises ``RuntimeError`` while the agent streams and
    ``SessionError`` for an unknown entry or a failed summary."""
    if session.is_streaming:
        raise RuntimeError(NAVIGATE_BUSY)
    manager = session.session_manager
    old_leaf = manager.get_leaf_id()
    if target_id == old_leaf:
        return NavigateResult()
    if summarize and session.model is None:
        raise RuntimeError("No model available for summarization")
    target = manager.get_entry(target_id)
    if target is None:
        raise SessionError(f"Entry {target_id} not found")
    entries, _ = collect_entries_for_branch_summary(manager, old_leaf, target_id)
    summary = None
    if summarize and entries:
        state = session.agent.state
        request = SummaryRequest(
            model=state.model,
            stream_fn=session.agent.stream_fn,
            signal=(controller or AbortController()).signal,
            thinking_level=None,
        )
        reserve = session.settings.compaction.reserve_tokens
        summary = await generate_branch_summary(
            entries, request, reserve, custom_instructions, replace_instructions
        )
        if summary.aborted:
            return NavigateResult(cancelled=True, aborted=True)
        if summary.error:
            raise SessionError(summary.error)
    editor_text = _editable(target)
    new_leaf = target.parent_id if editor_text is not None else target_id
    summary_entry = None
    if summary is not None and summary.summary:
        details = {"readFiles": summary.read_files, "modifiedFiles": summary.modified_files}
        summary_id = manager.branch_with_summary(
            new_leaf, summary.summary, details, from_hook=False, usage=summary.usage
        )
        found = manager.get_entry(summary_id)
        summary_entry = found if isinstance(found, BranchSummaryEntry) else None
        if label:
            manager.append_label_change(summary_id, label)
    elif new_leaf is None:
        manager.reset_leaf()
    else:
        manager.branch(new_leaf)
    if label and summary_entry is None:
        manager.append_label_change(target_id, label)
    session.agent.state.messages = manager.build_session_context().messages
    return NavigateResult(editor_text=editor_text, summary_entry=summary_entry)


def fork(session: AgentSession, entry_id: str, position: Literal["before", "at"] = "before") -> ForkResult:
    """See the module docstring. ``position="before"`` (Pi's default) forks before a user
    message and hands its text back; ``"at"`` keeps the entry itself."""
    manager = session.session_manager
    selected = manager.get_entry(entry_id)
    if selected is None:
        raise SessionError("Invalid entry ID for forking")
    text: str | None = None
    if position == "at":
        leaf: str | None = selected.id
    else:
        if not isinstance(selected, MessageEntry) or not isinstance(selected.message, UserMessage):
            raise SessionError("Invalid entry ID for forking")
        leaf, text = selected.parent_id, _editable(selected)
    previous = manager.session_file
    if leaf is None:
        manager.new_session(parent_session=previous)
    else:
        manager.create_branched_session(leaf)
    session.agent.state.messages = manager.build_session_context().messages
    return ForkResult(selected_text=text, session_file=manager.session_file)
