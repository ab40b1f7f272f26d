"""``%load_ext pi_notebook``: the ``%%pi`` input transformer and everything it registers.

Why a transformer: IPython calls cell magics synchronously, so a ``%%pi`` magic could not
await the agent, and the kernel handles widget messages (Stop, Approve, steering) during a
cell only while that cell *awaits* (ipykernel >= 7.4). The transformer rewrites a cell whose
first token is exactly ``%%pi`` into one top-level ``await _pi_run(line, body)``, so the cell
blocks until the run ends (Run All and nbval keep their order) while comms are handled.
``_pi_run`` is ``run.cell.run_pi``, (re)bound in the user namespace (hidden from ``%who``) each
time the transformer emits a call to it: a traceback or ``In[n]`` then reads as what it is.

Rules: comment lines (and blank lines) may precede ``%%pi``; ``%%pi_sync`` or ``%%pie`` are
left alone; a cell that is exactly ``%pi undo`` becomes ``await _pi_undo(...)`` (undo waits
for the notebook's answers, see ``commands/undo.py``), and one that is exactly
``%pi export ...`` becomes ``await _pi_export(...)`` (it inserts cells, ``commands/export.py``),
and ``%pi fix|explain [N]`` alone ``await _pi_help(...)`` (a run, ``run/error_help.py``);
with autoawait off, or a non-asyncio loop runner, the cell becomes a plain call of the
registered ``%%pi`` cell magic (the non-interactive fallback). The transform runs on every
cell, so it does the cheap check first.

Loading also registers ``PiMagics`` (``%%pi`` fallback, ``%pi``), a ``post_run_cell`` hook
that records cell errors for ``read_cells`` and ``%pi fix``, one that shows Explain / Fix
under a failing cell (``error_actions.py``), and, on ipykernel >= 7.4, the ``comm_msg``
status wrapper (``host.compat.install_comm_ack``), and starts the MCP servers of
``c.PiMagics.mcp_config`` if set. Loading twice is harmless. Loading imports only the light
modules those need (``magics``, ``config``, ``state``, ``tools.cell_log``, ``host.compat``,
``error_actions``):
the agent, the providers, pydantic, ipywidgets and the renderers load with the first ``%%pi``
or ``%pi``.
"""

from __future__ import annotations

import sys
from typing import Any

from .error_actions import offer
from .host.compat import can_await, get_kernel, install_comm_ack, uninstall_comm_ack
from .magics import PiMagics
from .state import state_for

_MARKER = "__pi_notebook_transformer__"
RUN_NAME = "_pi_run"
_AWAIT_CALL = "await " + RUN_NAME + "({line!r}, {body!r})\n"
_SYNC_CALL = "get_ipython().run_cell_magic('pi', {line!r}, {body!r})\n"
UNDO_NAME = "_pi_undo"
_UNDO_CALL = "await " + UNDO_NAME + "(get_ipython())\n"
EXPORT_NAME = "_pi_export"
_EXPORT_CALL = "await " + EXPORT_NAME + "(get_ipython(), {line!r})\n"
HELP_NAME = "_pi_help"
_HELP_CALL = "await " + HELP_NAME + "(get_ipython(), {line!r})\n"


def is_undo_cell(lines: list[str]) -> bool:
    """The cell is ``%pi undo`` alone (comments and blank lines aside)."""
    code = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return len(code) == 1 and code[0].split() == ["%pi", "undo"]


def export_line(lines: list[str], commands: tuple[str, ...] = ("export",)) -> str | None:
    """The rest of the line when the cell is ``%pi [--name N] export ...`` alone (or another of
    ``commands``)."""
    code = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if len(code) != 1 or not code[0].startswith("%pi "):
        return None
    words = code[0].split()
    at = 3 if words[1:2] == ["--name"] else 1
    return code[0][4:].strip() if words[at : at + 1] and words[at] in commands else None


