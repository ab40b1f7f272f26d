"""One ``%%pi`` run: options -> conversation -> agent run -> live view -> frozen output -> ``_pi``.

Two entry points:

* ``await run_pi(line, body)``: what the input transformer emits. The cell awaits the agent on
  the kernel's own loop, so ipykernel >= 7.4 handles Stop / Approve / Send clicks while the
  cell blocks, and Run All keeps its order. A kernel interrupt cancels the cell: the agent
  aborts cleanly (``stopReason "aborted"``, a complete event sequence), the output is frozen,
  ``_pi`` is set, and the cell ends with ``KeyboardInterrupt`` like any interrupted cell.
* ``run_pi_sync(line, body)``: the ``%%pi`` cell magic fallback (autoawait off, or
  ``run_cell_magic`` from code). It never waits for clicks: the agent runs on a private loop in
  a worker thread while this (main) thread serves the tools that must run here (``run_code``
  and friends, see ``tools.py``), and the output is drawn once at the end.

Output: live widgets when someone can watch (a kernel, not headless, not ``--text``), replaced
at the end by the static bundle under the same display id; otherwise one static display at the
end (nbval compares its deterministic ``text/plain``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import queue
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from IPython.core.error import UsageError
from IPython.display import display as _untyped_display

from ..agent.types import BeforeToolCallContext, BeforeToolCallResult, ThinkingLevel, TurnContext
from ..ai.abort import ABORT_MESSAGE, AbortSignal
from ..ai.types import Cost, TextContent, Usage, UserMessage, content_text
from . import conversations
from .approval import ApprovalGate, Headless, detect_headless, resolve_policy
from .kernel_compat import get_kernel, inactive_controls_reason, install_comm_ack, widgets_available
from .magics import RunOptions, conversation, magics_for, parse_options
from .references import expand_references, format_references
from .render import render_text, static_bundle
from .tools import Dispatch, NotebookTools, is_notebook_tool, run_here, watch_sigint
from .view import ViewState, mark_approval, reduce, set_notice

T = TypeVar("T")
_display: Callable[..., Any] = _untyped_display

_MARKER_LINE = re.compile(r"^\s*#\s*NBVAL_\w+.*$\n?", re.MULTILINE)
FALLBACK_REASON = (
    "Controls inactive: %%pi ran as a plain cell magic (autoawait off or called from code), "
    "so nothing answers a click."
)


def strip_markers(body: str) -> str:
    """The prompt without ``# NBVAL_*`` marker lines (nbval reads them; the model should not)."""
    return _MARKER_LINE.sub("", body)


@dataclass
class PiResult:
    """What ``_pi`` holds after a ``%%pi`` cell."""

    text: str
    """The final assistant message's text."""
    messages: list[Any]
    """The run's new messages (prompt, assistant, tool results, injected user messages)."""
    stop_reason: str | None
    usage: Usage
    """Summed over the run's assistant messages (``usage.cost`` holds the breakdown)."""
    cost: float
    """Total cost of the run in USD."""
    error_message: str | None = None
    conversation: str = conversations.DEFAULT_NAME
    model: str = ""
    turns: int = 0

    def __str__(self) -> str:
        return self.text

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(f"PiResult(stop_reason={self.stop_reason!r}, text={self.text!r})")

    def _repr_markdown_(self) -> str | None:
        return self.text or None


class _StaticView:
    """The view without widgets: reduce events, draw once at the end."""

    def __init__(self, prompt: str, notice: str | None) -> None:
        self.state = ViewState(prompt=prompt)
        if notice:
            set_notice(self.state, notice)

    def handle(self, event: Any) -> None:
        reduce(self.state, event)

    def resolve_approval(self, tool_call_id: str, approved: bool) -> None:
        mark_approval(self.state, tool_call_id, "running" if approved else "denied")

    def set_notice(self, text: str) -> None:
        set_notice(self.state, text)

    def close(self) -> None:
        return None

    def static_bundle(self) -> dict[str, str]:
        return static_bundle(self.state)


_tools_by_shell: dict[int, NotebookTools] = {}


def notebook_tools(shell: Any) -> NotebookTools:
    found = _tools_by_shell.get(id(shell))
    if found is None or found.shell is not shell:
        found = _tools_by_shell[id(shell)] = NotebookTools(shell)
    return found


