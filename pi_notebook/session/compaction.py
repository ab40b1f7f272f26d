"""Compaction: when the context nears the model's window, older messages are replaced by a
summary and the recent ones are kept (Pi's algorithm, decision by decision).

Pure steps, each testable on its own:

* :func:`estimate_tokens` (characters / 4, rounded up; an image counts as 4800 characters)
  and :func:`estimate_context_tokens` (the last valid assistant usage plus estimates of the
  messages after it);
* :func:`should_compact`: ``context_tokens > context_window - reserve_tokens``;
* :func:`find_cut_point`: walk back from the newest entry until ``keep_recent_tokens`` are
  kept, then cut at the nearest user / assistant / summary entry at or after that point
  (never at a tool result, so a tool call stays with its result); a cut inside a turn
  *splits* it and its start is summarized separately;
* :func:`prepare_compaction` picks what to summarize; :func:`compact` asks the model (any
  stream function, ``pi_notebook.ai.stream_simple`` by default) and returns the entry's
  fields; :func:`compact_session` does all of it on a :class:`SessionManager`.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ai.abort import AbortSignal
from ..ai.entry import stream_simple
from ..ai.options import SimpleStreamOptions
from ..ai.retry import RetryCallbacks, RetryPolicy, retry_assistant_call
from ..ai.types import AssistantMessage, Context, Model, TextContent, Usage, UserMessage, content_text
from .context import build_session_context
from .entries import CompactionEntry, MessageEntry, SessionEntry, uuidv7
from .messages import convert_to_llm, entry_to_context_messages
from .summary_text import (
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    UPDATE_SUMMARIZATION_PROMPT,
    FileOperations,
    add_details_to_file_ops,
    compute_file_lists,
    extract_file_ops_from_message,
    format_file_operations,
    js_len,
    js_stringify,
    serialize_conversation,
)


class CompactionError(Exception):
    """Compaction could not run or the summarizing model failed."""


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000


DEFAULT_COMPACTION_SETTINGS = CompactionSettings()

# --- token accounting -------------------------------------------------------------------------


def calculate_context_tokens(usage: Usage) -> int:
    return usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write


def _assistant_usage(message: Any) -> Usage | None:
    if getattr(message, "role", None) != "assistant" or message.stop_reason in ("aborted", "error"):
        return None
    usage: Usage | None = message.usage
    return usage if usage is not None and calculate_context_tokens(usage) > 0 else None


def get_last_assistant_usage(entries: Sequence[SessionEntry]) -> Usage | None:
    for entry in reversed(entries):
        if isinstance(entry, MessageEntry):
            usage = _assistant_usage(entry.message)
            if usage is not None:
                return usage
    return None


@dataclass(frozen=True, slots=True)
class ContextUsageEstimate:
    tokens: int
    usage_tokens: int
    trailing_tokens: int
    last_usage_index: int | None


def estimate_context_tokens(messages: Sequence[Any]) -> ContextUsageEstimate:
    """The last valid assistant usage plus estimates of the messages after it."""
    for index in range(len(messages) - 1, -1, -1):
        usage = _assistant_usage(messages[index])
        if usage is not None:
            usage_tokens = calculate_context_tokens(usage)
            trailing = sum(estimate_tokens(m) for m in messages[index + 1 :])
            return ContextUsageEstimate(usage_tokens + trailing, usage_tokens, trailing, index)
    estimated = sum(estimate_tokens(m) for m in messages)
    return ContextUsageEstimate(estimated, 0, estimated, None)


def should_compact(context_tokens: int, context_window: int, settings: CompactionSettings) -> bool:
    return settings.enabled and context_tokens > context_window - settings.reserve_tokens


ESTIMATED_IMAGE_CHARS = 4800


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return js_len(content)
    chars = 0
    for block in content:
        if block.type == "text" and block.text:
            chars += js_len(block.text)
        elif block.type == "image":
            chars += ESTIMATED_IMAGE_CHARS
    return chars


def _ceil4(chars: int) -> int:
    return -(-chars // 4)


def estimate_tokens(message: Any) -> int:
    """Characters / 4, rounded up (deliberately on the high side)."""
    role = getattr(message, "role", None)
    if role in ("user", "custom", "toolResult"):
        return _ceil4(_content_chars(message.content))
    if role == "assistant":
        chars = 0
        for block in message.content:
            if block.type == "text":
                chars += js_len(block.text)
            elif block.type == "thinking":
                chars += js_len(block.thinking)
            elif block.type == "toolCall":
                chars += js_len(block.name) + js_len(js_stringify(block.arguments))
        return _ceil4(chars)
    if role == "bashExecution":
        return _ceil4(js_len(message.command) + js_len(message.output))
    if role in ("branchSummary", "compactionSummary"):
        return _ceil4(js_len(message.summary))
    return 0


# --- cut point --------------------------------------------------------------------------------

_CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})
_TURN_START_ROLES = _CUT_ROLES - {"assistant"}


def _has_role(entry: SessionEntry, roles: frozenset[str]) -> bool:
    if isinstance(entry, CompactionEntry):
        return False
    return any(m.role in roles for m in entry_to_context_messages(entry))


def find_turn_start_index(entries: Sequence[SessionEntry], entry_index: int, start_index: int) -> int:
    """The user-like entry that starts the turn holding ``entry_index``, or -1."""
    for i in range(entry_index, start_index - 1, -1):
        if _has_role(entries[i], _TURN_START_ROLES):
            return i
    return -1


@dataclass(frozen=True, slots=True)
class CutPointResult:
    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool


def _budget_index(entries: Sequence[SessionEntry], start: int, end: int, keep: int, cuts: list[int]) -> int:
    accumulated = 0
    for i in range(end - 1, start - 1, -1):
        tokens = sum(estimate_tokens(m) for m in entry_to_context_messages(entries[i]))
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep:
            return next((c for c in cuts if c >= i), cuts[0])
    return cuts[0]


def find_cut_point(
    entries: Sequence[SessionEntry], start_index: int, end_index: int, keep_recent_tokens: int
) -> CutPointResult:
    """Where to cut ``entries[start_index:end_index]`` to keep about ``keep_recent_tokens``."""
    cuts = [i for i in range(start_index, end_index) if _has_role(entries[i], _CUT_ROLES)]
    if not cuts:
        return CutPointResult(start_index, -1, False)
    cut = _budget_index(entries, start_index, end_index, keep_recent_tokens, cuts)
    # Keep the settings and labels right before the cut with the kept part.
    while cut > start_index:
        previous = entries[cut - 1]
        if isinstance(previous, CompactionEntry) or entry_to_context_messages(previous):
            break
        cut -= 1
    starts_turn = _has_role(entries[cut], _TURN_START_ROLES)
    turn_start = -1 if starts_turn else find_turn_start_index(entries, cut, start_index)
    return CutPointResult(cut, turn_start, not starts_turn and turn_start != -1)


# --- preparation ------------------------------------------------------------------------------


@dataclass(slots=True)
class CompactionPreparation:
    first_kept_entry_id: str
    messages_to_summarize: list[Any]
    turn_prefix_messages: list[Any]
    is_split_turn: bool
    tokens_before: int
    previous_summary: str | None
    file_ops: FileOperations
    settings: CompactionSettings


def _messages(entries: Sequence[SessionEntry]) -> list[Any]:
    out = []
    for entry in entries:
        if not isinstance(entry, CompactionEntry):
            out.extend(entry_to_context_messages(entry)[:1])
    return out


def prepare_compaction(
    path_entries: Sequence[SessionEntry], settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS
) -> CompactionPreparation | None:
    """What to summarize on this root-to-leaf path; ``None`` when there is nothing to do."""
    if path_entries and isinstance(path_entries[-1], CompactionEntry):
        return None
    previous = next(
        (i for i in range(len(path_entries) - 1, -1, -1) if isinstance(path_entries[i], CompactionEntry)), -1
    )
    previous_summary: str | None = None
    start = 0
    if previous >= 0:
        prev = path_entries[previous]
        assert isinstance(prev, CompactionEntry)
        previous_summary = prev.summary
        kept = next((i for i, e in enumerate(path_entries) if e.id == prev.first_kept_entry_id), -1)
        start = kept if kept >= 0 else previous + 1
    tokens_before = estimate_context_tokens(build_session_context(path_entries).messages).tokens
    cut = find_cut_point(path_entries, start, len(path_entries), settings.keep_recent_tokens)
    if cut.first_kept_entry_index >= len(path_entries):
        return None
    first_kept = path_entries[cut.first_kept_entry_index]
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index
    to_summarize = _messages(path_entries[start:history_end])
    prefix: list[Any] = []
    if cut.is_split_turn:
        prefix = _messages(path_entries[cut.turn_start_index : cut.first_kept_entry_index])
    if not to_summarize and not prefix:
        return None
    ops = FileOperations()
    if previous >= 0:
        prev = path_entries[previous]
        assert isinstance(prev, CompactionEntry)
        if not prev.from_hook:
            add_details_to_file_ops(prev.details, ops)
    for message in (*to_summarize, *prefix):
        extract_file_ops_from_message(message, ops)
    return CompactionPreparation(
        first_kept_entry_id=first_kept.id,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        file_ops=ops,
        settings=settings,
    )


# --- summary generation -----------------------------------------------------------------------


@dataclass(kw_only=True, slots=True)
class SummaryRequest:
    """How to reach the summarizing model (``stream_fn`` defaults to ``stream_simple``)."""

    model: Model
    stream_fn: Any = None
    api_key: str | None = None
    headers: dict[str, str | None] | None = None
    env: dict[str, str] | None = None
    signal: AbortSignal | None = None
    thinking_level: str | None = None
    retry: RetryPolicy | None = None
    timeout_ms: int | None = None
    """The stream options' ``timeout_ms`` (an idle timeout per request); ``None``: the default."""
    callbacks: RetryCallbacks | None = None
    """Told when a summary request is retried (``retry_assistant_call``'s hooks)."""


