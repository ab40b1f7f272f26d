"""The pure reducer ``AgentEvent -> ViewState`` over realistic, hand-built event sequences."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from view_events import Run, tool_run, usage

import pi_notebook.notebook.view.reduce as view
from pi_notebook.agent.types import (
    AgentEndEvent,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from pi_notebook.ai.events import (
    TextDeltaEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from pi_notebook.ai.types import AssistantMessage, TextContent, ToolCall, UserMessage
from pi_notebook.notebook.view.reduce import (
    NOT_EXECUTED,
    TextBlock,
    ThinkingBlock,
    ToolCard,
    UserItem,
    ViewState,
    add_notice,
    mark_approval,
    mark_queued,
    reduce,
    set_elapsed,
)
from pi_notebook.notebook.view.render import activity
from pi_notebook.runtime.events import AutoRetryEndEvent, AutoRetryStartEvent


def run_events(run: Run, prompt: str | None = None) -> ViewState:
    state = ViewState(prompt=prompt or "")
    for event in run.events:
        assert reduce(state, event) is state
    return state


def kinds(state: ViewState) -> list[str]:
    return [item.kind for item in state.items]


def test_streamed_text_is_joined_in_order_and_closed() -> None:
    answer = "Hello! Here is a *streamed* answer with `code` and a list:\n\n- one\n- two\n"
    run = Run(chunk=3).start("Say hello")
    message = run.assistant(("text", answer), usage_=usage(12, 30, 0.00042))
    run.turn_end(message).end()

    state = run_events(run, "Say hello")

    assert kinds(state) == ["text"]
    block = state.items[0]
    assert isinstance(block, TextBlock)
    assert block.text == answer
    assert block.done
    assert state.prompt == "Say hello"
    assert state.stop_reason == "stop"
    assert state.error_message is None
    assert state.finished
    assert state.footer.turns == 1
    assert (state.footer.input_tokens, state.footer.output_tokens) == (12, 30)
    assert state.footer.cost == pytest.approx(0.00042)
    assert state.footer.model == "faux-1"


def test_text_is_visible_while_streaming_before_the_block_ends() -> None:
    run = Run(chunk=2).start("q")
    run.assistant(("text", "abcdef"))
    state = ViewState()
    seen: list[str] = []
    for event in run.events:
        reduce(state, event)
        if state.items:
            seen.append(state.items[0].text)  # type: ignore[union-attr]
    assert seen[:4] == ["", "ab", "abcd", "abcdef"]
    assert not isinstance(state.items[0], ToolCard)


def test_each_text_delta_bumps_revisions_without_adding_items() -> None:
    run = Run(chunk=1).start("q")
    run.assistant(("text", "xyz"))
    state = ViewState()
    revs = []
    for event in run.events:
        reduce(state, event)
        revs.append(state.rev)
    assert len(state.items) == 1
    assert revs == sorted(revs)
    deltas = [
        e
        for e in run.events
        if isinstance(e, MessageUpdateEvent) and e.assistant_message_event.type == "text_delta"
    ]
    assert len(deltas) == 3


def test_thinking_then_text_keeps_two_blocks_and_redaction() -> None:
    run = Run().start("think first")
    run.assistant(("thinking", "Let me consider the options carefully."), ("text", "Option B."))
    run.end()
    state = run_events(run)
    assert kinds(state) == ["thinking", "text"]
    thinking = state.items[0]
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.text == "Let me consider the options carefully."
    assert thinking.done
    assert not thinking.redacted
    assert state.prompt == "think first"  # taken from the first user message when not given

    redacted = Run().start("q")
    message = redacted.assistant(("thinking", "[Reasoning redacted]"))
    message.content[0].redacted = True  # type: ignore[union-attr]
    state = run_events(redacted)
    assert isinstance(state.items[0], ThinkingBlock)
    assert state.items[0].redacted


def test_two_parallel_tools_with_progress_error_and_completion_order() -> None:
    run = tool_run()
    state = ViewState(prompt="Add 2 and 3, then read missing.txt")
    statuses: list[tuple[str, str]] = []
    progress_seen = ""
    for event in run.events:
        reduce(state, event)
        cards = [i for i in state.items if isinstance(i, ToolCard)]
        statuses.append(tuple(c.status for c in cards))  # type: ignore[arg-type]
        if cards and cards[0].progress:
            progress_seen = cards[0].progress

    assert kinds(state) == ["thinking", "text", "tool", "tool", "text"]
    add, read = state.items[2], state.items[3]
    assert isinstance(add, ToolCard)
    assert isinstance(read, ToolCard)
    assert (add.tool_call_id, add.name, add.args) == ("call_1", "add", {"a": 2, "b": 3})
    assert add.args_text == '{"a": 2, "b": 3}'
    assert (add.status, add.content, add.details, add.is_error, add.progress) == (
        "done",
        "5",
        {"exact": True},
        False,
        "",
    )
    assert (read.status, read.content, read.is_error) == ("error", "ENOENT: missing.txt", True)
    assert progress_seen == "adding…"
    # streaming -> running for both, then the second fails first (completion order).
    assert ("streaming",) in statuses
    assert ("running", "running") in statuses
    assert ("running", "error") in statuses
    assert statuses.index(("running", "error")) < statuses.index(("done", "error"))
    assert state.tool_card("call_2") is read
    assert state.footer.turns == 2


def test_tool_result_message_without_execution_events_fills_the_card() -> None:
    """An abort during tools writes result messages for calls that have none, without execution events."""
    run = Run().start("q")
    message = run.assistant(("tool", "c1", "slow", {}), stop_reason="toolUse")
    run.tool_result("c1", "slow", "Operation aborted", is_error=True)
    run.turn_end(message).end()
    state = run_events(run)
    card = state.items[0]
    assert isinstance(card, ToolCard)
    assert (card.status, card.content, card.progress) == ("error", "Operation aborted", "")


def test_steering_and_follow_up_injections_are_labelled_when_queued_here() -> None:
    run = Run().start("Start the analysis")
    first = run.assistant(("tool", "t1", "work", {}), stop_reason="toolUse")
    run.tool_start("t1", "work", {}).tool_end("t1", "work", "ok").tool_result("t1", "work", "ok").turn_end(
        first
    )
    run.turn().user("also check column X")
    second = run.assistant(("text", "Checked X."))
    run.turn_end(second).turn().user("now summarise").user("typed elsewhere")
    third = run.assistant(("text", "Summary."))
    run.turn_end(third).end()

    state = ViewState(prompt="Start the analysis")
    mark_queued(state, "steer", "also check column X")
    mark_queued(state, "follow_up", "now summarise")
    assert [q.kind for q in state.queued] == ["steer", "follow_up"]
    for event in run.events:
        reduce(state, event)

    users = [i for i in state.items if isinstance(i, UserItem)]
    assert [(u.text, u.origin) for u in users] == [
        ("also check column X", "steer"),
        ("now summarise", "follow_up"),
        ("typed elsewhere", "injected"),
    ]
    assert state.queued == []
    assert kinds(state) == ["tool", "user", "text", "user", "user", "text"]
    assert state.footer.turns == 3


def test_steer_before_prompt_is_injected_not_taken_for_the_prompt() -> None:
    """A steer queued before prompt() arrives as its own user message right after the prompt."""
    run = Run().start("the prompt").user("early steer")
    run.assistant(("text", "ok"))
    run.end()
    state = run_events(run, "the prompt")
    assert state.prompt == "the prompt"
    assert [(i.kind, getattr(i, "text", "")) for i in state.items] == [
        ("user", "early steer"),
        ("text", "ok"),
    ]


def test_aborted_run_during_tools_and_streaming_ends_frozen() -> None:
    """An abort while two tools run, plus a call that was still streaming its arguments."""
    run = Run().start("q")
    first = run.assistant(
        ("tool", "a", "sleep", {"s": 9}), ("tool", "b", "sleep", {"s": 9}), stop_reason="toolUse"
    )
    run.tool_start("a", "sleep", {"s": 9}).tool_start("b", "sleep", {"s": 9})
    run.tool_end("a", "sleep", "Operation aborted", is_error=True)
    run.tool_end("b", "sleep", "Operation aborted", is_error=True)
    run.tool_result("a", "sleep", "Operation aborted", is_error=True)
    run.tool_result("b", "sleep", "Operation aborted", is_error=True)
    run.turn_end(first).turn()
    # The next response is cut while a tool call streams: no toolcall_end, no execution.
    partial_run = Run(ts=run.ts)
    partial_run.assistant(("text", "Trying again"), ("tool", "c", "sleep", {"s": 1}))
    updates = [e for e in partial_run.events if e.type != "message_end"]
    updates = [
        e
        for e in updates
        if getattr(e, "assistant_message_event", None) is None
        or e.assistant_message_event.type != "toolcall_end"
    ]
    run.events += updates
    aborted = AssistantMessage(
        content=[TextContent(text="Trying again")],
        stop_reason="aborted",
        error_message="Request was aborted",
        model="faux-1",
    )
    run.events += [
        MessageEndEvent(message=aborted),
        TurnEndEvent(message=aborted, tool_results=[]),
        AgentEndEvent(messages=[]),
    ]

    state = run_events(run)
    cards = {c.tool_call_id: c for c in state.items if isinstance(c, ToolCard)}
    assert [cards[k].status for k in ("a", "b", "c")] == ["error", "error", "error"]
    assert cards["a"].content == "Operation aborted"
    assert cards["c"].progress == NOT_EXECUTED
    assert cards["c"].content == ""
    assert state.stop_reason == "aborted"
    assert state.error_message == "Request was aborted"
    assert state.finished
    assert all(i.done for i in state.items if isinstance(i, TextBlock | ThinkingBlock))


def test_error_run_without_start_event() -> None:
    """The provider failed before ``start``: message_start carries the final (error) message."""
    failed = AssistantMessage(
        content=[], stop_reason="error", error_message="401 invalid x-api-key", model="m"
    )
    events = [
        AgentStartEvent(),
        TurnStartEvent(),
        MessageStartEvent(message=UserMessage(content="hi")),
        MessageEndEvent(message=UserMessage(content="hi")),
        MessageStartEvent(message=failed),
        MessageEndEvent(message=failed),
        TurnEndEvent(message=failed, tool_results=[]),
        AgentEndEvent(messages=[]),
    ]
    state = ViewState(prompt="hi")
    for event in events:
        reduce(state, event)
    assert state.items == []
    assert (state.stop_reason, state.error_message, state.finished) == (
        "error",
        "401 invalid x-api-key",
        True,
    )


def test_error_after_partial_text_keeps_the_text() -> None:
    run = Run().start("q")
    message = run.assistant(("text", "partial ans"), stop_reason="error", error_message="connection reset")
    run.turn_end(message).end()
    state = run_events(run)
    assert [i.text for i in state.items] == ["partial ans"]  # type: ignore[union-attr]
    assert state.error_message == "connection reset"


def test_final_message_is_authoritative_for_non_streaming_providers() -> None:
    run = Run().start("q")
    message = run.assistant(
        ("text", "whole"), ("tool", "t", "calc", {"x": 1}), stream=False, stop_reason="toolUse"
    )
    run.turn_end(message).end()
    state = run_events(run)
    assert kinds(state) == ["text", "tool"]
    card = state.items[1]
    assert isinstance(card, ToolCard)
    assert (card.tool_call_id, card.name, card.args) == ("t", "calc", {"x": 1})


def test_tool_identity_revealed_late_is_adopted() -> None:
    """Some providers know neither id nor name at ``toolcall_start``."""
    blank = AssistantMessage(content=[], model="m")
    call = ToolCall(id="late-id", name="late_name", arguments={"k": "v"})
    known = AssistantMessage(content=[call], model="m")
    updates = [
        ToolCallStartEvent(0, blank),
        ToolCallDeltaEvent(0, '{"k": ', blank),
        ToolCallDeltaEvent(0, '"v"}', known),
        ToolCallEndEvent(0, call, known),
    ]
    state = ViewState(prompt="q")
    reduce(state, MessageStartEvent(message=blank))
    for inner in updates:
        reduce(state, MessageUpdateEvent(message=inner.partial, assistant_message_event=inner))
    reduce(state, MessageEndEvent(message=known))
    cards = [i for i in state.items if isinstance(i, ToolCard)]
    assert len(cards) == 1
    assert (cards[0].tool_call_id, cards[0].name, cards[0].args_text) == (
        "late-id",
        "late_name",
        '{"k": "v"}',
    )
    assert state.tool_card("late-id") is cards[0]


def test_usage_and_cost_accumulate_over_turns_and_the_final_usage_replaces_the_partial() -> None:
    run = Run().start("q")
    first = run.assistant(
        ("tool", "t", "f", {}), stop_reason="toolUse", usage_=usage(1000, 50, 0.0105, cache_read=200)
    )
    # A provider that reports live usage on the partial: shown while streaming, not counted twice.
    for event in run.events:
        if isinstance(event, MessageUpdateEvent):
            event.message.usage = usage(999, 999, 9.99)
    run.tool_start("t", "f", {}).tool_end("t", "f", "ok").tool_result("t", "f", "ok").turn_end(first).turn()
    second = run.assistant(("text", "done"), usage_=usage(1300, 80, 0.0142))
    run.turn_end(second).end()
    state = run_events(run)
    footer = state.footer
    assert footer.turns == 2
    assert (footer.input_tokens, footer.output_tokens, footer.cache_read_tokens) == (2300, 130, 200)
    assert footer.cost == pytest.approx(0.0247)


def test_the_footer_shows_the_usage_the_streaming_message_reports() -> None:
    run = Run().start("q")
    run.assistant(("text", "first answer"), usage_=usage(100, 10, 0.01))
    run.turn().assistant(("text", "streaming on"), usage_=usage(300, 40, 0.03))
    for event in run.events[-6:]:
        if isinstance(event, MessageUpdateEvent):
            event.message.usage = usage(300, 20, 0.02)
    state = ViewState()
    for event in run.events[:-1]:  # up to the last update: the second message still streams
        reduce(state, event)
    footer = state.footer
    assert state.streaming
    assert (footer.input_tokens, footer.output_tokens) == (400, 30)
    assert footer.cost == pytest.approx(0.03)
    reduce(state, run.events[-1])
    assert (footer.input_tokens, footer.output_tokens) == (400, 50)
    assert footer.cost == pytest.approx(0.04)


def test_a_stopped_or_failed_answer_keeps_its_usage() -> None:
    run = Run().start("q")
    run.assistant(
        ("text", "half"), stop_reason="aborted", usage_=usage(120, 7, 0.002), error_message="aborted"
    )
    run.end()
    footer = run_events(run).footer
    assert (footer.input_tokens, footer.output_tokens) == (120, 7)
    # Interrupted before its end: what the partial reported stays counted.
    run = Run().start("q")
    run.assistant(("text", "half an answer"))
    for event in run.events:
        if isinstance(event, MessageUpdateEvent):
            event.message.usage = usage(50, 3, 0.001)
    run.events.pop()  # no message_end
    footer = run_events(run.end()).footer
    assert (footer.input_tokens, footer.output_tokens) == (50, 3)


def test_a_retried_call_is_the_same_turn() -> None:
    run = Run().start("q")
    failed = run.assistant(stop_reason="error", error_message="503", usage_=usage(10, 0, 0.0))
    run.turn_end(failed).end()
    run.events.append(AutoRetryStartEvent(attempt=1, max_attempts=3, delay_ms=10, error_message="503"))
    run.events += [AgentStartEvent(), TurnStartEvent()]
    call = run.assistant(("tool", "t", "f", {}), stop_reason="toolUse")
    run.events.append(AutoRetryEndEvent(success=True, attempt=1))
    run.tool_start("t", "f", {}).tool_end("t", "f", "ok").tool_result("t", "f", "ok").turn_end(call).turn()
    run.turn_end(run.assistant(("text", "done"))).end()
    state = run_events(run)
    assert state.footer.turns == 2, "the failed turn and the tool's follow-up; the retry is neither"
    assert state.footer.input_tokens == 30, "the failed call's tokens were spent"


def test_elapsed_comes_from_timestamps_unless_a_clock_set_it() -> None:
    run = tool_run(ts=5_000)
    state = run_events(run)
    first_ts = next(e.message.timestamp for e in run.events if e.type == "message_end")
    last_ts = [e.message.timestamp for e in run.events if e.type == "message_end"][-1]
    assert state.footer.elapsed == pytest.approx((last_ts - first_ts) / 1000)

    clocked = ViewState()
    set_elapsed(clocked, 12.5)
    for event in run.events:
        reduce(clocked, event)
    assert clocked.footer.elapsed == 12.5


def test_approval_marks_and_denial_survive_the_blocked_result() -> None:
    run = Run().start("q")
    message = run.assistant(("tool", "w", "run_code", {"code": "rm()"}), stop_reason="toolUse")
    state = run_events(run)
    reduce(state, run.tool_start("w", "run_code", {}).events[-1])
    assert state.tool_card("w").status == "running"  # type: ignore[union-attr]
    mark_approval(state, "w", "pending_approval")
    assert state.tool_card("w").status == "pending_approval"  # type: ignore[union-attr]
    mark_approval(state, "w", "denied")
    reduce(state, _blocked("w"))
    card = state.tool_card("w")
    assert card is not None
    assert (card.status, card.content, card.is_error) == ("denied", "Tool call denied by the user.", True)
    reduce(state, TurnEndEvent(message=message, tool_results=[]))
    reduce(state, AgentEndEvent(messages=[]))
    assert card.status == "denied"


def _blocked(call_id: str) -> ToolExecutionEndEvent:
    from pi_notebook.agent.types import AgentToolResult

    result = AgentToolResult(content=[TextContent(text="Tool call denied by the user.")], details={})
    return ToolExecutionEndEvent(tool_call_id=call_id, tool_name="run_code", result=result, is_error=True)


def test_pending_approval_at_agent_end_becomes_denied() -> None:
    state = ViewState()
    mark_approval(state, "x", "pending_approval")
    reduce(state, AgentEndEvent(messages=[]))
    card = state.tool_card("x")
    assert card is not None
    assert card.status == "denied"


def test_notice_and_unknown_events_and_stray_deltas() -> None:
    state = ViewState(prompt="p")
    add_notice(state, "Approvals were auto-denied (headless run).")
    assert state.notice == "Approvals were auto-denied (headless run)."

    class Future:
        type = "something_new"

    before = state.rev
    reduce(state, Future())  # type: ignore[arg-type]
    assert state.rev == before
    # A delta for a block whose start was never seen still shows up.
    partial = AssistantMessage(content=[TextContent(text="zz")])
    reduce(
        state, MessageUpdateEvent(message=partial, assistant_message_event=TextDeltaEvent(0, "zz", partial))
    )
    assert [i.text for i in state.items] == ["zz"]  # type: ignore[union-attr]


def test_view_module_imports_no_widgets() -> None:
    source = Path(view.__file__).read_text()
    assert "ipywidgets" not in source.split('"""', 2)[2]
    assert "IPython" not in source.split('"""', 2)[2]


