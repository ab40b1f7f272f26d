"""``PiKernel``: ipykernel's ``IPythonKernel`` whose cells follow the routing rule.

Each ``execute_request`` tells the router which cell to route (``routing.CellRouter``), then
runs as ipykernel runs any cell; a prompt thus reaches the same ``%%pi`` transformer, runner
and ``AgentSession`` as a ``%%pi`` cell, with the same live view, approvals, interrupts, ``_pi``
and session recording. Silent requests are not routed: frontend extensions send them with
their own Python to run. A request from a terminal frontend gets its run drawn as text
(``terminal.py``) in place of the widgets.

``language_info`` stays Python's (name, file extension, exporter: papermill, nbconvert and
language servers treat the notebook as Python) except ``codemirror_mode``: JupyterLab and
Notebook 7 highlight a whole notebook in the one editor language it names, and Markdown reads
prompts as prose (code spans, fenced code highlighted by its language) where Python mode
would colour every ``in``/``is`` and run an apostrophe's string to the end of the line.
``%%python`` cells are highlighted as Markdown too.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ipykernel.ipkernel import IPythonKernel as _IPythonKernel

from .. import __version__
from . import assist
from .routing import CellRouter, classify

if TYPE_CHECKING:
    from .terminal import TerminalView

__all__ = ["LANGUAGE_INFO", "PiKernel"]

# ipykernel's own annotations make its handlers coroutines where IPythonKernel overrides them
# with plain functions (ipykernel awaits either); the subclass follows IPythonKernel.
IPythonKernel: Any = _IPythonKernel

LANGUAGE_INFO: dict[str, object] = {
    "name": "python",
    "version": sys.version.split()[0],
    "mimetype": "text/x-python",
    "codemirror_mode": "markdown",
    "pygments_lexer": "ipython3",
    "nbconvert_exporter": "python",
    "file_extension": ".py",
}

BANNER = (
    "Pi kernel: a cell is a prompt to the agent; a cell whose first line is %%python is Python; "
    "a cell starting with % or ! is IPython (%pi help lists the commands).\n"
)


class PiKernel(IPythonKernel):  # type: ignore[misc]
    """The Pi kernel (module docstring). ``router`` is set by the kernel app once the shell
    exists (``app.PiKernelApp``)."""

    implementation = "pi_notebook"
    implementation_version = __version__
    language_info = LANGUAGE_INFO
    router: CellRouter | None = None
    terminal = False
    """The request being executed comes from a terminal frontend (``terminal.py``)."""

    @property
    def banner(self) -> str:
        return BANNER + str(super().banner or "")

    async def do_execute(
        self,
        code: str,
        silent: bool,
        store_history: bool = True,
        user_expressions: Any = None,
        allow_stdin: bool = False,
        **kwargs: Any,
    ) -> Any:
        try:
            if self.router is not None and not silent:
                self.router.current = code
            # a frontend that can answer input() and names no notebook cell is a terminal
            self.terminal = bool(allow_stdin) and not kwargs.get("cell_id")
            # ipykernel reads the traceback of the last error into an error reply, but only its
            # synchronous run_cell resets it: without this a first cell failing with no traceback
            # (a UsageError) breaks the handler, and a later one replies an earlier traceback.
            self.shell._last_traceback = None
            return await super().do_execute(
                code, silent, store_history, user_expressions, allow_stdin, **kwargs
            )
        except Exception as error:  # whatever fails around the cell, the frontend gets a reply
            return self._failed_reply(error)
        finally:
            self.terminal = False
            if self.router is not None:
                self.router.current = None

    def _failed_reply(self, error: Exception) -> dict[str, Any]:
        """The error reply of a request the kernel itself failed to run: the one line on stderr
        and in the reply, the stack in the kernel's log, so the cell ends rather than hangs."""
        self.log.error("The Pi kernel failed to run a cell", exc_info=error)
        line = f"{type(error).__name__}: {error}".splitlines()[0]
        sys.stderr.write(line + " (the kernel's log has the details; the kernel still runs)\n")
        sys.stderr.flush()
        return {
            "status": "error",
            "ename": type(error).__name__,
            "evalue": str(error),
            "traceback": [line],
            "execution_count": self.shell.execution_count - 1,
            "user_expressions": {},
            "payload": [],
        }

    def draw_run(self, prompt: str, notices: tuple[str, ...]) -> TerminalView | None:
        """The view of a run for the request being executed: text for a terminal, else the
        live widgets (``None``)."""
        if not self.terminal:
            return None
        from .terminal import TerminalView  # the view and the agent's types load with a run

        return TerminalView(prompt, notices, self.raw_input)

    def _ipython_complete(self, code: str, cursor_pos: int) -> dict[str, Any]:
        return super().do_complete(code, cursor_pos)  # type: ignore[no-any-return]

    def _assist_failed(self, request: str, error: Exception) -> dict[str, Any]:
        """The error reply of a completion or inspection that failed: the editor gets an answer
        (nothing to offer), the kernel's log the stack."""
        self.log.error("The Pi kernel failed to answer a %s", request, exc_info=error)
        line = f"{type(error).__name__}: {error}".splitlines()[0]
        return {"status": "error", "ename": type(error).__name__, "evalue": str(error), "traceback": [line]}

    def do_complete(self, code: str, cursor_pos: int | None) -> dict[str, Any]:
        cursor = len(code) if cursor_pos is None else cursor_pos
        shell = self.shell
        commands, names = (lambda: _subcommands(shell)), (lambda: _slash_names(shell))
        try:
            return assist.complete_reply(code, cursor, self._ipython_complete, commands, names)
        except Exception as error:
            return self._assist_failed("complete_request", error)

    def do_inspect(
        self, code: str, cursor_pos: int | None, detail_level: int = 0, omit_sections: Any = ()
    ) -> dict[str, Any]:
        cursor = len(code) if cursor_pos is None else cursor_pos
        try:
            kind = classify(code)
            if kind == "prompt":
                return assist.inspect_prompt(code, cursor, self.shell.user_ns)
            if kind == "python":
                code = assist.mask_python_marker(code)
            return super().do_inspect(code, cursor, detail_level, omit_sections)  # type: ignore[no-any-return]
        except Exception as error:
            return self._assist_failed("inspect_request", error)

    def do_is_complete(self, code: str) -> dict[str, Any]:
        try:
            return assist.is_complete(code)
        except Exception as error:  # "unknown": the frontend decides, as for a kernel that cannot tell
            self._assist_failed("is_complete_request", error)
            return {"status": "unknown"}


def _subcommands(shell: Any) -> list[str]:
    """The ``%pi`` subcommands, with the commands extensions registered (``%pi NAME``)."""
    from ..notebook.commands.conversation import SUBCOMMANDS

    return [*SUBCOMMANDS, *_extension_commands(shell)]


def _slash_names(shell: Any) -> list[str]:
    """What a prompt may start with after ``/``: the prompt templates, ``skill:NAME`` for each
    skill, and the extensions' commands. Completion never fails: a folder that cannot be read
    completes nothing."""
    from ..notebook.state import state_for

    try:
        resources = state_for(shell).resources.current()
    except Exception:  # the loader reports bad files as diagnostics; anything else: no names
        return _extension_commands(shell)
    templates = [template.name for template in resources.templates]
    return [*templates, *(f"skill:{skill.name}" for skill in resources.skills), *_extension_commands(shell)]


def _extension_commands(shell: Any) -> list[str]:
    from ..notebook.state import state_for

    return list(state_for(shell).extensions.runner.commands())
