"""What every ``stream_simple`` shares (Pi's ``api/simple-options.ts`` and ``utils/estimate.ts``):
the generic options with ``max_tokens`` clamped to the room left in the context
window, reasoning-level clamping and thinking budgets for budget-based providers, and the
context-size estimate the clamp relies on.

The estimate is Pi's: the newest assistant usage that still describes the current prefix,
plus about one token per four characters (UTF-16 code units, as JavaScript counts them) of
everything after it; 4800 characters per image.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import operator
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .cost import calculate_context_tokens
from .env import KEYLESS_PROVIDERS
from .levels import ThinkingLevel
from .options import SimpleStreamOptions, StreamOptions
from .types import Context, Model

__all__ = [
    "CHARS_PER_TOKEN",
    "CONTEXT_SAFETY_TOKENS",
    "DEFAULT_THINKING_BUDGETS",
    "ESTIMATED_IMAGE_CHARS",
    "MIN_OUTPUT_TOKENS",
    "ContextEstimate",
    "adjust_max_tokens_for_thinking",
    "build_base_options",
    "clamp_max_tokens_to_context",
    "clamp_reasoning",
    "context_safety_tokens",
    "estimate_context_tokens",
    "estimate_message_tokens",
    "estimate_text_tokens",
]

CHARS_PER_TOKEN = 4
ESTIMATED_IMAGE_CHARS = 4800
CONTEXT_SAFETY_TOKENS = 4096
MIN_OUTPUT_TOKENS = 1024
DEFAULT_THINKING_BUDGETS: dict[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}

_STREAM_OPTION_FIELDS = tuple(f.name for f in dataclasses.fields(StreamOptions))


@dataclass(frozen=True, slots=True)
class ContextEstimate:
    tokens: int
    """Estimated total context tokens."""
    usage_tokens: int
    """Tokens reported by the newest applicable assistant usage (0 when none)."""
    trailing_tokens: int
    """Estimated tokens after that usage (everything when there is none)."""
    last_usage_index: int | None
    """Index of the message that provided the usage, ``None`` when none applies."""


# --- estimates ------------------------------------------------------------------------------------


def _js_length(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units (astral characters count twice)."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


def _dumps(value: Any) -> str | None:
    """``JSON.stringify`` layout (compact, non-ASCII kept), or ``None`` when it does not serialize."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return None


def _js_json(value: Any) -> str:
    text = _dumps(value)
    return "[unserializable]" if text is None else text


def estimate_text_tokens(text: str) -> int:
    return math.ceil(_js_length(text) / CHARS_PER_TOKEN)


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return _js_length(content)
    chars = 0
    for block in content or ():
        chars += _js_length(block.text) if block.type == "text" else ESTIMATED_IMAGE_CHARS
    return chars


def estimate_message_tokens(message: Any) -> int:
    if message.role in ("user", "toolResult"):
        return math.ceil(_content_chars(message.content) / CHARS_PER_TOKEN)
    chars = 0
    for block in message.content or ():
        if block.type == "text":
            chars += _js_length(block.text)
        elif block.type == "thinking":
            chars += _js_length(block.thinking)
        else:
            chars += _js_length(block.name) + _js_length(_js_json(block.arguments))
    return math.ceil(chars / CHARS_PER_TOKEN)


_timestamp = operator.attrgetter("timestamp")


def _last_usage(messages: Sequence[Any]) -> tuple[int, int] | None:
    """(index, tokens) of the newest assistant usage that still describes its prefix: a message
    inserted before the response later (e.g. a compaction summary) has a newer timestamp, and
    then the response's usage no longer describes the prefix. Newest first, over the running
    maximum of the timestamps (one pass in C), so a long transcript costs little."""
    newest = list(itertools.accumulate(map(_timestamp, messages), max))
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role != "assistant" or message.stop_reason in ("aborted", "error"):
            continue
        tokens = calculate_context_tokens(message.usage)
        if tokens > 0 and (index == 0 or message.timestamp >= newest[index - 1]):
            return (index, tokens)
    return None


def _tools_tokens(tools: Sequence[Any] | None) -> int:
    """Tokens of the tools' JSON array. Its length is the elements' lengths plus brackets and
    commas, and an element's is remembered (``_tool_chars``): the agent sends the same tools on
    every call, and serializing them again cost ~10 µs per tool and request."""
    if not tools:
        return 0
    lengths = [n for n in map(_tool_chars, tools) if n is not None]
    if len(lengths) < len(tools):  # Pi stringifies the whole array, or fails
        return estimate_text_tokens(_js_json([_dumped(tool) for tool in tools]))
    return math.ceil((sum(lengths) + len(lengths) + 1) / CHARS_PER_TOKEN)


def _dumped(tool: Any) -> Any:
    return tool.model_dump() if hasattr(tool, "model_dump") else tool


_json_lengths: dict[int, tuple[weakref.ref[Any], Any, int | None]] = {}


