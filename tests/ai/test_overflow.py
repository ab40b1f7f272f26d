"""Context overflow detection (Pi's overflow.test.ts and every pattern of Pi's list)."""

from __future__ import annotations

import pytest

from pi_notebook.ai.overflow import OVERFLOW_PATTERNS, is_context_overflow
from pi_notebook.ai.types import AssistantMessage, Usage


def error(message: str) -> AssistantMessage:
    return AssistantMessage(
        api="openai-completions",
        provider="ollama",
        model="qwen3.5:35b",
        stop_reason="error",
        error_message=message,
    )


def length_stop(input_tokens: int, cache_read: int, output: int) -> AssistantMessage:
    usage = Usage(input=input_tokens, cache_read=cache_read, output=output,
                  total_tokens=input_tokens + cache_read + output)  # fmt: skip
    return AssistantMessage(provider="xiaomi", model="mimo-v2.5-pro", usage=usage, stop_reason="length")


# --- overflow.test.ts (14) ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "window"),
    [
        ("400 `prompt too long; exceeded max context length by 100918 tokens`", 32768),  # Ollama
        ("400 The input (516368 tokens) is longer than the model's context length (262144 tokens).", 262144),
        (
            "Error: 503 litellm.ServiceUnavailableError: litellm.MidStreamFallbackError: "
            "litellm.APIConnectionError: APIConnectionError: OpenAIException - Requested token count exceeds "
            "the model's maximum context length of 131072 tokens.",
            131072,
        ),
        ("Error: 400 Input length (265330) exceeds model's maximum context length (262144).", 262144),
        (
            "Provider returned error: Input length 131393 exceeds the maximum allowed input length of "
            "131040 tokens.",
            131072,
        ),
        ("400 Prompt has 256468 tokens, but the configured context size is 256000 tokens", 256000),
        ("Prompt has 5,958,968 tokens, but the configured context size is 256,000 tokens", 256000),
    ],
)
def test_detects_provider_overflow_errors(message: str, window: int) -> None:
    assert is_context_overflow(error(message), window) is True


@pytest.mark.parametrize(
    "message",
    [
        "500 `model runner crashed unexpectedly`",  # a generic Ollama error
        "Throttling error: Too many tokens, please wait before trying again.",  # Bedrock 429
        "Service unavailable: The service is temporarily unavailable.",
        "Rate limit exceeded, please retry after 30 seconds.",
        "Too many requests. Please slow down.",
    ],
)
def test_does_not_mistake_other_errors_for_overflow(message: str) -> None:
    assert is_context_overflow(error(message), 200000) is False


def test_detects_xiaomi_style_length_stop_with_zero_output_and_a_full_window() -> None:
    assert is_context_overflow(length_stop(58, 1048512, 0), 1048576) is True


def test_normal_length_stops_with_output_are_not_overflow() -> None:
    assert is_context_overflow(length_stop(1000, 0, 4096), 200000) is False


def test_length_stops_far_below_the_window_are_not_overflow() -> None:
    assert is_context_overflow(length_stop(100, 0, 0), 200000) is False


# --- every pattern of Pi's list -----------------------------------------------------------------------------

PATTERN_EXAMPLES = [
    "prompt is too long: 213462 tokens > 200000 maximum",
    '413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
    "Input is too long for requested model.",
    "Your input exceeds the context window of this model",
    "Requested token count exceeds the model's maximum context length of 131,072 tokens",
    "Input length (265330) exceeds model's maximum context length (262144).",
    "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)",
    "This model's maximum prompt length is 131072 but the request contains 537812 tokens",
    "Please reduce the length of the messages or completion",
    "This endpoint's maximum context length is 8192 tokens. However, you requested about 9000 tokens",
    "Input length 131393 exceeds the maximum allowed input length of 131,040 tokens.",
    "The input (1 tokens) is longer than the model's context length (0 tokens).",
    "prompt token count of 130000 exceeds the limit of 128000",
    "the request exceeds the available context size, try increasing it",
    "tokens to keep from the initial prompt is greater than the context length",
    "invalid params, context window exceeds limit",
    "Your request exceeded model token limit: 262144 (requested: 300000)",
    "Prompt contains 140000 tokens, too large for model with 131072 maximum context length",
    "Prompt has 1 token, but the configured context size is 0 tokens",
    "finish_reason: model_context_window_exceeded",
    "prompt too long; exceeded context length by 5 tokens",
    "Range of input length should be [1, 129024]",
    "context_length_exceeded",
    "Context length exceeded",
    "too many tokens in request",
    "Token limit exceeded for this request",
    "400 status code (no body)",
    "413 (no body)",
]


@pytest.mark.parametrize("message", PATTERN_EXAMPLES)
def test_each_overflow_pattern(message: str) -> None:
    assert is_context_overflow(error(message)) is True
    assert is_context_overflow(error(message.upper())) is True  # case-insensitive


def test_every_pattern_has_an_example() -> None:
    for pattern in OVERFLOW_PATTERNS:
        assert any(pattern.search(m) for m in PATTERN_EXAMPLES), pattern.pattern


@pytest.mark.parametrize(
    "message",
    [
        "500 status code (no body)",  # only 400/413 with no body
        "error: 400 status code (no body)",  # anchored at the start
        "exceeds the maximum context length",  # LiteLLM form needs the number
        "429 Too many tokens per minute: rate limit reached",  # rate limiting wins
    ],
)
def test_near_misses_are_not_overflow(message: str) -> None:
    assert is_context_overflow(error(message)) is False


def test_silent_overflow_needs_the_context_window() -> None:
    message = AssistantMessage(usage=Usage(input=120_000, cache_read=10_000, output=10), stop_reason="stop")
    assert is_context_overflow(message) is False
    assert is_context_overflow(message, 128_000) is True
    assert is_context_overflow(message, 130_000) is False  # equal is not over


def test_truncation_overflow_boundary() -> None:
    assert is_context_overflow(length_stop(98_999, 0, 0), 100_000) is False
    assert is_context_overflow(length_stop(98_000, 1_000, 0), 100_000) is True  # >= 99 %


def test_other_stop_reasons_are_never_overflow() -> None:
    aborted = AssistantMessage(
        stop_reason="aborted", error_message="prompt is too long", usage=Usage(input=10**6)
    )
    assert is_context_overflow(aborted, 1000) is False
    assert is_context_overflow(error(""), 1000) is False
