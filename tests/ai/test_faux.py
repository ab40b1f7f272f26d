"""The faux provider, ported from Pi's faux-provider.test.ts, plus determinism."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest

from pi_notebook.ai import (
    AbortController,
    AssistantMessage,
    Context,
    ImageContent,
    TextContent,
    ThinkingContent,
    Tool,
    ToolResultMessage,
    UserMessage,
    complete,
    get_model,
    stream,
)
from pi_notebook.ai.faux import (
    FauxRegistration,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
    serialize_context,
)


def ctx(text: str = "hi") -> Context:
    return Context(messages=[UserMessage(content=text)])


@pytest.fixture
def reg_factory():
    made: list[FauxRegistration] = []

    def make(**kwargs: Any) -> FauxRegistration:
        r = register_faux_provider(**kwargs)
        made.append(r)
        return r

    yield make
    for r in made:
        r.unregister()


async def events_of(registration: FauxRegistration, context: Context, **options: Any) -> list[Any]:
    return [e async for e in stream(registration.get_model(), context, options or None)]


async def test_registers_a_custom_provider_and_estimates_usage(faux: FauxRegistration) -> None:
    faux.set_responses([faux_assistant_message("hello world")])
    message = await complete(faux.get_model(), ctx())
    assert [b.model_dump() for b in message.content] == [{"type": "text", "text": "hello world"}]
    assert message.usage.input > 0
    assert message.usage.output > 0
    assert message.usage.total_tokens == message.usage.input + message.usage.output
    assert faux.state.call_count == 1


async def test_supports_helper_blocks(faux: FauxRegistration) -> None:
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_thinking("think"), faux_tool_call("echo", {"text": "hi"}), faux_text("done")],
                stop_reason="toolUse",
            )
        ]
    )
    message = await complete(faux.get_model(), ctx())
    dumped = [b.model_dump() for b in message.content]
    assert dumped[0] == {"type": "thinking", "thinking": "think"}
    assert dumped[1]["type"] == "toolCall"
    assert dumped[1]["name"] == "echo"
    assert dumped[1]["arguments"] == {"text": "hi"}
    assert isinstance(dumped[1]["id"], str)
    assert dumped[2] == {"type": "text", "text": "done"}
    assert message.stop_reason == "toolUse"


async def test_multiple_models_with_per_model_reasoning_and_model_aware_factories(reg_factory: Any) -> None:
    reg = reg_factory(models=[{"id": "faux-fast"}, {"id": "faux-thinker", "reasoning": True}])
    assert reg.get_model().id == "faux-fast"

    def factory(context: Context, options: Any, state: Any, model: Any) -> AssistantMessage:
        return faux_assistant_message(f"{model.id}:{str(model.reasoning).lower()}")

    reg.set_responses([factory, factory])
    first = await complete(reg.get_model("faux-fast"), ctx())
    second = await complete(reg.get_model("faux-thinker"), ctx())
    assert first.content[0].text == "faux-fast:false"  # type: ignore[union-attr]
    assert second.content[0].text == "faux-thinker:true"  # type: ignore[union-attr]


async def test_rewrites_api_provider_and_model(reg_factory: Any) -> None:
    reg = reg_factory(api="faux:test", provider="faux-provider", models=[{"id": "faux-model"}])
    reg.set_responses([faux_assistant_message("x")])
    message = await complete(reg.get_model(), ctx())
    assert (message.api, message.provider, message.model) == ("faux:test", "faux-provider", "faux-model")


async def test_consumes_queued_responses_in_order_and_errors_when_exhausted(faux: FauxRegistration) -> None:
    faux.set_responses([faux_assistant_message("first"), faux_assistant_message("second")])
    model = faux.get_model()
    texts = [(await complete(model, ctx())) for _ in range(3)]
    assert texts[0].content[0].text == "first"  # type: ignore[union-attr]
    assert texts[1].content[0].text == "second"  # type: ignore[union-attr]
    assert texts[2].stop_reason == "error"
    assert texts[2].error_message == "No more faux responses queued"
    assert faux.get_pending_response_count() == 0
    assert faux.state.call_count == 3


async def test_can_replace_and_append_queued_responses(faux: FauxRegistration) -> None:
    faux.set_responses([faux_assistant_message("a"), faux_assistant_message("b")])
    faux.set_responses([faux_assistant_message("c")])
    assert faux.get_pending_response_count() == 1
    faux.append_responses([faux_assistant_message("d")])
    assert faux.get_pending_response_count() == 2
    model = faux.get_model()
    assert (await complete(model, ctx())).content[0].text == "c"  # type: ignore[union-attr]
    assert (await complete(model, ctx())).content[0].text == "d"  # type: ignore[union-attr]


async def test_supports_async_response_factories(faux: FauxRegistration) -> None:
    async def factory(context: Context, options: Any, state: Any, model: Any) -> AssistantMessage:
        await asyncio.sleep(0)
        return faux_assistant_message(f"{len(context.messages)}:{state.call_count}")

    faux.set_responses([factory])
    message = await complete(faux.get_model(), ctx())
    assert message.content[0].text == "1:1"  # type: ignore[union-attr]


async def test_emits_an_error_when_a_response_factory_throws(faux: FauxRegistration) -> None:
    def factory(*_: Any) -> AssistantMessage:
        raise RuntimeError("boom")

    faux.set_responses([factory])
    events = await events_of(faux, ctx())
    assert [e.type for e in events] == ["error"]
    assert events[0].error.stop_reason == "error"
    assert events[0].error.error_message == "boom"


async def test_rejects_a_queued_response_without_a_terminal_stop_reason(faux: FauxRegistration) -> None:
    faux.set_responses([faux_assistant_message("x", stop_reason="pending")])
    events = await events_of(faux, ctx())
    assert "done" not in [e.type for e in events]
    assert events[-1].type == "error"
    assert events[-1].error.error_message == "Faux response ended without a stop reason"


async def test_estimates_prompt_and_output_tokens_from_serialized_context(faux: FauxRegistration) -> None:
    tool = Tool(name="echo", description="Echo", parameters={"type": "object", "properties": {}})
    context = Context(
        system_prompt="sys",
        messages=[
            UserMessage(
                content=[TextContent(text="hello"), ImageContent(data="abcd", mime_type="image/png")]
            ),
            faux_assistant_message("prior"),
            ToolResultMessage(tool_call_id="t1", tool_name="echo", content=[TextContent(text="tool out")]),
        ],
        tools=[tool],
    )
    faux.set_responses([faux_assistant_message("done")])
    message = await complete(faux.get_model(), context)
    tools_json = json.dumps([tool.model_dump()], separators=(",", ":"))
    joined = "\n\n".join(
        [
            "system:sys",
            "user:hello\n[image:image/png:4]",
            "assistant:prior",
            "toolResult:echo\ntool out",
            f"tools:{tools_json}",
        ]
    )
    assert message.usage.input == math.ceil(len(joined) / 4)
    assert message.usage.output == math.ceil(4 / 4)
    assert message.usage.cache_read == 0
    assert message.usage.cache_write == 0
    assert message.usage.total_tokens == message.usage.input + message.usage.output


async def test_a_growing_transcript_is_estimated_as_if_serialized_afresh(faux: FauxRegistration) -> None:
    """The faux reuses the text of messages it saw at the same place in the previous context;
    the estimate stays the one of the whole context serialized anew, also when a message is
    replaced by another object, dropped, or when the context is a different conversation."""
    user, answer = UserMessage(content="hello"), faux_assistant_message([faux_tool_call("f", {"x": "é"})])
    result = ToolResultMessage(tool_call_id="t1", tool_name="f", content=[TextContent(text="out")])
    contexts = [
        [user],
        [user, answer, result],
        [user, answer, result, faux_assistant_message("longer answer")],
        [user, faux_assistant_message("another"), result],  # same place, other object
        [answer, result],  # everything moved
        [UserMessage(content="hello")],  # an equal message, another object
    ]
    faux.set_responses([faux_assistant_message("a")] * len(contexts))
    for messages in contexts:
        context = Context(system_prompt="s", messages=messages)
        expected = math.ceil(len(serialize_context(context)) / 4)
        assert (await complete(faux.get_model(), context)).usage.input == expected


async def test_the_tools_are_estimated_as_if_serialized_afresh(faux: FauxRegistration) -> None:
    """The faux reuses the text of the previous call's tools while the context holds the same
    tool objects; another tool, another order or an equal copy is estimated anew."""

    def tool(name: str, description: str = "d") -> Tool:
        return Tool(name=name, description=description, parameters={"type": "object", "properties": {}})

    a, b = tool("a"), tool("b")
    longer = tool("b", "a much longer description")
    tool_lists = [[a, b], [a, b], [b, a], [a], [a, longer], [a, tool("b")], []]
    faux.set_responses([faux_assistant_message("x")] * len(tool_lists))
    for tools in tool_lists:
        context = Context(system_prompt="s", messages=[UserMessage(content="hi")], tools=tools)
        expected = math.ceil(len(serialize_context(context)) / 4)
        assert (await complete(faux.get_model(), context)).usage.input == expected, [t.name for t in tools]


async def test_does_not_share_cache_across_sessions_or_requests_without_session_id(
    faux: FauxRegistration,
) -> None:
    faux.set_responses([faux_assistant_message("a")] * 3)
    model = faux.get_model()
    first = await complete(model, ctx(), {"session_id": "session-1"})
    other = await complete(model, ctx(), {"session_id": "session-2"})
    none = await complete(model, ctx())
    assert first.usage.cache_write > 0
    assert other.usage.cache_read == 0
    assert other.usage.cache_write > 0
    assert (none.usage.cache_read, none.usage.cache_write) == (0, 0)


async def test_simulates_prompt_caching_per_session_id(faux: FauxRegistration) -> None:
    faux.set_responses([faux_assistant_message("a")] * 2)
    model = faux.get_model()
    await complete(model, ctx("hello there"), {"session_id": "s"})
    second = await complete(model, ctx("hello there, again"), {"session_id": "s"})
    assert second.usage.cache_read > 0


async def test_does_not_simulate_caching_when_cache_retention_is_none(faux: FauxRegistration) -> None:
    faux.set_responses([faux_assistant_message("a")] * 2)
    model = faux.get_model()
    for _ in range(2):
        m = await complete(model, ctx(), {"session_id": "s", "cache_retention": "none"})
        assert (m.usage.cache_read, m.usage.cache_write) == (0, 0)


async def test_streams_thinking_text_and_partial_tool_call_deltas(faux: FauxRegistration) -> None:
    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_thinking("thinking a while"),
                    faux_text("some text here"),
                    faux_tool_call("echo", {"text": "hi", "count": 12}),
                ],
                stop_reason="toolUse",
            )
        ]
    )
    events = await events_of(faux, ctx())
    types = [e.type for e in events]
    for kind in ("thinking", "text", "toolcall"):
        for suffix in ("start", "delta", "end"):
            assert f"{kind}_{suffix}" in types
    deltas = [e.delta for e in events if e.type == "toolcall_delta"]
    assert len(deltas) > 1
    assert json.loads("".join(deltas)) == {"text": "hi", "count": 12}


async def test_streams_an_exact_event_order_for_fixed_size_chunks(faux: FauxRegistration) -> None:
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_thinking("go"), faux_text("ok"), faux_tool_call("echo", {})], stop_reason="toolUse"
            )
        ]
    )
    events = await events_of(faux, ctx())
    assert events[0].type == "start"
    assert events[0].partial.stop_reason == "pending"
    assert [e.type for e in events[1:]] == [
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]


async def test_streams_multiple_tool_calls_in_one_message(faux: FauxRegistration) -> None:
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("a", {"x": 1}), faux_tool_call("b", {"y": 2})], stop_reason="toolUse"
            )
        ]
    )
    types = [e.type for e in await events_of(faux, ctx())]
    assert types.count("toolcall_start") == 2
    assert types.count("toolcall_end") == 2


@pytest.mark.parametrize(
    ("reason", "text"), [("error", "upstream failed"), ("aborted", "Request was aborted")]
)
async def test_streams_an_explicit_error_or_aborted_message_as_terminal_error(
    reg_factory: Any, reason: str, text: str
) -> None:
    reg = reg_factory(token_size={"min": 2, "max": 2})
    reg.set_responses([faux_assistant_message("partial", stop_reason=reason, error_message=text)])  # type: ignore[arg-type]
    events = await events_of(reg, ctx())
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "text_end", "error"]
    assert events[-1].reason == reason
    assert events[-1].error.error_message == text


async def test_supports_aborting_before_the_first_chunk(faux: FauxRegistration) -> None:
    faux.set_responses([faux_assistant_message("never")])
    controller = AbortController()
    controller.abort()
    events = await events_of(faux, ctx(), signal=controller.signal)
    assert [e.type for e in events] == ["error"]
    assert events[0].reason == "aborted"
    assert events[0].error.stop_reason == "aborted"


@pytest.mark.parametrize("block", ["text", "thinking", "toolcall"])
async def test_supports_aborting_mid_stream_when_paced(reg_factory: Any, block: str) -> None:
    reg = reg_factory(token_size={"min": 1, "max": 1}, tokens_per_second=200)
    content = {
        "text": faux_text("a long text that takes several chunks"),
        "thinking": faux_thinking("a long thought that takes several chunks"),
        "toolcall": faux_tool_call("echo", {"text": "a long argument that takes chunks"}),
    }[block]
    reg.set_responses([faux_assistant_message([content])])
    controller = AbortController()
    events: list[Any] = []
    async for event in stream(reg.get_model(), ctx(), {"signal": controller.signal}):
        events.append(event)
        if event.type.endswith("_delta"):
            controller.abort()
    types = [e.type for e in events]
    assert sum(t.endswith("_delta") for t in types) == 1
    assert types[-1] == "error"
    assert events[-1].reason == "aborted"
    assert not any(t.endswith("_end") for t in types)


async def test_unregisters_the_provider(reg_factory: Any) -> None:
    reg = register_faux_provider()
    model = reg.get_model()
    reg.unregister()
    message = await complete(model, ctx())
    # Pi rejects here (docs/design.md, deviation 4); our entry points never raise and encode the same text.
    assert message.stop_reason == "error"
    assert message.error_message == f"No API provider registered for api: {reg.api}"
    with pytest.raises(KeyError):
        get_model("faux", model.id) if model.id != "faux-1" else get_model("faux", "no-such-model")


async def test_default_model_and_catalogue_lookup(faux: FauxRegistration) -> None:
    model = get_model("faux", "faux-1")
    assert model is faux.get_model()
    assert (model.name, model.context_window, model.max_tokens, model.input) == (
        "Faux Model",
        128_000,
        16_384,
        ["text", "image"],
    )


async def test_seeded_random_chunking_is_reproducible(reg_factory: Any) -> None:
    runs = []
    for _ in range(2):
        reg = reg_factory(seed=7)
        reg.set_responses([faux_assistant_message("x" * 200)])
        runs.append([e.delta for e in await events_of(reg, ctx()) if e.type == "text_delta"])
    assert runs[0] == runs[1]
    assert len({len(d) for d in runs[0][:-1]}) > 1  # still random sizes within [12, 20]


async def test_pacing_follows_tokens_per_second(reg_factory: Any) -> None:
    reg = reg_factory(token_size={"min": 1, "max": 1}, tokens_per_second=100)
    reg.set_responses([faux_assistant_message("y" * 40)])  # 10 chunks of 1 token -> ~0.1 s
    loop = asyncio.get_running_loop()
    start = loop.time()
    await complete(reg.get_model(), ctx())
    assert loop.time() - start >= 0.09


@pytest.mark.parametrize(
    ("given", "expected"),
    [({"min": 3, "max": 1}, 4), ({"min": 0, "max": 0}, 4), ({"min": 8}, 20), ({"max": 2}, 8)],
)
async def test_token_size_is_clamped_as_in_pi(reg_factory: Any, given: dict[str, int], expected: int) -> None:
    # Pi: min = max(1, min(min ?? 3, max ?? 5)), max = max(min, max ?? 5); chunk = tokens * 4 chars.
    reg = reg_factory(token_size=given, seed=1)
    reg.set_responses([faux_assistant_message("x" * 40)])
    deltas = [e.delta for e in await events_of(reg, ctx()) if e.type == "text_delta"]
    assert {len(d) for d in deltas[:-1]} == {expected}


async def test_partials_have_pi_shapes(reg_factory: Any) -> None:
    """The start partial is empty, each block starts bare in a new content list (earlier
    partials never see later blocks), the scripted error message is on every partial and the
    terminal event carries the scripted message itself."""
    reg = reg_factory(token_size={"min": 1, "max": 1})
    scripted = faux_assistant_message(
        [ThinkingContent(thinking="plan", thinking_signature="sig"), faux_text("ab")],
        stop_reason="error",
        error_message="upstream failed",
    )
    reg.set_responses([scripted])
    events = await events_of(reg, ctx())
    assert events[0].type == "start"
    assert events[0].partial.content == []
    assert all(e.partial.error_message == "upstream failed" for e in events[:-1])
    thinking_start = events[1]
    assert thinking_start.type == "thinking_start"
    assert [b.model_dump() for b in thinking_start.partial.content] == [
        {"type": "thinking", "thinking": "plan"}
    ]
    assert events[-1].error.content[0].thinking_signature == "sig"


async def test_an_empty_text_block_streams_one_empty_delta(faux: FauxRegistration) -> None:
    faux.set_responses([faux_assistant_message("")])
    events = await events_of(faux, ctx())
    assert [(e.type, getattr(e, "delta", None)) for e in events] == [
        ("start", None),
        ("text_start", None),
        ("text_delta", ""),
        ("text_end", None),
        ("done", None),
    ]


async def test_an_exhausted_queue_still_estimates_usage(faux: FauxRegistration) -> None:
    message = await complete(faux.get_model(), ctx("a" * 40))
    assert message.error_message == "No more faux responses queued"
    assert message.usage.input == math.ceil(len("user:" + "a" * 40) / 4)
