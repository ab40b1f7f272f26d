"""One ``%%pi`` run: options -> conversation -> agent run -> view -> frozen output -> ``_pi``.

Two entry points:

* ``await run_pi(line, body)``: what the input transformer emits. The cell awaits the agent on
  the kernel's own loop, so ipykernel >= 7.4 handles Stop / Approve / Send clicks while the
  cell blocks, and Run All keeps its order. A kernel interrupt cancels the cell: the agent
  aborts cleanly (``stopReason "aborted"``, a complete event sequence), the output is frozen,
  ``_pi`` is set, and the cell ends with ``KeyboardInterrupt`` like any interrupted cell, shown
  as one line (``RunInterrupted``).
* ``run_pi_sync(line, body)``: the ``%%pi`` cell magic fallback (autoawait off, or
  ``run_cell_magic`` from code). It never waits for clicks: the agent runs on a private loop in
  a worker thread while this (main) thread serves the tools that must run here (``run_code``
  and friends, see ``tools/notebook_tools.py``), and the output is drawn once at the end.

Output: live widgets when someone can watch (a kernel, not headless, not ``--text``), replaced
at the end by the static bundle under the same display id; otherwise one static display at the
end (nbval compares its deterministic ``text/plain``). The shell's ``NotebookState`` provides
the conversation, the defaults, the tools and the approval policy, and hears when a run starts
and ends.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any, cast

from IPython.core.error import UsageError
from IPython.display import display as _untyped_display

from ...agent import Agent
from ...agent.agent import has_model
from ...agent.types import (
    BeforeToolCallContext,
    BeforeToolCallHook,
    BeforeToolCallResult,
    ThinkingLevel,
    TurnContext,
)
from ...ai.abort import ABORT_MESSAGE, AbortSignal
from ...ai.types import TextContent, UserMessage
from ..config import MODEL_ENV
from ..kernel.compat import cell_running, get_kernel, install_comm_ack
from ..kernel.interrupts import MainThreadBridge, watch_sigint
from ..options import RunOptions, parse_options
from ..result import PiResult, run_result
from ..sessions.compact import AutoCompactor
from ..sessions.replay import Recording, continue_after, find_recording, play
from ..state import NotebookState, state_for
from ..tools.notebook_tools import Dispatch, is_notebook_tool, run_here
from ..tools.references import expand_references, format_references
from ..view.reduce import explain
from ..view.render import render_text
from ..view.run_view import RunView, StaticView
from .approval import STATE_CHANGING_TOOLS, ApprovalGate, activate, deactivate, tool_policy
from .errors import RunFailed, RunInterrupted, explain_error
from .requests import RequestSettings, seed_notice
from .retry import RetrySettings, RunRetry

_display: Callable[..., Any] = _untyped_display

_MARKER_LINE = re.compile(r"^\s*#\s*NBVAL_\w+.*$\n?", re.MULTILINE)


def strip_markers(body: str) -> str:
    """The prompt without ``# NBVAL_*`` marker lines (nbval reads them; the model should not)."""
    return _MARKER_LINE.sub("", body)


