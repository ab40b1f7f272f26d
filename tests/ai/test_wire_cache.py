"""The wire cache (``ai/wire_cache.py``): a long conversation's earlier turns are converted and
encoded once, and the bytes on the wire stay exactly those of converting everything again, also
when a message that was cached is changed in place afterwards (the mutation hazard) or replaced.
Over the loopback server, on the four wire APIs, each body against the body of the
same request without the cache."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import ai.anthropic_fixtures as anthropic
import ai.google_fixtures as google
import ai.openai_fixtures as openai
import ai.openai_responses_fixtures as responses
import pytest
from loopback import LoopbackServer

from pi_notebook.ai import stream
from pi_notebook.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_notebook.ai.wire_cache import cached_history, encode_body, is_boundary


def turns(n: int, model: Model) -> list[Any]:
    """``n`` tool-using turns (user, assistant with a call, result, answer)."""
    out: list[Any] = []
    same = {"api": model.api, "provider": model.provider, "model": model.id}
    for i in range(n):
        call = ToolCall(id=f"call_{i}", name="read", arguments={"path": f"m{i}.py", "lines": [1, 2]})
        out += [
            UserMessage(content=f"question {i} — ünïcode"),
            AssistantMessage(
                content=[TextContent(text=f"reading {i}"), call],
                stop_reason="toolUse",
                **same,
            ),
            ToolResultMessage(
                tool_call_id=f"call_{i}", tool_name="read", content=[TextContent(text=f"body {i}")]
            ),
            AssistantMessage(
                content=[TextContent(text=f"answer {i}")],
                api=model.api,
                provider=model.provider,
                model=model.id,
            ),
        ]
    return out


Reply = Callable[[str], list[Any]]


def _anthropic(text: str) -> list[Any]:
    return [anthropic.message_start(), *anthropic.text_block(0, text), *anthropic.message_end()]


def _google(text: str) -> list[Any]:
    return [google.chunk({"text": text}, finish="STOP", usage=google.USAGE)]


def _responses(text: str) -> list[Any]:
    return [
        responses.created(),
        *responses.message_item(0, "msg_1", text),
        responses.completed(usage=responses.USAGE),
    ]


WIRES: dict[str, tuple[Callable[..., Model], str, Reply]] = {
    "openai-completions": (openai.make_model, openai.KEY, lambda text: openai.text_reply(text)),
    "openai-responses": (responses.make_model, responses.KEY, _responses),
    "anthropic-messages": (anthropic.make_model, anthropic.KEY, _anthropic),
    "google-generative-ai": (google.make_model, google.KEY, _google),
}


async def ask(loopback: LoopbackServer, api: str, model: Model, context: Context) -> bytes:
    """One request through the cache, then the same without it (``on_payload`` set turns it
    off; returning ``None`` keeps the body): the bodies must be the same bytes. The first
    answer joins the conversation."""
    _, key, reply = WIRES[api]
    bodies: list[bytes] = []
    answers: list[Any] = []
    for options in ({"api_key": key}, {"api_key": key, "on_payload": lambda p, m: None}):
        loopback.queue_sse(reply("ok"))
        answer = await stream(model, context, options).result()
        assert answer.stop_reason == "stop", answer.error_message
        bodies.append(loopback.requests[-1].body)
        answers.append(answer)
    assert bodies[0] == bodies[1]
    context.messages.append(answers[0])
    return bodies[0]


@pytest.mark.parametrize("api", list(WIRES))
async def test_the_bytes_are_those_of_the_whole_conversion_every_request(
    loopback: LoopbackServer, api: str
) -> None:
    model = WIRES[api][0](loopback)
    context = Context(system_prompt="Be brief.", messages=turns(30, model))
    for i in range(4):
        context.messages.append(UserMessage(content=f"next {i}"))
        await ask(loopback, api, model, context)


def _edit_text(messages: list[Any]) -> None:
    messages[3].content[0].text = "EDITED answer"


def _append_block(messages: list[Any]) -> None:
    messages[3].content.append(TextContent(text="EDITED more"))


def _edit_arguments(messages: list[Any]) -> None:
    messages[1].content[1].arguments["path"] = "EDITED.py"


def _edit_nested_arguments(messages: list[Any]) -> None:
    messages[1].content[1].arguments["lines"].append("EDITED")


def _replace_message(messages: list[Any]) -> None:
    messages[0] = UserMessage(content="EDITED question")


def _reassign_content(messages: list[Any]) -> None:
    messages[2].content = [TextContent(text="EDITED result")]


def _equal_then_edit(messages: list[Any]) -> Callable[[list[Any]], None]:
    """An equal replacement changes no byte; a change to it after a request must still be seen."""
    messages[3].content = [TextContent(text="answer 0")]

    def then(messages: list[Any]) -> None:
        messages[3].content[0].text = "EDITED after an equal replacement"

    return then


def _equal_arguments_then_edit(messages: list[Any]) -> Callable[[list[Any]], None]:
    call = messages[1].content[1]
    call.arguments = dict(call.arguments)

    def then(messages: list[Any]) -> None:
        messages[1].content[1].arguments["path"] = "EDITED.py"

    return then


def _add_image(messages: list[Any]) -> None:
    messages[4].content = [TextContent(text="look"), ImageContent(data="AAAA", mime_type="image/png")]


EDITS: list[Callable[[list[Any]], Any]] = [
    _edit_text,
    _append_block,
    _edit_arguments,
    _edit_nested_arguments,
    _replace_message,
    _reassign_content,
    _equal_then_edit,
    _equal_arguments_then_edit,
    _add_image,
]


@pytest.mark.parametrize("api", list(WIRES))
async def test_a_cached_message_changed_in_place_is_sent_as_it_is_now(
    loopback: LoopbackServer, api: str
) -> None:
    """Each edit after the turns were cached: the next body is the uncached conversion's."""
    for edit in EDITS:
        model = WIRES[api][0](loopback)
        context = Context(messages=turns(6, model))
        for _ in range(2):  # the second request is served from the cache
            context.messages.append(UserMessage(content="again"))
            await ask(loopback, api, model, context)
        then = edit(context.messages)
        if then is not None:  # a request in between, then the change
            context.messages.append(UserMessage(content="in between"))
            await ask(loopback, api, model, context)
            then(context.messages)
        context.messages.append(UserMessage(content="after the edit"))
        body = await ask(loopback, api, model, context)
        assert b"EDITED" in body or b"AAAA" in body, edit.__name__


