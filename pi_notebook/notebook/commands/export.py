"""``%pi export [N] [--py FILE]``: the code a recorded ``%%pi`` run executed, as ordinary code
cells, so that Restart & Run All reproduces what the agent computed without calling a model.

The source is the session file (``sessions/replay.py``'s ``recorded_runs``), so export works
after a kernel restart. Run ``N`` is the Nth ``%%pi`` run of the conversation counted from the
first on its current branch (what each cell's marker names); no ``N``: the last run. From that
run, in order, each tool call that ran successfully becomes one cell:

* ``run_code``: its ``code``;
* ``set_variable``: ``name = expression``, or ``name = <the JSON value as a Python literal>``;
* ``run_cell``: the source the agent ran (kept in the result's details since the call).

A call whose result is an error (denied by the user or the policy, or failed) is skipped and
counted in the line export prints; so is a call with no recorded result (a stopped run). Each
cell starts with ``# from %%pi run 3 (run_code, call 2)`` and, through the bridge, carries the
tag ``pi-export`` and ``metadata.pi_notebook = {"run": 3, "tool": "run_code", "call": 2}``.

Where the cells go: ``--py FILE`` writes them to a Python file (IPython syntax such as
``%timeit`` or ``!ls`` is turned into the ``get_ipython()`` calls IPython would run), the
bridge inserts them after the ``%pi export`` cell (JupyterLab, Notebook 7: the load step
rewrites a cell that is exactly ``%pi export ...`` into an awaited call, as for ``%pi undo``)
except those whose source the notebook already has (Run All runs the export cell again),
and anywhere else they are printed with one line saying why they were not inserted.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from IPython.core.error import UsageError

from ..bridge import BridgeRefused, BridgeUnavailable, NotebookBridge
from ..config import DEFAULT_NAME
from ..result import TAG, ExportedCell, executed_calls
from ..sessions.replay import Recording, replayed_messages
from ..state import NotebookState, state_for
from .show import runs_with


@dataclass
class Export:
    run: int
    cells: list[ExportedCell] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """One phrase per call left out: ``run_code call 3 (failed)``."""

    def summary(self) -> str:
        count = len(self.cells)
        text = f"%%pi run {self.run}: {count} cell{'s' if count != 1 else ''} of code the agent ran"
        if self.skipped:
            text += f"; skipped {len(self.skipped)} call(s) that did not run: {', '.join(self.skipped)}"
        return text + "."


def export_run(recording: Recording, number: int) -> Export:
    """The exported cells of ``recording``, the ``number``-th run (see the module docstring)."""
    calls, skipped = executed_calls(replayed_messages(recording))
    cells = [ExportedCell(number, call.tool, call.call, call.code) for call in calls]
    return Export(number, cells, skipped)


# --- the command ---------------------------------------------------------------------------------


def parse(rest: str) -> tuple[int | None, str | None]:
    """``[N] [--py FILE]`` -> (N or None for the last run, FILE or None)."""
    words = shlex.split(rest)
    number, path = None, None
    while words:
        word = words.pop(0)
        if word == "--py":
            if not words:
                raise UsageError("%pi export --py needs a file name, e.g. %pi export --py agent.py")
            path = words.pop(0)
        elif word.isdigit() and int(word) >= 1 and number is None:
            number = int(word)
        else:
            raise UsageError(
                f"%pi export takes [N] [--py FILE] (N: the run, 1 = the conversation's first), not {word!r}"
            )
    return number, path


def find_export(state: NotebookState, name: str | None, number: int | None) -> Export:
    runs = runs_with(state, name or DEFAULT_NAME, "%pi export", number)
    chosen = number or len(runs)
    return export_run(runs[chosen - 1], chosen)


def python_file(export: Export) -> str:
    """The export as a ``.py`` file: each cell as a ``# %%`` block, IPython syntax made Python."""
    from IPython.core.inputtransformer2 import TransformerManager

    transform = TransformerManager().transform_cell  # type: ignore[no-untyped-call]
    blocks = [
        f"# %% {cell.source.splitlines()[0][2:]}\n{transform(cell.code).rstrip()}\n" for cell in export.cells
    ]
    head = f"# Code the agent ran in {export.summary()[:-1]}, exported by %pi export.\n"
    return head + "\n" + "\n".join(blocks)


def write_py(export: Export, path: str) -> str:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(python_file(export))
    except OSError as exc:
        raise UsageError(f"%pi export --py: cannot write {path}: {exc.strerror or exc}") from None
    return f"{export.summary()} Written to {path}."


def printed(export: Export, why: str) -> str:
    """The cells as text, for a frontend the bridge cannot reach (``why`` says so)."""
    if not export.cells:
        return export.summary()
    body = "\n".join(cell.source for cell in export.cells)
    return f"{export.summary()} Not inserted ({why}); copy them into cells:\n\n{body}"


def export_cmd(state: NotebookState, name: str | None, rest: str) -> None:
    """``%pi export`` where it cannot await the bridge (in a cell with other code, autoawait
    off): ``--py`` writes the file, else the cells are printed."""
    number, path = parse(rest)
    export = find_export(state, name, number)
    if path is not None:
        print(write_py(export, path))
        return
    print(printed(export, "run %pi export alone in its cell to insert them"))


def split_line(line: str) -> tuple[str | None, str]:
    """``[--name NAME] export REST`` -> (NAME, REST), as ``%pi`` splits its line."""
    named = line.split(None, 2)[:2] if line.startswith("--name ") else []
    after = line.split(None, 3 if named else 1)
    rest = after[3 if named else 1] if len(after) > (3 if named else 1) else ""
    return (named[1] if len(named) > 1 else None), rest


async def export_awaited(shell: Any, line: str) -> None:
    """A cell that is exactly ``%pi export ...``: insert the cells through the bridge."""
    state = state_for(shell)
    name, rest = split_line(line)
    number, path = parse(rest)
    export = find_export(state, name, number)
    if path is not None:
        print(write_py(export, path))
        return
    if not export.cells:
        print(export.summary())
        return
    print(await insert(state, export))


async def insert(state: NotebookState, export: Export) -> str:
    from ..host.compat import get_kernel, running_cell_id
    from ..host.headless import detect_headless

    headless = detect_headless(state.shell)
    if headless.headless:  # nbclient, papermill: nobody answers the bridge, so do not wait for it
        return printed(export, f"a headless run has no notebook frontend: {headless.reason}")
    kernel = get_kernel(state.shell)
    if kernel is None:
        return printed(export, "no Jupyter kernel, so there is no notebook frontend")
    bridge = NotebookBridge(kernel)  # its own comm: the tools' one may belong to an old page
    anchor = running_cell_id(kernel)
    where: dict[str, Any] = {"after": anchor} if anchor else {"index": 1 << 30}
    try:
        # Restart & Run All runs this cell again: cells the notebook already has stay single.
        document = await bridge.request("read")
        have = {str(cell.get("source", "")).rstrip() for cell in document.get("cells", [])}
        new = [c for c in export.cells if c.source.rstrip() not in have]
        payload = [{"cell_type": "code", "source": c.source, "metadata": c.metadata} for c in new]
        made = await bridge.request("insert", cells=payload, **where) if payload else {}
    except (BridgeUnavailable, BridgeRefused) as exc:
        return printed(export, str(exc))
    count = len(made.get("ids", []))
    place = "below this cell" if anchor else "at the end of the notebook"
    text = f"{export.summary()} Inserted {count} cell{'s' if count != 1 else ''} {place} (tag {TAG})"
    kept = len(export.cells) - len(new)
    return text + (f"; {kept} already in the notebook, not inserted again." if kept else ".")