class PiRun:
    """Prepared on the main thread (parsing, references, mode); ``execute`` runs the agent."""

    def __init__(self, shell: Any, line: str, body: str, *, awaited: bool) -> None:
        self.shell = shell
        self.state: NotebookState = state_for(shell)
        self.options: RunOptions = parse_options(line, self.state.config)
        self.prompt = strip_markers(body).strip()
        if not self.prompt:
            raise UsageError("%%pi needs a prompt: write it in the cell body")
        self.session_notes: list[str] = []
        """Resumed / compacted notices of this run (``sessions*.py``), shown under it."""
        self.agent = self._conversation()
        try:
            self.state.load_mcp_config()
        except (ValueError, RuntimeError) as exc:
            raise UsageError(f"c.PiMagics.mcp_config: {exc}") from None
        self.recording: Recording | None = self._recording() if self.options.replay else None
        self.state.sessions.prepare_run(self.options.name, self.prompt, replay=self.recording is not None)
        text, refs = expand_references(self.prompt, shell.user_ns)
        content = [TextContent(text=text)] + ([TextContent(text=format_references(refs))] if refs else [])
        self.message = UserMessage(content=content)
        self.mode = self.state.run_mode(awaited=awaited, text=self.options.text)
        self.gated = self._gated_tools()
        self.approval = self.state.approval(self.options.approve, self.mode, self.gated)
        self.notices: list[str] = self._notices()
        raise_on_error = self.options.raise_on_error
        self.raise_on_error = self.mode.headless.headless if raise_on_error is None else raise_on_error
        o = self.options
        self.requests = RequestSettings(self.agent, temperature=o.temperature, seed=o.seed, timeout=o.timeout)
        self.widget: Any = None
        self.view: RunView = self._make_view()
        self.tools = self.state.tools
        retry = RetrySettings(self.options.retries, self.options.retry_base_delay)
        self.retry = RunRetry(self.agent, retry, self.view, self.notices)
        self.display_handle: Any = None
        self.interrupted = False
        self.turns = 0
        self.stopped_at_max_turns = False
        self.stopped_by_user = False
        self.signal: AbortSignal | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.start_index = 0
        self.finished = False
        self._cell_done: Callable[[], None] = lambda: None
        self.run_messages: list[Any] = []
        self.compactor: AutoCompactor | None = None
        self.compacted = False
        """A compaction replaced the transcript: ``_pi`` takes the run's messages as they ended."""

    def _conversation(self) -> Agent:
        o = self.options
        try:
            agent = self.state.new_conversation(o.name) if o.new else self.state.conversation(o.name)
        except ValueError as exc:
            raise UsageError(f"default model (c.PiMagics.model / {MODEL_ENV}): {exc}") from None
        if agent.state.is_streaming:
            raise UsageError(f"conversation {o.name!r} is already running; use --name for another one")
        if o.resume and not agent.state.messages:
            self.session_notes.append(self.state.sessions.resume_for_cell(o.name, agent))
        if o.model is not None:
            agent.state.model = o.model
        if o.thinking is not None:
            agent.state.thinking_level = cast("ThinkingLevel", o.thinking)
        if o.system is not None:
            agent.state.system_prompt = o.system
        if not has_model(agent) and not o.replay:
            raise UsageError(
                "no model: pass --model provider:id, run %pi model provider:id, "
                "or set c.PiMagics.model / PI_NOTEBOOK_MODEL"
            )
        return agent

    def _gated_tools(self) -> list[str]:
        """The tools of this run whose policy is ``--approve``'s (the notice names them): the
        state-changing notebook tools it offers and the conversation's own ``requires_approval``
        tools, unless ``c.PiMagics.approvals`` or the tool's own policy (MCP) decides for them."""
        approvals = self.state.approvals()
        offered = [(name, None) for name in sorted(STATE_CHANGING_TOOLS.intersection(self.options.tools))]
        own = [(t.name, t) for t in self.agent.state.tools if not is_notebook_tool(t)]
        return [
            name
            for name, tool in [*offered, *own]
            if (decided := tool_policy(name, tool, approvals, "deny")) is not None
            and decided.source == "run"
        ]

    def _notices(self) -> list[str]:
        """Lines under the run that explain a setting: the approval policy (only when a tool it
        gates is on), a ``--thinking`` level the model ignores (once per conversation and model)."""
        lines: list[str] = []
        if self.approval.notice and self.gated:
            lines.append(self.approval.notice)
        thinking = self.state.thinking_ignored(self.options.name, self.agent)
        seed = seed_notice(self.options.seed, self.agent.state.model)
        return lines + [line for line in (thinking, seed) if line]

    def _recording(self) -> Recording:
        model = self.agent.state.model
        spec = f"{model.provider}:{model.id}" if has_model(self.agent) else None
        return find_recording(self.state.sessions, self.options.name, self.prompt, spec, new=self.options.new)

    def _add_notice(self, view: RunView, *notes: str) -> None:
        """Add lines under whatever notice the view shows (resumed, compacted)."""
        view.set_notice("\n".join(n for n in (view.state.notice, *notes) if n))

    def _make_view(self) -> RunView:
        view = self._make_plain_view()
        if self.session_notes:
            self._add_notice(view, *self.session_notes)
        return view

    def _make_plain_view(self) -> RunView:
        notice = "\n".join(self.notices) or None
        if not self.mode.live:
            return StaticView(self.prompt, notice)
        from ..view.live import LiveView, ViewControls

        controls = None
        if self.mode.can_ask:
            agent = self.agent
            controls = ViewControls(on_stop=self._on_stop, on_steer=agent.steer, on_follow_up=agent.follow_up)
        view = LiveView(self.prompt, controls=controls, interactive=self.mode.can_ask, notice=notice)
        self.widget = view.widget
        return view

    # --- running ---------------------------------------------------------------------------------

    def show(self) -> None:
        """Display the live widget (main thread, before the run)."""
        if self.widget is not None:
            kernel = get_kernel(self.shell)
            if kernel is not None:
                install_comm_ack(kernel)
                self._cell_done = cell_running(kernel)
            self.display_handle = _display(self.widget, display_id=True)

    async def execute(self, dispatch: Dispatch = run_here) -> None:
        """Run the agent on the current loop. Catches the cancellation of a kernel interrupt
        (the agent has closed its run by then) and records it in ``interrupted``."""
        agent = self.agent
        self.loop = asyncio.get_running_loop()
        if self.recording is not None:  # replay: the recorded answer, no model call
            await play(self.recording, self.view.handle)
            self.start_index = continue_after(self.state.sessions, self.options.name, agent, self.recording)
            self.finished = True
            return
        self.tools.begin_run(
            dispatch, self._interrupt_from_tool, model=agent.state.model, headless=self.mode.headless.headless
        )
        mcp_tools = await self.state.mcp_tools()  # the conversation's + notebook + MCP tools
        mine = self.state.is_mcp_tool
        user_tools = [t for t in agent.state.tools if not is_notebook_tool(t) and not mine(t)]
        agent.state.tools = user_tools + self.tools.build(self.options.tools) + mcp_tools
        gate = self._gate()
        user_before, user_stop = agent.before_tool_call, agent.should_stop_after_turn
        agent.before_tool_call = compose_before(user_before, gate)
        agent.should_stop_after_turn = self._stop_hook(user_stop)
        unsubscribe = agent.subscribe(self._listener)
        self.start_index = len(agent.state.messages)
        self.requests.install()
        token = activate(gate)  # ask_approval() in the user's hooks and tools asks through it
        try:
            if self.interrupted:  # interrupted before this loop existed (fallback): do not start
                return
            await self.requests.probe_local_server()
            await self._prompt()
        except asyncio.CancelledError:
            self.interrupted = True
        finally:
            deactivate(token)
            self.finished = True
            unsubscribe()
            self.requests.restore()
            agent.before_tool_call, agent.should_stop_after_turn = user_before, user_stop

    def _gate(self) -> ApprovalGate:
        """The approval policies of this run: ``--approve``, the per-tool map, tools' own."""
        return ApprovalGate(
            self.approval.policy,
            request=self.view.request_approval if self.mode.can_ask else None,
            mark=self.view.resolve_approval,
            note=self._note_approval,
            approvals=self.state.approvals(),
            headless=self.mode.headless.headless,
            signal=lambda: self.agent.signal,
        )

    def _note_approval(self, tool_call_id: str, reason: str) -> None:
        """Show a hook's reason for asking on the tool card while it waits ("" clears it)."""
        card = self.view.state.tool_card(tool_call_id)
        if card is not None:  # cleared on Approve, before the tool runs and reports progress
            card.progress = reason

    async def _prompt(self) -> None:
        """Prompt the agent, compacting as Pi does: before the prompt and after the run when the
        context nears the window, and once with a retry of the turn on a context overflow."""
        agent = self.agent
        manager = self.state.sessions.get(self.options.name).manager
        compactor = self.compactor = AutoCompactor(manager, agent, self.state.config, self.options.timeout)
        await self._compaction(compactor, before_prompt=True)
        self.start_index = len(agent.state.messages)
        await self.retry.run(lambda: agent.prompt(self.message))
        while await self._compaction(compactor):
            await agent.continue_()

    async def _compaction(self, compactor: AutoCompactor, *, before_prompt: bool = False) -> bool:
        """One automatic check; shows its notice; True when the turn is to be retried."""
        compactor.signal = self.signal
        outcome = await compactor.check(before_prompt=before_prompt)
        if outcome is None:
            return False
        self.session_notes.append(outcome.notice)
        self._add_notice(self.view, outcome.notice)
        self.compacted = self.compacted or not before_prompt
        return outcome.retry

    def _listener(self, event: Any, signal: AbortSignal) -> None:
        self.signal = signal
        if event.type == "message_end":
            self.run_messages.append(event.message)
        if self.compactor is not None:
            self.compactor.saw(event)
        self.view.handle(event)

    @property
    def aborted(self) -> bool:
        aborted = self.signal is not None and self.signal.aborted
        return self.interrupted or aborted or self.retry.cancelled

    def _on_stop(self) -> None:
        self.stopped_by_user = True
        self.retry.cancel()
        self.agent.abort()

    def _interrupt_from_tool(self) -> None:
        self.interrupted = True
        self.retry.cancel()
        self.agent.abort()

    def abort_threadsafe(self) -> None:
        """Abort from another thread (the fallback's Ctrl-C), even if the run is only starting."""
        self.interrupted = True
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._abort_when_running)

    def _abort_when_running(self) -> None:
        self.retry.cancel()
        if self.agent.signal is not None:
            self.agent.abort()
        elif not self.finished and self.loop is not None:
            self.loop.call_later(0.01, self._abort_when_running)  # prompt() has not claimed the run yet

    def _stop_hook(self, user_stop: Callable[[TurnContext], Any] | None) -> Callable[[TurnContext], Any]:
        limit = self.options.max_turns

        async def should_stop(ctx: TurnContext) -> bool:
            self.turns += 1
            if limit is not None and self.turns >= limit:
                self.stopped_at_max_turns = bool(ctx.tool_results)
                return True
            if user_stop is None:
                return False
            answer = user_stop(ctx)
            return bool(await answer if inspect.isawaitable(answer) else answer)

        return should_stop

    # --- the end ------------------------------------------------------------------------------

    def finish(self) -> PiResult:
        """Freeze the output and set ``_pi`` (main thread, after the run)."""
        self._cell_done()
        lines = [*self.notices, *self.session_notes]
        extra = len(lines)
        if self.aborted and self.view.state.stop_reason != "aborted":
            lines.append(f"Aborted: {ABORT_MESSAGE}")  # stopped between turns: no aborted message
        if self.stopped_by_user:
            lines.append("Stopped with the Stop button.")  # replaces the view's transient "Stopping…"
        if self.stopped_at_max_turns:
            limit = self.options.max_turns
            lines.append(f"Stopped after {limit} turn{'s' if limit != 1 else ''} (--max-turns {limit}).")
        if len(lines) > extra:
            self.view.set_notice("\n".join(lines))
        explained = explain_error(self.view.state.error_message, self.agent.state.model)
        if explained:
            explain(self.view.state, explained)
        self.view.close()
        bundle = (
            {"text/plain": render_text(self.view.state)} if self.options.text else self.view.static_bundle()
        )
        if self.display_handle is not None:
            self.display_handle.update(bundle, raw=True)
        else:
            _display(bundle, raw=True)
        result = self.result()
        self.shell.user_ns["_pi"] = result
        self.state.run_ended(self.options.name, self.agent, result)
        return result

    def result(self) -> PiResult:
        model = self.agent.state.model
        messages = self.run_messages if self.compacted else self.agent.state.messages[self.start_index :]
        return run_result(
            list(messages),
            aborted=self.aborted,
            conversation=self.options.name,
            model=f"{model.provider}:{model.id}",
        )

    def check_failure(self, result: PiResult) -> None:
        """Raise ``RunFailed`` after a run that ended in an error (not a Stop or an interrupt)
        when ``raise_on_error`` is on; the output is already drawn."""
        if self.raise_on_error and result.stop_reason == "error" and not self.aborted:
            shown = self.view.state.error_message or result.error_message or "unknown error"
            raise RunFailed(shown, headless=self.mode.headless.headless)

    def started(self) -> None:
        """Tell the shell's state (and its observers) that the run begins (main thread)."""
        self.state.run_started(self.options.name, self.agent, self.message)


