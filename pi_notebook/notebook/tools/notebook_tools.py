"""The notebook tools: what the agent may read and change in the kernel it runs in.

Read-only (never gated): ``list_variables``, ``inspect_variable``, ``read_cells``,
``read_notebook``. State-changing (always through the approval policy, see ``run/approval.py``):
``run_code``, ``insert_cell``, ``set_variable``.

Each tool is a method of ``NotebookTools`` declared with ``@notebook_tool`` and turned into an
``AgentTool`` by ``pi_notebook.agent``'s ``@tool`` when a shell's ``NotebookTools`` is created:
the signature is the parameter schema, the docstring the description the model reads.

The tools see what the user sees: images (figures ``run_code`` leaves open, images earlier
cells displayed or the saved notebook holds) are attached for models with image input and
replaced by a labelled placeholder for the others (``outputs.py``); ``begin_run`` tells the
tools the run's model.

Everything returned is bounded and secret-safe (``references.py``). Tools touch the user
namespace through ``dispatch``, which runs a callable on the kernel's main thread: directly in
the awaited ``%%pi`` path (the agent already runs there), through the fallback's bridge when
the agent runs on a worker thread. ``run_code`` executes on the main thread on purpose, like
a cell: user code may need it (GUI backends, signals), and a kernel interrupt must reach it.
"""

from __future__ import annotations

import ast
import fnmatch
import itertools
import json
import keyword
import linecache
import sys
import traceback
from collections.abc import Callable, Iterable
from typing import Annotated, Any

from pydantic import Field

from ...agent.decorator import tool
from ...agent.types import AgentTool, AgentToolResult, ToolExecutionMode
from ...ai.abort import AbortSignal
from ...ai.types import TextContent
from ..bridge import BridgeUnavailable, NotebookBridge
from ..host.code_clock import CodeClock, timed_out
from ..host.compat import get_kernel, running_cell_id
from ..host.interrupts import interruptible, raise_if_interrupted
from .cell_log import CellErrorLog
from .cells import format_saved_cell, history_text, saved_notebook
from .declare import Dispatch, declared_tools, notebook_tool, run_here
from .edits import NO_COMMS, EditTools, NewCell
from .outputs import ImageBudget, Shown, open_figures, take_figures
from .references import (
    looks_secret,
    one_line,
    redact_known,
    secret_placeholder,
    secret_values,
    summarize,
    truncate,
)
from .variables import inspect_text, list_text, resolve, variable_names

PROTECTED_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit"})
OUTPUT_CHARS = 8_000
NOTEBOOK_CHARS = 24_000
_TOOL_MARKER = "__pi_notebook_tool__"  # on the execute function of a built tool


def is_notebook_tool(tool: AgentTool) -> bool:
    """True for the tools built here (so a run can swap them without touching the user's own)."""
    return bool(getattr(tool.execute, _TOOL_MARKER, False))


def _head_tail(text: str, limit: int = OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters omitted] ...\n{text[-half:]}"