def test_only_the_tail_is_converted_again() -> None:
    converted: list[int] = []

    def convert(messages: Any) -> list[Any]:
        converted.append(len(messages))
        return [{"role": m.role, "n": i} for i, m in enumerate(messages)]

    model = Model(id="m", api="openai-completions", provider="p")
    messages = turns(50, model)
    messages.append(UserMessage(content="now"))
    cached_history("k", model, messages, convert)  # seen: converted whole
    assert converted == [len(messages)]
    cached_history("k", model, messages, convert)  # back: the cache is built
    converted.clear()
    messages += [AssistantMessage(content=[TextContent(text="a")]), UserMessage(content="b")]
    out = cached_history("k", model, messages, convert)
    assert converted == [2, 1]  # the answer and the question before the new boundary, then the question
    assert len(out) == len(messages)
    assert encode_body({"messages": out}) == json.dumps({"messages": list(out)}, ensure_ascii=False).encode()


def test_a_boundary_is_a_question_after_a_text_answer() -> None:
    model = Model(id="m", api="openai-completions", provider="p")
    messages = [*turns(1, model), UserMessage(content="q")]
    assert [is_boundary(messages, i) for i in range(len(messages))] == [False, False, False, False, True]
    failed = AssistantMessage(content=[TextContent(text="x")], stop_reason="error")
    assert not is_boundary([failed, UserMessage(content="q")], 1)


def test_messages_copied_for_every_request_are_converted_whole_without_snapshots() -> None:
    """What a ``context`` handler that copies the transcript gives: never the same objects, so
    the cache only remembers it saw them (no snapshot is taken, nothing is converted twice)."""
    converted: list[int] = []

    def convert(messages: Any) -> list[Any]:
        converted.append(len(messages))
        return [{"role": m.role} for m in messages]

    model = Model(id="m", api="openai-completions", provider="p")
    messages = [*turns(20, model), UserMessage(content="now")]
    for _ in range(3):
        out = cached_history("copies", model, [m.model_copy() for m in messages], convert)
        assert out.prefix_items == []
    assert converted == [len(messages)] * 3