def compose_before(user_hook: BeforeToolCallHook | None, gate: ApprovalGate) -> BeforeToolCallHook:
    """The user's own ``before_tool_call`` first (it may block), then the approval policy.

    A hook may be sync or async and may answer with a ``BeforeToolCallResult``, a mapping of its
    fields (``{"block": True, "reason": ...}``) or ``None``, exactly as on a plain ``Agent``."""
    if user_hook is None:
        return gate

    async def before(
        ctx: BeforeToolCallContext, signal: AbortSignal | None = None
    ) -> BeforeToolCallResult | None:
        answer = user_hook(ctx, signal)
        result = _before_result(await answer if inspect.isawaitable(answer) else answer)
        if result is not None and result.block:
            return result
        return await gate(ctx, signal)

    return before


def _before_result(answer: Any) -> BeforeToolCallResult | None:
    """A hook's answer as the agent loop reads it: the dataclass, a mapping of its fields, or None."""
    if answer is None or isinstance(answer, BeforeToolCallResult):
        return answer
    if isinstance(answer, Mapping):
        return BeforeToolCallResult(**answer)
    raise TypeError(
        f"before_tool_call must return BeforeToolCallResult, a mapping or None, not {type(answer).__name__}"
    )


# --- entry points --------------------------------------------------------------------------------


