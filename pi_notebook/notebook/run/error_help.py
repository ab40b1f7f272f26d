"""``%pi fix [N]`` / ``%pi explain [N]``: a run of the conversation about the cell that failed
last, or cell ``[N]`` (its execution count), from the cell log (``CellErrorLog.failed``).

The prompt is a Pi prompt template, ``/fix`` or ``/explain``, found where Pi finds templates (a
trusted project's ``.pi/prompts/``, then the agent dir's ``prompts/``), else the one shipped in
``notebook/prompts/``. Its arguments: ``$1`` the cell's number, ``$2`` its source, ``$3`` its
error (the traceback), ``$4`` its notebook cell id (empty where the frontend sends none); source
and error with secrets redacted, as everything the tools show the model.

Fix is an ordinary run with the run's usual tools: the default template asks for an
``edit_cell`` (the card shows the diff; Apply changes the cell) and then a ``run_cell``, each
through the approval policy. Explain is read-only: the read-only notebook tools only, no MCP
tool and none of the conversation's own (``plan_mode``'s ``read_only``, the seam plan mode
uses).

Three ways in, one run:

* a cell that is exactly ``%pi [--name NAME] fix|explain [N]``: the load step rewrites it into
  ``await _pi_help(get_ipython(), line)`` (``help_awaited``), a run in that cell as a ``%%pi``
  cell's;
* ``%pi fix`` anywhere else (autoawait off, a line among others): the line magic runs it as the
  ``%%pi`` fallback does (``help_command``), nobody can click;
* the buttons under the traceback (``help_clicked``, from ``run/error_buttons.py``), while
  the kernel is idle. Explain's run shows under the buttons. Fix's goes into a cell inserted
  below the failing one through the bridge (``# %pi fix N`` and the run's output): its
  ``run_cell`` replaces the failing cell's outputs, buttons included, and the run must stay in
  sight; where there is no bridge it shows under the buttons too. The folder's trust cannot be
  asked there: an undecided folder is untrusted for that run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from IPython.core.error import UsageError

from ...runtime.resources.templates import PromptTemplate, load_template, substitute_args
from ..bridge import BridgeRefused, BridgeUnavailable, NotebookBridge
from ..host.compat import get_kernel
from ..state import NotebookState, state_for
from ..tools.cell_log import FailedCell
from ..tools.references import redact_known, secret_values
from .cell import discover, prepare_run, run_awaited, run_sync, surroundings, surroundings_sync, tell
from .context import CellContext, cell_context
from .runner import PiRun

__all__ = ["KINDS", "failed_cell", "help_awaited", "help_clicked", "help_command", "help_prompt"]

KINDS = ("fix", "explain")
BUILT_IN = Path(__file__).resolve().parent.parent / "prompts"


def parse_number(kind: str, rest: str) -> int | None:
    """``[N]`` -> N, or ``None`` for the last failing cell; anything else a ``UsageError``."""
    words = rest.split()
    if not words:
        return None
    if len(words) == 1 and words[0].isdigit() and int(words[0]) >= 1:
        return int(words[0])
    raise UsageError(
        f"%pi {kind} takes the number of a cell that failed, the N of its [N] (e.g. %pi {kind} 3), "
        f"or nothing for the last one; not {rest!r}"
    )


def failed_cell(state: NotebookState, kind: str, number: int | None) -> FailedCell:
    """The failing cell ``number`` (``None``: the last one); a ``UsageError`` saying what to do."""
    log = state.errors.failed
    found = log.get(number) if number is not None else (log[max(log)] if log else None)
    if found is not None:
        return found
    recent = ", ".join(f"[{n}]" for n in sorted(log)[-5:])
    known = f"cells that failed: {recent}" if recent else "no cell has failed since the kernel started"
    if number is None:
        raise UsageError(f"%pi {kind}: {known}; run the cell that raises, then %pi {kind} again")
    raise UsageError(
        f"%pi {kind} {number}: cell [{number}] did not fail (or it is one of the extension's own "
        f"cells); {known}. Give the N shown as [N] beside a failed cell"
    )


def template_for(kind: str, where: CellContext) -> PromptTemplate:
    """The user's or the project's ``/fix`` / ``/explain`` template, else the built-in one."""
    found = next((t for t in where.resources.templates if t.name == kind), None)
    return found if found is not None else load_template(str(BUILT_IN / f"{kind}.md"), "built-in")


def help_prompt(state: NotebookState, kind: str, failed: FailedCell, where: CellContext) -> str:
    """The run's prompt: the template with the failing cell as its arguments."""
    secrets = secret_values(state.shell.user_ns)
    source = redact_known(failed.source.strip("\n"), secrets)
    error = redact_known(failed.error, secrets)
    args = [str(failed.count), source, error, failed.cell_id or ""]
    return substitute_args(template_for(kind, where).content, args).strip()


def _split(line: str) -> tuple[str, str, str]:
    """``[--name NAME] fix|explain [N]`` -> (the run's ``%%pi`` line, kind, rest)."""
    words = line.split()
    options = ""
    if words[:1] == ["--name"] and len(words) > 2:
        options, words = f"--name {words[1]}", words[2:]
    return options, words[0], " ".join(words[1:])


# --- in a cell ------------------------------------------------------------------------------------


