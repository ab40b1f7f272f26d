"""Branch summaries: when the user goes back to an earlier point of the tree, the branch being
left (from the old leaf back to the common ancestor) can be summarized into a
``branch_summary`` entry that starts the new branch, so its work is not lost to the model.

The newest entries of the abandoned branch fill the budget ``context_window -
reserve_tokens`` first; earlier summaries are squeezed in while under 90 % of it. Tool
results are skipped (the assistant's tool calls carry the gist).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ai.types import Context, TextContent, Usage, UserMessage, content_text
from .compaction import SummaryRequest, complete_summarization, estimate_tokens
from .entries import (
    BranchSummaryEntry,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    CustomMessage,
    CustomMessageEntry,
    MessageEntry,
    SessionEntry,
    iso_to_ms,
)
from .messages import convert_to_llm
from .storage import SessionError
from .summary_text import (
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    FileOperations,
    add_details_to_file_ops,
    compute_file_lists,
    extract_file_ops_from_message,
    format_file_operations,
    serialize_conversation,
)

BRANCH_SUMMARY_MAX_TOKENS = 2048


def collect_entries_for_branch_summary(
    manager: Any, old_leaf_id: str | None, target_id: str
) -> tuple[list[SessionEntry], str | None]:
    """``(entries from the common ancestor down to the old leaf, common ancestor id)``."""
    if not old_leaf_id:
        return [], None
    old_path = {e.id for e in manager.get_branch(old_leaf_id)}
    ancestor: str | None = None
    for entry in reversed(manager.get_branch(target_id)):
        if entry.id in old_path:
            ancestor = entry.id
            break
    entries: list[SessionEntry] = []
    current: str | None = old_leaf_id
    while current and current != ancestor:
        entry = manager.get_entry(current)
        if entry is None:
            break
        entries.append(entry)
        current = entry.parent_id
    entries.reverse()
    return entries, ancestor


def _message_of(entry: SessionEntry) -> Any:
    stamp = iso_to_ms(entry.timestamp)
    if isinstance(entry, MessageEntry):
        return None if entry.message.role == "toolResult" else entry.message
    if isinstance(entry, CustomMessageEntry):
        return CustomMessage(
            custom_type=entry.custom_type,
            content=entry.content,
            display=entry.display,
            details=entry.details,
            timestamp=stamp,
        )
    if isinstance(entry, BranchSummaryEntry):
        return BranchSummaryMessage(summary=entry.summary, from_id=entry.from_id, timestamp=stamp)
    if isinstance(entry, CompactionEntry):
        return CompactionSummaryMessage(
            summary=entry.summary, tokens_before=entry.tokens_before, timestamp=stamp
        )
    return None


@dataclass(slots=True)
class BranchPreparation:
    messages: list[Any]
    file_ops: FileOperations
    total_tokens: int


def prepare_branch_entries(entries: Sequence[SessionEntry], token_budget: int = 0) -> BranchPreparation:
    """The newest messages of ``entries`` that fit ``token_budget`` (0: no limit)."""
    ops = FileOperations()
    for entry in entries:
        if isinstance(entry, BranchSummaryEntry) and not entry.from_hook:
            add_details_to_file_ops(entry.details, ops)
    messages: list[Any] = []
    total = 0
    for entry in reversed(entries):
        message = _message_of(entry)
        if message is None:
            continue
        extract_file_ops_from_message(message, ops)
        tokens = estimate_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            is_summary = isinstance(entry, CompactionEntry | BranchSummaryEntry)
            if is_summary and total < token_budget * 0.9:
                messages.insert(0, message)
                total += tokens
            break
        messages.insert(0, message)
        total += tokens
    return BranchPreparation(messages, ops, total)


@dataclass(slots=True)
class BranchSummaryResult:
    summary: str | None = None
    usage: Usage | None = None
    read_files: list[str] = field(default_factory=list)
    modified_files: list[str] = field(default_factory=list)
    aborted: bool = False
    error: str | None = None


def branch_summary_prompt(
    messages: Sequence[Any], custom_instructions: str | None = None, replace_instructions: bool = False
) -> str:
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = f"{BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {custom_instructions}"
    else:
        instructions = BRANCH_SUMMARY_PROMPT
    conversation = serialize_conversation(convert_to_llm(messages))
    return f"<conversation>\n{conversation}\n</conversation>\n\n{instructions}"


async def generate_branch_summary(
    entries: Sequence[SessionEntry],
    request: SummaryRequest,
    reserve_tokens: int = 16384,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
) -> BranchSummaryResult:
    """Summarize abandoned ``entries``; errors and aborts come back in the result."""
    budget = (request.model.context_window or 128000) - reserve_tokens
    prepared = prepare_branch_entries(entries, budget)
    if not prepared.messages:
        return BranchSummaryResult(summary="No content to summarize")
    prompt = branch_summary_prompt(prepared.messages, custom_instructions, replace_instructions)
    context = Context(
        system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
        messages=[UserMessage(content=[TextContent(text=prompt)])],
    )
    response = await complete_summarization(request, context, BRANCH_SUMMARY_MAX_TOKENS, reasoning=False)
    if response.stop_reason == "aborted":
        return BranchSummaryResult(aborted=True)
    if response.stop_reason == "error":
        return BranchSummaryResult(error=response.error_message or "Summarization failed")
    read_files, modified_files = compute_file_lists(prepared.file_ops)
    summary = BRANCH_SUMMARY_PREAMBLE + content_text(response.content)
    summary += format_file_operations(read_files, modified_files)
    return BranchSummaryResult(
        summary=summary, usage=response.usage, read_files=read_files, modified_files=modified_files
    )


async def branch_with_generated_summary(
    manager: Any,
    target_id: str,
    request: SummaryRequest,
    custom_instructions: str | None = None,
) -> str | None:
    """Move to ``target_id`` as Pi's tree navigation does, summarizing the branch left behind.

    Selecting a user (or custom) message moves to its parent, so the message can be edited and
    sent again; any other entry becomes the leaf. Returns the ``branch_summary`` entry id, or
    ``None`` when there was nothing to summarize (the leaf is moved all the same).
    """
    target = manager.get_entry(target_id)
    if target is None:
        raise SessionError(f"Entry {target_id} not found")
    entries, _ = collect_entries_for_branch_summary(manager, manager.get_leaf_id(), target_id)
    editable = isinstance(target, CustomMessageEntry) or (
        isinstance(target, MessageEntry) and target.message.role == "user"
    )
    new_leaf = target.parent_id if editable else target_id
    if entries:
        result = await generate_branch_summary(entries, request, custom_instructions=custom_instructions)
        if result.error:
            raise SessionError(f"Branch summarization failed: {result.error}")
        if result.summary and not result.aborted:
            details = {"readFiles": result.read_files, "modifiedFiles": result.modified_files}
            entry_id: str = manager.branch_with_summary(
                new_leaf, result.summary, details, from_hook=False, usage=result.usage
            )
            return entry_id
    if new_leaf is None:
        manager.reset_leaf()
    else:
        manager.branch(new_leaf)
    return None
