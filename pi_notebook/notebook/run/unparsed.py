"""A turn a local server could not parse, and a cell run again after a failed attempt.

A llama.cpp server streams a small model's tool call as it parses it, then, when the text
after the call does not parse ("The model produced output that does not match the expected
... format"), ends the stream with an error: the tool call is complete, but the turn failed
and the call was never run. ``unparsed_calls`` finds such calls; the runner offers them on
their cards (Approve runs them, through the run's approval policy), and ``repaired`` is the
turn with only those calls, which ``AgentSession.continue_with`` gives the agent's loop as the
model's answer, so the loop runs them as usual and the model answers their results.

``retry_in_place``: a cell run again after its attempt failed before anything ran (the prompt,
then the error) takes that attempt's place instead of adding the same prompt a second time:
the model saw the prompt twice in a row after each failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...ai.types import AssistantMessage, ToolCall, Usage, UserMessage
from ...runtime import AgentSession
from ...session import SessionManager
from ...session.entries import CustomEntry, MessageEntry
from ..tools.previews import approval_labels
from ..view.notices import rerun_turn
from .approval import ApprovalGate
from .errors import is_unparsed_tool_call

__all__ = [
    "offer_line",
    "offer_unparsed",
    "offer_unparsed_calls",
    "repaired",
    "retry_in_place",
    "unparsed_calls",
]


def unparsed_calls(message: Any) -> list[ToolCall]:
    """The tool calls of a turn that ended in the server's parse error (else none)."""
    if not isinstance(message, AssistantMessage) or message.stop_reason != "error":
        return []
    if not is_unparsed_tool_call(message.error_message):
        return []
    return [block for block in message.content if isinstance(block, ToolCall)]


def repaired(message: AssistantMessage, calls: Sequence[ToolCall]) -> AssistantMessage:
    """The failed turn as the model meant it: the chosen calls, ending in ``toolUse``. Only the
    calls: the view already shows the turn's text, and its usage was counted once."""
    return message.model_copy(
        update={"content": list(calls), "stop_reason": "toolUse", "error_message": None, "usage": Usage()}
    )


def _text(message: Any) -> Any:
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return content
    return [(getattr(b, "type", None), getattr(b, "text", None)) for b in content or ()]


def retry_in_place(session: AgentSession, message: UserMessage, run_entry: str) -> bool:
    """When the transcript ends with ``message`` and the error it got (nothing ran between),
    drop that attempt: from the agent's messages, and from the session's current branch (the
    leaf goes back before the attempt's ``run_entry`` entry, so the file keeps it as a branch).
    Returns whether it did."""
    messages = session.messages
    if len(messages) < 2:
        return False
    prompt, failed = messages[-2], messages[-1]
    if not isinstance(failed, AssistantMessage) or failed.stop_reason != "error":
        return False
    if getattr(prompt, "role", None) != "user" or _text(prompt) != _text(message):
        return False
    _rewind(session.session_manager, prompt, run_entry)
    session.truncate(len(messages) - 2)
    return True


def _is_prompt(entry: Any, prompt: Any) -> bool:
    message = getattr(entry, "message", None) if isinstance(entry, MessageEntry) else None
    return getattr(message, "role", None) == "user" and _text(message) == _text(prompt)


def _is_run_entry(entry: Any, run_entry: str) -> bool:
    return isinstance(entry, CustomEntry) and entry.custom_type == run_entry


def _rewind(manager: SessionManager, prompt: Any, run_entry: str) -> None:
    """Move the session's leaf back before the last ``prompt`` on its branch and the
    ``run_entry`` entries just before it."""
    path = manager.get_branch()
    starts = [i for i, entry in enumerate(path) if _is_prompt(entry, prompt)]
    if not starts:
        return
    start = starts[-1]
    while start > 0 and _is_run_entry(path[start - 1], run_entry):
        start -= 1
    parent = path[start].parent_id
    if parent is None:
        manager.reset_leaf()
    else:
        manager.branch(parent)


def offer_line(name: str, why: str) -> str:
    """The card's line for a call the model meant but did not make through the API (``why``),
    in its buttons' words: a call the server could not finish parsing, one printed in text."""
    yes, no = approval_labels(name)
    return f"{why}. {yes} runs it (the model then gets its result), {no} leaves it."


def offer_unparsed(name: str) -> str:
    """The card's line for a call the server could not finish parsing."""
    return offer_line(name, "not executed: the server could not parse the model's output after this call")


async def offer_unparsed_calls(run: Any, gate: ApprovalGate, options: Any) -> None:
    """The run (a ``PiRun``) ended in the server's parse error after complete tool calls:
    where someone can click, each card asks (Approve runs the call, through the run's policy);
    the approved calls then run in the agent's loop as the turn's own, and the model goes on."""
    messages = run.agent.state.messages
    failed = messages[-1] if messages and run.plan.mode.can_ask else None
    calls = unparsed_calls(failed)
    if not isinstance(failed, AssistantMessage) or not calls or run.aborted:
        return
    chosen = []
    for call in calls:
        run._note_approval(call.id, offer_unparsed(call.name))
        if await run.view.request_approval(call.id):
            chosen.append(call)
        run._note_approval(call.id, "")
    if not chosen or run.aborted:
        return
    gate.approve(chosen)  # the click was the approval of these exact calls
    run.session.truncate(len(messages) - 1)  # the failed turn stays in the session file
    rerun_turn(run.view.state)
    await run.session.continue_with(repaired(failed, chosen), options)