async def help_awaited(shell: Any, line: str) -> None:
    """A cell that is exactly ``%pi fix|explain [N]``: the run in this cell, as ``run_pi``."""
    state = state_for(shell)
    options, kind, rest = _split(line)
    failed = failed_cell(state, kind, parse_number(kind, rest))
    where, problems = await surroundings(state, shell)
    prompt = help_prompt(state, kind, failed, where)
    run = prepare_run(state, options, prompt, where, read_only=kind == "explain")
    tell(run, problems)
    await run_awaited(run)


def help_command(kind: str) -> Callable[[NotebookState, str | None, str], None]:
    """The ``%pi fix`` / ``%pi explain`` line magic (not alone in its cell, or autoawait off):
    the run as the ``%%pi`` fallback runs one, to the end, nobody clicking."""

    def command(state: NotebookState, name: str | None, rest: str) -> None:
        failed = failed_cell(state, kind, parse_number(kind, rest))
        where, problems = surroundings_sync(state)
        options = f"--name {name}" if name else ""
        prompt = help_prompt(state, kind, failed, where)
        run = prepare_run(state, options, prompt, where, read_only=kind == "explain")
        tell(run, problems)
        run_sync(run)

    return command


# --- from a button ----------------------------------------------------------------------------


class RunPlace(Protocol):
    """Where a button's run shows (``run/error_buttons.py``). It stands for the run's display
    handle too: ``PiRun.finish`` freezes the output with ``update``."""

    display_id: str | None
    bundle: dict[str, Any] | None
    """The frozen output, once ``update`` has it."""
    failed: bool
    """``told`` said the run failed."""

    def live(self, run: PiRun) -> None:
        """Show the run's live view in the place."""

    def under_buttons(self) -> None:
        """Put the place under the buttons (there is no cell of its own)."""

    def output(self) -> dict[str, Any]:
        """The place as a notebook output (a widget view), for a cell of its own."""

    def update(self, bundle: dict[str, Any], raw: bool = True) -> None:
        """Replace the live view by the frozen output ``bundle``."""

    def told(self, line: str, failed: bool = False) -> None:
        """A line beside the buttons (``""``: none)."""


async def help_clicked(state: NotebookState, kind: str, failed: FailedCell, place: RunPlace) -> None:
    """The Explain or Fix button's run (see the module docstring); every failure is a line
    beside the buttons, never a traceback in an idle kernel's log."""
    try:
        where = cell_context(state, awaited=True)  # no trust question: nothing here can show it
        problems = await discover(state, where)
        prompt = help_prompt(state, kind, failed, where)
        run = prepare_run(state, "", prompt, where, read_only=kind == "explain")
    except UsageError as exc:
        place.told(f"Not started: {exc}", failed=True)
        return
    tell(run, problems)
    cell = await _own_cell(state, failed, kind, place) if kind == "fix" else None
    below = f"Pi's fix is in the cell below (# %pi fix {failed.count})."
    if cell is None:
        place.under_buttons()
    else:
        place.told(below)
    await _run_placed(state, run, place, cell[0] if cell else None)
    if not place.failed:
        place.told(below if cell is not None else "")
    if cell is not None and place.bundle is not None:
        cell_id, bridge, source = cell
        frozen = {"output_type": "display_data", "data": place.bundle, "metadata": {}}
        # the saved notebook keeps the frozen output, not a widget that needs this kernel (the
        # cell changed or the page went: the widget still shows the frozen run)
        with contextlib.suppress(BridgeUnavailable, BridgeRefused):
            await bridge.request("set_outputs", id=cell_id, expect=source, source=source, outputs=[frozen])


async def _run_placed(state: NotebookState, run: PiRun, place: RunPlace, cell_id: str | None) -> None:
    """Show, execute and freeze ``run`` in ``place`` (the kernel is idle: no interrupt to catch;
    the view's Stop button stops it)."""
    place.live(run)
    run.display_handle = place
    # read_notebook marks "this %%pi cell": the run's own cell, not the last cell executed
    unsubscribe = run.session.subscribe(
        lambda _event: setattr(state.tools, "current_cell", cell_id), frozenset({"agent_start"})
    )
    run.started()
    try:
        await run.execute()
    except Exception as exc:  # a bug must still leave a frozen output and a line
        place.told(f"The run failed: {type(exc).__name__}: {exc}", failed=True)
    finally:
        unsubscribe()
        run.finish()


async def _own_cell(
    state: NotebookState, failed: FailedCell, kind: str, place: RunPlace
) -> tuple[str, NotebookBridge, str] | None:
    """A cell below the failing one, trusted, showing the run's widget (``None``: no bridge)."""
    kernel = get_kernel(state.shell)
    if kernel is None or failed.cell_id is None:
        return None
    bridge = NotebookBridge(kernel)  # its own comm, as %pi export's
    source = f"# %pi {kind} {failed.count} (the {kind.capitalize()} button under cell [{failed.count}])"
    payload = [{"cell_type": "code", "source": source, "metadata": {"tags": ["pi-" + kind]}}]
    try:
        made = await bridge.request("insert", cells=payload, after=failed.cell_id)
        cell_id = str((made.get("ids") or [""])[0])
        outputs = [place.output()]
        await bridge.request("set_outputs", id=cell_id, expect=source, source=source, outputs=outputs)
    except (BridgeUnavailable, BridgeRefused):
        return None
    return cell_id, bridge, source