def test_activity_says_what_a_running_view_waits_for() -> None:
    state = ViewState(prompt="q")
    seen: list[str] = [activity(state)]
    run = Run().start("q")
    run.assistant(("text", "Let me look."), ("tool", "t1", "list_variables", {}), stop_reason="toolUse")
    run.tool_start("t1", "list_variables", {})
    run.tool_end("t1", "list_variables", "x: int")
    run.turn()
    for event in run.events:
        reduce(state, event)
        if not seen or activity(state) != seen[-1]:
            seen.append(activity(state))
    view.mark_approval(state, "t2", "pending_approval")
    seen.append(activity(state))
    view.mark_approval(state, "t2", "denied")
    reduce(state, AgentEndEvent(messages=[]))
    seen.append(activity(state))
    assert seen == [
        "waiting for the model",  # nothing streamed yet: a slow prompt, a silent server
        "writing",
        "waiting for the model",  # the message ended; the tool has not started
        "running list_variables",
        "waiting for the model",  # the next turn
        "waiting for approval",
        "",
    ]


def test_a_call_sent_again_whole_keeps_its_card_and_another_call_under_its_id_gets_its_own() -> None:
    """A turn that arrives whole (no streamed blocks) re-uses the card of the same call (the
    calls of a failed turn the user chose to run); a different call under the same id (a
    provider that reuses ids) gets a card of its own."""
    def turn(state: ViewState, call: ToolCall) -> None:
        message = AssistantMessage(
            content=[call], api="faux", provider="faux", model="m", stop_reason="toolUse"
        )
        reduce(state, MessageStartEvent(message=message))
        reduce(state, MessageEndEvent(message=message))

    state = ViewState(prompt="go")
    first = ToolCall(id="call_0", name="run_code", arguments={"code": "print(1)"})
    turn(state, first)
    turn(state, first.model_copy())
    other = ToolCall(id="call_0", name="run_code", arguments={"code": "rm -rf ~"})
    turn(state, other)
    cards = [item for item in state.items if isinstance(item, ToolCard)]
    assert [card.args for card in cards] == [first.arguments, other.arguments]
    assert state.tool_card("call_0") is cards[1]


def test_what_the_model_received_is_kept_when_it_differs_from_the_prompt() -> None:
    """The first user message is what the model got: a template's expansion, attached values."""
    run = Run().start("Review model.py please.")
    run.assistant(("text", "ok"))
    run.end()
    state = run_events(run, "/review model.py")
    assert (state.prompt, state.sent) == ("/review model.py", "Review model.py please.")
    same = run_events(Run().start("as typed").end(), "as typed")
    assert same.sent == ""
    unseen = run_events(Run().start("as sent").end())  # no prompt passed: the message is the prompt
    assert (unseen.prompt, unseen.sent) == ("as sent", "")
