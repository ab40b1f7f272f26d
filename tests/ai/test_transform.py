"""Cross-provider replay (Pi's transformMessages) and outgoing-text hygiene (text.py).

Pi's lax-message-content, transform-messages-copilot-openai-to-anthropic and text tests, plus
the rules they do not cover."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from pi_notebook.ai.text import content_text, js_trim, sanitize_surrogates
from pi_notebook.ai.transform import (
    NON_VISION_TOOL_IMAGE_PLACEHOLDER,
    NON_VISION_USER_IMAGE_PLACEHOLDER,
    transform_messages,
)
from pi_notebook.ai.types import (
    AssistantMessage,
    ImageContent,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

CLAUDE = Model(
    id="claude-sonnet-4.6", api="anthropic-messages", provider="github-copilot", input=["text", "image"]
)
TEXT_ONLY = Model(id="test-model", api="openai-completions", provider="openai", input=["text"])


def anthropic_id(tool_call_id: str, _model: Model, _source: AssistantMessage) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", tool_call_id)[:64]


def assistant(content: list[Any], stop: str = "toolUse", **source: str) -> AssistantMessage:
    origin = {"api": "openai-responses", "provider": "github-copilot", "model": "gpt-5"} | source
    return AssistantMessage(content=content, stop_reason=stop, **origin)


def same_model(content: list[Any], stop: str = "stop") -> AssistantMessage:
    return assistant(content, stop, api=CLAUDE.api, provider=CLAUDE.provider, model=CLAUDE.id)


def result(tool_call_id: str, name: str = "read", text: str = "done") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=tool_call_id, tool_name=name, content=[TextContent(text=text)])


def dump(messages: list[Any]) -> list[dict[str, Any]]:
    return [m.model_dump(exclude={"timestamp"}) for m in messages]


# --- lax-message-content.test.ts ---------------------------------------------------------------------


def test_null_or_missing_content_becomes_an_empty_list() -> None:
    broken_user = UserMessage(content="x")
    broken_user.content = None  # type: ignore[assignment]  # attribute assignment does not validate
    messages = [
        {"role": "user", "content": None, "timestamp": 1},
        {
            "role": "assistant",
            "content": None,
            "api": "openai-completions",
            "provider": "openai",
            "model": "test-model",
            "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
            "stopReason": "stop",
            "timestamp": 2,
        },
        {
            "role": "toolResult",
            "toolCallId": "call_1",
            "toolName": "web_search",
            "isError": False,
            "timestamp": 3,
        },
        broken_user,
    ]
    out = transform_messages(messages, TEXT_ONLY)
    assert len(out) == 4
    assert [m.content for m in out] == [[], [], [], []]
    assert [m.role for m in out] == ["user", "assistant", "toolResult", "user"]
    assert broken_user.content is None  # the input is untouched


# --- transform-messages-copilot-openai-to-anthropic.test.ts ---------------------------------------------


def test_thinking_becomes_plain_text_for_another_model() -> None:
    messages = [
        UserMessage(content="hello"),
        assistant(
            [
                ThinkingContent(
                    thinking="Let me think about this...", thinking_signature="reasoning_content"
                ),
                TextContent(text="Hi there!"),
            ],
            "stop",
            api="openai-completions",
            model="gpt-4o",
        ),
    ]
    out = transform_messages(messages, CLAUDE, anthropic_id)
    content = next(m for m in out if m.role == "assistant").content
    assert [b.model_dump() for b in content] == [
        {"type": "text", "text": "Let me think about this..."},
        {"type": "text", "text": "Hi there!"},
    ]


def test_thought_signatures_are_removed_from_tool_calls_for_another_model() -> None:
    signature = json.dumps({"type": "reasoning.encrypted", "id": "call_123", "data": "encrypted"})
    messages: list[Any] = [
        UserMessage(content="run a command"),
        assistant(
            [ToolCall(id="call_123", name="bash", arguments={"command": "ls"}, thought_signature=signature)]
        ),
        result("call_123", "bash", "output"),
    ]
    out = transform_messages(messages, CLAUDE, anthropic_id)
    call = out[1].content[0]
    assert call.thought_signature is None
    assert "thoughtSignature" not in call.model_dump()
    assert messages[1].content[0].thought_signature == signature  # the input keeps it


def test_trailing_orphaned_tool_calls_get_synthetic_results() -> None:
    messages = [
        UserMessage(content="read the file"),
        assistant([ToolCall(id="call_123|fc_123", name="read", arguments={"path": "README.md"})]),
    ]
    out = transform_messages(messages, CLAUDE, anthropic_id)
    assert out[-1].model_dump(exclude={"timestamp"}) == {
        "role": "toolResult",
        "toolCallId": "call_123_fc_123",
        "toolName": "read",
        "content": [{"type": "text", "text": "No result provided"}],
        "isError": True,
    }
    assert isinstance(out[-1].timestamp, int)


def test_only_still_missing_results_are_synthesized() -> None:
    messages = [
        UserMessage(content="run commands"),
        assistant(
            [
                ToolCall(id="call_1|fc_1", name="read", arguments={"path": "README.md"}),
                ToolCall(id="call_2|fc_2", name="bash", arguments={"command": "pwd"}),
            ]
        ),
        result("call_1|fc_1"),
    ]
    out = transform_messages(messages, CLAUDE, anthropic_id)
    assert [(m.tool_call_id, m.is_error) for m in out if m.role == "toolResult"] == [
        ("call_1_fc_1", False),  # the real result follows the renamed call
        ("call_2_fc_2", True),
    ]
    assert out[-1].content[0].text == "No result provided"


# --- the rest of Pi's transform-messages rules --------------------------------------------------------------


def test_orphaned_results_are_inserted_right_before_the_interrupting_message() -> None:
    first = assistant([ToolCall(id="a", name="x", arguments={}), ToolCall(id="b", name="y", arguments={})])
    second = assistant([ToolCall(id="c", name="z", arguments={})])
    messages = [
        UserMessage(content="go"),
        first,
        result("a"),
        UserMessage(content="stop!"),
        second,
        result("c"),
    ]
    out = transform_messages(messages, TEXT_ONLY)
    assert [(m.role, getattr(m, "tool_call_id", None)) for m in out] == [
        ("user", None),
        ("assistant", None),
        ("toolResult", "a"),
        ("toolResult", "b"),  # synthetic, before the user message
        ("user", None),
        ("assistant", None),
        ("toolResult", "c"),
    ]
    assert out[3].is_error
    assert out[3].tool_name == "y"


def test_errored_and_aborted_assistant_turns_are_dropped() -> None:
    calls = assistant([ToolCall(id="a", name="x", arguments={})])
    messages = [
        UserMessage(content="go"),
        calls,
        assistant([TextContent(text="partial"), ToolCall(id="z", name="x", arguments={})], "error"),
        assistant([ThinkingContent(thinking="hm")], "aborted"),
        UserMessage(content="again"),
    ]
    out = transform_messages(messages, TEXT_ONLY)
    assert [m.role for m in out] == ["user", "assistant", "toolResult", "user"]
    assert out[2].tool_call_id == "a"  # flushed when the (dropped) errored turn arrived
    assert "z" not in [getattr(m, "tool_call_id", None) for m in out]


def test_thinking_rules_for_the_same_and_another_model() -> None:
    blocks = [
        ThinkingContent(thinking="secret", redacted=True, thinking_signature="enc"),
        ThinkingContent(thinking="", thinking_signature="encrypted-only"),
        ThinkingContent(thinking=" \u00a0\n"),  # JavaScript's trim() empties it
        ThinkingContent(thinking="plan"),
        TextContent(text="answer", text_signature="sig"),
    ]
    same = transform_messages([same_model(blocks)], CLAUDE)[0]
    assert [b.model_dump() for b in same.content] == [
        {"type": "thinking", "thinking": "secret", "thinkingSignature": "enc", "redacted": True},
        {"type": "thinking", "thinking": "", "thinkingSignature": "encrypted-only"},
        {"type": "thinking", "thinking": "plan"},
        {"type": "text", "text": "answer", "textSignature": "sig"},
    ]
    assert same.content[0] is blocks[0]
    assert same.content[3] is blocks[4]
    other = transform_messages([assistant(blocks, "stop")], CLAUDE)[0]
    assert [b.model_dump() for b in other.content] == [
        {"type": "text", "text": "plan"},
        {"type": "text", "text": "answer"},
    ]


def test_same_model_tool_calls_keep_their_ids_and_signatures() -> None:
    call = ToolCall(id="call|1", name="x", arguments={}, thought_signature="sig")
    out = transform_messages([same_model([call], "toolUse"), result("call|1")], CLAUDE, anthropic_id)
    assert out[0].content[0] is call
    assert out[1].tool_call_id == "call|1"


def test_unchanged_messages_are_shared_and_inputs_never_mutated() -> None:
    messages = [
        UserMessage(content=[TextContent(text="look"), ImageContent(data="AAAA", mime_type="image/png")]),
        assistant([ThinkingContent(thinking="t"), ToolCall(id="c|1", name="x", arguments={"a": 1})]),
        ToolResultMessage(
            tool_call_id="c|1", tool_name="x", content=[ImageContent(data="BB", mime_type="image/png")]
        ),
        assistant(
            [TextContent(text="ok")],
            "stop",
            api=TEXT_ONLY.api,
            provider=TEXT_ONLY.provider,
            model=TEXT_ONLY.id,
        ),
    ]
    before = [m.model_dump() for m in messages]
    out = transform_messages(messages, TEXT_ONLY, anthropic_id)
    assert [m.model_dump() for m in messages] == before
    assert out[3] is messages[3]
    assert all(a is not b for a, b in zip(out[:3], messages[:3], strict=True))


def test_non_vision_models_get_placeholders_one_per_run_of_images() -> None:
    image = ImageContent(data="AAAA", mime_type="image/png")
    user = UserMessage(
        content=[
            image,
            image,
            TextContent(text="between"),
            image,
            TextContent(text=NON_VISION_USER_IMAGE_PLACEHOLDER),
            image,
        ]
    )
    tool_result = ToolResultMessage(
        tool_call_id="t", tool_name="shot", content=[TextContent(text="see"), image, image]
    )
    out = transform_messages([user, tool_result], TEXT_ONLY)
    assert [b.text for b in out[0].content] == [
        NON_VISION_USER_IMAGE_PLACEHOLDER,
        "between",
        NON_VISION_USER_IMAGE_PLACEHOLDER,
        NON_VISION_USER_IMAGE_PLACEHOLDER,  # the existing placeholder absorbs the image after it
    ]
    assert [b.text for b in out[1].content] == ["see", NON_VISION_TOOL_IMAGE_PLACEHOLDER]
    assert NON_VISION_TOOL_IMAGE_PLACEHOLDER == "(tool image omitted: model does not support images)"
    assert transform_messages([user], CLAUDE)[0] is user  # vision model: images stay


def test_dicts_in_pis_json_are_accepted() -> None:
    messages = [
        {"role": "user", "content": "hi", "timestamp": 1},
        {"role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "x", "arguments": {}}],
         "api": "a", "provider": "p", "model": "m", "stopReason": "toolUse", "timestamp": 2},
        {"role": "custom", "content": "kept as is"},
    ]  # fmt: skip
    out = transform_messages(messages, TEXT_ONLY)
    assert isinstance(out[0], UserMessage)
    assert isinstance(out[1], AssistantMessage)
    assert out[2] == {"role": "custom", "content": "kept as is"}
    assert out[3].tool_call_id == "c"  # the orphaned call is still answered at the end


# --- text.py -----------------------------------------------------------------------------------------


HIGH, LOW = chr(0xD83D), chr(0xDE48)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain ascii", "plain ascii"),
        ("Hello 🙈 World", "Hello 🙈 World"),
        (f"Text {HIGH} here", "Text  here"),  # unpaired high surrogate
        (f"Text {LOW} here", "Text  here"),  # unpaired low surrogate
        (LOW + HIGH, ""),  # reversed: both unpaired
        (f"pair {HIGH}{LOW}!", "pair 🙈!"),  # a UTF-16 pair joins into its character
        (json.loads('"a\\ud800b"'), "ab"),
        ("éè\u2028", "éè\u2028"),
    ],
)
def test_sanitize_surrogates(text: str, expected: str) -> None:
    out = sanitize_surrogates(text)
    assert out == expected
    out.encode("utf-8")  # always encodable


def test_sanitize_surrogates_returns_clean_text_itself() -> None:
    text = "no surrogates here, only é and 🙈"
    assert sanitize_surrogates(text) is text


ASSISTANT_CONTENT = [
    ThinkingContent(thinking="reasoning"),
    TextContent(text="first"),
    ToolCall(id="1", name="read", arguments={}),
    TextContent(text="second"),
]


def test_content_text_extracts_assistant_text_blocks() -> None:
    assert content_text(ASSISTANT_CONTENT) == "first\nsecond"


def test_content_text_supports_custom_separators() -> None:
    assert content_text(ASSISTANT_CONTENT, "") == "firstsecond"


def test_content_text_passes_strings_through() -> None:
    assert content_text("hello") == "hello"


def test_content_text_extracts_tool_result_text() -> None:
    blocks = [
        TextContent(text="first"),
        ImageContent(data="...", mime_type="image/png"),
        TextContent(text="second"),
    ]
    assert content_text(blocks, "") == "firstsecond"


def test_js_trim_strips_what_javascript_strips() -> None:
    assert js_trim("\ufeff\u00a0 x \u3000\n") == "x"
    assert js_trim("\x1cx\x85") == "\x1cx\x85"  # Python's strip() would remove these
