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
from typing import Any, Literal

from ..agent import Agent
from ..agent.agent import has_model
from ..ai.abort import AbortController
from ..ai.retry import RetryCallbacks, RetryPolicy
from ..ai.types import UserMessage, content_text
from ..session import (
    BranchSummaryEntry,
    BranchSummaryResult,
    CustomMessageEntry,
    MessageEntry,
    SessionError,
    SessionManager,
    SummaryRequest,
    collect_entries_for_branch_summary,
    generate_branch_summary,
)

__all__ = ["ForkResult", "NavigateResult", "fork", "navigate_tree"]

NAVIGATE_BUSY = "Wait for the current response to finish before navigating the session tree."
FORK_BUSY = "Wait for the current response to finish before forking the session."


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
    agent: Agent,
    manager: SessionManager,
    target_id: str,
    *,
    summarize: bool = False,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    label: str | None = None,
    reserve_tokens: int = 16384,
    timeout_ms: int | None = None,
    retry: tuple[RetryPolicy, RetryCallbacks] | None = None,
    controller: AbortController | None = None,
) -> NavigateResult:
    """See the module docstring (the caller has checked that nothing streams). Raises
    ``SessionError`` for an unknown entry or a failed summary."""
    old_leaf = manager.get_leaf_id()
    if target_id == old_leaf:
        return NavigateResult()
    if summarize and not has_model(agent):
        raise RuntimeError("No model available for summarization")
    target = manager.get_entry(target_id)
    if target is None:
        raise SessionError(f"Entry {target_id} not found")
    summary = None
    if summarize:
        summary = await _summary(
            agent,
            manager,
            old_leaf,
            target_id,
            instructions=custom_instructions,
            replace_instructions=replace_instructions,
            reserve_tokens=reserve_tokens,
            timeout_ms=timeout_ms,
            retry=retry,
            controller=controller or AbortController(),
        )
        if summary is not None and summary.aborted:
            return NavigateResult(cancelled=True, aborted=True)
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
    elif new_leaf is None:
        manager.reset_leaf()
    else:
        manager.branch(new_leaf)
    if label:  # the summary carries the label when there is one, else the target does
        manager.append_label_change(summary_entry.id if summary_entry is not None else target_id, label)
    agent.state.messages = manager.build_session_context().messages
    return NavigateResult(editor_text=editor_text, summary_entry=summary_entry)


async def _summary(
    agent: Agent,
    manager: SessionManager,
    old_leaf: str | None,
    target_id: str,
    *,
    instructions: str | None,
    replace_instructions: bool,
    reserve_tokens: int,
    timeout_ms: int | None,
    retry: tuple[RetryPolicy, RetryCallbacks] | None,
    controller: AbortController,
) -> BranchSummaryResult | None:
    """The summary of the branch being left (``None`` when nothing is left behind)."""
    entries, _ = collect_entries_for_branch_summary(manager, old_leaf, target_id)
    if not entries:
        return None
    policy, callbacks = retry if retry is not None else (None, None)
    request = SummaryRequest(
        model=agent.state.model,
        stream_fn=agent.stream_fn,
        signal=controller.signal,
        timeout_ms=timeout_ms,
        retry=policy,
        callbacks=callbacks,
    )
    result = await generate_branch_summary(
        entries, request, reserve_tokens, instructions, replace_instructions
    )
    if result.error and not result.aborted:
        raise SessionError(result.error)
    return result


def fork(
    agent: Agent, manager: SessionManager, entry_id: str, position: Literal["before", "at"] = "before"
) -> ForkResult:
    """See the module docstring. ``position="before"`` (Pi's default) forks before a user
    message and hands its text back; ``"at"`` keeps the entry itself."""
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
    agent.state.messages = manager.build_session_context().messages
    return ForkResult(selected_text=text, session_file=manager.session_file)