async def complete_summarization(
    request: SummaryRequest, context: Context, max_tokens: int | None, reasoning: bool = True
) -> AssistantMessage:
    """One summarization call: no cache writes, a fresh session id, retried on transient errors."""
    model = request.model
    options = SimpleStreamOptions(
        max_tokens=max_tokens,
        signal=request.signal,
        api_key=request.api_key,
        headers=request.headers,
        env=request.env,
        cache_retention="none",
        session_id=uuidv7(),
        timeout_ms=request.timeout_ms,
    )
    level = request.thinking_level
    if reasoning and model.reasoning and level and level != "off":
        options.reasoning = level  # type: ignore[assignment]
    stream_fn = request.stream_fn or stream_simple

    async def produce() -> AssistantMessage:
        stream = stream_fn(model, context, options)
        if inspect.isawaitable(stream):
            stream = await stream
        result: AssistantMessage = await stream.result()
        return result

    return await retry_assistant_call(produce, request.retry, request.signal, request.callbacks)


def _max_tokens(model: Model, fraction: float, reserve_tokens: int) -> int:
    limit = int(fraction * reserve_tokens)
    return min(limit, model.max_tokens) if model.max_tokens > 0 else limit


def _prompt_context(text: str) -> Context:
    message = UserMessage(content=[TextContent(text=text)])
    return Context(system_prompt=SUMMARIZATION_SYSTEM_PROMPT, messages=[message])


