"""Hand-built agent event sequences for the view tests, shaped like the traces of the real loop
of Pi's loop: a provider mutates one partial ``AssistantMessage`` in place and every
``message_update`` carries it; tool executions and tool-result messages follow the assistant
message; ``turn_end`` / ``agent_end`` close the run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pi_notebook.agent.types import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    AgentToolResult,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from pi_notebook.ai.events import (
    AssistantMessageEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from pi_notebook.ai.types import (
    AssistantMessage,
    Cost,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)


def text(value: str) -> TextContent:
    return TextContent(text=value)


def usage(inp: int, out: int, cost: float, cache_read: int = 0) -> Usage:
    return Usage(
        input=inp,
        output=out,
        cache_read=cache_read,
        total_tokens=inp + out + cache_read,
        cost=Cost(input=cost / 2, output=cost / 2, total=cost),
    )


def chunks(value: str, size: int) -> Iterator[str]:
    for i in range(0, len(value), size):
        yield value[i : i + size]


@dataclass
class Run:
    """Builds one run's events. ``ts`` is the message clock (ms); ``model`` the model id."""

    model: str = "faux-1"
    ts: int = 1_700_000_000_000
    chunk: int = 4
    events: list[AgentEvent] = field(default_factory=list)

    def _tick(self, ms: int = 100) -> int:
        self.ts += ms
        return self.ts

    def _update(self, partial: AssistantMessage, inner: AssistantMessageEvent) -> None:
        self.events.append(MessageUpdateEvent(message=partial.model_copy(), assistant_message_event=inner))

    def start(self, prompt: str) -> Run:
        self.events += [AgentStartEvent(), TurnStartEvent()]
        self.user(prompt)
        return self

    def user(self, value: str) -> Run:
        message = UserMessage(content=[text(value)], timestamp=self._tick())
        self.events += [MessageStartEvent(message=message), MessageEndEvent(message=message)]
        return self

    def turn(self) -> Run:
        self.events.append(TurnStartEvent())
        return self

    def assistant(
        self,
        *blocks: tuple[Any, ...],
        stop_reason: str = "stop",
        usage_: Usage | None = None,
        error_message: str | None = None,
        stream: bool = True,
    ) -> AssistantMessage:
        """Stream ``blocks`` (``("text", s)``, ``("thinking", s)``, ``("tool", id, name, args)``)
        and end the message. Usage is only on the final message, as providers report it."""
        partial = AssistantMessage(
            api="faux", provider="faux", model=self.model, stop_reason="pending", timestamp=self._tick()
        )
        self.events.append(MessageStartEvent(message=partial.model_copy()))
        if stream:
            for block in blocks:
                self._stream_block(partial, block)
        final = partial.model_copy(deep=True)
        if not stream:
            final.content = [_final_block(b) for b in blocks]
        final.stop_reason = stop_reason  # type: ignore[assignment]
        final.error_message = error_message
        final.usage = usage_ or usage(10, 5, 0.001)
        self.events.append(MessageEndEvent(message=final))
        return final

    def _stream_block(self, partial: AssistantMessage, block: tuple[Any, ...]) -> None:
        kind, index = block[0], len(partial.content)
        if kind in ("text", "thinking"):
            is_text = kind == "text"
            item: Any = TextContent(text="") if is_text else ThinkingContent(thinking="")
            partial.content.append(item)
            self._update(partial, (TextStartEvent if is_text else ThinkingStartEvent)(index, partial))
            for piece in chunks(block[1], self.chunk):
                if is_text:
                    item.text += piece
                    self._update(partial, TextDeltaEvent(index, piece, partial))
                else:
                    item.thinking += piece
                    self._update(partial, ThinkingDeltaEvent(index, piece, partial))
            end = TextEndEvent if is_text else ThinkingEndEvent
            self._update(partial, end(index, block[1], partial))
            return
        _, call_id, name, args = block
        call = ToolCall(id=call_id, name=name, arguments={})
        partial.content.append(call)
        self._update(partial, ToolCallStartEvent(index, partial))
        for piece in chunks(json.dumps(args), self.chunk):
            self._update(partial, ToolCallDeltaEvent(index, piece, partial))
        call.arguments = args
        self._update(partial, ToolCallEndEvent(index, call, partial))

    def tool_start(self, call_id: str, name: str, args: Any) -> Run:
        self.events.append(ToolExecutionStartEvent(tool_call_id=call_id, tool_name=name, args=args))
        return self

    def tool_update(self, call_id: str, name: str, progress: str) -> Run:
        partial = AgentToolResult(content=[text(progress)], details=None)
        self.events.append(
            ToolExecutionUpdateEvent(tool_call_id=call_id, tool_name=name, args={}, partial_result=partial)
        )
        return self

    def tool_end(
        self, call_id: str, name: str, content: str, details: Any = None, is_error: bool = False
    ) -> Run:
        result = AgentToolResult(content=[text(content)], details=details)
        self.events.append(
            ToolExecutionEndEvent(tool_call_id=call_id, tool_name=name, result=result, is_error=is_error)
        )
        return self

    def tool_result(
        self, call_id: str, name: str, content: str, details: Any = None, is_error: bool = False
    ) -> Run:
        message = ToolResultMessage(
            tool_call_id=call_id,
            tool_name=name,
            content=[text(content)],
            details=details,
            is_error=is_error,
            timestamp=self._tick(),
        )
        self.events += [MessageStartEvent(message=message), MessageEndEvent(message=message)]
        return self

    def turn_end(self, message: AssistantMessage, results: list[ToolResultMessage] | None = None) -> Run:
        self.events.append(TurnEndEvent(message=message, tool_results=results or []))
        return self

    def end(self) -> Run:
        self.events.append(AgentEndEvent(messages=[]))
        return self


def _final_block(block: tuple[Any, ...]) -> Any:
    if block[0] == "text":
        return TextContent(text=block[1])
    if block[0] == "thinking":
        return ThinkingContent(thinking=block[1])
    return ToolCall(id=block[1], name=block[2], arguments=block[3])


def tool_run(model: str = "faux-1", ids: tuple[str, str] = ("call_1", "call_2"), ts: int = 0) -> Run:
    """Text + two parallel tool calls (the second finishes first, the first
    reports progress, the second fails), then a text answer in a second turn."""
    run = Run(model=model, ts=ts or 1_700_000_000_000)
    a, b = ids
    run.start("Add 2 and 3, then read missing.txt")
    first = run.assistant(
        ("thinking", "I need both tools."),
        ("text", "Let me use the tools."),
        ("tool", a, "add", {"a": 2, "b": 3}),
        ("tool", b, "read_file", {"path": "missing.txt"}),
        stop_reason="toolUse",
        usage_=usage(100, 20, 0.0012),
    )
    run.tool_start(a, "add", {"a": 2, "b": 3}).tool_start(b, "read_file", {"path": "missing.txt"})
    run.tool_update(a, "add", "adding…")
    run.tool_end(b, "read_file", "ENOENT: missing.txt", details={}, is_error=True)
    run.tool_end(a, "add", "5", details={"exact": True})
    run.tool_result(a, "add", "5", details={"exact": True})
    run.tool_result(b, "read_file", "ENOENT: missing.txt", details={}, is_error=True)
    run.turn_end(first)
    run.turn()
    second = run.assistant(("text", "The sum is **5**; the file is missing."), usage_=usage(150, 12, 0.0021))
    run.turn_end(second).end()
    return run
