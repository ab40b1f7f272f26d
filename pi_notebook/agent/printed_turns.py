"""Turns whose text holds the calls: a stream function for one run that makes them calls.

Two uses, one mechanism (``printed_turns``, given to a run as ``AgentRunOptions.wrap_stream``):

* ``tools`` mode (recovery): the model was sent the tool schemas but answered with a call
  printed in its text (``printed_calls``). When the host accepts (``accept``: it may ask the
  user later, or decline where nobody can), the answer becomes a ``toolUse`` turn: its text as
  it was, plus the calls, each marked with the form it was read from. The loop then runs them
  as the model's own calls, through the run's ``before_tool_call`` (where a host makes a
  recovered call ask), and the model answers their results.
* ``code`` mode (code-first, for models without reliable tool calling): no schemas are sent,
  the system prompt asks for Python in fenced blocks (``system_prompt``), each ```python block
  of an answer becomes a ``run_code`` call (marked ``code``) that the loop runs like any call,
  and an answer without a block is the final answer. What the model sees of earlier calls is
  text: its own blocks as it wrote them, each result as a user message with the output.

Both leave the transcript as if the model had called the tools (a ``toolCall`` block and its
``toolResult``), so replay, export, usage and Pi's readers treat them like any call. The mark
is the tool call's ``recovered`` key (``json``, ``tagged``, ``fenced`` or ``code``), which Pi's
readers and every wire API leave alone. Ids are fresh and unique in the transcript
(``CallIds``). The turn is rewritten before ``message_end``, so the session file records one
message, never a text turn and then its repair.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeAlias

from ..ai.call_ids import CallIds
from ..ai.event_stream import AssistantMessageEventStream
from ..ai.events import AssistantMessageEvent
from ..ai.providers.openai_completions_request import is_local_model
from ..ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from .printed_calls import PrintedCall, printed_calls, python_blocks
from .tool_mode import ToolMode
from .types import StreamFn

__all__ = [
    "CODE_MARK",
    "PYTHON_TOOL",
    "RECOVERED_KEY",
    "RECOVERED_MARKS",
    "Accept",
    "ToolMode",
    "code_context",
    "printed_turns",
    "recovered_mark",
    "with_calls",
]

Accept: TypeAlias = Callable[[list[PrintedCall]], bool]
"""The host's answer to "this answer holds these calls": True makes them the turn's calls."""

RECOVERED_KEY = "recovered"
"""The tool call's key that says it was read from the model's text (and in which form)."""
CODE_MARK = "code"
RECOVERED_MARKS = frozenset({"json", "tagged", "fenced"})
"""The marks of calls recovered from an answer meant to call tools (not code-mode blocks)."""
PYTHON_TOOL = "run_code"


def recovered_mark(call: Any) -> str | None:
    """The form a call was read from (``json``, ``tagged``, ``fenced``, ``code``), or ``None``
    for a call the model made through the API. Reads a ``ToolCall`` or its JSON."""
    if isinstance(call, dict):
        value = call.get(RECOVERED_KEY)
    else:
        extra = getattr(call, "model_extra", None) or {}
        value = extra.get(RECOVERED_KEY)
    return value if isinstance(value, str) else None


def with_calls(
    message: AssistantMessage, calls: Sequence[PrintedCall], taken: Sequence[Any], mark: str | None = None
) -> AssistantMessage:
    """``message`` with ``calls`` after its content (each with a fresh id, unique among the
    messages ``taken``, and marked with its form or ``mark``), ending in ``toolUse``."""
    ids = CallIds(taken)
    blocks = [
        ToolCall.model_validate(
            {
                "id": ids.claim(""),
                "name": c.name,
                "arguments": dict(c.arguments),
                RECOVERED_KEY: mark or c.form,
            }
        )
        for c in calls
    ]
    return message.model_copy(update={"content": [*message.content, *blocks], "stop_reason": "toolUse"})


def _text(message: AssistantMessage) -> str:
    return "\n".join(b.text for b in message.content if isinstance(b, TextContent))


def _plain_answer(message: AssistantMessage) -> bool:
    """A complete answer with no call of its own: the only kind that is read for calls."""
    if message.stop_reason != "stop":
        return False
    return not any(isinstance(b, ToolCall) for b in message.content)


def _recover(message: AssistantMessage, context: Context, accept: Accept, local: bool) -> AssistantMessage:
    if not _plain_answer(message) or not context.tools:
        return message
    # A ```python block that ends an answer is read as a call only from a local model: a hosted
    # model that ends its answer with code is showing it (a fix, an example), and every such
    # answer would otherwise stop for Approve / Deny.
    python_tool = PYTHON_TOOL if local else None
    calls = printed_calls(_text(message), context.tools, python_tool=python_tool)
    if not calls or not accept(calls):
        return message
    return with_calls(message, calls, context.messages)


def _code_calls(message: AssistantMessage, context: Context, has_python: bool) -> AssistantMessage:
    if not has_python or not _plain_answer(message):
        return message
    blocks = python_blocks(_text(message))
    if not blocks:
        return message
    calls = [
        PrintedCall(PYTHON_TOOL, {"code": code}, "fenced", start, end, code) for start, end, code in blocks
    ]
    return with_calls(message, calls, context.messages, CODE_MARK)


# --- what a code-mode model sees ----------------------------------------------------------------


def _call_as_text(call: ToolCall) -> str:
    if call.name == PYTHON_TOOL and isinstance(call.arguments.get("code"), str):
        return f"```python\n{call.arguments['code'].rstrip()}\n```"
    return "```json\n" + json.dumps({"name": call.name, "arguments": call.arguments}) + "\n```"


def _assistant_as_text(message: AssistantMessage) -> AssistantMessage:
    """The answer as the model wrote it: calls it made through the API (an earlier run in
    tools mode) as text; a code-mode block is in the text already."""
    if not any(isinstance(b, ToolCall) for b in message.content):
        return message
    content: list[Any] = []
    for block in message.content:
        if not isinstance(block, ToolCall):
            content.append(block)
        elif recovered_mark(block) is None:
            content.append(TextContent(text=_call_as_text(block)))
    if not any(isinstance(b, TextContent) and b.text for b in content):
        content.append(TextContent(text="(no text)"))
    return message.model_copy(update={"content": content, "stop_reason": "stop"})


def _result_as_text(result: ToolResultMessage) -> list[Any]:
    text = "\n".join(b.text for b in result.content if isinstance(b, TextContent)).strip() or "(no output)"
    head = "Error" if result.is_error else "Output"
    if result.tool_name != PYTHON_TOOL:
        head = f"{head} of {result.tool_name}"
    images = [b for b in result.content if isinstance(b, ImageContent)]
    return [TextContent(text=f"{head}:\n```\n{text}\n```"), *images]


def _results_message(results: list[ToolResultMessage]) -> UserMessage:
    """One turn's results as one user message: plain text (what every chat template renders)
    unless a result holds an image."""
    texts, images = [], []
    for result in results:
        first, *more = _result_as_text(result)
        texts.append(first.text)
        images += more
    text = "\n\n".join(texts)
    return UserMessage(content=[TextContent(text=text), *images] if images else text)


def code_context(context: Context, system_prompt: Callable[[str | None], str]) -> Context:
    """``context`` as a code-mode model gets it: no tools, its system prompt, tool results as
    user messages (those of one turn in one message), calls as the text of the answer."""
    messages: list[Any] = []
    for message in context.messages:
        if isinstance(message, ToolResultMessage):
            if messages and isinstance(messages[-1], list):
                messages[-1].append(message)
            else:
                messages.append([message])
        else:
            messages.append(_assistant_as_text(message) if isinstance(message, AssistantMessage) else message)
    sent: list[Message] = [_results_message(m) if isinstance(m, list) else m for m in messages]
    system = system_prompt(context.system_prompt)
    return Context.model_construct(system_prompt=system, messages=sent, tools=None)


# --- the stream function ------------------------------------------------------------------------


def printed_turns(
    inner: StreamFn,
    *,
    mode: ToolMode,
    accept: Accept | None = None,
    system_prompt: Callable[[str | None], str] | None = None,
) -> StreamFn:
    """``inner`` (the agent's stream function) for one run in ``mode`` (module docstring).
    ``accept``: whether a tools-mode answer's printed calls become calls (``None``: never).
    ``system_prompt``: the code-mode system prompt made from the run's."""

    def stream(model: Model, context: Context, options: Any = None) -> Any:
        has_python = any(tool.name == PYTHON_TOOL for tool in context.tools or ())
        local = is_local_model(model)
        sent = context
        if mode == "code" and system_prompt is not None:
            sent = code_context(context, system_prompt)

        def rewrite(message: AssistantMessage) -> AssistantMessage:
            if mode == "code":
                return _code_calls(message, context, has_python)
            return message if accept is None else _recover(message, context, accept, local)

        response = inner(model, sent, options)
        if inspect.isawaitable(response):
            return _later(response, rewrite)
        return _Rewritten(response, rewrite)

    return stream


async def _later(
    response: Awaitable[AssistantMessageEventStream], rewrite: Callable[[AssistantMessage], AssistantMessage]
) -> AssistantMessageEventStream:
    return _Rewritten(await response, rewrite)


class _Rewritten(AssistantMessageEventStream):
    """``source`` as it streams, with ``rewrite`` applied to its final message. The events
    pass through untouched (no cost per token): the loop takes the turn from ``result()``,
    and what it emits for the turn's end (``message_end``) carries the rewritten message."""

    __slots__ = ("_rewrite", "_rewritten", "_source")

    def __init__(
        self, source: AssistantMessageEventStream, rewrite: Callable[[AssistantMessage], AssistantMessage]
    ) -> None:
        super().__init__()
        self._source, self._rewrite = source, rewrite
        self._rewritten: AssistantMessage | None = None

    def __aiter__(self) -> AsyncIterator[AssistantMessageEvent]:
        return self._source.__aiter__()

    async def result(self) -> AssistantMessage:
        if self._rewritten is None:
            self._rewritten = self._rewrite(await self._source.result())
        return self._rewritten
