"""One ``%%pi`` cell, from its line and body to its frozen output: the cell's surroundings
(``CellContext``), the folder's trust question, the kernel's extensions, the plan and the
``PiRun`` of it (``runner.py``), and how the run is driven.

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

A ``--plan`` cell is two runs of its conversation: one that plans, then, after Run plan on the
plan card (or at once with ``--plan-run``), one that carries the plan out (``planning.py``).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from IPython.core.error import UsageError

from ..host.interrupts import MainThreadBridge, watch_sigint
from ..options import parse_options
from ..result import PiResult
from ..state import NotebookState, state_for
from .context import CellContext, cell_context
from .errors import RunInterrupted
from .plan import plan_run, prepare_conversation, strip_markers
from .planning import Plan, ask_plan, asking_for_plan, carry_out, execution_prompt, note_plan, plan_mode
from .runner import PiRun
from .trust import ask_trust

__all__ = ["prepare_run", "run_pi", "run_pi_sync"]


def prepare_run(
    state: NotebookState, line: str, body: str, where: CellContext, executing: Plan | None = None,
    *, read_only: bool = False,
) -> PiRun:  # fmt: skip
    """Parse and plan the cell, then make its run (main thread; nothing runs yet). With
    ``--plan`` the run plans (read-only tools, the plan instruction); ``executing``: the run
    carries out that accepted plan (``planning.py``); ``read_only``: read-only tools only."""
    options = parse_options(line, where.config, state.mcp_tool_names())
    plan_mode(options, executing, read_only)
    if not strip_markers(body).strip():
        raise UsageError("%%pi needs a prompt: write it in the cell body")
    conversation, notes = prepare_conversation(state, options, where)
    try:
        state.load_mcp_config()
    except (ValueError, RuntimeError) as exc:
        raise UsageError(f"c.PiMagics.mcp_config: {exc}") from None
    plan = plan_run(state, options, conversation, body, where=where, notes=notes)
    shell = state.shell
    run = PiRun(shell, state, asking_for_plan(plan), conversation)
    run.make_view()
    if executing is not None:
        carry_out(run, executing)
    return run


def _shell(shell: Any = None) -> Any:
    if shell is not None:
        return shell
    from IPython import get_ipython

    found = get_ipython()
    if found is None:
        raise RuntimeError("%%pi needs an IPython shell")
    return found


async def discover(state: NotebookState, where: CellContext) -> list[str]:
    """Load the kernel's extensions before the cell is planned (their providers' models must
    resolve for ``--model``); what failed, as lines for the run's notices."""
    host = state.extensions
    before = len(host.runner.errors)
    await host.discover((where.folder, where.resources.trusted))
    return [error.line() for error in host.runner.errors[before:]]


def tell(run: PiRun, lines: list[str]) -> None:
    for line in lines:
        run.view.add_notice(line)


async def surroundings(state: NotebookState, shell: Any) -> tuple[CellContext, list[str]]:
    """An awaited cell's context, after the trust question (before planning: trust decides what
    /name expands to), and what failed of the extensions discovered after it (a project's
    extensions wait for trust)."""
    where = cell_context(state, awaited=True)
    try:
        where = await ask_trust(state.resources, shell, where)
    except asyncio.CancelledError:  # an interrupt while the question waited, as for a run
        raise RunInterrupted from None
    return where, await discover(state, where)


def surroundings_sync(state: NotebookState) -> tuple[CellContext, list[str]]:
    """``surroundings`` where nobody can answer (the fallback magic): an undecided folder is
    untrusted, and the extensions load on a loop of their own."""
    where = cell_context(state, awaited=False)
    failed: list[str] = []
    loader = threading.Thread(target=lambda: failed.extend(asyncio.run(discover(state, where))), daemon=True)
    loader.start()  # its own loop: this thread may be inside the kernel's running one
    loader.join()
    return where, failed


async def run_pi(line: str, body: str) -> None:
    """The awaited ``%%pi`` path (the input transformer's target)."""
    shell = _shell()
    state = state_for(shell)
    where, failed = await surroundings(state, shell)
    run = prepare_run(state, line, body, where)
    tell(run, failed)
    await run_awaited(run)
    plan = run.proposed
    if plan is not None and not run.plan.options.plan_run:
        plan = await ask_plan(plan) if run.plan.mode.can_ask and run.widget is not None else None
    if plan is not None:
        await run_awaited(prepare_run(state, line, execution_prompt(plan), where, executing=plan))


async def run_awaited(run: PiRun) -> None:
    """Show, execute and freeze one prepared run on the kernel's loop."""
    if run.plan.options.mcp_tools:
        run.select_mcp(await run.state.mcp_tools())
    run.show()
    run.started()
    try:
        with watch_sigint():
            await run.execute()
    finally:
        note_plan(run)
        result = run.finish()
    if run.interrupted:
        raise RunInterrupted
    run.check_failure(result)


def run_pi_sync(line: str, body: str, shell: Any = None) -> PiResult:
    """The ``%%pi`` cell magic: run to completion without waiting for clicks."""
    state = state_for(_shell(shell))
    where, failed = surroundings_sync(state)
    run = prepare_run(state, line, body, where)
    tell(run, failed)
    result = run_sync(run)
    plan = run.proposed
    if plan is not None and run.plan.options.plan_run:  # nobody can click here: only --plan-run goes on
        result = run_sync(prepare_run(state, line, execution_prompt(plan), where, executing=plan))
    return result


def run_sync(run: PiRun) -> PiResult:
    """Execute one prepared run on a worker thread while this thread serves the tools."""
    if run.plan.options.mcp_tools:
        run.select_mcp(run.state.mcp_tools_blocking())
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
    note_plan(run)
    result = run.finish()
    if failure:
        raise failure[0]
    if interrupted or run.interrupted:
        raise RunInterrupted
    run.check_failure(result)
    return result