@dataclass
class _Mode:
    live: bool
    can_ask: bool
    headless: Headless
    reason: str | None


class PiRun:
    """Prepared on the main thread (parsing, references, mode); ``execute`` runs the agent."""

    def __init__(self, shell: Any, line: str, body: str, *, awaited: bool) -> None:
        self.shell = shell
        self.options: RunOptions = parse_options(line, magics_for(shell))
        self.prompt = strip_markers(body).strip()
        if not self.prompt:
            raise UsageError("%%pi needs a prompt: write it in the cell body")
        self.agent = self._conversation()
        text, refs = expand_references(self.prompt, shell.user_ns)
        content = [TextContent(text=text)] + ([TextContent(text=format_references(refs))] if refs else [])
        self.message = UserMessage(content=content)
        self.mode = self._mode(awaited)
        self.approval = resolve_policy(
            self.options.approve,
            can_ask=self.mode.can_ask,
            headless=self.mode.headless,
            inactive_reason=self.mode.reason,
        )
        self.view: Any = self._make_view()
        self.tools = notebook_tools(shell)
        self.display_handle: Any = None
        self.interrupted = False
        self.turns = 0
        self.stopped_at_max_turns = False
        self.stopped_by_user = False
        self.signal: AbortSignal | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.start_index = 0
        self.finished = False

    def _conversation(self) -> Any:
        o = self.options
        agent = conversation(o.name, new=o.new)
        if agent.state.is_streaming:
            raise UsageError(f"conversation {o.name!r} is already running; use --name for another one")
        if o.model is not None:
            agent.state.model = o.model
        if o.thinking is not None:
            agent.state.thinking_level = cast("ThinkingLevel", o.thinking)
        if o.system is not None:
            agent.state.system_prompt = o.system
        if not conversations.has_model(agent):
            raise UsageError(
                "no model: pass --model provider:id, run %pi model provider:id, "
                "or set c.PiMagics.model / PI_NOTEBOOK_MODEL"
            )
        return agent

    def _mode(self, awaited: bool) -> _Mode:
        headless = detect_headless(self.shell)
        kernel = get_kernel(self.shell)
        if not awaited:
            reason: str | None = FALLBACK_REASON
        elif self.options.text:
            reason = "Controls inactive: --text output has no widgets."
        elif kernel is not None and not widgets_available():
            reason = "Controls inactive: ipywidgets is not installed."
        else:
            reason = inactive_controls_reason(self.shell)
        live = awaited and kernel is not None and not self.options.text and not headless.headless
        live = live and widgets_available()
        return _Mode(live=live, can_ask=live and reason is None, headless=headless, reason=reason)

    def _make_view(self) -> Any:
        notice = self.approval.notice
        if not self.mode.live:
            return _StaticView(self.prompt, notice)
        from .widgets import LiveView, ViewControls

        controls = None
        if self.mode.can_ask:
            agent = self.agent
            controls = ViewControls(on_stop=self._on_stop, on_steer=agent.steer, on_follow_up=agent.follow_up)
        return LiveView(self.prompt, controls=controls, interactive=self.mode.can_ask, notice=notice)

    # --- running ---------------------------------------------------------------------------------

    def show(self) -> None:
        """Display the live widget (main thread, before the run)."""
        if self.mode.live:
            kernel = get_kernel(self.shell)
            if kernel is not None:
                install_comm_ack(kernel)
            self.display_handle = _display(self.view.widget, display_id=True)

    async def execute(self, dispatch: Dispatch = run_here) -> None:
        """Run the agent on the current loop. Catches the cancellation of a kernel interrupt
        (the agent has closed its run by then) and records it in ``interrupted``."""
        agent = self.agent
        self.loop = asyncio.get_running_loop()
        self.tools.begin_run(dispatch, on_interrupt=self._interrupt_from_tool)
        user_tools = [t for t in agent.state.tools if not is_notebook_tool(t)]
        agent.state.tools = user_tools + self.tools.build(self.options.tools)
        gate = ApprovalGate(
            self.approval.policy,
            request=self.view.request_approval if self.approval.policy == "ask" else None,
            mark=self.view.resolve_approval,
            headless=self.mode.headless.headless,
        )
        user_before, user_stop = agent.before_tool_call, agent.should_stop_after_turn
        agent.before_tool_call = _compose_before(user_before, gate)
        agent.should_stop_after_turn = self._stop_hook(user_stop)
        unsubscribe = agent.subscribe(self._listener)
        self.start_index = len(agent.state.messages)
        try:
            if self.interrupted:  # interrupted before this loop existed (fallback): do not start
                return
            await agent.prompt(self.message)
        except asyncio.CancelledError:
            self.interrupted = True
        finally:
            self.finished = True
            unsubscribe()
            agent.before_tool_call, agent.should_stop_after_turn = user_before, user_stop

    def _listener(self, event: Any, signal: AbortSignal) -> None:
        self.signal = signal
        self.view.handle(event)

    @property
    def aborted(self) -> bool:
        return self.interrupted or (self.signal is not None and self.signal.aborted)

    def _on_stop(self) -> None:
        self.stopped_by_user = True
        self.agent.abort()

    def _interrupt_from_tool(self) -> None:
        self.interrupted = True
        self.agent.abort()

    def abort_threadsafe(self) -> None:
        """Abort from another thread (the fallback's Ctrl-C), even if the run is only starting."""
        self.interrupted = True
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._abort_when_running)

    def _abort_when_running(self) -> None:
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
        lines = [self.approval.notice] if self.approval.notice else []
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
        return result

    def result(self) -> PiResult:
        messages = list(self.agent.state.messages[self.start_index :])
        assistants = [m for m in messages if getattr(m, "role", None) == "assistant"]
        last = assistants[-1] if assistants else None
        usage = _sum_usage(assistants)
        model = self.agent.state.model
        stop_reason = last.stop_reason if last is not None else None
        error_message = last.error_message if last is not None else None
        if self.aborted and stop_reason != "aborted":  # aborted between turns (see the agent's fix 2)
            stop_reason, error_message = "aborted", error_message or ABORT_MESSAGE
        return PiResult(
            text=content_text(last.content) if last is not None else "",
            messages=messages,
            stop_reason=stop_reason,
            usage=usage,
            cost=usage.cost.total,
            error_message=error_message,
            conversation=self.options.name,
            model=f"{model.provider}:{model.id}",
            turns=len(assistants),
        )


