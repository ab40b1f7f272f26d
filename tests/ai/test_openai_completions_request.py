"""The ``openai-completions`` request: the JSON body and headers the loopback server
received (messages, tools, max-tokens field, reasoning parameters per thinking format, caching
fields, tool-call id normalisation) and compat detection per provider and base URL.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ai.openai_fixtures import (
    KEY,
    collect,
    ctx,
    make_model,
    opts,
    run,
    text_reply,
)
from loopback import LoopbackServer

from pi_notebook.ai.options import SimpleStreamOptions
from pi_notebook.ai.providers.openai_completions import OpenAICompletionsOptions, stream_simple
from pi_notebook.ai.providers.openai_completions_request import detect_compat, resolve_compat, short_hash
from pi_notebook.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

# --- request body ---


def history(model: Model) -> Context:
    same = {"api": model.api, "provider": model.provider, "model": model.id}
    return Context(
        system_prompt="Be brief.",
        messages=[
            UserMessage(content="hi"),
            UserMessage(content=[TextContent(text="look"), ImageContent(data="AAAA", mime_type="image/png")]),
            AssistantMessage(
                content=[
                    ThinkingContent(thinking="hmm", thinking_signature="reasoning_content"),
                    TextContent(text="Sure. "),
                    TextContent(text="  "),
                    TextContent(text="Reading."),
                    ToolCall(id="call_1", name="read", arguments={"path": "a.txt", "note": "é"}),
                    ToolCall(id="call_2", name="shot", arguments={}),
                ],
                stop_reason="toolUse",
                **same,
            ),
            ToolResultMessage(
                tool_call_id="call_1",
                tool_name="read",
                content=[TextContent(text="line1"), TextContent(text="line2")],
            ),
            ToolResultMessage(
                tool_call_id="call_2",
                tool_name="shot",
                content=[ImageContent(data="BBBB", mime_type="image/jpeg")],
            ),
            UserMessage(content="thanks"),
            AssistantMessage(content=[], stop_reason="aborted", **same),  # incomplete turns are not replayed
            UserMessage(content="again"),
        ],
        tools=[
            Tool(
                name="read",
                description="Read a file",
                parameters={"type": "object", "properties": {"path": {"type": "string"}}},
            )
        ],
    )


async def test_request_body_shape_openai(loopback: LoopbackServer) -> None:
    model = make_model(loopback, reasoning=True)
    await run(
        loopback,
        text_reply("ok"),
        model=model,
        context=history(model),
        options=opts(max_tokens=321, temperature=0.5, tool_choice="auto", reasoning_effort="low"),
    )
    body = loopback.requests[0].json
    assert body["messages"] == [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Sure. Reading.",
            "reasoning_content": "hmm",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"a.txt","note":"é"}'},
                },
                {"id": "call_2", "type": "function", "function": {"name": "shot", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "content": "line1\nline2", "tool_call_id": "call_1"},
        {"role": "tool", "content": "(see attached image)", "tool_call_id": "call_2"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Attached image(s) from tool result:"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,BBBB"}},
            ],
        },
        {"role": "user", "content": "thanks"},
        {"role": "user", "content": "again"},
    ]
    assert {k: v for k, v in body.items() if k != "messages"} == {
        "model": "gpt-test",
        "stream": True,
        "stream_options": {"include_usage": True},
        "store": False,
        "max_completion_tokens": 321,
        "temperature": 0.5,
        "tool_choice": "auto",
        "reasoning_effort": "low",
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read",
                    "description": "Read a file",
                    "strict": False,
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                },
            }
        ],
    }


async def test_request_body_shape_local_server(loopback: LoopbackServer) -> None:
    model = make_model(loopback, provider="ollama", reasoning=True)
    await run(
        loopback,
        text_reply("ok"),
        model=model,
        context=history(model),
        options=OpenAICompletionsOptions(max_tokens=99),
    )
    body = loopback.requests[0].json
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["max_tokens"] == 99
    assert "max_completion_tokens" not in body
    assert "store" not in body
    assert "strict" not in body["tools"][0]["function"]
    assert body["stream_options"] == {"include_usage": True}


async def test_tools_empty_list_when_history_has_tool_calls_but_no_tools(loopback: LoopbackServer) -> None:
    model = make_model(loopback)
    context = history(model)
    context.tools = None
    await run(loopback, text_reply("ok"), model=model, context=context)
    assert loopback.requests[0].json["tools"] == []
    await run(loopback, text_reply("ok"))
    assert "tools" not in loopback.requests[1].json


async def test_named_tool_choice_is_passed_through_and_nothing_breaks(loopback: LoopbackServer) -> None:
    # llama-server treats a named tool_choice as "auto" and simply answers
    choice = {"type": "function", "function": {"name": "read"}}
    model = make_model(loopback, provider="llama.cpp")
    _, msg = await run(
        loopback,
        text_reply("no tool needed"),
        model=model,
        context=history(model),
        options=OpenAICompletionsOptions(tool_choice=choice),
    )
    assert loopback.requests[0].json["tool_choice"] == choice
    assert msg.stop_reason == "stop"
    assert msg.content == [TextContent(text="no tool needed")]


async def test_foreign_tool_call_ids_are_normalized_in_calls_and_results(loopback: LoopbackServer) -> None:
    long_item = "fc_" + "x" * 60
    foreign = {"api": "openai-responses", "provider": "openai", "model": "gpt-5"}
    context = Context(
        messages=[
            UserMessage(content="go"),
            AssistantMessage(
                content=[
                    ToolCall(id="call_a|fc_1", name="f", arguments={}),
                    ToolCall(id=f"call_b|{long_item}", name="f", arguments={}),
                ],
                stop_reason="toolUse",
                **foreign,
            ),
            ToolResultMessage(tool_call_id="call_a|fc_1", tool_name="f", content=[TextContent(text="1")]),
            ToolResultMessage(tool_call_id=f"call_b|{long_item}", tool_name="f", content=[]),
        ]
    )
    await run(loopback, text_reply("ok"), context=context)
    messages = loopback.requests[0].json["messages"]
    long_id = f"call_b_{short_hash(f'call_b|{long_item}')[:8]}"
    assert [c["id"] for c in messages[1]["tool_calls"]] == ["call_a_fc_1", long_id]
    assert [(m["tool_call_id"], m["content"]) for m in messages[2:]] == [
        ("call_a_fc_1", "1"),
        (long_id, "(no tool output)"),
    ]


def test_short_hash_matches_pi() -> None:
    # reference values produced by Pi's shortHash under node
    assert short_hash("") == "k4n83c7h0j2b"
    assert short_hash("call_abc|fc_0123456789abcdefghijklmnopqrstuvwxyz+/=") == "bn996y1fidf13"
    assert short_hash("héllo 😀 wörld") == "zpm4hl1o2ak9i"


async def test_lone_surrogates_are_removed_from_outgoing_text(loopback: LoopbackServer) -> None:
    _, msg = await run(loopback, text_reply("ok"), context=ctx("bad \ud83d pair"))
    assert msg.stop_reason == "stop"
    assert loopback.requests[0].json["messages"] == [{"role": "user", "content": "bad  pair"}]


async def test_compat_flags_for_bridging_and_thinking_as_text(loopback: LoopbackServer) -> None:
    compat = {
        "requiresAssistantAfterToolResult": True,
        "requiresToolResultName": True,
        "requiresThinkingAsText": True,
    }
    model = make_model(loopback, compat=compat, input=["text"])
    context = history(model)
    await run(loopback, text_reply("ok"), model=model, context=context)
    messages = loopback.requests[0].json["messages"]
    assistant = messages[3]
    assert assistant["content"] == [
        {"type": "text", "text": "hmm"},
        {"type": "text", "text": "Sure. "},
        {"type": "text", "text": "Reading."},
    ]
    assert "reasoning_content" not in assistant
    assert messages[4]["name"] == "read"
    assert messages[5]["name"] == "shot"
    assert messages[6] == {"role": "assistant", "content": "I have processed the tool results."}
    assert messages[7] == {"role": "user", "content": "thanks"}


# --- reasoning parameters (stream_simple) ---

CHAT_TEMPLATE = {
    "thinking": {"$var": "thinking.enabled"},
    "effort": {"$var": "thinking.effort", "omitWhenOff": True},
    "fixed": 1,
}


@pytest.mark.parametrize(
    ("fmt", "on", "off"),
    [
        ("openai", {"reasoning_effort": "high"}, {}),
        ("openrouter", {"reasoning": {"effort": "high"}}, {"reasoning": {"effort": "none"}}),
        (
            "deepseek",
            {"thinking": {"type": "enabled"}, "reasoning_effort": "high"},
            {"thinking": {"type": "disabled"}},
        ),
        (
            "together",
            {"reasoning": {"enabled": True}, "reasoning_effort": "high"},
            {"reasoning": {"enabled": False}},
        ),
        (
            "zai",
            {"thinking": {"type": "enabled", "clear_thinking": False}, "reasoning_effort": "high"},
            {"thinking": {"type": "disabled"}},
        ),
        ("qwen", {"enable_thinking": True, "reasoning_effort": "high"}, {"enable_thinking": False}),
        (
            "qwen-chat-template",
            {"chat_template_kwargs": {"enable_thinking": True, "preserve_thinking": True}},
            {"chat_template_kwargs": {"enable_thinking": False, "preserve_thinking": True}},
        ),
        (
            "chat-template",
            {"chat_template_kwargs": {"thinking": True, "effort": "high", "fixed": 1}},
            {"chat_template_kwargs": {"thinking": False, "fixed": 1}},
        ),
        ("string-thinking", {"thinking": "high"}, {"thinking": "none"}),
    ],
)
async def test_reasoning_params_by_thinking_format(
    loopback: LoopbackServer, fmt: str, on: dict[str, Any], off: dict[str, Any]
) -> None:
    compat = {"thinkingFormat": fmt, "supportsReasoningEffort": True, "chatTemplateKwargs": CHAT_TEMPLATE}
    model = make_model(loopback, reasoning=True, compat=compat)
    keys = {"reasoning_effort", "reasoning", "thinking", "enable_thinking", "chat_template_kwargs"}
    levels: list[tuple[ThinkingLevel | None, dict[str, Any]]] = [("xhigh", on), (None, off)]
    for level, expected in levels:  # xhigh clamps to high (not in the model's map)
        loopback.queue_sse(text_reply("ok"))
        _, msg = await collect(stream_simple(model, ctx(), SimpleStreamOptions(api_key=KEY, reasoning=level)))
        assert msg.stop_reason == "stop"
        body = loopback.requests[-1].json
        assert {k: v for k, v in body.items() if k in keys} == expected


async def test_reasoning_params_only_for_reasoning_models_and_level_map(loopback: LoopbackServer) -> None:
    model = make_model(loopback, reasoning=False, compat={"thinkingFormat": "openrouter"})
    loopback.queue_sse(text_reply("ok"))
    await collect(stream_simple(model, ctx(), SimpleStreamOptions(api_key=KEY, reasoning="high")))
    assert "reasoning" not in loopback.requests[-1].json
    mapped = make_model(loopback, reasoning=True, thinking_level_map={"high": "max-effort", "off": "minimal"})
    mapped_levels: list[tuple[ThinkingLevel | None, str]] = [("high", "max-effort"), (None, "minimal")]
    for level, expected in mapped_levels:
        loopback.queue_sse(text_reply("ok"))
        await collect(stream_simple(mapped, ctx(), SimpleStreamOptions(api_key=KEY, reasoning=level)))
        assert loopback.requests[-1].json["reasoning_effort"] == expected


async def test_stream_simple_caps_max_tokens_and_passes_generic_options(loopback: LoopbackServer) -> None:
    model = make_model(loopback, context_window=10_000, max_tokens=8_000)
    loopback.queue_sse(text_reply("ok"))
    await collect(stream_simple(model, ctx(), SimpleStreamOptions(api_key=KEY, temperature=0.2)))
    body = loopback.requests[-1].json
    assert 0 < body["max_completion_tokens"] <= 10_000 - 4096
    assert body["temperature"] == 0.2


async def test_prompt_cache_fields(loopback: LoopbackServer) -> None:
    model = make_model(loopback, base_url=f"{loopback.url}/v1")
    await run(
        loopback, text_reply("ok"), model=model, options=opts(session_id="s" * 80, cache_retention="long")
    )
    body = loopback.requests[0].json
    assert body["prompt_cache_key"] == "s" * 64
    assert body["prompt_cache_retention"] == "24h"
    await run(loopback, text_reply("ok"), model=model, options=opts(session_id="abc"))
    assert "prompt_cache_key" not in loopback.requests[1].json  # short retention: only api.openai.com


async def test_anthropic_cache_control_through_openrouter(loopback: LoopbackServer) -> None:
    model = make_model(loopback, provider="openrouter", id="anthropic/claude-sonnet-4")
    context = history(model)
    await run(loopback, text_reply("ok"), model=model, context=context, options=opts(cache_retention="long"))
    body = loopback.requests[0].json
    marker = {"type": "ephemeral", "ttl": "1h"}
    assert body["messages"][0] == {
        "role": "system",
        "content": [{"type": "text", "text": "Be brief.", "cache_control": marker}],
    }
    assert body["tools"][-1]["cache_control"] == marker
    assert body["messages"][-1] == {
        "role": "user",
        "content": [{"type": "text", "text": "again", "cache_control": marker}],
    }
    assert sum("cache_control" in json.dumps(m) for m in body["messages"]) == 2
    await run(loopback, text_reply("ok"), model=model, context=context, options=opts(cache_retention="none"))
    assert "cache_control" not in json.dumps(loopback.requests[1].json)


async def test_options_as_mapping_and_tool_choice_through_stream_simple(loopback: LoopbackServer) -> None:
    _, msg = await run(loopback, text_reply("ok"), options={"api_key": KEY, "tool_choice": "none"})
    assert msg.stop_reason == "stop"
    assert loopback.requests[0].json["tool_choice"] == "none"
    # stream_simple takes this API's tool_choice too, from a mapping or from an options object
    simple_options: list[Any] = [
        {"api_key": KEY, "tool_choice": "required", "reasoning": "low"},
        OpenAICompletionsOptions(api_key=KEY, tool_choice="required"),
    ]
    for options in simple_options:
        loopback.queue_sse(text_reply("ok"))
        _, msg = await collect(stream_simple(make_model(loopback), ctx(), options))
        assert msg.stop_reason == "stop"
        assert loopback.requests[-1].json["tool_choice"] == "required"


# --- compat detection ---


@pytest.mark.parametrize(
    ("provider", "base_url", "expected"),
    [
        (
            "openai",
            "https://api.openai.com/v1",
            {
                "supports_store": True,
                "supports_developer_role": True,
                "max_tokens_field": "max_completion_tokens",
            },
        ),
        ("groq", "https://api.groq.com/openai/v1", {"supports_store": True, "thinking_format": "openai"}),
        (
            "openrouter",
            "https://openrouter.ai/api/v1",
            {
                "supports_developer_role": False,
                "thinking_format": "openrouter",
                "session_affinity_format": "openrouter",
            },
        ),
        (
            "deepseek",
            "https://api.deepseek.com",
            {
                "supports_store": False,
                "thinking_format": "deepseek",
                "requires_reasoning_content_on_assistant_messages": True,
            },
        ),
        (
            "together",
            "https://api.together.xyz/v1",
            {"max_tokens_field": "max_tokens", "supports_strict_mode": False, "thinking_format": "together"},
        ),
        ("xai", "https://api.x.ai/v1", {"supports_store": False, "supports_reasoning_effort": False}),
        (
            "cerebras",
            "https://api.cerebras.ai/v1",
            {"supports_store": False, "supports_developer_role": False},
        ),
        (
            "mistral",
            "https://api.mistral.ai/v1",
            {
                "supports_store": False,
                "max_tokens_field": "max_tokens",
                "requires_tool_result_name": True,
                "tool_call_id_format": "mistral",
            },
        ),
        (
            "ollama",
            "http://localhost:11434/v1",
            {
                "supports_store": False,
                "supports_developer_role": False,
                "max_tokens_field": "max_tokens",
                "supports_strict_mode": False,
            },
        ),
        ("custom", "http://127.0.0.1:11434/v1", {"supports_store": False, "max_tokens_field": "max_tokens"}),
        ("custom", "http://192.168.1.20:8000/v1", {"supports_store": False}),  # vLLM on the LAN
        ("custom", "http://gpu-box:8080/v1", {"supports_store": True}),  # unknown host: OpenAI defaults
        ("lmstudio", "http://localhost:1234/v1", {"supports_developer_role": False}),
        ("openai", "http://127.0.0.1:4000/v1", {"supports_store": True}),  # a known cloud id behind a proxy
    ],
)
def test_detect_compat(provider: str, base_url: str, expected: dict[str, Any]) -> None:
    compat = detect_compat(Model(id="m", api="openai-completions", provider=provider, base_url=base_url))
    assert {k: getattr(compat, k) for k in expected} == expected


def test_model_compat_overrides_detection() -> None:
    model = Model(
        id="m",
        api="openai-completions",
        provider="ollama",
        base_url="http://localhost:11434/v1",
        compat={
            "supportsStore": True,
            "maxTokensField": "max_completion_tokens",
            "thinkingFormat": "qwen-chat-template",
            "unknownKey": 1,
        },
    )
    compat = resolve_compat(model)
    assert (compat.supports_store, compat.max_tokens_field, compat.thinking_format) == (
        True,
        "max_completion_tokens",
        "qwen-chat-template",
    )
    assert compat.supports_developer_role is False  # not overridden: still detected


async def test_mistral_gets_nine_character_tool_call_ids(loopback: LoopbackServer) -> None:
    foreign = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude"}
    context = Context(
        messages=[
            UserMessage(content="go"),
            AssistantMessage(
                content=[ToolCall(id="toolu_01ABCdef", name="f", arguments={})],
                stop_reason="toolUse",
                **foreign,
            ),
            ToolResultMessage(tool_call_id="toolu_01ABCdef", tool_name="f", content=[TextContent(text="r")]),
        ]
    )
    model = make_model(loopback, provider="mistral")
    await run(loopback, text_reply("ok"), model=model, context=context)
    messages = loopback.requests[0].json["messages"]
    new_id = messages[1]["tool_calls"][0]["id"]
    assert len(new_id) == 9
    assert new_id.isalnum()
    assert messages[2]["tool_call_id"] == new_id
    assert messages[2]["name"] == "f"