def summary_prompt(
    messages: Sequence[Any], previous_summary: str | None = None, custom_instructions: str | None = None
) -> str:
    """The user message of a (history) summary request."""
    base = UPDATE_SUMMARIZATION_PROMPT if previous_summary else SUMMARIZATION_PROMPT
    if custom_instructions:
        base = f"{base}\n\nAdditional focus: {custom_instructions}"
    text = f"<conversation>\n{serialize_conversation(convert_to_llm(messages))}\n</conversation>\n\n"
    if previous_summary:
        text += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    return text + base


async def generate_summary(
    messages: Sequence[Any],
    request: SummaryRequest,
    reserve_tokens: int,
    custom_instructions: str | None = None,
    previous_summary: str | None = None,
) -> tuple[str, Usage]:
    """Summarize ``messages`` (updating ``previous_summary`` if given); ``(text, usage)``."""
    prompt = summary_prompt(messages, previous_summary, custom_instructions)
    max_tokens = _max_tokens(request.model, 0.8, reserve_tokens)
    response = await complete_summarization(request, _prompt_context(prompt), max_tokens)
    if response.stop_reason == "error":
        raise CompactionError(f"Summarization failed: {response.error_message or 'Unknown error'}")
    return content_text(response.content), response.usage


async def _turn_prefix_summary(
    messages: Sequence[Any], request: SummaryRequest, reserve_tokens: int
) -> tuple[str, Usage]:
    conversation = serialize_conversation(convert_to_llm(messages))
    prompt = f"<conversation>\n{conversation}\n</conversation>\n\n{TURN_PREFIX_SUMMARIZATION_PROMPT}"
    max_tokens = _max_tokens(request.model, 0.5, reserve_tokens)
    response = await complete_summarization(request, _prompt_context(prompt), max_tokens)
    if response.stop_reason == "error":
        error = response.error_message or "Unknown error"
        raise CompactionError(f"Turn prefix summarization failed: {error}")
    return content_text(response.content), response.usage


