"""Shared stream_simple options (Pi's simple-options.ts) and the context estimate (Pi's
context-estimate.test.ts)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from pi_notebook.ai.abort import AbortController
from pi_notebook.ai.options import SimpleStreamOptions, StreamOptions
from pi_notebook.ai.simple_options import (
    ContextEstimate,
    adjust_max_tokens_for_thinking,
    build_base_options,
    clamp_max_tokens_to_context,
    clamp_reasoning,
    estimate_context_tokens,
    estimate_message_tokens,
)
from pi_notebook.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

MODEL = Model(
    id="test-model", api="openai-responses", provider="openai", context_window=10_000, max_tokens=8_000
)


def assistant(timestamp: int, total_tokens: int, stop: Any = "stop") -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text="kept")],
        api="openai-responses",
        provider="openai",
        model="test-model",
        usage=Usage(input=total_tokens, total_tokens=total_tokens),
        stop_reason=stop,
        timestamp=timestamp,
    )


# --- context-estimate.test.ts -----------------------------------------------------------------------


def test_ignores_stale_usage_after_a_newer_message_is_inserted_before_it() -> None:
    context = Context(
        system_prompt="system",
        messages=[
            UserMessage(content="summary", timestamp=200),
            assistant(100, 9_500),
            UserMessage(content="x" * 4_000, timestamp=300),
        ],
    )
    assert estimate_context_tokens(context) == ContextEstimate(
        tokens=1_005, usage_tokens=0, trailing_tokens=1_005, last_usage_index=None
    )
    assert build_base_options(MODEL, context)["max_tokens"] == 4_899


def test_uses_assistant_usage_again_after_a_response_to_the_inserted_context() -> None:
    context = Context(
        messages=[
            UserMessage(content="summary", timestamp=200),
            assistant(100, 9_500),
            UserMessage(content="new prompt", timestamp=300),
            assistant(400, 2_000),
            UserMessage(content="tail", timestamp=500),
        ]
    )
    assert estimate_context_tokens(context) == ContextEstimate(
        tokens=2_001, usage_tokens=2_000, trailing_tokens=1, last_usage_index=3
    )


# --- the estimate in detail ---------------------------------------------------------------------------


def test_errored_aborted_and_empty_usages_are_skipped() -> None:
    messages = [
        UserMessage(content="a" * 8, timestamp=1),
        assistant(2, 500),
        assistant(3, 700, stop="error"),
        assistant(4, 900, stop="aborted"),
        assistant(5, 0),
    ]
    estimate = estimate_context_tokens(messages)  # a bare list works too
    assert estimate == ContextEstimate(tokens=503, usage_tokens=500, trailing_tokens=3, last_usage_index=1)


def test_message_sizes_follow_pis_character_counts() -> None:
    user = UserMessage(
        content=[TextContent(text="hello"), ImageContent(data="A" * 10, mime_type="image/png")]
    )
    assert estimate_message_tokens(user) == 1202  # ceil((5 + 4800) / 4)
    call = AssistantMessage(
        content=[ThinkingContent(thinking="why"), ToolCall(id="1", name="read", arguments={"path": "a b"})]
    )
    assert estimate_message_tokens(call) == 6  # ceil((3 + 4 + len('{"path":"a b"}')) / 4)
    result = ToolResultMessage(tool_call_id="1", tool_name="read", content=[TextContent(text="🙈" * 3)])
    assert estimate_message_tokens(result) == 2  # JavaScript counts an emoji as two code units


def test_system_prompt_and_tools_count_only_without_a_usage_checkpoint() -> None:
    tools = [Tool(name="read", description="Read a file", parameters={"type": "object"})]
    dumped = '[{"name":"read","description":"Read a file","parameters":{"type":"object"}}]'
    context = Context(system_prompt="s" * 40, messages=[UserMessage(content="hi")], tools=tools)
    assert estimate_context_tokens(context).tokens == 1 + 10 + -(-len(dumped) // 4)


def test_the_tools_estimate_is_the_whole_array_serialized_even_after_edits() -> None:
    """The per-tool lengths are remembered; the sum must still be Pi's one ``JSON.stringify``
    of the array, also after a tool's fields change and for a tool that does not serialize."""
    from pi_notebook.ai.simple_options import _js_json, _tools_tokens, estimate_text_tokens

    def whole(tools: list[Any]) -> int:  # the estimate as one serialization of the array
        dumped = [t.model_dump() if hasattr(t, "model_dump") else t for t in tools]
        return estimate_text_tokens(_js_json(dumped))

    read = Tool(name="read", description="Lire un fichier 🙈", parameters={"type": "object"})
    extra = Tool.model_validate({"name": "x", "label": "X", "executionMode": "sequential"})
    circular: dict[str, Any] = {"type": "object"}
    circular["self"] = circular
    broken = Tool(name="loop", parameters=circular)
    for tools in ([read], [read, extra], [read, extra, {"name": "plain"}], [read, broken]):
        assert _tools_tokens(tools) == whole(tools) == _tools_tokens(tools)  # the second call is cached
    read.description = "Read a whole file, however long it is"
    extra.label = "A much longer label than before"  # type: ignore[attr-defined]
    assert _tools_tokens([read, extra]) == whole([read, extra])