class NotebookTools(EditTools):
    """The notebook tools of one shell. ``dispatch`` and ``on_interrupt`` are set per run."""

    def __init__(self, shell: Any, errors: CellErrorLog | None = None) -> None:
        super().__init__()
        self.shell = shell
        self.errors = errors if errors is not None else CellErrorLog()
        self.dispatch: Dispatch = run_here
        self.on_interrupt: Callable[[], None] | None = None
        self.on_progress: Callable[[str, str], None] | None = None
        """``(tool_call_id, line)``: a running call's "still running" line, from another thread."""
        self.code_timeout: float | None = None
        """Seconds one ``run_code`` call may run before it is interrupted (None: no limit)."""
        self.inserted: list[str] = []
        self.sees_images = True
        self.headless = False
        self._runs = itertools.count(1)
        self._tools: dict[str, AgentTool] = {}
        self._bridge: NotebookBridge | None = None
        if shell is not None:
            self.errors.watch(shell)

    def begin_run(
        self,
        dispatch: Dispatch = run_here,
        on_interrupt: Callable[[], None] | None = None,
        *,
        model: Any = None,
        headless: bool = False,
        comms: bool = False,
        code_timeout: float | None = None,
        on_progress: Callable[[str, str], None] | None = None,
    ) -> None:
        """Per run: how to reach the main thread, what an interrupt does, the run's ``model``
        (images go to models with image input, others get a placeholder), whether nobody
        watches (``headless``: no frontend will insert a cell) and whether the kernel hears
        comm messages while the cell runs (``comms``: the live notebook can be reached), how
        long ``run_code`` may run (``code_timeout``) and where its "still running" line goes."""
        self.dispatch, self.on_interrupt, self.inserted = dispatch, on_interrupt, []
        self.code_timeout, self.on_progress = code_timeout or None, on_progress
        self.sees_images = model is None or "image" in getattr(model, "input", ("image",))
        self.headless = headless
        self.start_changes()
        kernel = get_kernel(self.shell)
        self.current_cell = running_cell_id(kernel)
        if headless:
            self.bridge, self.no_bridge = None, "this headless run has no notebook frontend"
        elif not comms or kernel is None:
            self.bridge, self.no_bridge = None, NO_COMMS
        else:
            if self._bridge is None or self._bridge.kernel is not kernel:
                self._bridge = NotebookBridge(kernel)
            self._bridge.forget()
            self.bridge = self._bridge

    def redact(self, text: str) -> str:
        """Key patterns, and the values of secret-named environment and notebook variables (the
        key in ``creds = os.environ["OPENAI_API_KEY"]`` too), replaced by ``[REDACTED]``."""
        return redact_known(text, self._secrets())

    def _secrets(self) -> list[str]:
        return secret_values(getattr(self.shell, "user_ns", None))

    def _text(self, text: str) -> TextContent:
        return TextContent(text=self.redact(text))

    def image_budget(self) -> ImageBudget:
        return ImageBudget(sees_images=self.sees_images)

    def build(self, names: list[str]) -> list[AgentTool]:
        """The tools ``names``, in that order (made once per shell, then reused)."""
        if not self._tools:
            for name in NOTEBOOK_TOOL_NAMES:
                mode: ToolExecutionMode | None = "sequential" if name in STATE_CHANGING_TOOLS else None
                made = tool(label=name.replace("_", " "), execution_mode=mode)(getattr(self, name))
                setattr(made.execute, _TOOL_MARKER, True)
                self._tools[name] = made
        return [self._tools[name] for name in names]

    # read-only ------------------------------------------------------------------------------

    @notebook_tool()
    async def list_variables(
        self,
        pattern: str | None = None,
        include_modules: bool = False,
        limit: Annotated[int, Field(ge=1, le=500)] = 100,
        signal: AbortSignal | None = None,
    ) -> AgentToolResult:
        """List the variables in the notebook kernel with their type and a one-line summary.

        Args:
            pattern: Only names containing this text (case-insensitive), or matching it as a
                glob when it has * ? or [ (``df*``).
            include_modules: Also list imported modules.
            limit: At most this many variables.
        """
        names, total = variable_names(self.shell, pattern, include_modules)
        if names:  # summaries run the values' own code: bounded, off the kernel's loop
            text = await list_text(self.shell.user_ns, names, limit, signal)
        elif pattern and total:
            plural = "s" if total != 1 else ""
            text = f"No variables match {pattern!r} ({total} user variable{plural} in all)."
        else:
            text = "No user variables."
        return AgentToolResult(content=[self._text(text)], details={"count": len(names), "total": total})

    @notebook_tool()
    async def inspect_variable(
        self,
        name: str,
        max_chars: Annotated[int, Field(ge=100, le=8000)] = 2000,
        signal: AbortSignal | None = None,
    ) -> AgentToolResult:
        """Show a bounded summary of one variable (type, size, a capped rendering; DataFrames:
        shape, dtypes, head). A property on a dotted path is named, not evaluated.

        Args:
            name: A variable name, optionally with attributes: `df` or `model.config`.
            max_chars: Cap on the summary length.
        """
        path = name.strip()
        value = await self.dispatch(lambda: resolve(self.shell.user_ns, path))
        if any(looks_secret(part) for part in path.split(".")):
            return AgentToolResult(
                content=[self._text(secret_placeholder(path, value))], details={"redacted": True}
            )
        text = await inspect_text(value, path, max_chars, signal)  # bounded, off the kernel's loop
        return AgentToolResult(content=[self._text(text)], details={"type": type(value).__name__})

    @notebook_tool()
    async def read_cells(
        self,
        last: Annotated[int, Field(ge=1, le=100)] = 5,
        start: Annotated[int | None, Field(ge=1)] = None,
        end: Annotated[int | None, Field(ge=1)] = None,
    ) -> AgentToolResult:
        """Read recently executed cells from the kernel's history: source, displayed outputs
        (images included, as the user saw them), output value and error.

        Args:
            last: How many of the most recent cells (ignored with start).
            start: First execution count to read.
            end: Last execution count to read (inclusive).
        """

        def read() -> AgentToolResult:
            images = self.image_budget()
            text, numbers = self.history_text(last, start, end, images=images)
            details = {"cells": numbers, "images": len(images.images)}
            return AgentToolResult(content=[self._text(text), *images.images], details=details)

        return await self.dispatch(read)  # type: ignore[no-any-return]

    def history_text(
        self, last: int, start: int | None = None, end: int | None = None, images: ImageBudget | None = None
    ) -> tuple[str, list[int]]:
        """Executed cells from the input history with their outputs, ``Out`` value and error."""
        return history_text(self.shell, self.errors, last, start, end, images=images)

    @notebook_tool()
    async def read_notebook(
        self, max_cells: Annotated[int, Field(ge=1, le=500)] = 60, include_outputs: bool = True
    ) -> AgentToolResult:
        """Read the notebook as the user sees it: every cell with its id, kind, source and
        outputs (images as the user saw them, rich output as text), unsaved edits included.
        Where the live notebook cannot be reached, reads the file as last saved, else the
        kernel's input history, and says which it used.

        Args:
            max_cells: At most this many cells.
            include_outputs: Include outputs (truncated; a few images).
        """
        try:
            document = await self.read_live()
        except BridgeUnavailable as exc:
            why = str(exc)
        else:
            images = self.image_budget() if include_outputs else None
            text = _head_tail(self.live_text(document, max_cells, images), NOTEBOOK_CHARS)
            attached = images.images if images is not None else []
            details = {"source": "live", "cells": len(document.get("cells", [])), "images": len(attached)}
            return AgentToolResult(content=[self._text(text), *attached], details=details)
        return await self.dispatch(  # type: ignore[no-any-return]
            lambda: self._read_notebook_now(max_cells, include_outputs, why)
        )

    def _read_notebook_now(self, max_cells: int, include_outputs: bool, why: str = "") -> AgentToolResult:
        path = saved_notebook(self.shell)
        images = self.image_budget() if include_outputs else None
        live = f"Not the live notebook ({why}). " if why else ""
        if path is None:
            history, numbers = self.history_text(max_cells, images=images)
            text = (
                f"{live}The notebook file is unknown to the kernel; this is the kernel's input history.\n\n"
                + history
            )
            details: dict[str, Any] = {"source": "history", "cells": numbers}
        else:
            data = json.loads(path.read_text("utf-8"))
            cells = data.get("cells", [])
            saved = f"({len(cells)} cells; unsaved edits are not included)"
            parts = [f"{live}Notebook {path.name} as last saved {saved}."]
            for i, cell in enumerate(cells[:max_cells]):
                parts.append(format_saved_cell(i, cell, include_outputs, images))
            if len(cells) > max_cells:
                parts.append(f"... {len(cells) - max_cells} more cells")
            text = _head_tail("\n\n".join(parts), NOTEBOOK_CHARS)
            details = {"source": str(path), "cells": len(cells)}
        attached = images.images if images is not None else []
        if attached:
            details["images"] = len(attached)
        return AgentToolResult(content=[self._text(text), *attached], details=details)

    # state-changing ---------------------------------------------------------------------------

    @notebook_tool(changes_state=True)
    async def run_code(self, code: str, tool_call_id: str = "") -> AgentToolResult:
        """Run Python code in the notebook's kernel namespace (like a cell, not added to history).
        Returns stdout, stderr, the last expression's value, images it displayed and matplotlib
        figures it left open (as the user would see them after a cell; they are then closed).
        Changes state.

        Args:
            code: Python (IPython syntax allowed) to run in the notebook's namespace.
        """
        if code.lstrip().startswith("%%pi"):
            raise ValueError("run_code cannot start another %%pi run")
        filename = f"<run_code-{next(self._runs)}>"
        return await self.dispatch(lambda: self._run_code_now(code, filename, tool_call_id))  # type: ignore[no-any-return]

    def _run_code_now(self, code: str, filename: str, tool_call_id: str = "") -> AgentToolResult:
        from IPython.utils.capture import capture_output

        source = self.shell.transform_cell(code)
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            tree = ast.parse(source, filename)
        except SyntaxError as exc:  # the caret line says where, as a cell's own error would
            text = "".join(traceback.format_exception_only(exc)).rstrip()
            raise SyntaxError(redact_known(text, self._secrets())) from None
        body, last = _split_last_expression(tree)
        ns, global_ns = self.shell.user_ns, self.shell.user_global_ns
        value, error = None, None
        figures_before = open_figures()
        report = self._progress_of(tool_call_id)
        # Only the inner block turns SIGINT into KeyboardInterrupt: the clock's thread starts and
        # joins outside it (under load that wait is where an interrupt lands), and the try that
        # catches the interrupt encloses the handler swap itself.
        with capture_output() as captured:
            clock = CodeClock(self.code_timeout, lambda: captured.stdout, report, deferred=True)
            with clock:
                try:
                    with interruptible():
                        try:
                            clock.begin()
                            raise_if_interrupted()  # an interrupt that came before the handler swap
                            if body.body:
                                exec(compile(body, filename, "exec"), global_ns, ns)
                            if last is not None:
                                value = eval(compile(last, filename, "eval"), global_ns, ns)
                        except Exception as exc:
                            error = _format_user_error(exc)
                        clock.finish()  # the clock's interrupt, if it fired just now, lands here
                except KeyboardInterrupt:
                    clock.stop()
                    if not clock.timed_out and self.on_interrupt is not None:
                        self.on_interrupt()
                    error = "KeyboardInterrupt: the kernel was interrupted while run_code was running"
                if clock.timed_out:
                    error = timed_out(clock.limit)
        # Figures left open would otherwise be drawn by the inline backend after the %%pi cell.
        figures = take_figures(figures_before)
        return self._code_result(captured, value, last is not None, error, figures)

    def _progress_of(self, tool_call_id: str) -> Callable[[str], None] | None:
        """The card's "still running" line for this call, when the run draws progress."""
        progress = self.on_progress
        if progress is None or not tool_call_id:
            return None
        return lambda text: progress(tool_call_id, text)

    def _code_result(
        self, captured: Any, value: Any, has_value: bool, error: str | None, figures: list[bytes]
    ) -> AgentToolResult:
        parts: list[str] = []
        images = self.image_budget()
        for label, stream in (("stdout", captured.stdout), ("stderr", captured.stderr)):
            if stream:
                parts.append(f"{label}:\n{_head_tail(stream)}")
        labels = [label for output in captured.outputs for label in images.add_bundle(output.data)]
        shown = Shown()  # what the card shows the user, whether or not the model sees images
        for output in captured.outputs:
            shown.add_bundle(output.data)
        result_text = None
        if has_value and value is not None:
            data = self._format_value(value)
            labels += images.add_bundle(data)
            shown.add_bundle(data)
            plain = data.get("text/plain")
            result_text = truncate(str(plain), 4000) if plain is not None else summarize(value, 4000)
            parts.append(f"result: {result_text}")
        labels += [images.add(png, "image/png", "figure") for png in figures]
        for png in figures:
            shown.add_image(png, "image/png", "figure")
        parts += labels
        secrets = self._secrets()  # scanned once for the texts below, not once per text

        def redact(text: str) -> str:
            return redact_known(text, secrets)

        if error is not None:
            raise RuntimeError(redact("\n".join([*parts, error])))
        text = "\n".join(parts) or "(no output)"
        details: dict[str, Any] = {  # shown in the Details and kept in the session: redacted too
            "stdout": redact(captured.stdout),
            "stderr": redact(captured.stderr),
            "result": redact(result_text) if result_text is not None else None,
            "images": len(images.images),
        }
        if shown.items:
            details["display"] = shown.details(redact)
        return AgentToolResult(content=[TextContent(text=redact(text)), *images.images], details=details)

    async def _run_source(self, code: str) -> tuple[AgentToolResult | None, str | None]:
        """``run_code``'s execution of ``code``: its result, or the error text it raised."""
        filename = f"<run_cell-{next(self._runs)}>"
        try:
            return await self.dispatch(lambda: self._run_code_now(code, filename)), None
        except RuntimeError as exc:
            return None, str(exc)

    def _format_value(self, value: Any) -> dict[str, Any]:
        """The value's display formats. A formatter that fails (IPython's pretty printer
        recurses, so a dict nested 10,000 deep fails) prints its traceback: captured here so it
        does not land in the cell's output; the result then falls back to ``summarize``."""
        from IPython.utils.capture import capture_output

        with capture_output():
            data, _ = self.shell.display_formatter.format(value)
        return data if isinstance(data, dict) else {}

    @notebook_tool(changes_state=True)
    async def insert_cell(self, code: str) -> AgentToolResult:
        """Insert a new code cell below the current cell (the same as insert_cells with one
        code cell). Where the live notebook cannot be reached, the cell is inserted when this
        run ends (several calls joined into one cell), or, where the frontend cannot insert
        cells (a headless run, Colab), the result says so and shows the code.

        Args:
            code: Source of the code cell to insert below the current cell.
        """
        if self.bridge is not None:
            try:
                await self.live()
            except BridgeUnavailable:
                pass
            else:
                return await self.insert_cells([NewCell(source=code)])
        return await self._insert_fallback(code, "")

    async def _insert_fallback(self, code: str, why: str) -> AgentToolResult:
        """``set_next_input``: the frontend inserts the cell when the run ends (VS Code,
        JupyterLab without the bridge); ``why`` says why the live notebook was not used."""
        self.inserted.append(code.rstrip("\n"))
        joined = "\n\n".join(self.inserted)
        count = len(self.inserted)
        note = "" if count == 1 else f" (joined with {count - 1} earlier cell(s) of this run)"
        ignored = self._insert_ignored_by()
        if ignored is not None:
            text = (
                f"Not inserted: {ignored} does not insert cells from the kernel. Tell the user to "
                f"copy this code into a new cell{note}:\n```python\n{joined}\n```"
            )
            details = {"inserted": False, "reason": ignored, "source": joined}
            return AgentToolResult(content=[self._text(text)], details=details)
        await self.dispatch(lambda: self.shell.set_next_input(joined, replace=False))
        text = f"A new code cell will be inserted below the current cell when this run ends{note}."
        if why:
            text = f"Not inserted now ({why}). {text}"
        return AgentToolResult(content=[self._text(text)], details={"inserted": True, "source": joined})

    def _insert_ignored_by(self) -> str | None:
        """Who would drop the ``set_next_input`` payload ``insert_cell`` sends (the execute
        reply's payload that JupyterLab, Notebook 7 and VS Code turn into a cell), or None.
        nbclient (nbconvert, papermill, nbval) never reads payloads; Colab does not either."""
        if self.headless:
            return "this headless run (nbclient, nbconvert, papermill or nbval)"
        if "google.colab" in sys.modules:
            return "Colab"
        return None

    @notebook_tool(changes_state=True)
    async def set_variable(
        self, name: str, value: Any = None, expression: str | None = None
    ) -> AgentToolResult:
        """Assign a variable in the notebook namespace from a JSON value or a Python expression.

        Args:
            name: A valid Python identifier (not starting with '_').
            value: A JSON value to assign (to assign None, use the expression "None").
            expression: A Python expression to evaluate and assign instead.
        """
        name = name.strip()
        if (
            not name.isidentifier()
            or keyword.iskeyword(name)
            or name.startswith("_")
            or name in PROTECTED_NAMES
        ):
            raise ValueError(f"{name!r} cannot be assigned: use an identifier that does not start with '_'")
        if (expression is None) == (value is None):
            raise ValueError(
                'give exactly one of value or expression (to assign None, use expression "None")'
            )

        def assign() -> Any:
            ns = self.shell.user_ns
            result = value if expression is None else eval(expression, self.shell.user_global_ns, ns)
            self.shell.push({name: result}, interactive=True)
            return result

        assigned = await self.dispatch(assign)
        shown = secret_placeholder(name, assigned) if looks_secret(name) else one_line(assigned)
        return AgentToolResult(
            content=[self._text(f"{name} = {shown}")], details={"name": name, "type": type(assigned).__name__}
        )


