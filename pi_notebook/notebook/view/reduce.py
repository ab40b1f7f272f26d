"""The view model of one ``%%pi`` run: ``ViewState`` and the pure reducer ``AgentEvent -> ViewState``.

This module owns what the notebook output *means*: the prompt, the assistant's text and thinking
blocks, one card per tool call, injected user messages, the footer (turns, tokens, cost, elapsed
time, model) and the end state. The adapters that draw it (``render/`` for static text/HTML,
``live.py`` for live ipywidgets) read a ``ViewState`` and never interpret events themselves.

It imports no widget, IPython or Markdown code, so it is unit-tested on hand-built event
sequences and can run in any process.

Speed: ``reduce`` runs once per streamed token, so it mutates the state in place and does
O(len(delta)) work per event: streamed text is kept as a list of chunks and joined only when a
renderer reads it. Every mutation bumps the item's ``rev`` and the state's ``rev``, which lets
the live adapter redraw only what changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from ...agent.printed_turns import RECOVERED_MARKS, recovered_mark
from ...agent.types import (
    AgentEndEvent,
    AgentEvent,
    AgentToolResult,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from ...ai.events import AssistantMessageEvent
from ...runtime.events import AgentSessionEvent

__all__ = [
    "FINAL_STATUSES",
    "NOT_EXECUTED",
    "PLAN_STEP_TOOL",
    "Footer",
    "Item",
    "QueuedMessage",
    "TextBlock",
    "ThinkingBlock",
    "ToolCard",
    "ToolStatus",
    "UserItem",
    "ViewState",
    "add_notice",
    "content_to_text",
    "drop_notice",
    "explain",
    "mark_approval",
    "mark_granted",
    "mark_queued",
    "offer_grant",
    "reduce",
    "set_elapsed",
    "show_plan",
]

from .notices import SESSION_HANDLERS, add_notice, drop_notice, on_agent_start
from .state import (
    FINAL_STATUSES,
    NOT_EXECUTED,
    PLAN_STEP_TOOL,
    Footer,
    Item,
    PlanCard,
    QueuedMessage,
    QueueKind,
    TextBlock,
    ThinkingBlock,
    ToolCard,
    ToolStatus,
    UserItem,
    UserOrigin,
    ViewState,
)

# --- helpers -------------------------------------------------------------------------------


def content_to_text(content: Any) -> str:
    """The text of a message or tool-result content list, as the view shows it: unlike
    ``ai.types.content_text`` (the text blocks only), images stay in place as ``[image: mime]``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            pieces.append(block.text)
        elif kind == "image":
            pieces.append(f"[image: {getattr(block, 'mime_type', 'image')}]")
    return "\n".join(pieces)


RECOVERED_NOTE = "recovered from the model's text"
"""The card's note on a call the model printed in its text (``agent/printed_turns.py``)."""


def _touch(state: ViewState, item: Item) -> None:
    item.rev += 1
    state.rev += 1


def _add(state: ViewState, item: Item) -> None:
    state.items.append(item)
    state.rev += 1


def _card(state: ViewState, tool_call_id: str, name: str) -> ToolCard:
    card = state._cards.get(tool_call_id)
    if card is None:
        card = ToolCard(tool_call_id=tool_call_id, name=name)
        state._cards[tool_call_id] = card
        _add(state, card)
    elif name and not card.name:
        card.name = name
    return card


def _partial_block(event: Any) -> Any:
    try:
        return event.partial.content[event.content_index]
    except (AttributeError, IndexError, TypeError):
        return None


def _stamp(state: ViewState, message: Any) -> None:
    ts = getattr(message, "timestamp", None)
    if isinstance(ts, int):
        if state._first_ts is None:
            state._first_ts = ts
        state._last_ts = ts


# --- assistant block events (message_update) ---------------------------------------------------


_B = TypeVar("_B", TextBlock, ThinkingBlock)


def _streamed(state: ViewState, event: Any, cls: type[_B]) -> _B:
    item = state._blocks.get(event.content_index)
    if isinstance(item, cls):
        return item
    block = cls()
    state._blocks[event.content_index] = block
    _add(state, block)
    return block