def split_pi_cell(lines: list[str]) -> tuple[str, str] | None:
    """``(line, body)`` when the first non-comment line's first token is exactly ``%%pi``."""
    i = 0
    while i < len(lines):
        stripped = lines[i].lstrip()
        if stripped and not stripped.startswith("#"):
            break
        i += 1
    if i == len(lines):
        return None
    words = lines[i].split(maxsplit=1)
    if words[0] != "%%pi":
        return None
    return (words[1].strip() if len(words) > 1 else ""), "".join(lines[i + 1 :])


def make_transformer(shell: Any) -> Any:
    """The cleanup transformer for ``shell`` (it needs ``autoawait`` at transform time)."""

    def pi_transformer(lines: list[str]) -> list[str]:
        found = split_pi_cell(lines)
        if found is None:
            if is_undo_cell(lines) and can_await(shell):
                from .commands.undo import undo_last

                shell.user_ns[UNDO_NAME] = undo_last
                shell.user_ns_hidden[UNDO_NAME] = undo_last
                return [_UNDO_CALL]
            line = export_line(lines)
            if line is not None and can_await(shell):
                from .commands.export import export_awaited

                shell.user_ns[EXPORT_NAME] = export_awaited
                shell.user_ns_hidden[EXPORT_NAME] = export_awaited
                return [_EXPORT_CALL.format(line=line)]
            line = export_line(lines, ("fix", "explain"))
            if line is not None and can_await(shell):
                from .run.error_help import help_awaited

                shell.user_ns[HELP_NAME] = help_awaited
                shell.user_ns_hidden[HELP_NAME] = help_awaited
                return [_HELP_CALL.format(line=line)]
            return lines
        line, body = found
        if not can_await(shell):
            return [_SYNC_CALL.format(line=line, body=body)]
        from .run.cell import run_pi  # the run machinery loads with the first %%pi cell

        shell.user_ns[RUN_NAME] = run_pi  # a %reset or the user may have removed it
        shell.user_ns_hidden[RUN_NAME] = run_pi
        return [_AWAIT_CALL.format(line=line, body=body)]

    setattr(pi_transformer, _MARKER, True)
    # It writes the user's namespace, and IPython's completeness check (``check_complete``: is
    # the input done, or does Enter add a line?) skips such transformers: a ``%%pi`` cell then
    # stays a cell magic there, complete at a blank line, so a terminal or ``jupyter console``
    # lets the prompt be typed below its ``%%pi`` line instead of running the line alone.
    pi_transformer.has_side_effects = True  # type: ignore[attr-defined]
    return pi_transformer


def _remove_transformers(shell: Any) -> None:
    shell.input_transformers_cleanup[:] = [
        t for t in shell.input_transformers_cleanup if not getattr(t, _MARKER, False)
    ]


def load_ipython_extension(shell: Any) -> None:
    _remove_transformers(shell)
    shell.input_transformers_cleanup.append(make_transformer(shell))
    state = state_for(shell)
    magics = state.config if isinstance(state.config, PiMagics) else PiMagics(shell=shell)
    shell.register_magics(magics)
    record = state.errors.record
    if record not in shell.events.callbacks.get("post_run_cell", []):
        shell.events.register("post_run_cell", record)
    if offer not in shell.events.callbacks.get("post_run_cell", []):
        shell.events.register("post_run_cell", offer)  # after record: it reads what record filed
    kernel = get_kernel(shell)
    if kernel is not None:
        install_comm_ack(kernel)
    try:
        state.load_mcp_config()  # starts the servers; they connect while the user works
    except (ValueError, RuntimeError) as exc:  # the first %%pi retries and reports it again
        print(f"pi_notebook: c.PiMagics.mcp_config: {exc}", file=sys.stderr)


def unload_ipython_extension(shell: Any) -> None:
    _remove_transformers(shell)
    manager = shell.magics_manager
    manager.magics["cell"].pop("pi", None)
    manager.magics["line"].pop("pi", None)
    record = state_for(shell).errors.record
    for hook in (record, offer):
        if hook in shell.events.callbacks.get("post_run_cell", []):
            shell.events.unregister("post_run_cell", hook)
    uninstall_comm_ack(get_kernel(shell))