def test_tools_loaded_after_the_checkpoint_are_added() -> None:
    tools = [Tool(name="late", description="d"), Tool(name="early", description="d")]
    messages = [
        UserMessage(content="go", timestamp=1),
        assistant(2, 1_000),
        ToolResultMessage(tool_call_id="1", tool_name="search", added_tool_names=["late"], timestamp=3),
    ]
    with_tools = estimate_context_tokens(Context(system_prompt="ignored", messages=messages, tools=tools))
    without = estimate_context_tokens(Context(messages=messages))
    late_only = estimate_context_tokens(Context(messages=messages[:1], tools=tools[:1]))
    assert with_tools.last_usage_index == 1
    assert with_tools.tokens - without.tokens == late_only.tokens - 1  # the "go" message is 1 token
    assert with_tools.trailing_tokens == with_tools.tokens - 1_000


# --- build_base_options and the clamp -------------------------------------------------------------------


def test_build_base_options_copies_every_generic_option() -> None:
    signal = AbortController().signal
    options = SimpleStreamOptions(
        temperature=0.2,
        signal=signal,
        api_key="k1",
        session_id="s",
        headers={"x": "1"},
        max_retries=2,
        reasoning="high",
        thinking_budgets={"high": 5},
    )
    base = build_base_options(MODEL, Context(messages=[UserMessage(content="hi")]), options)
    assert set(base) == {f.name for f in dataclasses.fields(StreamOptions)}  # no reasoning fields
    assert base["temperature"] == 0.2
    assert base["signal"] is signal
    assert base["session_id"] == "s"
    assert base["max_retries"] == 2
    assert base["api_key"] == "k1"
    assert base["max_tokens"] == 5_903  # min(8000, 10000 - 1 - 4096)
    StreamOptions(**base)  # usable as keyword arguments
    assert build_base_options(MODEL, Context(), options, api_key="k2")["api_key"] == "k2"
    assert build_base_options(MODEL, Context(), None)["max_tokens"] == 5_904


@pytest.mark.parametrize(
    ("window", "requested", "expected"),
    [
        (10_000, 100, 100),  # fits: unchanged
        (10_000, 8_000, 5_904),  # 10000 - 0 - 4096
        (5_000, 8_000, 904),
        (4_000, 8_000, 1),  # never below 1
        (0, 8_000, 8_000),  # unknown window: no clamp
        (-1, 0, 1),
    ],
)
def test_clamp_max_tokens_to_context(window: int, requested: int, expected: int) -> None:
    model = MODEL.model_copy(update={"context_window": window})
    assert clamp_max_tokens_to_context(model, Context(), requested) == expected


@pytest.mark.parametrize(
    ("provider", "window", "expected"),
    [
        ("llama.cpp", 4_096, 1_024),  # llama-server -c 4096: an eighth (512) kept free, not 4,096
        ("ollama", 4_096, 1_024),
        ("llama.cpp", 2_000, 1_024),  # 2000 - 250 = 1750 > 1024: unchanged
        ("llama.cpp", 1_000, 875),  # 1000 - 125
        ("llama.cpp", 65_536, 1_024),
        ("groq", 4_096, 1),  # a hosted provider keeps Pi's 4,096 margin
    ],
)
def test_a_local_servers_small_window_keeps_room_for_the_answer(
    provider: str, window: int, expected: int
) -> None:
    model = MODEL.model_copy(update={"provider": provider, "context_window": window})
    assert clamp_max_tokens_to_context(model, Context(), 1_024) == expected


def test_requested_max_tokens_wins_over_the_models() -> None:
    base = build_base_options(MODEL, Context(), SimpleStreamOptions(max_tokens=123))
    assert base["max_tokens"] == 123


# --- reasoning -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "expected"),
    [("minimal", "minimal"), ("low", "low"), ("medium", "medium"), ("high", "high"), ("xhigh", "high"),
     ("max", "high"), (None, None)],
)  # fmt: skip
def test_clamp_reasoning(level: Any, expected: Any) -> None:
    assert clamp_reasoning(level) == expected


@pytest.mark.parametrize(
    ("base", "model_max", "level", "budgets", "expected"),
    [
        (None, 32_000, "high", None, (32_000, 16_384)),  # no caller cap: the model's, budget inside
        (None, 32_000, "minimal", None, (32_000, 1_024)),
        (4_000, 32_000, "low", None, (6_048, 2_048)),  # cap + budget
        (4_000, 32_000, "xhigh", None, (20_384, 16_384)),  # xhigh budgets like high
        (20_000, 32_000, "medium", None, (28_192, 8_192)),
        (30_000, 32_000, "high", None, (32_000, 16_384)),  # capped by the model
        (1_000, 2_000, "medium", None, (2_000, 976)),  # no room: budget shrinks, 1024 for output
        (None, 800, "minimal", None, (800, 0)),
        (4_000, 32_000, "medium", {"medium": 1_000}, (5_000, 1_000)),  # custom budgets
        (4_000, 32_000, "low", {"medium": 1_000, "low": None}, (6_048, 2_048)),
    ],
)
def test_adjust_max_tokens_for_thinking(
    base: int | None, model_max: int, level: Any, budgets: Any, expected: tuple[int, int]
) -> None:
    assert adjust_max_tokens_for_thinking(base, model_max, level, budgets) == expected
