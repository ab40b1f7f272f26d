"""Shared pieces of compaction and branch summaries: the conversation as plain text, the
files the agent touched, and the prompts (word for word Pi's, so a summary made here and one
made by Pi come from the same request).

The conversation is serialized to text (``[User]: ...``, ``[Assistant]: ...``) rather than
sent as messages, so the summarizing model reads it instead of continuing it. Lengths are
counted in UTF-16 code units, as JavaScript's ``String.length`` does, so token estimates and
truncation points match Pi's for any text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ai.types import content_text


def js_len(text: str) -> int:
    """``text.length`` in JavaScript (characters outside the BMP count twice)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _js_slice(text: str, end: int) -> str:
    if text.isascii():
        return text[:end]
    return text.encode("utf-16-le", "surrogatepass")[: end * 2].decode("utf-16-le", "surrogatepass")


def _js_value(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _js_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_js_value(v) for v in value]
    return value


def js_stringify(value: Any) -> str:
    """``JSON.stringify(value)`` for JSON data (compact, non-ASCII kept, ``1.0`` as ``1``)."""
    return json.dumps(_js_value(value), ensure_ascii=False, separators=(",", ":"))


# --- file operations --------------------------------------------------------------------------


@dataclass(slots=True)
class FileOperations:
    """Paths seen in ``read`` / ``write`` / ``edit`` tool calls."""

    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    edited: set[str] = field(default_factory=set)


def extract_file_ops_from_message(message: Any, ops: FileOperations) -> None:
    if getattr(message, "role", None) != "assistant":
        return
    for block in message.content:
        if getattr(block, "type", None) != "toolCall" or not isinstance(block.arguments, dict):
            continue
        path = block.arguments.get("path")
        if not isinstance(path, str) or not path:
            continue
        target = {"read": ops.read, "write": ops.written, "edit": ops.edited}.get(block.name)
        if target is not None:
            target.add(path)


def add_details_to_file_ops(details: Any, ops: FileOperations) -> None:
    """Fold a previous summary's ``{readFiles, modifiedFiles}`` details into ``ops``."""
    if not isinstance(details, dict):
        return
    if isinstance(details.get("readFiles"), list):
        ops.read.update(f for f in details["readFiles"] if isinstance(f, str))
    if isinstance(details.get("modifiedFiles"), list):
        ops.edited.update(f for f in details["modifiedFiles"] if isinstance(f, str))


def compute_file_lists(ops: FileOperations) -> tuple[list[str], list[str]]:
    """``(read-only files, modified files)``, each sorted."""
    modified = ops.edited | ops.written
    return sorted(ops.read - modified), sorted(modified)


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""


# --- serialization ----------------------------------------------------------------------------

TOOL_RESULT_MAX_CHARS = 2000


def _truncate(text: str, max_chars: int) -> str:
    length = js_len(text)
    if length <= max_chars:
        return text
    return f"{_js_slice(text, max_chars)}\n\n[... {length - max_chars} more characters truncated]"


def _assistant_parts(message: Any) -> list[str]:
    thinking: list[str] = []
    calls: list[str] = []
    has_text = False
    for block in message.content:
        if block.type == "thinking":
            thinking.append(block.thinking)
        elif block.type == "toolCall":
            args = ", ".join(f"{k}={js_stringify(v)}" for k, v in (block.arguments or {}).items())
            calls.append(f"{block.name}({args})")
        elif block.type == "text":
            has_text = True
    parts = []
    if thinking:
        parts.append("[Assistant thinking]: " + "\n".join(thinking))
    if has_text:
        parts.append("[Assistant]: " + content_text(message.content))
    if calls:
        parts.append("[Assistant tool calls]: " + "; ".join(calls))
    return parts


def serialize_conversation(messages: Sequence[Any]) -> str:
    """LLM messages (after ``convert_to_llm``) as the text the summarizer reads."""
    parts: list[str] = []
    for message in messages:
        if message.role == "user":
            text = content_text(message.content, "")
            if text:
                parts.append(f"[User]: {text}")
        elif message.role == "assistant":
            parts.extend(_assistant_parts(message))
        elif message.role == "toolResult":
            text = content_text(message.content, "")
            if text:
                parts.append(f"[Tool result]: {_truncate(text, TOOL_RESULT_MAX_CHARS)}")
    return "\n\n".join(parts)


# --- prompts ----------------------------------------------------------------------------------

SUMMARIZATION_SYSTEM_PROMPT = """You are a context summarization assistant. Your task is to read a conversation between a user and an AI assistant, then produce a structured summary following the exact format specified.

Do NOT continue the conversation. Do NOT respond to any questions in the conversation. ONLY output the structured summary."""  # noqa: E501

SUMMARIZATION_PROMPT = """The messages above are a conversation to summarize. Create a structured context checkpoint summary that another LLM will use to continue the work.

Use this EXACT format:

## Goal
[What is the user trying to accomplish? Can be multiple items if the session covers different tasks.]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned by user]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Current work]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [Ordered list of what should happen next]

## Critical Context
- [Any data, examples, or references needed to continue]
- [Or "(none)" if not applicable]

Keep each section concise. Preserve exact file paths, function names, and error messages."""  # noqa: E501

UPDATE_SUMMARIZATION_PROMPT = """The messages above are NEW conversation messages to incorporate into the existing summary provided in <previous-summary> tags.

Update the existing structured summary with new information. RULES:
- PRESERVE all existing information from the previous summary
- ADD new progress, decisions, and context from the new messages
- UPDATE the Progress section: move items from "In Progress" to "Done" when completed
- UPDATE "Next Steps" based on what was accomplished
- PRESERVE exact file paths, function names, and error messages
- If something is no longer relevant, you may remove it

Use this EXACT format:

## Goal
[Preserve existing goals, add new ones if the task expanded]

## Constraints & Preferences
- [Preserve existing, add new ones discovered]

## Progress
### Done
- [x] [Include previously done items AND newly completed items]

### In Progress
- [ ] [Current work - update based on progress]

### Blocked
- [Current blockers - remove if resolved]

## Key Decisions
- **[Decision]**: [Brief rationale] (preserve all previous, add new)

## Next Steps
1. [Update based on current state]

## Critical Context
- [Preserve important context, add new if needed]

Keep each section concise. Preserve exact file paths, function names, and error messages."""  # noqa: E501

TURN_PREFIX_SUMMARIZATION_PROMPT = """This is the PREFIX of a turn that was too large to keep. The SUFFIX (recent work) is retained.

Summarize the prefix to provide context for the retained suffix:

## Original Request
[What did the user ask for in this turn?]

## Early Progress
- [Key decisions and work done in the prefix]

## Context for Suffix
- [Information needed to understand the retained recent work]

Be concise. Focus on what's needed to understand the kept suffix."""  # noqa: E501

BRANCH_SUMMARY_PREAMBLE = """The user explored a different conversation branch before returning here.
Summary of that exploration:

"""

BRANCH_SUMMARY_PROMPT = """Create a structured summary of this conversation branch for context when returning later.

Use this EXACT format:

## Goal
[What was the user trying to accomplish in this branch?]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Work that was started but not finished]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [What should happen next to continue this work]

Keep each section concise. Preserve exact file paths, function names, and error messages."""  # noqa: E501