def _sum_usage(messages: list[Any]) -> Usage:
    total = Usage(cost=Cost())
    for message in messages:
        u = message.usage
        total.input += u.input
        total.output += u.output
        total.cache_read += u.cache_read
        total.cache_write += u.cache_write
        total.total_tokens += u.total_tokens
        for name in ("input", "output", "cache_read", "cache_write", "total"):
            setattr(total.cost, name, getattr(total.cost, name) + getattr(u.cost, name))
    return total


def _compose_before(user_hook: Any, gate: ApprovalGate) -> Any:
    """The user's own ``before_tool_call`` first (it may block), then the approval policy."""
    if user_hook is None:
        return gate

    async def before(
        ctx: BeforeToolCallContext, signal: AbortSignal | None = None
    ) -> BeforeToolCallResult | None:
        answer = user_hook(ctx, signal)
        answer = await answer if inspect.isawaitable(answer) else answer
        if answer is not None and answer.block:
            return answer  # type: ignore[no-any-return]
        return await gate(ctx, signal)

    return before


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
    try:
        with watch_sigint():
            await run.execute()
    finally:
        run.finish()
    if run.interrupted:
        raise KeyboardInterrupt


class MainThreadBridge:
    """Runs callables from the agent's worker thread on the main thread, which waits in ``serve``."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]] | None] = (
            queue.SimpleQueue()
        )

    async def dispatch(self, fn: Callable[[], T]) -> T:
        if threading.current_thread() is threading.main_thread():
            return fn()
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._jobs.put((fn, future))
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        self._jobs.put(None)

    def serve(self) -> None:
        """Run jobs until ``close``. A ``KeyboardInterrupt`` propagates; call again to resume."""
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except KeyboardInterrupt:
                # The tool fails like any tool; the caller turns the interrupt into an abort.
                future.set_exception(RuntimeError("interrupted"))
                raise
            except BaseException as exc:
                future.set_exception(exc)


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
        raise KeyboardInterrupt
    return result
