"""The ``openai-completions`` provider streaming against a real HTTP server on 127.0.0.1 that
speaks the exact Chat Completions SSE wire format: text, thinking, tool calls, usage, finish
reasons, broken streams, SSE framing, key redaction and headers. HTTP errors, retries, dropped
connections, aborts and API keys, which every provider handles alike, are in
``test_provider_contract.py``.

Every streaming test checks the assembled ``AssistantMessage`` and the exact event sequence.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from ai.openai_fixtures import (
    DONE,
    KEY,
    chunk,
    collect,
    ctx,
    make_model,
    opts,
    run,
    text_reply,
    tool_delta,
)
from ai.stream_helpers import kinds
from loopback import Delay, LoopbackServer, json_reply, sse

from pi_notebook.ai.entry import stream as entry_stream
from pi_notebook.ai.providers.openai_completions import OpenAICompletionsOptions, stream
from pi_notebook.ai.types import (
    AssistantMessage,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
)

# --- streaming: text, thinking, tool calls ---


async def test_text_stream(loopback: LoopbackServer) -> None:
    usage = {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
    script = [*text_reply("Hel", "lo")[:-1], chunk(choices=False, usage=usage), DONE]
    events, msg = await run(loopback, script)
    assert kinds(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert [e.delta for e in events if e.type == "text_delta"] == ["Hel", "lo"]
    assert events[4].content == "Hello"
    assert events[4].content_index == 0
    assert msg.content == [TextContent(text="Hello")]
    assert (msg.stop_reason, msg.raw_stop_reason, msg.response_id) == ("stop", "stop", "chatcmpl-42")
    assert msg.response_model is None  # the server echoed the requested id
    assert (msg.api, msg.provider, msg.model) == ("openai-completions", "openai", "gpt-test")
    assert (msg.usage.input, msg.usage.output, msg.usage.total_tokens) == (9, 2, 11)
    assert all(e.partial is msg for e in events[:-1])  # one mutable message, as in Pi
    assert loopback.requests[0].path == "/v1/chat/completions"


async def test_thinking_then_text_keeps_one_block_each(loopback: LoopbackServer) -> None:
    script = [
        chunk({"role": "assistant", "reasoning_content": "Let me"}),
        chunk({"reasoning_content": " think.", "content": None}),
        chunk({"content": "Four."}),
        chunk({"reasoning_content": " Done."}),  # late reasoning goes to the same block
        chunk({}, "stop"),
        DONE,
    ]
    events, msg = await run(loopback, script)
    assert kinds(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "text_start",
        "text_delta",
        "thinking_delta",
        "thinking_end",
        "text_end",
        "done",
    ]
    assert msg.content == [
        ThinkingContent(thinking="Let me think. Done.", thinking_signature="reasoning_content"),
        TextContent(text="Four."),
    ]
    assert [e.content_index for e in events[1:-1]] == [0, 0, 0, 1, 1, 0, 0, 1]
    assert events[7].content == "Let me think. Done."


async def test_reasoning_field_name_is_the_signature_and_counted_once(loopback: LoopbackServer) -> None:
    # chutes.ai style: the same text in two fields; only the first non-empty one counts
    script = [
        chunk({"reasoning": "abc", "reasoning_text": "abc"}),
        chunk({"reasoning": "d"}),
        chunk({}, "stop"),
        DONE,
    ]
    events, msg = await run(loopback, script)
    assert kinds(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "done",
    ]
    assert msg.content == [ThinkingContent(thinking="abcd", thinking_signature="reasoning")]


async def test_tool_call_arguments_grow_with_every_delta(loopback: LoopbackServer) -> None:
    script = [
        tool_delta(0, id="call_1", name="read", args=""),
        tool_delta(0, args='{"path": '),
        tool_delta(0, args='"/tmp/x"'),
        tool_delta(0, args=', "n": 1'),
        tool_delta(0, args="2}"),
        chunk({}, "tool_calls"),
        DONE,
    ]
    # The partial message is one mutable object (as in Pi), so a snapshot shows the state of the
    # newest chunk read; pacing the server lets the consumer look after every single chunk.
    loopback.queue_sse([part for item in script for part in (item, Delay(0.02))])
    s = stream(make_model(loopback), ctx(), opts())
    snapshots: list[Any] = []
    events: list[Any] = []
    async for event in s:
        events.append(event)
        if event.type == "toolcall_delta":
            block = event.partial.content[event.content_index]
            assert isinstance(block, ToolCall)
            snapshots.append((event.delta, dict(block.arguments)))
    msg = await s.result()
    assert kinds(events) == ["start", "toolcall_start", *["toolcall_delta"] * 5, "toolcall_end", "done"]
    assert snapshots == [
        ("", {}),
        ('{"path": ', {}),
        ('"/tmp/x"', {"path": "/tmp/x"}),
        (', "n": 1', {"path": "/tmp/x", "n": 1}),
        ("2}", {"path": "/tmp/x", "n": 12}),
    ]
    assert msg.stop_reason == "toolUse"
    assert msg.raw_stop_reason == "tool_calls"
    assert msg.content == [ToolCall(id="call_1", name="read", arguments={"path": "/tmp/x", "n": 12})]
    assert events[-2].tool_call is msg.content[0]
    # the raw argument buffer never lands on the block, so it cannot leak into history
    assert set(msg.content[0].model_dump()) == {"type", "id", "name", "arguments"}


async def test_several_tool_calls_keyed_by_stream_index_end_together(loopback: LoopbackServer) -> None:
    script = [
        chunk({"content": "Reading both."}),
        tool_delta(0, id="call_a", name="read", args='{"p":'),
        tool_delta(1, id="call_b", name="list", args='{"d":'),
        tool_delta(0, args=' "a"}'),
        tool_delta(1, args=' "b"}'),
        chunk({}, "tool_calls"),
        DONE,
    ]
    events, msg = await run(loopback, script)
    assert kinds(events) == [
        "start",
        "text_start",
        "text_delta",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "text_end",
        "toolcall_end",
        "toolcall_end",
        "done",
    ]
    assert [e.content_index for e in events if e.type == "toolcall_delta"] == [1, 2, 1, 2]
    assert [e.content_index for e in events if e.type.endswith("_end")] == [0, 1, 2]
    assert msg.content == [
        TextContent(text="Reading both."),
        ToolCall(id="call_a", name="read", arguments={"p": "a"}),
        ToolCall(id="call_b", name="list", arguments={"d": "b"}),
    ]


async def test_tool_call_without_index_is_found_by_id_and_id_may_come_late(loopback: LoopbackServer) -> None:
    script = [
        chunk(
            {
                "tool_calls": [
                    {"id": "call_x", "type": "function", "function": {"name": "ls", "arguments": "{"}}
                ]
            }
        ),
        chunk({"tool_calls": [{"id": "call_x", "function": {"arguments": "}"}}]}),
        chunk({"tool_calls": [{"index": 3, "function": {"name": "pwd", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 3, "id": "call_late"}]}),
        chunk({}, "tool_calls"),
        DONE,
    ]
    events, msg = await run(loopback, script)
    assert kinds(events).count("toolcall_start") == 2
    assert msg.content == [
        ToolCall(id="call_x", name="ls", arguments={}),
        ToolCall(id="call_late", name="pwd", arguments={}),
    ]


async def test_encrypted_reasoning_detail_before_its_tool_call_becomes_thought_signature(
    loopback: LoopbackServer,
) -> None:
    detail = {"type": "reasoning.encrypted", "id": "call_1", "data": "ZW5j", "format": "openai-responses-v1"}
    ignored = {"type": "reasoning.text", "id": "call_1", "text": "plain"}
    script = [
        chunk({"reasoning_details": [ignored, detail]}),
        tool_delta(0, id="call_1", name="f", args="{}"),
        chunk({}, "tool_calls"),
        DONE,
    ]
    _, msg = await run(loopback, script)
    assert isinstance(msg.content[0], ToolCall)
    assert msg.content[0].thought_signature == json.dumps(detail, separators=(",", ":"))


async def test_routed_model_is_exposed_as_response_model(loopback: LoopbackServer) -> None:
    script = [chunk({"content": "x"}, model=""), chunk({}, "stop", model="openai/gpt-test-2025"), DONE]
    _, msg = await run(loopback, script)
    assert (msg.model, msg.response_model) == ("gpt-test", "openai/gpt-test-2025")


# --- usage ---


async def test_usage_in_final_chunk_with_cached_tokens_is_priced(loopback: LoopbackServer) -> None:
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 300,
        "total_tokens": 1300,
        "prompt_tokens_details": {"cached_tokens": 400},
        "completion_tokens_details": {"reasoning_tokens": 120},
    }
    script = [*text_reply("ok")[:-1], chunk(choices=False, usage=usage), DONE]
    _, msg = await run(loopback, script)
    u = msg.usage
    assert (u.input, u.output, u.cache_read, u.cache_write, u.reasoning, u.total_tokens) == (
        600,
        300,
        400,
        0,
        120,
        1300,
    )
    assert u.cost.input == pytest.approx(600 * 1.0 / 1e6)
    assert u.cost.output == pytest.approx(300 * 2.0 / 1e6)
    assert u.cost.cache_read == pytest.approx(400 * 0.5 / 1e6)
    assert u.cost.total == pytest.approx((600 + 600 + 200) / 1e6)


@pytest.mark.parametrize(
    ("where", "usage", "expected"),
    [
        ("choice", {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}, (50, 5, 0, 0)),
        (
            "chunk",
            {"prompt_tokens": 50, "completion_tokens": 5, "prompt_cache_hit_tokens": 30},
            (20, 5, 30, 0),
        ),
        (
            "chunk",
            {
                "prompt_tokens": 50,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 10, "cache_write_tokens": 15},
            },
            (25, 5, 10, 15),
        ),
    ],
    ids=["moonshot-choice-usage", "deepseek-cache-hit", "openrouter-cache-write"],
)
async def test_usage_variants(
    loopback: LoopbackServer, where: str, usage: dict[str, Any], expected: tuple[int, ...]
) -> None:
    if where == "choice":
        final = sse(
            {
                "id": "c",
                "model": "gpt-test",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "usage": usage}],
            }
        )
    else:
        final = chunk({}, "stop", usage=usage)
    _, msg = await run(loopback, [chunk({"content": "x"}), final, DONE])
    u = msg.usage
    assert (u.input, u.output, u.cache_read, u.cache_write) == expected
    assert u.total_tokens == sum(expected)


async def test_usage_only_when_requested_and_streams_without_it(loopback: LoopbackServer) -> None:
    model = make_model(loopback, compat={"supportsUsageInStreaming": False})
    _, msg = await run(loopback, text_reply("fine"), model=model)
    assert "stream_options" not in loopback.requests[0].json
    assert msg.stop_reason == "stop"
    assert msg.usage.total_tokens == 0
    assert msg.usage.cost.total == 0
    await run(loopback, text_reply("fine"))
    assert loopback.requests[1].json["stream_options"] == {"include_usage": True}


# --- finish reasons ---


@pytest.mark.parametrize(
    ("finish", "stop_reason", "error"),
    [
        ("stop", "stop", None),
        ("end", "stop", None),
        ("length", "length", None),
        ("tool_calls", "toolUse", None),
        ("function_call", "toolUse", None),
        ("content_filter", "error", "Provider finish_reason: content_filter"),
        ("network_error", "error", "Provider finish_reason: network_error"),
        ("something_new", "error", "Provider finish_reason: something_new"),
    ],
)
async def test_finish_reasons(
    loopback: LoopbackServer, finish: str, stop_reason: str, error: str | None
) -> None:
    events, msg = await run(loopback, text_reply("partial", finish=finish))
    terminal = "error" if error else "done"
    assert kinds(events) == ["start", "text_start", "text_delta", "text_end", terminal]
    assert (msg.stop_reason, msg.raw_stop_reason, msg.error_message) == (stop_reason, finish, error)
    assert msg.content == [TextContent(text="partial")]
    if not error:
        assert events[-1].reason == stop_reason


async def test_stream_without_finish_reason_is_an_error_after_the_block_ends(
    loopback: LoopbackServer,
) -> None:
    events, msg = await run(loopback, [chunk({"content": "cut"}), DONE])
    assert kinds(events) == ["start", "text_start", "text_delta", "text_end", "error"]
    assert (msg.stop_reason, msg.error_message) == ("error", "Stream ended without finish_reason")
    assert msg.content == [TextContent(text="cut")]


# --- HTTP errors (the rest is in test_provider_contract.py) ---


async def test_openrouter_raw_metadata_is_shown_once(loopback: LoopbackServer) -> None:
    body = {
        "error": {
            "message": "Provider returned error",
            "code": 400,
            "metadata": {"raw": "upstream: context too long", "provider_name": "X"},
        }
    }
    loopback.queue(json_reply(400, body))
    _, msg = await collect(stream(make_model(loopback, provider="openrouter"), ctx(), opts()))
    # Pi: "<status>: <error object>"; the raw upstream text is already in it, so not appended
    assert msg.error_message == "400: " + json.dumps(body["error"], separators=(",", ":"))
    assert (msg.error_message or "").count("upstream: context too long") == 1


# --- broken streams ---


async def test_malformed_chunk_is_an_error_with_partial_content(loopback: LoopbackServer) -> None:
    events, msg = await run(loopback, [chunk({"content": "ok"}), b'data: {"choices": [{"delta": \n\n', DONE])
    assert kinds(events) == ["start", "text_start", "text_delta", "error"]
    assert (msg.error_message or "").startswith("Could not parse stream chunk as JSON")
    assert msg.content == [TextContent(text="ok")]


async def test_error_object_after_http_200_llama_server(loopback: LoopbackServer) -> None:
    error = {
        "error": {
            "code": 500,
            "message": "Context size has been exceeded.",
            "type": "exceed_context_size_error",
        }
    }
    events, msg = await run(loopback, [chunk({"content": "Hi"}), sse(error)])  # and no [DONE]
    assert kinds(events) == ["start", "text_start", "text_delta", "error"]
    assert (msg.stop_reason, msg.error_message) == ("error", "Context size has been exceeded.")
    assert msg.content == [TextContent(text="Hi")]


async def test_empty_choices_and_sse_framing_variants(loopback: LoopbackServer) -> None:
    text = chunk({"content": "A"})
    script = [
        b": OPENROUTER PROCESSING\n\n",
        b"data:\n\n",  # an empty keep-alive event
        chunk(choices=False),  # no choices, no usage: ignored
        text[:17],
        text[17:],  # one event split over two reads
        chunk({"content": "B"}).replace(b"\n", b"\r\n"),  # CRLF line ends
        chunk({"content": "C"}) + chunk({"content": "D"}),  # two events in one read
        b'event: message\ndata: {"id":"x","choices":[{"index":0,\ndata: "delta":{"content":"E"}}]}\n\n',
        chunk({"content": "F"}).replace(b"\n", b"\r")[:-1],
        b"\r",  # bare CR ends, the last CR split off
        chunk({}, "stop"),
        DONE,
    ]
    events, msg = await run(loopback, script)
    assert [e.delta for e in events if e.type == "text_delta"] == list("ABCDEF")
    assert msg.content == [TextContent(text="ABCDEF")]
    assert msg.stop_reason == "stop"


async def test_compressed_stream_from_a_proxy_is_decoded(loopback: LoopbackServer) -> None:
    body = gzip.compress(b"".join(text_reply("zip", "ped")))
    script = [body[:20], body[20:]]
    events, msg = await run(loopback, script, headers={"content-encoding": "gzip"})
    assert kinds(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert msg.content == [TextContent(text="zipped")]


async def test_body_ending_without_blank_line_still_delivers_last_event(loopback: LoopbackServer) -> None:
    _, msg = await run(loopback, [chunk({"content": "x"}), chunk({}, "stop")[:-1]])
    assert msg.stop_reason == "stop"
    assert msg.content == [TextContent(text="x")]


# --- keys and headers ---


async def test_a_key_echoed_back_in_a_stream_error_is_redacted(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    loopback.queue_sse([sse({"error": {"message": f"bad key {KEY}"}})])
    events, msg = await collect(entry_stream(make_model(loopback, provider="groq"), ctx()))
    assert loopback.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert msg.error_message == "bad key [redacted]"
    assert KEY not in json.dumps([e.to_dict() for e in events])


async def test_authorization_only_with_a_key_and_header_merging(loopback: LoopbackServer) -> None:
    model = make_model(loopback, provider="ollama", headers={"X-Model": "m", "X-Drop": "1"})
    await run(
        loopback,
        text_reply("a"),
        model=model,
        options=OpenAICompletionsOptions(headers={"X-Drop": None, "x-model": "override", "X-Extra": "e"}),
    )
    headers = loopback.requests[0].headers
    assert "authorization" not in headers
    assert (headers["x-model"], headers.get("x-drop"), headers["x-extra"]) == ("override", None, "e")
    assert headers["content-type"] == "application/json"
    await run(loopback, text_reply("a"), model=model, options=opts())
    assert loopback.requests[1].headers["authorization"] == f"Bearer {KEY}"


async def test_on_payload_replaces_body_and_on_response_sees_status(loopback: LoopbackServer) -> None:
    seen: list[Any] = []

    def on_payload(payload: dict[str, Any], model: Model) -> dict[str, Any]:
        return {**payload, "seed": 7}

    async def on_response(response: dict[str, Any], model: Model) -> None:
        seen.append(response["status"])

    await run(loopback, text_reply("a"), options=opts(on_payload=on_payload, on_response=on_response))
    assert loopback.requests[0].json["seed"] == 7
    assert seen == [200]


async def test_calls_sharing_an_id_in_one_response_stay_two_calls_with_ids_of_their_own(
    loopback: LoopbackServer,
) -> None:
    script = [
        tool_delta(0, id="call_0", name="read", args='{"p": "a"}'),
        tool_delta(1, id="call_0", name="read", args='{"p": "b"}'),
        tool_delta(2, name="read", args='{"p": "c"}'),  # no id at all
        chunk({}, "tool_calls"),
        DONE,
    ]
    events, msg = await run(loopback, script)
    calls = [b for b in msg.content if isinstance(b, ToolCall)]
    assert [c.arguments for c in calls] == [{"p": "a"}, {"p": "b"}, {"p": "c"}]
    ids = [c.id for c in calls]
    assert ids[0] == "call_0"
    assert len(set(ids)) == 3
    assert all(ids)
    # the ids are final from toolcall_start on (the view keys its cards by them)
    starts = [e.partial.content[e.content_index].id for e in events if e.type == "toolcall_start"]
    assert starts[:2] == ids[:2]


async def test_an_id_the_transcript_already_used_is_replaced(loopback: LoopbackServer) -> None:
    earlier = AssistantMessage(
        content=[ToolCall(id="call_0", name="read", arguments={"p": "a"})],
        api="openai-completions",
        provider="openai",
        model="gpt-test",
        stop_reason="toolUse",
    )
    result = ToolResultMessage(tool_call_id="call_0", tool_name="read", content=[TextContent(text="a")])
    context = ctx()
    context.messages += [earlier, result]
    script = [tool_delta(0, id="call_0", name="read", args='{"p": "b"}'), chunk({}, "tool_calls"), DONE]
    _, msg = await run(loopback, script, context=context)
    [call] = msg.content
    assert isinstance(call, ToolCall)
    assert call.id not in ("call_0", "")
    assert call.arguments == {"p": "b"}


async def test_a_mistral_call_without_an_id_gets_one_in_mistrals_form(loopback: LoopbackServer) -> None:
    script = [tool_delta(0, name="read", args='{"p": "a"}'), chunk({}, "tool_calls"), DONE]
    _, msg = await run(loopback, script, model=make_model(loopback, provider="mistral"))
    [call] = msg.content
    assert isinstance(call, ToolCall)
    assert len(call.id) == 9
    assert call.id.isalnum()
