"""The ``google-generative-ai`` request body, asserted on what a real server on 127.0.0.1 received:
contents for every message kind, thought signatures, tool results, tools, thinking config.

Ports Pi's google gemini3-unsigned-tool-call, image-tool-result-routing and convert-tools tests
and the thinking level/budget mapping of ``streamSimple``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from loopback import LoopbackServer, sse

from pi_notebook.ai import (
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
from pi_notebook.ai.providers.google import GoogleThinking, stream, stream_simple

KEY = "AIza-test"
SIG = "AAAAAAAAAAAAAAAAAAAAAA=="
PNG = "iVBORw0KGgo="


def make_model(server: LoopbackServer, model_id: str = "gemini-2.5-flash", **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": model_id,
        "api": "google-generative-ai",
        "provider": "google",
        "base_url": server.url,
        "reasoning": True,
        "input": ["text", "image"],
        "context_window": 1_000_000,
        "max_tokens": 65_536,
    }
    fields.update(overrides)
    return Model(**fields)


def assistant(
    model_id: str, content: list[Any], provider: str = "google", api: str = "google-generative-ai"
) -> AssistantMessage:
    return AssistantMessage(
        content=content, api=api, provider=provider, model=model_id, usage=Usage(), stop_reason="toolUse"
    )


def result(call_id: str, *content: Any, is_error: bool = False) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name="read", content=list(content), is_error=is_error)


async def send(
    server: LoopbackServer, model: Model, context: Context, simple: bool = False, **options: Any
) -> dict[str, Any]:
    """Run one request against a server that answers "ok"; return the JSON body it received."""
    server.queue_sse(
        [
            sse(
                {
                    "candidates": [
                        {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
                    ]
                }
            )
        ]
    )
    fn = stream_simple if simple else stream
    s = fn(model, context, {"api_key": KEY, **options})
    final = await asyncio.wait_for(s.result(), 5)
    assert final.stop_reason == "stop", final.error_message
    body: dict[str, Any] = server.requests[-1].json
    return body


def tool_history(model_id: str, signature: str | None = None) -> Context:
    return Context(
        messages=[
            UserMessage(content="Hi"),
            assistant(
                model_id,
                [
                    ThinkingContent(thinking="plan", thinking_signature=SIG),
                    TextContent(text="Running.", text_signature=SIG),
                    TextContent(text="   "),
                    ToolCall(
                        id="call_1",
                        name="bash",
                        arguments={"command": "echo hi"},
                        thought_signature=signature,
                    ),
                    ToolCall(id="call_2", name="bash", arguments={"command": "ls -la"}),
                ],
            ),
            result("call_1", TextContent(text="hi")),
            result("call_2", TextContent(text="denied"), is_error=True),
        ]
    )


async def test_same_model_replay_keeps_thoughts_and_valid_signatures(loopback: LoopbackServer) -> None:
    model = make_model(loopback, "gemini-3-pro-preview")
    body = await send(loopback, model, tool_history(model.id, signature=SIG))
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Hi"}]},
        {
            "role": "model",
            "parts": [
                {"thought": True, "text": "plan", "thoughtSignature": SIG},
                {"text": "Running.", "thoughtSignature": SIG},
                {"functionCall": {"name": "bash", "args": {"command": "echo hi"}}, "thoughtSignature": SIG},
                {"functionCall": {"name": "bash", "args": {"command": "ls -la"}}},
            ],
        },
        # all function responses of the turn share one user turn; errors use the "error" key
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "read", "response": {"output": "hi"}}},
                {"functionResponse": {"name": "read", "response": {"error": "denied"}}},
            ],
        },
    ]
    assert "skip_thought_signature_validator" not in str(body)


async def test_other_model_gets_plain_text_and_no_signatures(loopback: LoopbackServer) -> None:
    model = make_model(loopback, "gemini-3-pro-preview")
    body = await send(loopback, model, tool_history("other-model", signature=SIG))
    parts = body["contents"][1]["parts"]
    assert parts[0] == {"text": "plan"}  # thinking becomes plain text, no tags
    assert all("thoughtSignature" not in part and "thought" not in part for part in parts)


async def test_invalid_signatures_are_dropped(loopback: LoopbackServer) -> None:
    model = make_model(loopback)
    history = tool_history(model.id, signature="not base64!")
    body = await send(loopback, model, history)
    call = body["contents"][1]["parts"][2]
    assert "thoughtSignature" not in call


async def test_image_tool_results_gemini2_vs_gemini3(loopback: LoopbackServer) -> None:
    def history(model_id: str) -> Context:
        return Context(
            messages=[
                UserMessage(content="read the files"),
                assistant(
                    model_id,
                    [
                        ToolCall(id="call_a", name="read", arguments={"path": "a.txt"}),
                        ToolCall(id="call_img", name="read", arguments={"path": "image.png"}),
                        ToolCall(id="call_b", name="read", arguments={"path": "b.txt"}),
                    ],
                ),
                result("call_a", TextContent(text="alpha text")),
                result("call_img", ImageContent(data=PNG, mime_type="image/png")),
                result("call_b", TextContent(text="beta text")),
            ]
        )

    inline = {"inlineData": {"mimeType": "image/png", "data": PNG}}
    body = await send(loopback, make_model(loopback, "gemini-2.5-flash"), history("gemini-2.5-flash"))
    contents = body["contents"]
    assert len(contents) == 5
    assert all("functionResponse" in p for p in contents[2]["parts"])
    assert contents[2]["parts"][1]["functionResponse"]["response"] == {"output": "(see attached image)"}
    assert contents[3] == {"role": "user", "parts": [{"text": "Tool result image:"}, inline]}
    assert contents[4]["parts"][0]["functionResponse"]["response"] == {"output": "beta text"}

    body = await send(loopback, make_model(loopback, "gemini-3-pro-preview"), history("gemini-3-pro-preview"))
    contents = body["contents"]
    assert len(contents) == 3
    assert len(contents[2]["parts"]) == 3
    assert contents[2]["parts"][1]["functionResponse"]["parts"] == [inline]


async def test_user_images_tools_and_generation_config(loopback: LoopbackServer) -> None:
    tool = Tool(
        name="read",
        description="Read a file",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
    context = Context(
        system_prompt="sys",
        tools=[tool],
        messages=[
            UserMessage(
                content=[TextContent(text="what is this?"), ImageContent(data=PNG, mime_type="image/png")]
            ),
            result("orphan", TextContent(text="")),  # an empty tool result sends ""
        ],
    )
    body = await send(
        loopback, make_model(loopback), context, temperature=0.5, max_tokens=100, tool_choice="any"
    )
    assert body["contents"][0] == {
        "role": "user",
        "parts": [{"text": "what is this?"}, {"inlineData": {"mimeType": "image/png", "data": PNG}}],
    }
    assert body["contents"][1]["parts"][0]["functionResponse"]["response"] == {"output": ""}
    assert body["systemInstruction"] == {"parts": [{"text": "sys"}], "role": "user"}
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "read", "description": "Read a file", "parametersJsonSchema": tool.parameters}
            ]
        }
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert body["generationConfig"] == {"temperature": 0.5, "maxOutputTokens": 100}
    body = await send(loopback, make_model(loopback), context)
    assert "toolConfig" not in body
    assert body["generationConfig"] == {}  # the genai SDK sends it even when empty


async def test_tool_call_ids_for_models_that_need_them(loopback: LoopbackServer) -> None:
    model = make_model(loopback, "claude-sonnet-4-5")
    context = Context(
        messages=[
            UserMessage(content="go"),
            assistant("gemini-2.5-flash", [ToolCall(id="call|with.bad:chars", name="read", arguments={})]),
            result("call|with.bad:chars", TextContent(text="done")),
        ]
    )
    body = await send(loopback, model, context)
    assert body["contents"][1]["parts"][0]["functionCall"]["id"] == "call_with_bad_chars"
    assert body["contents"][2]["parts"][0]["functionResponse"]["id"] == "call_with_bad_chars"


@pytest.mark.parametrize(
    ("model_id", "reasoning", "budgets", "expected"),
    [
        ("gemini-2.5-flash", "medium", None, {"includeThoughts": True, "thinkingBudget": 8192}),
        ("gemini-2.5-pro", "high", None, {"includeThoughts": True, "thinkingBudget": 32768}),
        ("gemini-2.5-pro", "xhigh", None, {"includeThoughts": True, "thinkingBudget": 32768}),
        ("gemini-2.5-flash-lite", "minimal", None, {"includeThoughts": True, "thinkingBudget": 512}),
        ("gemini-2.5-flash", "low", {"low": 1000}, {"includeThoughts": True, "thinkingBudget": 1000}),
        ("gemini-2.0-flash-thinking", "low", None, {"includeThoughts": True, "thinkingBudget": -1}),
        ("gemini-3-pro-preview", "minimal", None, {"includeThoughts": True, "thinkingLevel": "LOW"}),
        ("gemini-3.1-pro-preview", "medium", None, {"includeThoughts": True, "thinkingLevel": "HIGH"}),
        ("gemini-3-flash-preview", "medium", None, {"includeThoughts": True, "thinkingLevel": "MEDIUM"}),
        ("gemma-4-27b-it", "low", None, {"includeThoughts": True, "thinkingLevel": "MINIMAL"}),
        ("gemini-2.5-flash", None, None, {"thinkingBudget": 0}),
        ("gemini-3-pro-preview", None, None, {"thinkingLevel": "LOW"}),
        ("gemini-3-flash-preview", None, None, {"thinkingLevel": "MINIMAL"}),
        ("gemma-4-27b-it", None, None, {"thinkingLevel": "MINIMAL"}),
    ],
)
async def test_simple_thinking_mapping(
    loopback: LoopbackServer,
    model_id: str,
    reasoning: str | None,
    budgets: dict[str, int] | None,
    expected: dict[str, Any],
) -> None:
    body = await send(
        loopback,
        make_model(loopback, model_id),
        Context(messages=[UserMessage(content="x")]),
        simple=True,
        reasoning=reasoning,
        thinking_budgets=budgets,
    )
    assert body["generationConfig"]["thinkingConfig"] == expected
    assert body["generationConfig"]["maxOutputTokens"] == 65_536


async def test_no_thinking_config_for_models_without_reasoning(loopback: LoopbackServer) -> None:
    plain = make_model(loopback, "gemini-2.0-flash", reasoning=False)
    context = Context(messages=[UserMessage(content="x")])
    body = await send(loopback, plain, context, simple=True, reasoning="high")
    assert "thinkingConfig" not in body["generationConfig"]
    body = await send(
        loopback, make_model(loopback), context, thinking={"enabled": True, "budget_tokens": 77}
    )
    assert body["generationConfig"] == {"thinkingConfig": {"includeThoughts": True, "thinkingBudget": 77}}
    body = await send(
        loopback, make_model(loopback), context, thinking=GoogleThinking(enabled=True, level="LOW")
    )
    assert body["generationConfig"] == {"thinkingConfig": {"includeThoughts": True, "thinkingLevel": "LOW"}}
