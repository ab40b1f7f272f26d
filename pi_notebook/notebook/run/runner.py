"""One ``%%pi`` run: plan -> the conversation's ``AgentSession`` -> view -> frozen output -> ``_pi``.

The cell is planned first (``plan.py``), then ``PiRun`` executes the plan through the
conversation's ``AgentSession`` (``pi_notebook.runtime``), which records the session file,
retries transient failures and compacts as Pi does. What the cell adds reaches the agent as
``AgentRunOptions`` for this run only: the notebook and MCP tools, the approval gate, the turn
limit and the loop guard (``loop_guard.py``), ``--temperature`` / ``--timeout`` / ``--seed``.
The budgets (``--max-cost``, ``--max-total-tokens``, the conversation's) are the session's to
keep: it stops the run when one is reached and says why (``budget_reached``). The user's
``Agent`` is never patched: a hook the user sets during a run is still there after it.

A ``--plan`` cell is two runs of its conversation: one that plans with read-only tools, then,
after Run plan on the plan card (or at once with ``--plan-run``), one that carries the plan
out (``planning.py``).

A page reloaded during the run gets the run back in its own cell through the notebook bridge
(``reload.py``); a ``%pi show`` from a page without it gets the live view (``reattach.py``).
The view hears every session event; the run's own bookkeeping only the few it needs, so a
streamed token visits the agent, the session and the view and nothing else.

``cell.py`` makes the plan and a ``PiRun`` of it, and drives the run, awaited on the kernel's
loop or (the cell magic's fallback) on a worker thread while the main thread serves the tools.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.display import display as _untyped_display

from ...agent.types import AgentToolResult, ToolExecutionUpdateEvent, TurnContext
from ...ai.abort import ABORT_MESSAGE, AbortSignal
from ...ai.failures import RequestFailure, failure_of
from ...ai.types import TextContent
from ..host.compat import cell_running, get_kernel, inactive_controls_reason, install_comm_ack
from ..host.queued import watch_queued
from ..result import PiResult, run_result
from ..sessions.files import RUN_ENTRY
from ..sessions.replay import continue_after, play, replayed_notice
from ..tools.declare import Dispatch, run_here
from ..tools.notebook_tools import is_notebook_tool, select_mcp_tools
from ..view.reduce import explain
from ..view.render import render_text
from ..view.run_view import RunView, StaticView
from .after_run import review_run, show_after_run
from .approval import FALLBACK_REASON, ApprovalGate, GrantUI, activate, deactivate
from .errors import RunFailed, explain_error
from .extension_ui import CellUI
from .fit import fit_run, run_options
from .loop_guard import LoopGuard
from .printed import PrintedCalls, printed_run
from .reattach import attach, shows_run
from .reload import PageWatch
from .unparsed import offer_unparsed_calls, retry_in_place

if TYPE_CHECKING:
    from ...runtime import AgentSession
    from ..sessions.conversations import Conversation
    from ..state import NotebookState
    from .plan import RunPlan
    from .planning import Plan

__all__ = ["PiRun"]

_display: Callable[..., Any] = _untyped_display


RETRIED_IN_PLACE = "The failed attempt of this prompt was replaced by this run (the prompt is sent once)."

RUN_EVENTS = frozenset({"agent_start", "message_end", "compaction_end", "auto_retry_end", "budget_reached"})
"""The session events the run's bookkeeping needs (the view hears them all)."""


