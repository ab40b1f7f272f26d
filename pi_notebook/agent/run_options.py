"""``AgentRunOptions``: settings for one ``Agent.prompt`` / ``continue_`` call only.

A host that runs an agent it does not own (the notebook runs the user's ``Agent``) gives the
run its own tools, approval gate, turn limit and request settings as a value here, instead of
setting the agent's attributes and putting them back afterwards. The agent's own hooks keep
working and a hook the user assigns while the run goes on is the agent's from then on; the run's
settings add to them:

* ``tools``: the run's tool list, in place of ``state.tools`` (the state is not changed).
* ``system_prompt``: the run's system prompt, in place of ``state.system_prompt`` (a session
  that adds the project's instructions and skills to the prompt the user set).
* ``before_tool_call``: asked after the agent's own hook, unless that one blocked the call.
* ``after_tool_call``: asked after the agent's own hook, with the result that one left.
* ``transform_context``: applied after the agent's own, to the messages that one returned.
* ``should_stop_after_turn``: asked first; the agent's own hook is asked when it says go on.
* ``on_payload``: applied after the agent's own, to the payload that one returned.
* ``temperature``, ``timeout_ms``, ``max_tokens``: the stream options of every request of the run.
* ``wrap_stream``: makes the run's stream function from the agent's (``printed_turns``: calls
  the model printed in its text, code-first mode); the agent's own is not replaced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..ai.abort import AbortSignal
from ..ai.options import OnPayload
from ..ai.types import Model
from .tools import coerce_result, resolve
from .types import (
    AfterToolCallContext,
    AfterToolCallHook,
    AfterToolCallResult,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    BeforeToolCallContext,
    BeforeToolCallHook,
    BeforeToolCallResult,
    StreamFn,
    TransformContext,
    TurnContext,
)

__all__ = ["AgentRunOptions"]


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentRunOptions:
    """See the module docstring. Every field left ``None`` leaves the agent's own setting."""

    tools: Sequence[AgentTool] | None = None
    system_prompt: str | None = None
    before_tool_call: BeforeToolCallHook | None = None
    after_tool_call: AfterToolCallHook | None = None
    transform_context: TransformContext | None = None
    should_stop_after_turn: Callable[[TurnContext], Any] | None = None
    on_payload: OnPayload | None = None
    temperature: float | None = None
    timeout_ms: int | None = None
    max_tokens: int | None = None
    wrap_stream: Callable[[StreamFn], StreamFn] | None = None

    def stream_fn(self, own: StreamFn) -> StreamFn:
        """The run's stream function: the agent's ``own``, wrapped when the run says so."""
        return own if self.wrap_stream is None else self.wrap_stream(own)

    def apply(self, config: AgentLoopConfig) -> AgentLoopConfig:
        """``config`` (the agent's loop config for this run) with this run's settings added."""
        for name in ("temperature", "timeout_ms", "max_tokens"):
            value = getattr(self, name)
            if value is not None:
                setattr(config, name, value)
        if self.before_tool_call is not None:
            config.before_tool_call = _then(config.before_tool_call, self.before_tool_call)
        if self.after_tool_call is not None:
            config.after_tool_call = _after(config.after_tool_call, self.after_tool_call)
        if self.transform_context is not None:
            config.transform_context = _transform(config.transform_context, self.transform_context)
        if self.should_stop_after_turn is not None:
            own = config.should_stop_after_turn
            config.should_stop_after_turn = _either(self.should_stop_after_turn, own)
        if self.on_payload is not None:
            config.on_payload = _chain(config.on_payload, self.on_payload)
        return config


def _then(own: BeforeToolCallHook | None, run: BeforeToolCallHook) -> BeforeToolCallHook:
    """The agent's hook first (it may block the call), then the run's."""
    if own is None:
        return run

    async def before(ctx: BeforeToolCallContext, signal: AbortSignal | None = None) -> Any:
        first = coerce_result(await resolve(own(ctx, signal)), BeforeToolCallResult)
        if first is not None and first.block:
            return first
        return await resolve(run(ctx, signal))

    return before


def _after(own: AfterToolCallHook | None, run: AfterToolCallHook) -> AfterToolCallHook:
    """The agent's hook first; the run's sees the result with that one's changes, and what
    each returns adds up (the run's fields win)."""
    if own is None:
        return run

    async def after(ctx: AfterToolCallContext, signal: AbortSignal | None = None) -> Any:
        first = coerce_result(await resolve(own(ctx, signal)), AfterToolCallResult)
        seen = ctx
        if first is not None:
            fields = ("content", "details", "usage", "terminate")
            changes = {k: getattr(first, k) for k in fields if getattr(first, k) is not None}
            is_error = first.is_error if first.is_error is not None else ctx.is_error
            seen = replace(ctx, result=replace(ctx.result, **changes), is_error=is_error)
        second = coerce_result(await resolve(run(seen, signal)), AfterToolCallResult)
        if first is None or second is None:
            return second if second is not None else first
        merged = {k: v for k, v in vars(second).items() if v is not None}
        return replace(first, **merged)

    return after


def _transform(own: TransformContext | None, run: TransformContext) -> TransformContext:
    """The agent's ``transform_context`` first; the run's gets the messages it returned."""
    if own is None:
        return run

    async def transform(
        messages: list[AgentMessage], signal: AbortSignal | None = None
    ) -> list[AgentMessage]:
        first = list(await resolve(own(messages, signal)))
        return list(await resolve(run(first, signal)))

    return transform


def _either(
    run: Callable[[TurnContext], Any], own: Callable[[TurnContext], Any] | None
) -> Callable[[TurnContext], Any]:
    """Stop when the run's hook says so, else when the agent's own does."""

    async def should_stop(ctx: TurnContext) -> bool:
        if await resolve(run(ctx)):
            return True
        return bool(own is not None and await resolve(own(ctx)))

    return should_stop


def _chain(own: OnPayload | None, run: OnPayload) -> OnPayload:
    """The agent's ``on_payload`` first; the run's sees the payload it returned."""
    if own is None:
        return run

    async def on_payload(payload: dict[str, Any], model: Model) -> dict[str, Any] | None:
        replaced = await resolve(own(payload, model))
        current = payload if replaced is None else replaced
        second = await resolve(run(current, model))
        return current if second is None else second

    return on_payload