_DECLARED: dict[str, bool] = declared_tools(NotebookTools, EditTools)
"""Tool name -> whether it changes state, in declaration order."""
READ_TOOLS: tuple[str, ...] = tuple(name for name, changes in _DECLARED.items() if not changes)
STATE_CHANGING_TOOLS: tuple[str, ...] = tuple(name for name, changes in _DECLARED.items() if changes)
"""The notebook tools that change state (declared ``changes_state=True``): the approval policy
gates them, and they run one at a time."""
NOTEBOOK_TOOL_NAMES: tuple[str, ...] = READ_TOOLS + STATE_CHANGING_TOOLS
TOOL_GROUPS: dict[str, tuple[str, ...]] = {
    "all": NOTEBOOK_TOOL_NAMES,
    "read": READ_TOOLS,
    "write": STATE_CHANGING_TOOLS,
}


def is_mcp_item(item: str) -> bool:
    """An item of ``--tools`` that names MCP tools: ``SERVER__TOOL`` or a glob such as
    ``files__*`` (MCP tools are named with the server's name and two underscores)."""
    return "__" in item


def parse_tools_spec(spec: str, mcp_names: Iterable[str] = ()) -> list[str]:
    """The notebook tools of ``all`` | ``none`` | ``read`` | ``write`` | a comma list of names
    and groups. MCP items (``is_mcp_item``) are left to ``select_mcp_tools``; another unknown
    name raises ``ValueError`` listing the notebook tools and ``mcp_names``."""
    names: list[str] = []
    for raw in spec.split(","):
        item = raw.strip()
        if item in ("", "none") or is_mcp_item(item):
            continue
        group = TOOL_GROUPS.get(item)
        if group is None and item not in NOTEBOOK_TOOL_NAMES:
            raise ValueError(unknown_tool(item, mcp_names))
        names.extend(n for n in (group or (item,)) if n not in names)
    return names


