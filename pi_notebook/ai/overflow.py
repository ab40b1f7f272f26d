"""Context-window overflow detection (Pi's ``utils/overflow.ts``).

Three signals: an error whose text matches a known provider overflow message (unless it
reads like throttling or rate limiting); a successful response whose input alone exceeds the
window (providers that truncate silently, e.g. z.ai); a ``length`` stop with no output and
the input filling the window (providers that truncate to fit, e.g. Xiaomi MiMo).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["OVERFLOW_PATTERNS", "is_context_overflow"]

_N = r"[\d,]+"  # token counts, possibly with thousands separators

OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"prompt is too long",  # Anthropic
        r"request_too_large",  # Anthropic, HTTP 413 (request bytes)
        r"input is too long for requested model",  # Amazon Bedrock
        r"exceeds the context window",  # OpenAI
        rf"exceeds (?:the )?(?:model'?s )?maximum context length(?: of {_N} tokens?|\s*\({_N}\))",  # LiteLLM
        r"input token count.*exceeds the maximum",  # Google Gemini
        r"maximum prompt length is \d+",  # xAI
        r"reduce the length of the messages",  # Groq
        r"maximum context length is \d+ tokens",  # OpenRouter
        rf"exceeds (?:the )?maximum allowed input length of {_N} tokens?",  # OpenRouter/Poolside
        r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",  # Together AI
        r"exceeds the limit of \d+",  # GitHub Copilot
        r"exceeds the available context size",  # llama.cpp
        r"greater than the context length",  # LM Studio
        r"context window exceeds limit",  # MiniMax
        r"exceeded model token limit",  # Kimi For Coding
        r"too large for model with \d+ maximum context length",  # Mistral
        rf"prompt has {_N} tokens?, but the configured context size is {_N} tokens?",  # DS4
        r"model_context_window_exceeded",  # z.ai finish reason surfaced as an error
        r"prompt too long; exceeded (?:max )?context length",  # Ollama
        r"range of input length should be",  # DashScope / Qwen
        r"context[_ ]length[_ ]exceeded",
        r"too many tokens",
        r"token limit exceeded",
        r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)",  # Cerebras
    )
)

# Errors that can contain an overflow phrase but are throttling (Bedrock's "Too many tokens,
# please wait") or rate limiting.
_NOT_OVERFLOW: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (r"^(?:Throttling error|Service unavailable):", r"rate limit", r"too many requests")
)


def is_context_overflow(message: Any, context_window: int | None = None) -> bool:
    """Whether an assistant message says the request did not fit the context window.

    Pass the model's ``context_window`` to also catch providers that overflow silently.
    """
    error = message.error_message
    if (
        message.stop_reason == "error"
        and error
        and not any(p.search(error) for p in _NOT_OVERFLOW)
        and any(p.search(error) for p in OVERFLOW_PATTERNS)
    ):
        return True
    if not context_window:
        return False
    usage = message.usage
    input_tokens = usage.input + usage.cache_read
    if message.stop_reason == "stop":
        return bool(input_tokens > context_window)
    return bool(
        message.stop_reason == "length" and usage.output == 0 and input_tokens >= context_window * 0.99
    )