def _on_text_start(state: ViewState, event: Any) -> None:
    _streamed(state, event, TextBlock)


def _on_thinking_start(state: ViewState, event: Any) -> None:
    _streamed(state, event, ThinkingBlock)


def _on_delta(cls: type[_B]) -> Callable[[ViewState, Any], None]:
    def handler(state: ViewState, event: Any) -> None:
        _streamed(state, event, cls).append(event.delta)
        state.rev += 1

    return handler


def _on_block_end(cls: type[_B]) -> Callable[[ViewState, Any], None]:
    def handler(state: ViewState, event: Any) -> None:
        item = _streamed(state, event, cls)
        if item.text != event.content:
            item.set(event.content)
        if isinstance(item, ThinkingBlock):
            item.redacted = bool(getattr(_partial_block(event), "redacted", False))
        item.done = True
        _touch(state, item)

    return handler


def _new_call_card(state: ViewState, call_id: str, name: str) -> ToolCard:
    """The card of a call the model just made. A card already under its id belongs to another
    call (a provider that reuses ids): this call gets its own card, which its id now names, so
    its arguments and its Approve / Deny never land on the earlier call's card."""
    card = ToolCard(tool_call_id=call_id, name=name)
    if call_id:
        state._cards[call_id] = card
    _add(state, card)
    return card


def _on_toolcall_start(state: ViewState, event: Any) -> None:
    block = _partial_block(event)
    call_id = str(getattr(block, "id", "") or "")
    name = str(getattr(block, "name", "") or "")
    state._blocks[event.content_index] = _new_call_card(state, call_id, name)


def _streaming_card(state: ViewState, event: Any) -> ToolCard:
    item = state._blocks.get(event.content_index)
    if isinstance(item, ToolCard):
        return item
    _on_toolcall_start(state, event)
    card = state._blocks[event.content_index]
    assert isinstance(card, ToolCard)
    return card


def _adopt_identity(state: ViewState, card: ToolCard, call_id: str, name: str) -> None:
    """Providers may reveal the id or name after ``toolcall_start``; register them when they do."""
    if call_id and not card.tool_call_id:
        card.tool_call_id = call_id
        state._cards[call_id] = card  # the newest call under an id owns it
    if name and not card.name:
        card.name = name


def _on_toolcall_delta(state: ViewState, event: Any) -> None:
    card = _streaming_card(state, event)
    if not card.tool_call_id or not card.name:
        block = _partial_block(event)
        call_id, name = getattr(block, "id", "") or "", getattr(block, "name", "") or ""
        _adopt_identity(state, card, str(call_id), str(name))
    card.append_args(event.delta)
    state.rev += 1


def _on_toolcall_end(state: ViewState, event: Any) -> None:
    card = _streaming_card(state, event)
    call = event.tool_call
    _adopt_identity(state, card, call.id, call.name)
    card.args = call.arguments
    _note_repeat(state, card)
    _touch(state, card)


_ENDED = {"done": "which succeeded", "error": "which failed", "denied": "which was denied"}


def _note_repeat(state: ViewState, card: ToolCard) -> None:
    """Say on ``card`` when an earlier call of the run was identical (same tool, same
    arguments), which one (counting the run's tool calls from 1) and how it ended."""
    if card.args is None:
        return
    key = _same_key(card.name, card.args)
    calls = [item for item in state.items if isinstance(item, ToolCard)]
    before = calls[: calls.index(card)] if card in calls else []
    earlier = [
        (n, other) for n, other in enumerate(before, 1)
        if other.args is not None and _same_key(other.name, other.args) == key
    ]
    if not earlier:
        return
    n, other = earlier[-1]
    how = "which failed" if other.is_error else _ENDED.get(other.status, "which has not finished")
    card.same_as = f"same as call {n}, {how}"


_canonical_json = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=repr).encode
"""``json.dumps(..., sort_keys=True, ensure_ascii=False, default=repr)`` from one encoder."""