def mcp_tool_patterns(spec: str) -> tuple[str, ...]:
    """The MCP items of a ``--tools`` spec, in order (empty: the spec names no MCP tool)."""
    return tuple(dict.fromkeys(item for raw in spec.split(",") if is_mcp_item(item := raw.strip())))


def unknown_tool(item: str, mcp_names: Iterable[str]) -> str:
    """The one-line error for a ``--tools`` item that names no tool, with what exists."""
    notebook = ", ".join(["all", "none", "read", "write", *NOTEBOOK_TOOL_NAMES])
    mcp = ", ".join(mcp_names) or "none running"
    return (
        f"unknown tool {item!r} in --tools (notebook tools: {notebook}; MCP tools, as SERVER__TOOL "
        f"or SERVER__*: {mcp})"
    )


def select_mcp_tools(patterns: Iterable[str], tools: Iterable[AgentTool]) -> list[AgentTool]:
    """The MCP tools a run gets: every one when ``patterns`` is empty (``--tools`` names no MCP
    tool), else those whose name is a pattern or matches a glob one. A pattern that matches no
    tool raises ``ValueError`` listing the MCP tools there are."""
    tools = list(tools)
    wanted = tuple(patterns)
    if not wanted:
        return tools
    for pattern in wanted:
        if not any(fnmatch.fnmatchcase(tool.name, pattern) for tool in tools):
            raise ValueError(unknown_tool(pattern, [tool.name for tool in tools]))
    return [tool for tool in tools if any(fnmatch.fnmatchcase(tool.name, p) for p in wanted)]


def _split_last_expression(tree: ast.Module) -> tuple[ast.Module, ast.Expression | None]:
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(body=tree.body[-1].value)
        return ast.Module(body=tree.body[:-1], type_ignores=[]), ast.fix_missing_locations(last)
    return tree, None


def _format_user_error(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    user = [f for f in frames if f.filename != __file__]
    lines = traceback.format_list(user[-6:])
    return (
        "Traceback (most recent call last):\n"
        + "".join(lines)
        + "".join(traceback.format_exception_only(exc))
    )
