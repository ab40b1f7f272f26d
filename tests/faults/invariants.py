"""What must hold after any run, however it failed, and the replay adapter.

:func:`check_run` asserts the contract of one finished ``Agent`` run from the events its
listener saw and its final state: every start has its end, exactly one ``agent_end`` (last),
every tool call of a completed assistant message has exactly one result (and an errored or
aborted one has none, since it never ran its tools), the transcript is exactly the messages
that reached ``message_end``, it replays into the request of every wire API, and an error
ends with a one-line reason.

:func:`build_request` is the only place that knows the request builders' names, so a
rename in ``pi_notebook.ai.providers`` touches one function here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pi_notebook.agent import Agent, AgentEvent
from pi_notebook.ai.types import AssistantMessage, Context, Model, ModelCost, ToolCall, ToolResultMessage

API_NAMES = ("openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai")


# --- replay adapter ------------------------------------------------------------------------------


def build_request(model: Model, context: Context) -> dict[str, Any]:
    """The JSON body the provider of ``model.api`` would send for ``context``."""
    api = model.api
    if api == "openai-completions":
        from pi_notebook.ai.providers import openai_completions_request as ocr
        from pi_notebook.ai.providers.openai_completions_options import OpenAICompletionsOptions

        return ocr.build_params(model, context, OpenAICompletionsOptions(), ocr.resolve_compat(model))
    if api == "openai-responses":
        from pi_notebook.ai.providers import openai_responses_request as orq
        from pi_notebook.ai.providers.openai_responses_options import OpenAIResponsesOptions

        return orq.build_params(model, context, OpenAIResponsesOptions())
    if api == "anthropic-messages":
        from pi_notebook.ai.providers import anthropic_request as ar
        from pi_notebook.ai.providers.anthropic_options import AnthropicOptions

        return ar.build_params(model, context, AnthropicOptions())
    if api == "google-generative-ai":
        from pi_notebook.ai.providers import google_request as gr

        return gr.build_body(
            model, context, temperature=None, max_tokens=None, tool_choice=None, thinking=None
        )
    raise ValueError(f"no request builder for api {api}")


def replay_model(api: str) -> Model:
    """A model of ``api`` that is *not* the one that wrote the transcript (cross-model replay)."""
    ids = {
        "openai-completions": ("openai", "gpt-replay"),
        "openai-responses": ("openai", "gpt-5-replay"),
        "anthropic-messages": ("anthropic", "claude-replay"),
        "google-generative-ai": ("google", "gemini-2.5-flash"),
    }
    provider, model_id = ids[api]
    return Model(
        id=model_id,
        name=model_id,
        api=api,
        provider=provider,
        base_url="http://127.0.0.1:9",
        input=["text", "image"],
        cost=ModelCost(),
        context_window=100_000,
        max_tokens=1000,
    )


def _pairs_completions(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    calls = [c["id"] for m in body["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    return calls, results


def _pairs_responses(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    calls = [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]
    results = [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
    return calls, results


def _blocks(body: dict[str, Any], key: str, kind: str, field: str) -> list[str]:
    return [
        b[field]
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == kind and key == m["role"]
    ]


def _pairs_anthropic(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    return _blocks(body, "assistant", "tool_use", "id"), _blocks(body, "user", "tool_result", "tool_use_id")


def _pairs_google(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    parts = [p for c in body["contents"] for p in c.get("parts") or []]
    calls = [p["functionCall"].get("id") or p["functionCall"]["name"] for p in parts if "functionCall" in p]
    results = [
        p["functionResponse"].get("id") or p["functionResponse"]["name"]
        for p in parts
        if "functionResponse" in p
    ]
    return calls, results


_PAIRS: dict[str, Callable[[dict[str, Any]], tuple[list[str], list[str]]]] = {
    "openai-completions": _pairs_completions,
    "openai-responses": _pairs_responses,
    "anthropic-messages": _pairs_anthropic,
    "google-generative-ai": _pairs_google,
}


def check_replays(
    messages: Sequence[Any], tools: Sequence[Any], system_prompt: str = "", own_model: Model | None = None
) -> None:
    """The transcript becomes a valid request for every API (for a model that did not write it,
    and for ``own_model``, the one that did): JSON, each call with exactly one result."""
    context = Context(
        system_prompt=system_prompt, messages=list(messages), tools=[t.to_tool() for t in tools]
    )
    models = [replay_model(api) for api in API_NAMES]
    if own_model is not None and own_model.api in API_NAMES:
        models.append(own_model)
    for model in models:
        api = model.api
        body = build_request(model, context)
        json.dumps(body)
        calls, results = _PAIRS[api](body)
        assert sorted(calls) == sorted(results), f"{api}: calls {calls} vs results {results}"
        if api != "google-generative-ai":  # Gemini 2.x calls carry no id: names may repeat
            assert len(set(calls)) == len(calls), f"{api}: duplicate tool call ids {calls}"


# --- the run contract ----------------------------------------------------------------------------


class Recorder:
    """A listener that keeps every event (and can act at a given index)."""

    def __init__(self, on_event: Callable[[int, AgentEvent], Any] | None = None) -> None:
        self.events: list[AgentEvent] = []
        self.on_event = on_event

    def __call__(self, event: AgentEvent, signal: Any) -> Any:
        self.events.append(event)
        if self.on_event is not None:
            return self.on_event(len(self.events) - 1, event)
        return None

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]


def check_pairing(events: Sequence[AgentEvent]) -> None:
    """agent/turn/message/tool_execution starts and ends nest and pair up; one agent_end, last."""
    types = [e.type for e in events]
    assert types.count("agent_start") == 1, types
    assert types.count("agent_end") == 1, types
    assert types[0] == "agent_start", types
    assert types[-1] == "agent_end", types
    turn_open = message_open = False
    tools_open: set[str] = set()
    tools_seen: set[str] = set()
    for event in events[1:-1]:
        kind = event.type
        if kind == "turn_start":
            assert not turn_open, f"turn_start inside a turn: {types}"
            turn_open = True
        elif kind == "turn_end":
            assert turn_open, f"turn_end outside a turn: {types}"
            assert not message_open, f"turn_end inside a message: {types}"
            assert not tools_open, f"turn_end while tools run: {types}"
            turn_open = False
        elif kind in ("message_start", "message_update", "message_end"):
            assert turn_open, f"{kind} outside a turn: {types}"
            if kind == "message_start":
                assert not message_open, f"nested message_start: {types}"
            else:
                assert message_open, f"{kind} without message_start: {types}"
            message_open = kind != "message_end"
        elif kind.startswith("tool_execution_"):
            call_id = event.tool_call_id  # type: ignore[union-attr]
            assert turn_open, f"{kind} outside a turn: {types}"
            if kind == "tool_execution_start":
                assert call_id not in tools_seen, f"tool {call_id} started twice: {types}"
                tools_seen.add(call_id)
                tools_open.add(call_id)
            else:
                assert call_id in tools_open, f"{kind} for a tool that is not running: {types}"
                if kind == "tool_execution_end":
                    tools_open.discard(call_id)
        else:
            raise AssertionError(f"unexpected {kind} inside the run: {types}")
    assert not turn_open, types
    assert not message_open, types
    assert not tools_open, types


def check_tool_results(messages: Sequence[Any]) -> None:
    """Each call of a completed assistant message has exactly one result, after it; an errored
    or aborted message ran no tools, so its calls have none; no result answers nothing."""
    calls: dict[str, AssistantMessage] = {}
    counts: dict[str, int] = {}
    for message in messages:
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, ToolCall):
                    assert block.id not in calls, f"tool call id {block.id} reused"
                    calls[block.id] = message
                    counts[block.id] = 0
        elif isinstance(message, ToolResultMessage):
            assert message.tool_call_id in calls, f"result for unknown call {message.tool_call_id}"
            counts[message.tool_call_id] += 1
    for call_id, owner in calls.items():
        expected = 0 if owner.stop_reason in ("error", "aborted") else 1
        assert counts[call_id] == expected, (
            f"call {call_id} of a {owner.stop_reason} message has {counts[call_id]} results"
        )


def reason_line(message: AssistantMessage) -> str:
    """The one line a user is shown: the first non-empty line of the error message."""
    text = (message.error_message or "").strip()
    assert text, f"no error message on {message.stop_reason} message"
    return text.splitlines()[0].strip()


def check_run(
    agent: Agent, recorder: Recorder, expect_stop: str | None = None, prior: int = 0
) -> AssistantMessage:
    """Everything that must hold once ``prompt()`` returned; returns the last assistant message.
    ``prior``: how many transcript messages came from earlier runs (the recorder saw only this one)."""
    events = recorder.events
    check_pairing(events)
    state = agent.state
    assert not state.is_streaming
    assert not state.pending_tool_calls
    assert state.streaming_message is None
    ended = [e.message for e in events if e.type == "message_end"]  # type: ignore[union-attr]
    assert state.messages[prior:] == ended, "the transcript is not the messages that reached message_end"
    check_tool_results(state.messages)
    check_replays(state.messages, state.tools, state.system_prompt, state.model)
    last = [m for m in state.messages if isinstance(m, AssistantMessage)][-1]
    assert state.messages[-1] is last or isinstance(state.messages[-1], ToolResultMessage)
    if expect_stop is not None:
        assert last.stop_reason == expect_stop, (last.stop_reason, last.error_message)
    if last.stop_reason in ("error", "aborted"):
        reason_line(last)
        assert state.error_message == last.error_message, (state.error_message, last.error_message)
    return last