def _same_key(name: str, arguments: Any) -> tuple[str, str]:
    return name, _canonical_json(arguments)


_BLOCK_HANDLERS: dict[str, Callable[[ViewState, Any], None]] = {
    "text_start": _on_text_start,
    "text_delta": _on_delta(TextBlock),
    "text_end": _on_block_end(TextBlock),
    "thinking_start": _on_thinking_start,
    "thinking_delta": _on_delta(ThinkingBlock),
    "thinking_end": _on_block_end(ThinkingBlock),
    "toolcall_start": _on_toolcall_start,
    "toolcall_delta": _on_toolcall_delta,
    "toolcall_end": _on_toolcall_end,
}


def _usage_tuple(usage: Any) -> tuple[int, int, int, int, float]:
    if usage is None:
        return (0, 0, 0, 0, 0.0)
    return (usage.input, usage.output, usage.cache_read, usage.cache_write, usage.cost.total)


def _show_usage(state: ViewState, usage: tuple[int, int, int, int, float]) -> None:
    """Make the footer count ``usage`` for the current message instead of what it counted so
    far: O(1), whatever the number of messages."""
    live = state._live_usage
    if usage == live:
        return
    footer = state.footer
    footer.input_tokens += usage[0] - live[0]
    footer.output_tokens += usage[1] - live[1]
    footer.cache_read_tokens += usage[2] - live[2]
    footer.cache_write_tokens += usage[3] - live[3]
    footer.cost += usage[4] - live[4]
    state._live_usage = usage
    state.rev += 1


def _on_message_update(state: ViewState, event: MessageUpdateEvent) -> None:
    message = getattr(event, "message", None)
    if getattr(message, "role", None) == "assistant":  # usage so far, where the provider reports it
        _show_usage(state, _usage_tuple(getattr(message, "usage", None)))
    inner: AssistantMessageEvent = event.assistant_message_event
    handler = _BLOCK_HANDLERS.get(inner.type)
    if handler is not None:
        handler(state, inner)
        if not state.streaming:
            state.streaming = True
            state.rev += 1


# --- whole messages -------------------------------------------------------------------------


def _on_message_start(state: ViewState, event: MessageStartEvent) -> None:
    if getattr(event.message, "role", None) == "assistant":
        state._blocks = {}
        state.streaming = False
        state._live_usage = (0, 0, 0, 0, 0.0)


def _reconcile_block(state: ViewState, index: int, block: Any) -> None:
    """Make the view match the final message, which is authoritative: it also covers
    providers that stream nothing and error messages that arrive without a ``start``."""
    item = state._blocks.get(index)
    kind = getattr(block, "type", None)
    if kind in ("text", "thinking"):
        text = block.text if kind == "text" else block.thinking
        cls = TextBlock if kind == "text" else ThinkingBlock
        if not isinstance(item, cls):
            if not text:
                return
            item = cls()
            state._blocks[index] = item
            _add(state, item)
        if item.text != text:
            item.set(text)
        if isinstance(item, ThinkingBlock):
            item.redacted = bool(getattr(block, "redacted", False))
        item.done = True
        _touch(state, item)
    elif kind == "toolCall":
        if not isinstance(item, ToolCard):
            known = state._cards.get(block.id)
            same = known is not None and (known.name, known.args) == (block.name, block.arguments)
            # the same call again (the calls of a failed turn the user chose to run) keeps its card
            item = known if same and known is not None else _new_call_card(state, block.id, block.name)
            state._blocks[index] = item
        card = item
        _adopt_identity(state, card, block.id, block.name)
        if card.args is None:
            card.args = block.arguments
        if recovered_mark(block) in RECOVERED_MARKS:
            card.recovered = RECOVERED_NOTE
        _touch(state, card)