def _shell(shell: Any = None) -> Any:
    if shell is not None:
        return shell
    from IPython import get_ipython

    found = get_ipython()
    if found is None:
        raise RuntimeError("%%pi needs an IPython shell")
    return found


async def run_pi(line: str, body: str) -> None:
    """The awaited ``%%pi`` path (the input transformer's target)."""
    run = PiRun(_shell(), line, body, awaited=True)
    run.show()
    run.started()
    try:
        with watch_sigint():
            await run.execute()
    finally:
        result = run.finish()
    if run.interrupted:
        raise RunInterrupted
    run.check_failure(result)


def run_pi_sync(line: str, body: str, shell: Any = None) -> PiResult:
    """The ``%%pi`` cell magic: run to completion without waiting for clicks."""
    run = PiRun(_shell(shell), line, body, awaited=False)
    bridge = MainThreadBridge()
    failure: list[BaseException] = []

    def work() -> None:
        try:
            asyncio.run(run.execute(bridge.dispatch))
        except BaseException as exc:
            failure.append(exc)
        finally:
            bridge.close()

    run.started()
    worker = threading.Thread(target=work, name="pi-notebook-run", daemon=True)
    worker.start()
    interrupted = False
    while True:
        try:
            bridge.serve()
            break
        except KeyboardInterrupt:
            interrupted = True
            run.abort_threadsafe()
    worker.join()
    result = run.finish()
    if failure:
        raise failure[0]
    if interrupted or run.interrupted:
        raise RunInterrupted
    run.check_failure(result)
    return result
