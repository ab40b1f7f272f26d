"""Builders shared by the agent tests: Pi's test conventions (spec section 6) in Python.

A *mock stream* is an ``AssistantMessageEventStream`` whose single ``done`` (or ``error``) event
is pushed from a loop callback, as Pi's mocks do with ``queueMicrotask``; so ``message_start``
usually carries the final message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from pi_notebook.agent import AgentEvent, AgentTool, AgentToolResult
from pi_notebook.ai.event_stream import AssistantMessageEventStream
from pi_notebook.ai.events import DoneEvent, ErrorEvent
from pi_notebook.ai.types import (
    AssistantMessage,
    Model,
    ModelCost,
    TextContent,
    ToolCall,
    Usage,
    UserMessage,
    now_ms,
)
from pi_notebook.ai.validation import TypeBoxSchema

# Pi's tests build schemas with TypeBox (``Type.Object({value: Type.String()})``).
ECHO_SCHEMA: dict[str, Any] = TypeBoxSchema(
    type="object", properties={"value": {"type": "string"}}, required=["value"]
)


def create_model() -> Model:
    return Model(
        id="mock",
        name="mock",
        api="openai-responses",
        provider="openai",
        base_url="https://example.invalid",
        reasoning=False,
        input=["text"],
        cost=ModelCost(),
        context_window=8192,
        max_tokens=2048,
    )


def assistant(content: Sequence[Any] | str, stop_reason: Any = "stop") -> AssistantMessage:
    blocks = [TextContent(text=content)] if isinstance(content, str) else list(content)
    return AssistantMessage(
        content=blocks,
        api="openai-responses",
        provider="openai",
        model="mock",
        usage=Usage(),
        stop_reason=stop_reason,
        timestamp=now_ms(),
    )


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def user(text: str) -> UserMessage:
    return UserMessage(content=text, timestamp=now_ms())


def identity_converter(messages: list[Any]) -> list[Any]:
    return [m for m in messages if getattr(m, "role", None) in ("user", "assistant", "toolResult")]


def done_stream(message: AssistantMessage) -> AssistantMessageEventStream:
    """A stream that completes with ``message`` one loop iteration later."""
    stream = AssistantMessageEventStream()
    reason: Any = message.stop_reason

    def push() -> None:
        if reason in ("error", "aborted"):
            stream.push(ErrorEvent(reason=reason, error=message))
        else:
            stream.push(DoneEvent(reason=reason, message=message))

    asyncio.get_running_loop().call_soon(push)
    return stream


def scripted(
    *messages: AssistantMessage | Callable[[], AssistantMessage],
) -> tuple[Callable[..., Any], list[Any]]:
    """A stream function answering call i with ``messages[i]`` (the last one repeats); returns it
    and the list of recorded ``(model, context, options)`` calls."""
    calls: list[Any] = []

    def stream_fn(model: Model, context: Any, options: Any) -> AssistantMessageEventStream:
        calls.append((model, context, options))
        step = messages[min(len(calls), len(messages)) - 1]
        return done_stream(step() if callable(step) else step)

    return stream_fn, calls


def signal_stream(options: Any) -> AssistantMessageEventStream:
    """Pi's "streams until aborted" mock: ``start``, then ``error(aborted)`` once the signal fires."""
    from pi_notebook.ai.events import StartEvent

    stream = AssistantMessageEventStream()

    async def run() -> None:
        await asyncio.sleep(0)
        stream.push(StartEvent(partial=assistant("")))
        await options.signal.wait()
        stream.push(ErrorEvent(reason="aborted", error=assistant("Aborted", stop_reason="aborted")))

    stream.start(run)
    return stream


def echo_tool(executed: list[Any] | None = None, **overrides: Any) -> AgentTool:
    log = executed if executed is not None else []

    async def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        log.append(params["value"])
        return AgentToolResult(
            content=[TextContent(text=f"echoed: {params['value']}")], details={"value": params["value"]}
        )

    fields: dict[str, Any] = {
        "name": "echo",
        "label": "Echo",
        "description": "Echo tool",
        "parameters": ECHO_SCHEMA,
        "execute": execute,
    }
    fields.update(overrides)
    return AgentTool(**fields)


def types_of(events: Sequence[AgentEvent]) -> list[str]:
    return [e.type for e in events]


def label(event: AgentEvent) -> str:
    """A compact trace label in the notation of test_agent_traces.py."""
    kind = event.type
    if kind in ("message_start", "message_end"):
        message = event.message  # type: ignore[union-attr]
        role = getattr(message, "role", "?")
        if role == "assistant":
            return f"{kind}(assistant:{message.stop_reason})"
        if role == "toolResult":
            return f"{kind}(toolResult {message.tool_call_id})"
        if role == "user":
            return f"{kind}(user {user_text(message)})"
        return f"{kind}({role})"
    if kind == "message_update":
        return f"message_update({event.assistant_message_event.type})"  # type: ignore[union-attr]
    if kind == "tool_execution_end":
        return f"tool_execution_end({event.tool_call_id},{'err' if event.is_error else 'ok'})"  # type: ignore[union-attr]
    if kind in ("tool_execution_start", "tool_execution_update"):
        return f"{kind}({event.tool_call_id})"  # type: ignore[union-attr]
    if kind == "turn_end":
        return f"turn_end(tr={','.join(r.tool_call_id for r in event.tool_results)})"  # type: ignore[union-attr]
    return kind


def user_text(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if getattr(b, "type", None) == "text")


def message_text(message: Any) -> str:
    return "\n".join(b.text for b in message.content if getattr(b, "type", None) == "text")


class Notification(BaseModel):
    """A custom transcript role the model only sees through ``convert_to_llm``."""

    role: Literal["notification"] = "notification"
    text: str
    timestamp: int = 0


class CustomMessage(BaseModel):
    role: Literal["custom"] = "custom"
    text: str
    timestamp: int = 0


def seen(agent: Any, kind: str) -> asyncio.Event:
    """An event set once ``agent`` emits an event of ``kind``."""
    flag = asyncio.Event()
    agent.subscribe(lambda event, signal: flag.set() if event.type == kind else None)
    return flag


class Deferred:
    """Pi's ``createDeferred``: an event to await and release."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def resolve(self) -> None:
        self._event.set()

    async def wait(self) -> None:
        await self._event.wait()

    @property
    def done(self) -> bool:
        return self._event.is_set()