def _end_assistant(state: ViewState, message: Any) -> None:
    for index, block in enumerate(getattr(message, "content", None) or ()):
        _reconcile_block(state, index, block)
    _show_usage(state, _usage_tuple(getattr(message, "usage", None)))
    state._live_usage = (0, 0, 0, 0, 0.0)  # counted for good; the next message starts from 0
    footer = state.footer
    if getattr(getattr(message, "usage", None), "estimated", None):
        footer.estimated = True
    footer.model = getattr(message, "response_model", None) or getattr(message, "model", "") or footer.model
    state.stop_reason = getattr(message, "stop_reason", None)
    state.error_message = getattr(message, "error_message", None)
    state._blocks = {}
    state.streaming = False


def _end_user(state: ViewState, message: Any) -> None:
    text = content_to_text(getattr(message, "content", ""))
    if not state._prompt_seen:
        # The run's first user message is the prompt (Pi emits it before any assistant
        # message); the text the runtime passed, if any, stays what is shown, and what the
        # model received, where it differs (a template expanded, values attached), beside it.
        state._prompt_seen = True
        if not state.prompt:
            state.prompt = text
        elif text.strip() != state.prompt.strip():
            state.sent = text
        state.rev += 1
        return
    origin: UserOrigin = "injected"
    for i, queued in enumerate(state.queued):
        if queued.text == text:
            origin = queued.kind
            del state.queued[i]
            break
    _add(state, UserItem(text=text, origin=origin))


def _end_tool_result(state: ViewState, message: Any) -> None:
    card = _card(state, message.tool_call_id, message.tool_name)
    if card.status in ("done", "error") or (card.status == "denied" and card.content):
        return  # tool_execution_end already filled it in; this message repeats it
    _finish_card(card, message.content, message.details, message.is_error)
    _touch(state, card)


def _on_message_end(state: ViewState, event: MessageEndEvent) -> None:
    message = event.message
    _stamp(state, message)
    role = getattr(message, "role", None)
    if role == "assistant":
        _end_assistant(state, message)
    elif role == "user":
        _end_user(state, message)
    elif role == "toolResult":
        _end_tool_result(state, message)


# --- tool execution -------------------------------------------------------------------------


def _finish_card(card: ToolCard, content: Any, details: Any, is_error: bool) -> None:
    card.content = content_to_text(content)
    card.details = details
    card.is_error = is_error
    card.progress = ""
    if card.status != "denied":
        card.status = "error" if is_error else "done"


def _on_tool_start(state: ViewState, event: ToolExecutionStartEvent) -> None:
    card = _card(state, event.tool_call_id, event.tool_name)
    if card.args is None:
        card.args = event.args
    if card.status == "streaming":
        card.status = "running"
    _note_repeat(state, card)  # the earlier call may have ended since the arguments came
    _touch(state, card)


def _on_tool_update(state: ViewState, event: ToolExecutionUpdateEvent) -> None:
    card = _card(state, event.tool_call_id, event.tool_name)
    result: AgentToolResult = event.partial_result
    card.progress = content_to_text(getattr(result, "content", None))
    _touch(state, card)


def _on_tool_end(state: ViewState, event: ToolExecutionEndEvent) -> None:
    card = _card(state, event.tool_call_id, event.tool_name)
    result = event.result
    _finish_card(card, getattr(result, "content", None), getattr(result, "details", None), event.is_error)
    _touch(state, card)
    if event.tool_name == PLAN_STEP_TOOL and not event.is_error:
        _plan_progress(state, card.args)


def _plan_progress(state: ViewState, args: Any) -> None:
    """A ``plan_step`` call that succeeded: the step it names is running, or done. (A call the
    tool refused, e.g. a step the plan does not have, changes nothing.)"""
    plan = state.plan
    step = args.get("step") if isinstance(args, dict) else None
    if plan is None or not isinstance(step, int) or not 1 <= step <= len(plan.steps):
        return
    if args.get("status") == "done":
        plan.done.add(step)
        plan.current = None if plan.current == step else plan.current
    else:
        plan.current = step
    state.rev += 1


# --- run boundaries -------------------------------------------------------------------------


def _on_turn_start(state: ViewState, event: Any) -> None:
    if state._retried_call:
        state._retried_call = False  # the failed turn again, not a new one
    else:
        state.footer.turns += 1
    state.streaming = False
    state.rev += 1