def _tool_chars(tool: Any) -> int | None:
    """JavaScript length of ``tool``'s JSON (``None``: it does not serialize), kept per tool
    object while it lives and its fields keep their values (compared with a copy taken when it
    was measured; the ``parameters`` schema by identity: as for ``AgentTool.to_tool``, a schema
    in use is not edited in place)."""
    if not hasattr(tool, "model_dump"):
        return _json_length(tool)
    fields = [value for name, value in vars(tool).items() if name != "parameters"]
    key = (id(tool.parameters), fields, dict(tool.model_extra or {}))
    found = _json_lengths.get(id(tool))
    if found is not None and found[0]() is tool and found[1] == key:
        return found[2]
    length = _json_length(tool.model_dump())
    ident = id(tool)
    _json_lengths[ident] = (weakref.ref(tool, lambda _: _json_lengths.pop(ident, None)), key, length)
    return length


def _json_length(value: Any) -> int | None:
    text = _dumps(value)
    return None if text is None else _js_length(text)


def _estimate_messages(messages: Sequence[Any]) -> ContextEstimate:
    usage = _last_usage(messages)
    if usage is None:
        tokens = sum(estimate_message_tokens(m) for m in messages)
        return ContextEstimate(tokens, 0, tokens, None)
    index, usage_tokens = usage
    trailing = sum(estimate_message_tokens(m) for m in messages[index + 1 :])
    return ContextEstimate(usage_tokens + trailing, usage_tokens, trailing, index)


def estimate_context_tokens(context: Context | Sequence[Any]) -> ContextEstimate:
    """Pi's ``estimateContextTokens`` for a context or a bare message list."""
    if not isinstance(context, Context):
        return _estimate_messages(context)
    estimate = _estimate_messages(context.messages)
    if estimate.last_usage_index is not None:
        # Tools loaded after the usage checkpoint (deferred loading) are not in its count.
        added = {
            name
            for message in context.messages[estimate.last_usage_index + 1 :]
            if message.role == "toolResult"
            for name in message.added_tool_names or ()
        }
        extra = _tools_tokens([t for t in context.tools or () if t.name in added])
    else:
        system = estimate_text_tokens(context.system_prompt) if context.system_prompt else 0
        extra = system + _tools_tokens(context.tools)
    tokens, trailing = estimate.tokens + extra, estimate.trailing_tokens + extra
    return ContextEstimate(tokens, estimate.usage_tokens, trailing, estimate.last_usage_index)


# --- options ---------------------------------------------------------------------------------------


def context_safety_tokens(model: Model) -> int:
    """The tokens kept free below the window: Pi's 4,096, but at most an eighth of the window of
    a local server (Ollama, llama.cpp, LM Studio, vLLM), which is often started with 4,096 tokens
    in all; a 4,096 margin there would cap every request at ``max_tokens`` 1."""
    if model.provider in KEYLESS_PROVIDERS:
        return min(CONTEXT_SAFETY_TOKENS, model.context_window // 8)
    return CONTEXT_SAFETY_TOKENS


def clamp_max_tokens_to_context(model: Model, context: Context, max_tokens: int) -> int:
    """``max_tokens`` reduced to what fits after the estimated context and a safety margin."""
    if model.context_window <= 0:
        return max(1, max_tokens)
    margin = context_safety_tokens(model)
    available = model.context_window - estimate_context_tokens(context).tokens - margin
    return min(max_tokens, max(1, available))


def build_base_options(
    model: Model, context: Context, options: SimpleStreamOptions | None = None, api_key: str | None = None
) -> dict[str, Any]:
    """The generic :class:`StreamOptions` fields of ``options`` as keyword arguments, with
    ``max_tokens`` (default: the model's) clamped to the context window."""
    opts = options if options is not None else SimpleStreamOptions()
    base = {name: getattr(opts, name) for name in _STREAM_OPTION_FIELDS}
    requested = opts.max_tokens if opts.max_tokens is not None else model.max_tokens
    base["max_tokens"] = clamp_max_tokens_to_context(model, context, requested)
    base["api_key"] = api_key or opts.api_key
    return base


def clamp_reasoning(level: ThinkingLevel | None) -> ThinkingLevel | None:
    """Budget-based providers stop at ``high``: ``xhigh`` and ``max`` map to it."""
    return "high" if level in ("xhigh", "max") else level


def adjust_max_tokens_for_thinking(
    base_max_tokens: int | None,
    model_max_tokens: int,
    level: ThinkingLevel,
    custom_budgets: dict[str, int] | None = None,
) -> tuple[int, int]:
    """(max_tokens, thinking_budget) for a budget-based provider.

    ``base_max_tokens`` is the caller's cap (``None``: none, use the model's). The budget is
    added on top of the cap, within the model's limit; when the result leaves no room for
    output, the budget shrinks to leave at least 1024 tokens.
    """
    budgets = {
        **DEFAULT_THINKING_BUDGETS,
        **{k: v for k, v in (custom_budgets or {}).items() if v is not None},
    }
    budget = budgets[clamp_reasoning(level) or "high"]
    if base_max_tokens is None:
        max_tokens = model_max_tokens
    else:
        max_tokens = min(base_max_tokens + budget, model_max_tokens)
    if max_tokens <= budget:
        budget = max(0, max_tokens - MIN_OUTPUT_TOKENS)
    return max_tokens, budget
