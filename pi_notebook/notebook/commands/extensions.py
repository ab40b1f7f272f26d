"""``%pi extension load MODULE_OR_PATH``, ``%pi extension list``, and ``%pi NAME ARGS`` for a
command an extension registered (``pi.register_command``).

A line magic cannot wait for a click, so an extension command's ``ctx.ui`` questions are
answered as in a headless run (``confirm`` No, ``select`` / ``input`` nothing), each with a
printed line; ``notify`` prints. The command runs to the end, scheduled ``pi.send_message``
calls included, before the line returns.
"""

from __future__ import annotations

import contextlib

from IPython.core.error import UsageError

from ..run.extension_ui import CellUI
from ..state import NotebookState
from .sessions import run_coroutine

__all__ = ["extension_command", "extension_subcommand"]

USAGE = "usage: %pi extension load MODULE_OR_PATH | %pi extension list"
NO_CLICK = "a %pi command cannot wait for a click; ask from inside a %%pi run"


def _new_errors(state: NotebookState, before: int) -> None:
    for error in state.extensions.runner.errors[before:]:
        print(error.line())


def extension_subcommand(state: NotebookState, name: str | None, rest: str) -> None:
    """``%pi extension load X`` / ``%pi extension list``."""
    words = rest.split(None, 1)
    action = words[0] if words else ""
    host = state.extensions
    before = len(host.runner.errors)
    if action == "load":
        if len(words) < 2:
            raise UsageError(f"extension load needs a module or a .py path; {USAGE}")
        loaded = run_coroutine(lambda: host.load(words[1]))
        _new_errors(state, before)
        if loaded is not None:
            print(f"loaded {loaded.describe()}")
    elif action == "list" and len(words) == 1:
        run_coroutine(host.discover)
        _new_errors(state, before)
        print("\n".join(host.lines()))
    else:
        raise UsageError(USAGE)


def extension_command(state: NotebookState, name: str | None, command: str, rest: str) -> bool:
    """Run the extension command ``command``; False when no extension registered it."""
    host = state.extensions
    before = len(host.runner.errors)
    run_coroutine(host.discover)
    runner = host.runner
    if command not in runner.commands():
        _new_errors(state, before)
        return False
    with contextlib.suppress(ValueError):  # no default model yet: no conversation to act on
        runner.bind(state.conversations.session(name))
    ui = CellUI(print, why=NO_CLICK)

    async def run() -> None:
        with runner.using_ui(ui):
            await runner.run_command(command, rest)
            await runner.settle()

    run_coroutine(run)
    _new_errors(state, before)
    return True