def _on_agent_end(state: ViewState, event: AgentEndEvent) -> None:
    for item in state.items:
        if isinstance(item, ToolCard) and item.status not in FINAL_STATUSES:
            # A call that never ran (aborted while streaming or awaiting approval) must not
            # look live in the frozen output.
            item.unanswered = item.status == "pending_approval"  # nobody decided (``review.py``)
            item.status = "denied" if item.unanswered else "error"
            if not item.content:
                item.progress = NOT_EXECUTED
            _touch(state, item)
        elif isinstance(item, TextBlock | ThinkingBlock) and not item.done:
            item.done = True
            _touch(state, item)
    if not state._clock_elapsed and state._first_ts is not None and state._last_ts is not None:
        state.footer.elapsed = max(0.0, (state._last_ts - state._first_ts) / 1000)
    state._blocks = {}
    state._live_usage = (0, 0, 0, 0, 0.0)  # a message that never ended keeps what it reported
    state.finished = True
    state.rev += 1


def _ignore(state: ViewState, event: Any) -> None:
    return None


_HANDLERS: dict[str, Callable[[ViewState, Any], None]] = {
    **SESSION_HANDLERS,
    "agent_start": on_agent_start,
    "agent_end": _on_agent_end,
    "turn_start": _on_turn_start,
    "turn_end": _ignore,
    "message_start": _on_message_start,
    "message_update": _on_message_update,
    "message_end": _on_message_end,
    "tool_execution_start": _on_tool_start,
    "tool_execution_update": _on_tool_update,
    "tool_execution_end": _on_tool_end,
}


def reduce(state: ViewState, event: AgentEvent | AgentSessionEvent) -> ViewState:
    """Apply one agent or session event. Mutates ``state`` in place and returns it (the same
    object): copying a transcript per token would make the hot path O(total text). Unknown
    event types are ignored, so a newer agent cannot break an older view."""
    handler = _HANDLERS.get(event.type)
    if handler is not None:
        handler(state, event)
    return state


# --- changes that do not come from agent events ------------------------------------------------


def mark_approval(state: ViewState, tool_call_id: str, status: ToolStatus) -> ViewState:
    """Set a tool card's status from the approval flow (``pending_approval``, then ``running`` or
    ``denied``). A card that does not exist yet is created, so a prompt is never lost."""
    card = _card(state, tool_call_id, "")
    card.status = status
    _touch(state, card)
    return state


def offer_grant(state: ViewState, tool_call_id: str, label: str) -> ViewState:
    """Offer "Allow for this conversation" (``label``) beside Approve / Deny ("": none)."""
    card = _card(state, tool_call_id, "")
    card.grant_offer = label
    _touch(state, card)
    return state


def mark_granted(state: ViewState, tool_call_id: str, text: str) -> ViewState:
    """Say on the card that a grant let the call through without asking."""
    card = _card(state, tool_call_id, "")
    card.granted = text
    _touch(state, card)
    return state


def mark_queued(state: ViewState, kind: QueueKind, text: str) -> ViewState:
    """Record a steering or follow-up message typed into this view; it is shown as queued until
    the agent injects it, and the injected message is then labelled with its kind."""
    state.queued.append(QueuedMessage(kind=kind, text=text))
    state.rev += 1
    return state


def explain(state: ViewState, error_message: str) -> ViewState:
    """Show the run's error as ``error_message``, a clearer version written for the user (the
    transcript keeps the provider's own text)."""
    state.error_message = error_message
    state.rev += 1
    return state


def show_plan(state: ViewState, steps: list[str], *, edited: bool = False) -> ViewState:
    """The plan this run executes, every step still to do."""
    state.plan = PlanCard(steps=list(steps), edited=edited)
    state.rev += 1
    return state


def set_elapsed(state: ViewState, seconds: float) -> ViewState:
    """Elapsed wall time from the caller's clock; takes precedence over message timestamps."""
    state.footer.elapsed = seconds
    state._clock_elapsed = True
    state.rev += 1
    return state
