"""The live view's approvals and controls (Approve / Deny, Stop, Send / Queue, close), its
frozen bundle and error reporting, and a run on the real agent loop with the faux provider,
without a kernel (widget state read through traitlets)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import ipywidgets as W
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from view_events import Run, tool_run
from widget_helpers import (
    Controls,
    buttons,
    classed,
    find,
    markdown_sources,
)

from pi_notebook.ai.types import TextContent
from pi_notebook.notebook.view import render
from pi_notebook.notebook.view.live import (
    NOTICE_NOT_INTERACTIVE,
    LiveView,
    ViewControls,
)
from pi_notebook.notebook.view.parts import ToolCardPart
from pi_notebook.notebook.view.reduce import ToolCard

# --- approvals and controls -----------------------------------------------------------------------------


def started_tool_view(controls: ViewControls | None = None) -> LiveView:
    view = LiveView("q", controls=controls)
    run = Run().start("q")
    run.assistant(("tool", "w1", "run_code", {"code": "x = 1"}), stop_reason="toolUse")
    run.tool_start("w1", "run_code", {"code": "x = 1"})
    for event in run.events:
        view.handle(event)
    return view


@pytest.mark.parametrize(
    ("label", "expected", "status"), [("Approve", True, "running"), ("Deny", False, "denied")]
)
async def test_approval_click_resolves_the_future(label: str, expected: bool, status: str) -> None:
    view = started_tool_view()
    future = view.request_approval("w1")
    assert not future.done()
    (card,) = classed(view, "pi-tool")
    assert "pi-tool--pending_approval" in card._dom_classes
    assert "awaiting approval" in card.children[0].value
    assert set(buttons(view)) == {"Approve", "Deny"}
    assert view.pending_approvals == ["w1"]

    buttons(view)[label].click()

    assert future.done()
    assert await future is expected
    assert view.state.tool_card("w1").status == status  # type: ignore[union-attr]
    assert buttons(view) == {}  # the decision replaces the buttons
    assert f"pi-tool--{status}" in card._dom_classes
    assert view.pending_approvals == []


async def test_approval_is_auto_denied_without_an_interactive_frontend() -> None:
    view = LiveView("q", interactive=False)
    future = view.request_approval("w9")
    assert future.done()
    assert await future is False
    assert view.state.tool_card("w9").status == "denied"  # type: ignore[union-attr]
    assert "Denied a tool automatically" in view.state.notice
    assert NOTICE_NOT_INTERACTIVE in view.state.notice


async def test_policy_resolution_and_cancelled_futures() -> None:
    view = started_tool_view()
    future = view.request_approval("w1")
    assert view.request_approval("w1") is future  # asking twice shows one prompt
    future.cancel()  # the runtime gave up (run aborted)
    view.resolve_approval("w1", True)  # a late click must not raise
    view.resolve_approval("other", False)  # a policy decision for a card without a prompt
    assert view.state.tool_card("other").status == "denied"  # type: ignore[union-attr]


async def test_stop_denies_waiting_approvals_then_stops() -> None:
    calls = Controls()
    view = started_tool_view(calls.controls())
    future = view.request_approval("w1")
    buttons(view)["Stop"].click()
    assert calls.calls == [("stop", None)]
    assert await future is False
    assert buttons(view)["Stop"].disabled
    assert view.state.notice == "Stopping…"


def test_send_and_queue_call_the_controls_with_the_text_and_clear_it() -> None:
    calls = Controls()
    view = LiveView("q", controls=calls.controls())
    (box,) = find(view, W.Text)
    controls = buttons(view)

    box.value = "also check column X"
    controls["Send"].click()
    assert box.value == ""
    box.value = "then write a summary"
    controls["Queue"].click()
    assert box.value == ""
    box.value = "   "
    controls["Send"].click()  # blank: nothing is sent
    assert calls.calls == [("steer", "also check column X"), ("follow_up", "then write a summary")]
    assert "queued steer: also check column X" in view._queued.value
    assert "queued follow-up: then write a summary" in view._queued.value

    # When the agent injects the steer, the queued line goes and the transcript labels it.
    run = Run().start("q").user("also check column X")
    for event in run.events:
        view.handle(event)
    assert "also check column X" not in view._queued.value
    (user,) = classed(view, "pi-user-item")
    assert "↳ steer: also check column X" in user.value


def test_a_failing_control_keeps_the_text_and_says_why() -> None:
    def refuse(text: str) -> None:
        raise RuntimeError("the run has ended")

    view = LiveView("q", controls=ViewControls(on_stop=lambda: None, on_steer=refuse, on_follow_up=refuse))
    (box,) = find(view, W.Text)
    box.value = "late"
    buttons(view)["Send"].click()
    assert box.value == "late"
    assert view.state.notice == "Could not send the message: the run has ended"


async def test_close_disables_every_control_and_is_idempotent() -> None:
    calls = Controls()
    view = started_tool_view(calls.controls())
    future = view.request_approval("w1")
    view.close()
    view.close()
    assert await future is False
    for widget in [*find(view, W.Button), *find(view, W.Text)]:
        assert widget.disabled, widget.description
    assert {"Stop", "Send", "Queue"} <= set(buttons(view))
    buttons(view)["Stop"].click()
    assert calls.calls == []  # a disabled, closed view does nothing


async def test_close_disables_approval_buttons_still_shown() -> None:
    part = ToolCardPart(lambda call_id, ok: None)
    part.draw(ToolCard(tool_call_id="t", name="n", status="pending_approval"))
    assert part.approve is not None
    assert part.deny is not None
    part.disable()
    assert part.approve.disabled
    assert part.deny.disabled


def test_static_bundle_matches_the_renderer() -> None:
    view = LiveView("Add 2 and 3, then read missing.txt")
    for event in tool_run().events:
        view.handle(event)
    view.close()
    bundle = view.static_bundle()
    assert bundle == render.static_bundle(view.state)
    assert bundle["text/plain"].startswith("> Add 2 and 3")


def test_handle_never_raises_and_reports_the_failure() -> None:
    view = LiveView("q")

    class Broken:
        type = "message_update"
        assistant_message_event = None  # no ``type``: the reducer fails on it

    view.handle(Broken())  # type: ignore[arg-type]
    assert view.state.notices[-1].text.startswith("The live view failed to draw (AttributeError")


# --- with the real agent loop and the faux provider ------------------------------------------------


async def test_real_agent_run_streams_asks_and_freezes(faux: Any) -> None:
    """The whole path the runtime wires: ``Agent`` events -> ``handle``; ``before_tool_call`` ->
    ``request_approval``; a click on Approve; ``close``; the static bundle."""
    from pi_notebook.agent import Agent, AgentTool, AgentToolResult, BeforeToolCallResult
    from pi_notebook.ai.faux import faux_assistant_message, faux_text, faux_thinking, faux_tool_call

    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_thinking("Use the tool."),
                    faux_text("Adding."),
                    faux_tool_call("add", {"a": 2, "b": 3}, id="c1"),
                ],
                stop_reason="toolUse",
            ),
            faux_assistant_message("The sum is **5**."),
        ]
    )

    async def add(call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
        on_update(AgentToolResult(content=[TextContent(text="adding…")]))
        total = params["a"] + params["b"]
        return AgentToolResult(
            content=[TextContent(text=str(total))], details={"inputs": [params["a"], params["b"]]}
        )

    schema = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}
    calls = Controls()
    view = LiveView("Add 2 and 3", controls=calls.controls())

    async def ask(ctx: Any, signal: Any) -> BeforeToolCallResult | None:
        approved = await view.request_approval(ctx.tool_call.id)
        return None if approved else BeforeToolCallResult(block=True, reason="denied")

    agent = Agent(
        initial_state={
            "model": faux.get_model(),
            "tools": [AgentTool(name="add", description="Add", parameters=schema, execute=add)],
        },
        before_tool_call=ask,
    )
    agent.subscribe(lambda event, signal: view.handle(event))
    run = asyncio.create_task(agent.prompt("Add 2 and 3"))
    for _ in range(500):
        if view.pending_approvals:
            break
        await asyncio.sleep(0.002)
    assert view.pending_approvals == ["c1"]
    assert "pi-tool--pending_approval" in classed(view, "pi-tool")[0]._dom_classes
    buttons(view)["Approve"].click()
    await asyncio.wait_for(run, 5)
    view.close()

    assert render.render_text(view.state) == (
        "> Add 2 and 3\n\n"
        "[thinking]\n    Use the tool.\n\n"
        "Adding.\n\n"
        "[tool] add (done)\n"
        '    args: {"a": 2, "b": 3}\n'
        "    result: 5\n"
        '    details: {"inputs": [2, 3]}\n\n'
        "The sum is **5**.\n"
    )
    assert [markdown_sources(t) for t in classed(view, "pi-text")] == [["Adding."], ["The sum is **5**."]]
    footer = view.state.footer
    assert footer.turns == 2
    assert footer.input_tokens > 0
    assert footer.output_tokens > 0
    assert footer.model == "faux-1"
    assert view.state.stop_reason == "stop"
    assert view.state.finished
    assert all(w.disabled for w in find(view, W.Button))
    assert view.static_bundle() == render.static_bundle(view.state)


def test_tool_card_shows_code_and_the_figure_once() -> None:
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAIAAAUAAd5bqZsAAAAASUVORK5CYII="
    code = {"code": "a = 1\nb = 2"}
    card = ToolCard(tool_call_id="c", name="run_code", status="pending_approval", args=code)
    part = ToolCardPart(lambda call_id, ok: None)
    part.draw(card)
    assert "<code>" in part.args.value
    assert "\\n" not in part.args.value
    assert "\n" in part.args.value
    assert part.display is None
    card.status, card.content = "done", "[figure 1: 1x1 PNG, attached]"
    card.details = {"display": [{"type": "image", "mime": "image/png", "data": png, "label": "figure 1"}]}
    part.draw(card)
    assert part.display is not None
    assert part.widget.children[3] is part.display
    assert f'src="data:image/png;base64,{png}"' in part.display.value
    sent: list[Any] = []
    part.display.send_state = lambda key=None: sent.append(key)  # type: ignore[method-assign]
    part.draw(card)  # a redraw of the same result sends no image again
    assert sent == []