class PiRun:
    """Executes one ``RunPlan`` (``cell.prepare_run`` makes both). The constructor only stores."""

    def __init__(self, shell: Any, state: NotebookState, plan: RunPlan, conversation: Conversation) -> None:
        self.shell = shell
        self.state = state
        self.plan = plan
        self.session: AgentSession = conversation.session
        self.agent = self.session.agent
        """To read (its signal, its state); every change goes through ``session``."""
        self.view: RunView = StaticView(plan.prompt, plan.notices)
        self.widget: Any = None
        self.display_handle: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.signal: AbortSignal | None = None
        self.failure: RequestFailure | None = None
        self.turns = 0
        self.interrupted = False
        self.stopped_by_user = self.stopped_at_max_turns = False
        self.budget_reason: str | None = None  # the one line of a budget that stopped the run
        self.loop_guard = LoopGuard(plan.options.loop_guard)
        self.grants = conversation.grants  # "Allow for this conversation" (sessions/grants.py)
        self.retry_cancelled = False
        self.compacted = False
        """A compaction replaced the transcript: ``_pi`` takes the run's messages as they ended."""
        self.finished = False
        self.run_messages: list[Any] = []
        self.replayed_from: int | None = None  # where a replayed run's messages begin
        self._cell_done: Callable[[], None] = lambda: None
        self.pages = PageWatch(plan.name)
        """What pages that connect during the run or after it get (``reload.py``)."""
        self._unwatch: Callable[[], None] = lambda: None
        """Stops showing this run to waiting ``%pi show`` requests (``kernel.queued``)."""
        self.mcp_tools: list[Any] | None = None
        """The MCP tools ``--tools`` chose (``select_mcp``); ``None``: every one, at the start."""
        self.extra_tools: list[Any] = []
        """Tools of this run only: ``plan_step`` while a plan runs (``planning.py``)."""
        self.proposed: Plan | None = None
        """The plan a ``--plan`` run's answer proposes (``note_plan``)."""
        self.printed: PrintedCalls | None = None  # the run's tool mode, once it starts

    # --- before the run (main thread) ---------------------------------------------------------

    def make_view(self) -> None:
        """The live widgets when someone can watch (or the host's view, ``state.draw_run``), else
        the static view the constructor made."""
        mode = self.plan.mode
        if not mode.live:
            return
        drawn = self.state.draw_run(self.plan.prompt, self.plan.notices) if self.state.draw_run else None
        if drawn is not None:  # the host draws it (the Pi kernel for a terminal)
            self.view = drawn
            return
        from ..view.live import LiveView, ViewControls

        controls = None
        if mode.can_ask:
            controls = ViewControls(on_stop=self._on_stop, on_steer=self._steer, on_follow_up=self._follow_up)
        view = LiveView(
            self.plan.prompt, controls=controls, interactive=mode.can_ask, notices=self.plan.notices or None
        )
        self.view, self.widget = view, view.widget

    def select_mcp(self, tools: list[Any]) -> None:
        """Keep the MCP tools the cell's ``--tools`` names (before anything is shown or sent);
        a name that matches none is a ``UsageError`` listing those there are."""
        try:
            self.mcp_tools = select_mcp_tools(self.plan.options.mcp_tools, tools)
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    def show(self) -> None:
        """Display the live widget (main thread, before the run)."""
        if self.widget is not None:
            kernel = get_kernel(self.shell)
            if kernel is not None:
                install_comm_ack(kernel)
                self._cell_done = cell_running(kernel)
            self.pages.start(kernel, self.shell.execution_count, self._hears_comms())
            self.display_handle = _display(self.widget, display_id=True)
            if kernel is not None:
                stop = watch_queued(kernel, lambda msg: self._attach_to(kernel, msg))
                self._unwatch = stop or self._unwatch

    def _attach_to(self, kernel: Any, request: dict[str, Any]) -> None:
        """A waiting ``%pi show`` of this conversation (a reloaded page's): show the live view
        in its cell now (``reattach.py``)."""
        code = str((request.get("content") or {}).get("code", ""))
        running = self.loop is not None and not self.finished  # a run that never started stays out
        if not running or self.display_handle is None or not shows_run(code, self.plan.name):
            return
        attach(kernel, request, self.widget._repr_mimebundle_(), self.display_handle.display_id)

    def started(self) -> None:
        """Write the run entry and tell the shell's state (and its observers) that the run begins."""
        if self.plan.replay is None:
            if retry_in_place(self.session, self.plan.message, RUN_ENTRY):
                self.view.add_notice(RETRIED_IN_PLACE, "retry-in-place")
            self.state.conversations.begin_run(self.plan.name, self.plan.prompt)
        self.state.run_started(self.plan.name, self.session, self.plan.message)

    # --- running ------------------------------------------------------------------------------

    async def execute(self, dispatch: Dispatch = run_here) -> None:
        """Run the plan on the current loop. Catches the cancellation of a kernel interrupt
        (the agent has closed its run by then) and records it in ``interrupted``."""
        self.loop = asyncio.get_running_loop()
        if self.widget is not None:
            self.pages.running(self.loop, self.widget._repr_mimebundle_)
        recording = self.plan.replay
        if recording is not None:  # replay: the recorded answer, no model call
            self.view.add_notice(replayed_notice(recording, "--replay"), "replayed")
            await play(recording, self.view.handle)
            self.replayed_from = continue_after(self.state.conversations, self.plan.name, recording)
            self.finished = True
            return
        options = self.plan.options
        tools = self.state.tools
        headless = self.plan.mode.headless.headless
        held = self.session.state
        tools.begin_run(
            dispatch, self._interrupt_from_tool, model=held.model, headless=headless,
            comms=self._hears_comms(), code_timeout=options.code_limit(headless),
            on_progress=self._code_progress,
        )
        # planning (--plan), %pi explain: the read-only notebook tools only (prepare_run chose
        # them); the conversation's own tools and MCP tools may change state
        own = [] if options.read_only else [t for t in held.tools if not is_notebook_tool(t)]
        mcp = self.mcp_tools if self.mcp_tools is not None else await self.state.mcp_tools()
        mcp = [] if options.no_tools or options.read_only else mcp
        every = own + tools.build(options.tool_names) + mcp + self.extra_tools
        gate = self._gate(tools.preview)
        self.printed, run = printed_run(  # --tool-mode, --recovered-calls
            self, gate, every,
            run_options(options, tools=every, before_tool_call=gate, should_stop_after_turn=self._after_turn),
        )  # fmt: skip
        self.session.settings = self.plan.settings
        self.session.budget = self.plan.conversation_budget
        unsubscribe = (
            self.session.subscribe(self.view.handle),
            self.session.subscribe(self._on_event, RUN_EVENTS),
        )
        token = activate(gate)  # ask_approval() in the user's hooks and tools asks through it
        extensions = self.state.extensions.runner
        stop_errors = extensions.on_error(lambda error: self.view.add_notice(error.line()))
        try:
            if self.interrupted:  # interrupted before this loop existed (fallback): do not start
                return
            run = await fit_run(self, run, held.model)  # the server's window; a small model's prompt
            with extensions.using_ui(self._extension_ui()):
                await self.session.prompt(  # --tools none: not the skills' read tool either
                    self.plan.message, run=run, budget=self.plan.budget, skills=not options.no_tools,
                    resources=self.plan.resources,
                )
                await offer_unparsed_calls(self, gate, run)
        except asyncio.CancelledError:
            self.interrupted = True
        finally:
            stop_errors()
            deactivate(token)
            self.finished = True
            for stop in unsubscribe:
                stop()

    def _hears_comms(self) -> bool:
        """The kernel handles comm messages while this cell awaits, so the notebook bridge can
        answer: the awaited path (not the fallback magic) on ipykernel >= 7.4."""
        reason = self.plan.mode.reason
        return reason != FALLBACK_REASON and inactive_controls_reason(self.shell) is None

    def _gate(self, preview: Any) -> ApprovalGate:
        """The approval policies of this run: ``--approve``, the per-tool map, tools' own;
        ``preview``: the notebook tools' preview of a change (``NotebookTools.preview``)."""
        mode = self.plan.mode
        return ApprovalGate(
            self.plan.approval.policy,
            request=self.view.request_approval if mode.can_ask else None,
            mark=self.view.resolve_approval,
            note=self._note_approval,
            approvals=self.plan.approvals,
            headless=mode.headless.headless,
            signal=lambda: self.agent.signal,
            announce=self._announce_policy,
            preview=preview,
            grants=self.grants if mode.can_ask else None,  # headless: no grant offered nor applied
            grant_ui=self.view if mode.can_ask and isinstance(self.view, GrantUI) else None,
            guard=self.loop_guard,
        )

    def _extension_ui(self) -> CellUI:
        """Extensions ask in the cell when someone can click, as approvals do."""
        mode = self.plan.mode
        if mode.headless.headless:
            why = f"headless run: {mode.headless.reason}"
        else:
            why = (mode.reason or "nobody can answer in this run").removeprefix("Controls inactive: ")
        live = self.view if mode.can_ask else None
        return CellUI(self.view.add_notice, live=live, why=why.rstrip("."), signal=lambda: self.agent.signal)

    def _announce_policy(self) -> None:
        """The approval policy's line, at the first call it decides (``RunPlan.approval_notice``)."""
        if self.plan.approval_notice:
            self.view.add_notice(self.plan.approval_notice, "approval")

    def _note_approval(self, tool_call_id: str, reason: str) -> None:
        """Show a hook's reason for asking on the tool card while it waits ("" clears it)."""
        card = self.view.state.tool_card(tool_call_id)
        if card is not None:  # cleared on Approve, before the tool runs and reports progress
            card.progress = reason

    def _code_progress(self, tool_call_id: str, line: str) -> None:
        """``run_code``'s "still running" line, from its clock's thread while the user code holds
        the main thread (so the agent's loop, which would relay a tool update, cannot run): the
        view reduces it as the tool's update and draws it (a widget's message is sent through
        the kernel's IOPub thread)."""
        card = self.view.state.tool_card(tool_call_id)
        if card is None or card.status != "running" or self.finished:
            return
        partial = AgentToolResult(content=[TextContent(text=line)], details=None)
        self.view.handle(ToolExecutionUpdateEvent(tool_call_id, card.name, card.args, partial))

    def _on_event(self, event: Any) -> None:
        kind = event.type
        if kind == "agent_start":
            self.signal = self.agent.signal
        elif kind == "message_end":
            self.run_messages.append(event.message)
            if getattr(event.message, "stop_reason", None) == "error":
                self.failure = failure_of(event.message)
        elif kind == "compaction_end":
            self.compacted = self.compacted or (event.result is not None and event.reason != "manual")
        elif kind == "auto_retry_end" and event.final_error == "Retry cancelled":
            self.retry_cancelled = True
        elif kind == "budget_reached":
            self.budget_reason = event.reason

    def _after_turn(self, ctx: TurnContext) -> bool:
        """The run's limits, each told of every turn: the loop guard and ``--max-turns``."""
        return self.loop_guard.after_turn(ctx) | self._count_turn(ctx)  # both counted

    def _count_turn(self, ctx: TurnContext) -> bool:
        """``--max-turns``: stop after that many turns (the agent's own hook is asked after)."""
        self.turns += 1
        limit = self.plan.options.max_turns
        if limit and self.turns >= limit:  # 0: no limit
            self.stopped_at_max_turns = bool(ctx.tool_results)
            return True
        return False

    # --- stopping -----------------------------------------------------------------------------

    def _steer(self, text: str) -> None:
        self.session.queue(text, "steer")

    def _follow_up(self, text: str) -> None:
        self.session.queue(text, "follow_up")

    @property
    def aborted(self) -> bool:
        aborted = self.signal is not None and self.signal.aborted
        return self.interrupted or aborted or self.retry_cancelled

    def _on_stop(self) -> None:
        self.stopped_by_user = True
        self._abort_when_running()

    def _interrupt_from_tool(self) -> None:
        self.interrupted = True
        self._abort_when_running()

    def abort_threadsafe(self) -> None:
        """Abort from another thread (the fallback's Ctrl-C), even if the run is only starting."""
        self.interrupted = True
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._abort_when_running)

    def _abort_when_running(self) -> None:
        """Stop whatever runs (a retry wait, a compaction, the agent); while the agent has not
        claimed its run yet (a compaction before the prompt), look again shortly."""
        self.session.interrupt()
        if self.agent.signal is None and not self.finished and self.loop is not None:
            self.loop.call_later(0.01, self._abort_when_running)

    # --- the end ------------------------------------------------------------------------------

    def finish(self) -> PiResult:
        """Freeze the output and set ``_pi`` (main thread, after the run)."""
        self._cell_done()
        self._unwatch()
        view = self.view
        if self.aborted and view.state.stop_reason != "aborted" and self.budget_reason is None:
            view.add_notice(f"Aborted: {ABORT_MESSAGE}", "stop")  # stopped between turns
        if self.stopped_by_user:
            view.add_notice("Stopped with the Stop button.", "stop")  # in place of "Stopping…"
        if self.stopped_at_max_turns:
            limit = self.plan.options.max_turns
            view.add_notice(
                f"Stopped after {limit} turn{'s' if limit != 1 else ''} (--max-turns {limit}).", "turns"
            )
        looped = self.loop_guard.notice()
        if looped:
            view.add_notice(looped, "loop")
        explained = explain_error(view.state.error_message, self.agent.state.model, self.failure)
        if explained:
            explain(view.state, explained)
        view.close()
        review = review_run(self)  # the run's changes to the notebook end its output (review.py)
        bundle = {"text/plain": render_text(view.state)} if self.plan.options.text else view.static_bundle()
        if self.display_handle is not None:
            self.display_handle.update(bundle, raw=True)
        else:
            _display(bundle, raw=True)
        if self.widget is not None:  # the live view
            self.pages.finish(view, bundle)
        result = self.result()
        show_after_run(self, result, review)  # live: Insert as cell, Accept all / Undo all
        self.shell.user_ns["_pi"] = result
        self.state.run_ended(self.plan.name, self.session, result)
        return result

    def result(self) -> PiResult:
        model = self.agent.state.model
        messages = self.agent.state.messages
        start = self.replayed_from
        if start is None:
            # from the end: the prompt is among the last messages, however long the conversation
            prompt = self.plan.message
            start = next((i for i in range(len(messages) - 1, -1, -1) if messages[i] is prompt), None)
        kept = self.run_messages if self.compacted or start is None else messages[start:]
        return run_result(
            list(kept),
            aborted=self.aborted,
            conversation=self.plan.name,
            model=f"{model.provider}:{model.id}",
            budget_reason=self.budget_reason,
        )

    def check_failure(self, result: PiResult) -> None:
        """Raise ``RunFailed`` after a run that ended in an error (not a Stop or an interrupt)
        when ``raise_on_error`` is on; the output is already drawn."""
        if self.plan.raise_on_error and result.stop_reason == "error" and not self.aborted:
            shown = self.view.state.error_message or result.error_message or "unknown error"
            raise RunFailed(shown, headless=self.plan.mode.headless.headless)