def combine_usage(first: Usage, second: Usage) -> Usage:
    def both(a: int | None, b: int | None) -> int | None:
        return None if a is None and b is None else (a or 0) + (b or 0)

    cost = first.cost.model_copy(
        update={k: getattr(first.cost, k) + getattr(second.cost, k) for k in type(first.cost).model_fields}
    )
    return Usage(
        input=first.input + second.input,
        output=first.output + second.output,
        cache_read=first.cache_read + second.cache_read,
        cache_write=first.cache_write + second.cache_write,
        cache_write1h=both(first.cache_write1h, second.cache_write1h),
        reasoning=both(first.reasoning, second.reasoning),
        total_tokens=first.total_tokens + second.total_tokens,
        cost=cost,
    )


@dataclass(slots=True)
class CompactionResult:
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    usage: Usage | None = None
    details: dict[str, list[str]] = field(default_factory=dict)


async def compact(
    preparation: CompactionPreparation, request: SummaryRequest, custom_instructions: str | None = None
) -> CompactionResult:
    """Ask the model for the summary of ``preparation`` (two requests for a split turn)."""
    prep = preparation
    reserve = prep.settings.reserve_tokens
    if prep.is_split_turn and prep.turn_prefix_messages:
        history, history_usage = "No prior history.", None
        if prep.messages_to_summarize:
            history, history_usage = await generate_summary(
                prep.messages_to_summarize, request, reserve, custom_instructions, prep.previous_summary
            )
        prefix, prefix_usage = await _turn_prefix_summary(prep.turn_prefix_messages, request, reserve)
        summary = f"{history}\n\n---\n\n**Turn Context (split turn):**\n\n{prefix}"
        usage = combine_usage(history_usage, prefix_usage) if history_usage else prefix_usage
    else:
        summary, usage = await generate_summary(
            prep.messages_to_summarize, request, reserve, custom_instructions, prep.previous_summary
        )
    read_files, modified_files = compute_file_lists(prep.file_ops)
    summary += format_file_operations(read_files, modified_files)
    return CompactionResult(
        summary=summary,
        first_kept_entry_id=prep.first_kept_entry_id,
        tokens_before=prep.tokens_before,
        usage=usage,
        details={"readFiles": read_files, "modifiedFiles": modified_files},
    )


async def compact_session(
    manager: Any,
    request: SummaryRequest,
    settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS,
    custom_instructions: str | None = None,
) -> CompactionEntry:
    """Compact the current branch of ``manager`` and append the ``compaction`` entry.

    Afterwards ``manager.build_session_context().messages`` is the agent's new transcript.
    """
    path = manager.get_branch()
    preparation = prepare_compaction(path, settings)
    if preparation is None:
        if path and isinstance(path[-1], CompactionEntry):
            raise CompactionError("Already compacted")
        raise CompactionError("Nothing to compact (session too small)")
    result = await compact(preparation, request, custom_instructions)
    if request.signal is not None and request.signal.aborted:
        raise CompactionError("Compaction cancelled")
    entry_id = manager.append_compaction(
        result.summary,
        result.first_kept_entry_id,
        result.tokens_before,
        result.details,
        from_hook=False,
        usage=result.usage,
    )
    entry: CompactionEntry = manager.get_entry(entry_id)
    return entry
