"""The coding agent's message roles as the model sees them, and entries as context messages.

:func:`convert_to_llm` is the ``convert_to_llm`` an :class:`~pi_notebook.agent.Agent` needs
once its transcript holds session messages (compaction and branch summaries, custom and bash
messages): each becomes a user message with Pi's exact wording; the agent's default would
drop them.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ..ai.types import LlmMessage, TextContent, UserMessage
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

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"


def bash_execution_to_text(message: Any) -> str:
    """How a ``bashExecution`` message reads to the model."""
    text = f"Ran `{message.command}`\n"
    text += f"```\n{message.output}\n```" if message.output else "(no output)"
    if message.cancelled:
        text += "\n\n(command cancelled)"
    elif message.exit_code is not None and message.exit_code != 0:
        text += f"\n\nCommand exited with code {message.exit_code}"
    if message.truncated and message.full_output_path:
        text += f"\n\n[Output truncated. Full output: {message.full_output_path}]"
    return text


def _user_text(text: str, timestamp: int) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=timestamp)


_LLM_ROLES = frozenset({"user", "assistant", "toolResult"})


def convert_to_llm(messages: Sequence[Any]) -> list[LlmMessage]:
    """Session messages to the three LLM roles (unknown roles are dropped). The user message
    made for a session message is made once and reused while that message is unchanged, so
    the provider's wire cache recognises it on the next request."""
    if _LLM_ROLES.issuperset([getattr(m, "role", None) for m in messages]):
        return list(messages)  # the usual transcript, passed through in one pass
    out: list[LlmMessage] = []
    for m in messages:
        role = getattr(m, "role", None)
        if role in _LLM_ROLES:
            out.append(m)
        elif role in _MAKERS and not (role == "bashExecution" and m.exclude_from_context):
            out.append(_derived(m, _MAKERS[role]))
    return out


def _from_bash(m: Any) -> UserMessage:
    return _user_text(bash_execution_to_text(m), m.timestamp)


def _from_custom(m: Any) -> UserMessage:
    content = [TextContent(text=m.content)] if isinstance(m.content, str) else list(m.content)
    return UserMessage(content=content, timestamp=m.timestamp)


def _from_branch_summary(m: Any) -> UserMessage:
    return _user_text(BRANCH_SUMMARY_PREFIX + m.summary + BRANCH_SUMMARY_SUFFIX, m.timestamp)


def _from_compaction_summary(m: Any) -> UserMessage:
    return _user_text(COMPACTION_SUMMARY_PREFIX + m.summary + COMPACTION_SUMMARY_SUFFIX, m.timestamp)


_MAKERS: dict[str, Callable[[Any], UserMessage]] = {
    "bashExecution": _from_bash,
    "custom": _from_custom,
    "branchSummary": _from_branch_summary,
    "compactionSummary": _from_compaction_summary,
}

_made: dict[int, tuple[weakref.ref[Any], dict[str, Any], tuple[Any, ...] | None, UserMessage]] = {}


def _derived(m: Any, make: Callable[[Any], UserMessage]) -> UserMessage:
    """``make(m)``, remembered while ``m`` lives and its fields (and content list) are the same
    objects; a message changed in place is made again."""
    key = id(m)
    fields = getattr(m, "__dict__", None)
    if fields is None:
        return make(m)
    content = getattr(m, "content", None)
    items = tuple(content) if isinstance(content, list) else None
    hit = _made.get(key)
    if hit is not None and hit[0]() is m and fields == hit[1] and items == hit[2]:
        return hit[3]
    made = make(m)

    def forget(_gone: weakref.ref[Any]) -> None:
        _made.pop(key, None)

    try:
        ref = weakref.ref(m, forget)
    except TypeError:  # not weakly referenceable: not remembered
        return made
    _made[key] = (ref, dict(fields), items, made)
    return made


def entry_to_context_messages(entry: SessionEntry) -> list[Any]:
    """The messages one entry contributes to the context (none for settings, labels...)."""
    if isinstance(entry, MessageEntry):
        return [entry.message]
    if isinstance(entry, CustomMessageEntry):
        return [
            CustomMessage(
                custom_type=entry.custom_type,
                content=entry.content,
                display=entry.display,
                details=entry.details,
                timestamp=iso_to_ms(entry.timestamp),
            )
        ]
    if isinstance(entry, BranchSummaryEntry) and entry.summary:
        return [
            BranchSummaryMessage(
                summary=entry.summary, from_id=entry.from_id, timestamp=iso_to_ms(entry.timestamp)
            )
        ]
    if isinstance(entry, CompactionEntry):
        return [
            CompactionSummaryMessage(
                summary=entry.summary,
                tokens_before=entry.tokens_before,
                timestamp=iso_to_ms(entry.timestamp),
            )
        ]
    return []
