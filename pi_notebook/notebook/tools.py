"""The notebook tools: what the agent may read and change in the kernel it runs in.

Read-only (never gated): ``list_variables``, ``inspect_variable``, ``read_cells``,
``read_notebook``. State-changing (always through the approval policy, see ``approval.py``):
``run_code``, ``insert_cell``, ``set_variable``.

Everything returned is bounded and secret-safe (``references.py``). Tools touch the user
namespace through ``dispatch``, which runs a callable on the kernel's main thread: directly in
the awaited ``%%pi`` path (the agent already runs there), through the fallback's bridge when
the agent runs on a worker thread. ``run_code`` executes on the main thread on purpose, like
a cell: user code may need it (GUI backends, signals), and a kernel interrupt must reach it.
"""

from __future__ import annotations

import ast
import base64
import itertools
import json
import keyword
import linecache
import os
import re
import signal as signals
import sys
import threading
import traceback
import types
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from ..agent.types import AgentTool, AgentToolResult
from ..ai.types import ImageContent, TextContent
from .references import looks_secret, one_line, redact_text, secret_placeholder, summarize, truncate

T = TypeVar("T")
Dispatch = Callable[[Callable[[], Any]], Awaitable[Any]]

READ_TOOLS: tuple[str, ...] = ("list_variables", "inspect_variable", "read_cells", "read_notebook")
WRITE_TOOLS: tuple[str, ...] = ("run_code", "insert_cell", "set_variable")
NOTEBOOK_TOOL_NAMES: tuple[str, ...] = READ_TOOLS + WRITE_TOOLS
TOOL_GROUPS: dict[str, tuple[str, ...]] = {
    "all": NOTEBOOK_TOOL_NAMES,
    "read": READ_TOOLS,
    "write": WRITE_TOOLS,
}

PROTECTED_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit"})
OUTPUT_CHARS = 8_000
NOTEBOOK_CHARS = 24_000
_TOOL_MARKER = "__pi_notebook_tool__"
_PI_CELL = re.compile(r"^\s*%%pi(\s|$)", re.MULTILINE)


def parse_tools_spec(spec: str) -> list[str]:
    """``all`` | ``none`` | ``read`` | ``write`` | a comma list of names and groups."""
    names: list[str] = []
    for raw in spec.split(","):
        item = raw.strip()
        if item in ("", "none"):
            continue
        group = TOOL_GROUPS.get(item)
        if group is None and item not in NOTEBOOK_TOOL_NAMES:
            known = ", ".join(["all", "none", "read", "write", *NOTEBOOK_TOOL_NAMES])
            raise ValueError(f"unknown tool {item!r} in --tools (known: {known})")
        names.extend(n for n in (group or (item,)) if n not in names)
    return names


async def run_here(fn: Callable[[], T]) -> T:
    return fn()


def _text(text: str) -> TextContent:
    return TextContent(text=redact_text(text))


def _params(value: Any, model: type[BaseModel]) -> Any:
    return value if isinstance(value, model) else model.model_validate(value or {})


def _head_tail(text: str, limit: int = OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - limit} characters omitted] ...\n{text[-half:]}"


# --- per-cell errors ---------------------------------------------------------------------------


class CellErrorLog:
    """Errors of executed cells by execution count, fed by IPython's ``post_run_cell`` event."""

    def __init__(self) -> None:
        self.errors: dict[int, str] = {}

    def record(self, result: Any) -> None:
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        count = getattr(result, "execution_count", None)
        if error is not None and isinstance(count, int):
            self.errors[count] = truncate(f"{type(error).__name__}: {error}", 500)


_error_logs: weakref.WeakKeyDictionary[Any, CellErrorLog] = weakref.WeakKeyDictionary()


def error_log_for(shell: Any) -> CellErrorLog:
    log = _error_logs.get(shell)
    if log is None:
        log = _error_logs[shell] = CellErrorLog()
    return log


# --- parameters ------------------------------------------------------------------------------------


class ListVariablesParams(BaseModel):
    pattern: str | None = Field(None, description="Only names containing this text (case-insensitive).")
    include_modules: bool = Field(False, description="Also list imported modules.")
    limit: int = Field(100, ge=1, le=500, description="At most this many variables.")


class InspectVariableParams(BaseModel):
    name: str = Field(description="A variable name, optionally with attributes: `df` or `model.config`.")
    max_chars: int = Field(2000, ge=100, le=8000, description="Cap on the summary length.")


class ReadCellsParams(BaseModel):
    last: int = Field(5, ge=1, le=100, description="How many of the most recent cells (ignored with start).")
    start: int | None = Field(None, ge=1, description="First execution count to read.")
    end: int | None = Field(None, ge=1, description="Last execution count to read (inclusive).")


class ReadNotebookParams(BaseModel):
    max_cells: int = Field(60, ge=1, le=500, description="At most this many cells.")
    include_outputs: bool = Field(True, description="Include saved outputs (text only, truncated).")


class RunCodeParams(BaseModel):
    code: str = Field(description="Python (IPython syntax allowed) to run in the notebook's namespace.")


class InsertCellParams(BaseModel):
    code: str = Field(description="Source of the code cell to insert below the current cell.")


class SetVariableParams(BaseModel):
    name: str = Field(description="A valid Python identifier (not starting with '_').")
    value: Any = Field(None, description="A JSON value to assign.")
    expression: str | None = Field(None, description="A Python expression to evaluate and assign instead.")


_SPECS: dict[str, tuple[str, type[BaseModel], str]] = {
    "list_variables": (
        "List the variables in the notebook kernel with their type and a one-line summary.",
        ListVariablesParams,
        "_list_variables",
    ),
    "inspect_variable": (
        "Show a bounded summary of one variable (type, size, a capped rendering; DataFrames: "
        "shape, dtypes, head).",
        InspectVariableParams,
        "_inspect_variable",
    ),
    "read_cells": (
        "Read recently executed cells from the kernel's history: source, output value and error.",
        ReadCellsParams,
        "_read_cells",
    ),
    "read_notebook": (
        "Read the notebook file as last saved (markdown and code cells, text outputs). Falls back "
        "to the kernel's input history when the file is unknown.",
        ReadNotebookParams,
        "_read_notebook",
    ),
    "run_code": (
        "Run Python code in the notebook's kernel namespace (like a cell, not added to history). "
        "Returns stdout, stderr, the last expression's value and images it displayed. Changes state.",
        RunCodeParams,
        "_run_code",
    ),
    "insert_cell": (
        "Insert a new code cell below the current cell when this run ends (for the user to review "
        "and run). Several calls in one run are joined into one cell.",
        InsertCellParams,
        "_insert_cell",
    ),
    "set_variable": (
        "Assign a variable in the notebook namespace from a JSON value or a Python expression.",
        SetVariableParams,
        "_set_variable",
    ),
}
"""Tool name -> (description the model reads, parameter model, ``NotebookTools`` method)."""


# --- the tools ---------------------------------------------------------------------------------


class NotebookTools:
    """Builds the notebook tools for one shell. ``dispatch`` and ``on_interrupt`` are set per run."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.dispatch: Dispatch = run_here
        self.on_interrupt: Callable[[], None] | None = None
        self.inserted: list[str] = []
        self._runs = itertools.count(1)

    def begin_run(
        self, dispatch: Dispatch = run_here, on_interrupt: Callable[[], None] | None = None
    ) -> None:
        self.dispatch, self.on_interrupt, self.inserted = dispatch, on_interrupt, []

    def build(self, names: list[str]) -> list[AgentTool]:
        tools = []
        for name in names:
            description, params, method = _SPECS[name]
            tools.append(
                AgentTool(
                    name=name,
                    description=description,
                    parameters=params,
                    execute=_executor(getattr(self, method), params),
                    label=name.replace("_", " "),
                    execution_mode="sequential" if name in WRITE_TOOLS else None,
                )
            )
        return tools

    # read-only ------------------------------------------------------------------------------

    async def _list_variables(self, p: ListVariablesParams) -> AgentToolResult:
        return await self.dispatch(lambda: self._list_variables_now(p))  # type: ignore[no-any-return]

    def _list_variables_now(self, p: ListVariablesParams) -> AgentToolResult:
        ns, hidden = self.shell.user_ns, getattr(self.shell, "user_ns_hidden", {})
        rows: list[str] = []
        missing = object()
        # %who's rule: a startup name counts once the user rebinds it
        names = [n for n in ns if not n.startswith("_") and ns[n] is not hidden.get(n, missing)]
        if p.pattern:
            names = [n for n in names if p.pattern.lower() in n.lower()]
        if not p.include_modules:
            names = [n for n in names if not isinstance(ns[n], types.ModuleType)]
        for name in sorted(names)[: p.limit]:
            value = ns[name]
            summary = secret_placeholder(name, value) if looks_secret(name) else one_line(value)
            rows.append(f"{name}: {type(value).__name__} = {summary}")
        if len(names) > p.limit:
            rows.append(f"... and {len(names) - p.limit} more (use pattern or limit)")
        text = "\n".join(rows) if rows else "No user variables."
        return AgentToolResult(content=[_text(text)], details={"count": len(names)})

    async def _inspect_variable(self, p: InspectVariableParams) -> AgentToolResult:
        return await self.dispatch(lambda: self._inspect_now(p))  # type: ignore[no-any-return]

    def _inspect_now(self, p: InspectVariableParams) -> AgentToolResult:
        path = p.name.strip()
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*", path):
            raise ValueError(
                f"{p.name!r} is not a variable name or a dotted attribute path (no '_' prefixes)"
            )
        head, *attrs = path.split(".")
        if head not in self.shell.user_ns:
            raise ValueError(f"No variable named {head!r} in the notebook namespace")
        value = self.shell.user_ns[head]
        for attr in attrs:
            value = getattr(value, attr)
        if any(looks_secret(part) for part in path.split(".")):
            return AgentToolResult(
                content=[_text(secret_placeholder(path, value))], details={"redacted": True}
            )
        summary = summarize(value, p.max_chars)
        return AgentToolResult(content=[_text(f"{path}: {summary}")], details={"type": type(value).__name__})

    async def _read_cells(self, p: ReadCellsParams) -> AgentToolResult:
        return await self.dispatch(lambda: self._read_cells_now(p))  # type: ignore[no-any-return]

    def _read_cells_now(self, p: ReadCellsParams) -> AgentToolResult:
        text, numbers = self.history_text(p.last, p.start, p.end)
        return AgentToolResult(content=[_text(text)], details={"cells": numbers})

    def history_text(
        self, last: int, start: int | None = None, end: int | None = None
    ) -> tuple[str, list[int]]:
        """Executed cells from the input history with their ``Out`` value and recorded error."""
        raw = list(
            getattr(self.shell.history_manager, "input_hist_raw", None) or self.shell.user_ns.get("In", [])
        )
        current = len(raw) - 1
        first = start if start is not None else max(1, current - last + 1)
        final = min(end if end is not None else current, current)
        outputs = self.shell.user_ns.get("Out", {})
        errors = error_log_for(self.shell).errors
        parts, numbers = [], []
        for n in range(max(1, first), final + 1):
            source = raw[n]
            running = n == current and _PI_CELL.search(source) is not None
            lines = [f"In [{n}]:{' (this %%pi cell)' if running else ''}", truncate(source.rstrip(), 2000)]
            if n in outputs:
                lines.append(f"Out[{n}]: {summarize(outputs[n], 800)}")
            if n in errors:
                lines.append(f"Error[{n}]: {errors[n]}")
            parts.append("\n".join(lines))
            numbers.append(n)
        last_error = getattr(sys, "last_value", None)
        if not errors and last_error is not None:
            parts.append(
                f"Last error in this kernel: {type(last_error).__name__}: {truncate(str(last_error), 500)}"
            )
        return ("\n\n".join(parts) or "No executed cells in the history."), numbers

    async def _read_notebook(self, p: ReadNotebookParams) -> AgentToolResult:
        return await self.dispatch(lambda: self._read_notebook_now(p))  # type: ignore[no-any-return]

    def _read_notebook_now(self, p: ReadNotebookParams) -> AgentToolResult:
        path = self.notebook_path()
        if path is None:
            history, numbers = self.history_text(p.max_cells)
            text = (
                "The notebook file is unknown to the kernel; this is the kernel's input history.\n\n"
                + history
            )
            return AgentToolResult(content=[_text(text)], details={"source": "history", "cells": numbers})
        data = json.loads(path.read_text("utf-8"))
        cells = data.get("cells", [])
        parts = [f"Notebook {path.name} as last saved ({len(cells)} cells; unsaved edits are not included)."]
        for i, cell in enumerate(cells[: p.max_cells]):
            parts.append(_format_saved_cell(i, cell, p.include_outputs))
        if len(cells) > p.max_cells:
            parts.append(f"... {len(cells) - p.max_cells} more cells")
        text = _head_tail("\n\n".join(parts), NOTEBOOK_CHARS)
        return AgentToolResult(content=[_text(text)], details={"source": str(path), "cells": len(cells)})

    def notebook_path(self) -> Path | None:
        """The notebook file: ``__session__`` (set by ipykernel from ``JPY_SESSION_NAME``) or the env."""
        name = self.shell.user_ns.get("__session__") or os.environ.get("JPY_SESSION_NAME") or ""
        if not isinstance(name, str) or not name.endswith(".ipynb"):
            return None
        given = Path(name)
        # The session path is relative to the server root; the kernel's cwd is the notebook's folder.
        for candidate in (given, Path.cwd() / given, Path.cwd() / given.name):
            if candidate.is_file():
                return candidate
        return None

    # state-changing ---------------------------------------------------------------------------

    async def _run_code(self, p: RunCodeParams) -> AgentToolResult:
        if p.code.lstrip().startswith("%%pi"):
            raise ValueError("run_code cannot start another %%pi run")
        filename = f"<run_code-{next(self._runs)}>"
        return await self.dispatch(lambda: self._run_code_now(p.code, filename))  # type: ignore[no-any-return]

    def _run_code_now(self, code: str, filename: str) -> AgentToolResult:
        from IPython.utils.capture import capture_output

        source = self.shell.transform_cell(code)
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        body, last = _split_last_expression(ast.parse(source, filename))
        value, error = None, None
        with capture_output() as captured, _interruptible():
            try:
                _raise_if_interrupted()  # an interrupt that came just before this handler swap
                if body.body:
                    exec(compile(body, filename, "exec"), self.shell.user_global_ns, self.shell.user_ns)
                if last is not None:
                    value = eval(
                        compile(last, filename, "eval"), self.shell.user_global_ns, self.shell.user_ns
                    )
            except KeyboardInterrupt:
                if self.on_interrupt is not None:
                    self.on_interrupt()
                error = "KeyboardInterrupt: the kernel was interrupted while run_code was running"
            except Exception as exc:
                error = _format_user_error(exc)
        return self._code_result(captured, value, last is not None, error)

    def _code_result(self, captured: Any, value: Any, has_value: bool, error: str | None) -> AgentToolResult:
        parts: list[str] = []
        images: list[ImageContent] = []
        for label, stream in (("stdout", captured.stdout), ("stderr", captured.stderr)):
            if stream:
                parts.append(f"{label}:\n{_head_tail(stream)}")
        for output in captured.outputs:
            images.extend(_png(output.data))
        result_text = None
        if has_value and value is not None:
            data, _ = self.shell.display_formatter.format(value)
            images.extend(_png(data))
            result_text = truncate(str(data.get("text/plain", "")), 4000)
            parts.append(f"result: {result_text}")
        if images:
            parts.append(f"[{len(images)} image(s) attached]")
        if error is not None:
            raise RuntimeError(redact_text("\n".join([*parts, error])))
        text = "\n".join(parts) or "(no output)"
        details = {
            "stdout": captured.stdout,
            "stderr": captured.stderr,
            "result": result_text,
            "images": len(images),
        }
        return AgentToolResult(content=[_text(text), *images], details=details)

    async def _insert_cell(self, p: InsertCellParams) -> AgentToolResult:
        self.inserted.append(p.code.rstrip("\n"))
        joined = "\n\n".join(self.inserted)
        await self.dispatch(lambda: self.shell.set_next_input(joined, replace=False))
        where = "below the current cell when this run ends"
        note = (
            ""
            if len(self.inserted) == 1
            else f" (joined with {len(self.inserted) - 1} earlier cell(s) of this run)"
        )
        return AgentToolResult(
            content=[_text(f"A new code cell will be inserted {where}{note}.")], details={"source": joined}
        )

    async def _set_variable(self, p: SetVariableParams) -> AgentToolResult:
        name = p.name.strip()
        if (
            not name.isidentifier()
            or keyword.iskeyword(name)
            or name.startswith("_")
            or name in PROTECTED_NAMES
        ):
            raise ValueError(f"{p.name!r} cannot be assigned: use an identifier that does not start with '_'")
        if (p.expression is None) == ("value" not in p.model_fields_set):
            raise ValueError("give exactly one of value or expression")

        def assign() -> Any:
            ns = self.shell.user_ns
            value = p.value if p.expression is None else eval(p.expression, self.shell.user_global_ns, ns)
            self.shell.push({name: value}, interactive=True)
            return value

        value = await self.dispatch(assign)
        shown = secret_placeholder(name, value) if looks_secret(name) else one_line(value)
        return AgentToolResult(
            content=[_text(f"{name} = {shown}")], details={"name": name, "type": type(value).__name__}
        )


def _executor(
    fn: Callable[[Any], Awaitable[AgentToolResult]], params: type[BaseModel]
) -> Callable[..., Awaitable[AgentToolResult]]:
    async def execute(
        tool_call_id: str, args: Any, signal: Any = None, on_update: Any = None
    ) -> AgentToolResult:
        return await fn(_params(args, params))

    setattr(execute, _TOOL_MARKER, True)
    return execute


def is_notebook_tool(tool: AgentTool) -> bool:
    """True for the tools built here (so a run can swap them without touching the user's own)."""
    return bool(getattr(tool.execute, _TOOL_MARKER, False))


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


_sigint_pending = threading.Event()


@contextmanager
def watch_sigint() -> Iterator[None]:
    """For a whole awaited run: remember every SIGINT, then pass it on to ipykernel's handler.

    ipykernel's handler only schedules a callback on the loop, which synchronous user code in
    ``run_code`` would not yield to. An interrupt that lands after the tool card shows
    "running" but before ``run_code`` swaps in Python's handler would otherwise be lost until
    the user code ends; ``run_code`` checks this flag instead. Main thread only.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signals.getsignal(signals.SIGINT)

    def record(signum: int, frame: Any) -> None:
        _sigint_pending.set()
        if callable(previous):
            previous(signum, frame)
        elif previous == signals.SIG_DFL:
            raise KeyboardInterrupt

    _sigint_pending.clear()
    signals.signal(signals.SIGINT, record)
    try:
        yield
    finally:
        signals.signal(signals.SIGINT, previous)
        _sigint_pending.clear()


@contextmanager
def _interruptible() -> Iterator[None]:
    """Let a kernel interrupt raise ``KeyboardInterrupt`` in user code run by ``run_code``.

    In an awaiting cell ipykernel replaces the SIGINT handler with one that only cancels the
    cell's task, which cannot stop synchronous code. Main thread only (signals live there).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = signals.signal(signals.SIGINT, signals.default_int_handler)
    try:
        yield
    finally:
        signals.signal(signals.SIGINT, saved)


def _raise_if_interrupted() -> None:
    if _sigint_pending.is_set():
        raise KeyboardInterrupt


def _png(data: Any) -> list[ImageContent]:
    if not isinstance(data, dict) or "image/png" not in data:
        return []
    png = data["image/png"]
    encoded = base64.b64encode(png).decode("ascii") if isinstance(png, bytes) else str(png)
    return [ImageContent(data=encoded, mime_type="image/png")]


def _format_saved_cell(index: int, cell: dict[str, Any], include_outputs: bool) -> str:
    source = cell.get("source", "")
    source = "".join(source) if isinstance(source, list) else str(source)
    kind = cell.get("cell_type", "code")
    count = cell.get("execution_count")
    header = f"[{index}] {kind}" + (f" (In [{count}])" if kind == "code" and count else "")
    lines = [header, truncate(source.rstrip(), 2000)]
    if include_outputs and kind == "code":
        for output in cell.get("outputs", [])[:5]:
            lines.append("  -> " + truncate(_saved_output_text(output), 600))
    return "\n".join(lines)


def _saved_output_text(output: dict[str, Any]) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        text = output.get("text", "")
        return "".join(text) if isinstance(text, list) else str(text)
    if kind == "error":
        return f"{output.get('ename')}: {output.get('evalue')}"
    data = output.get("data", {})
    plain = data.get("text/plain", "")
    plain = "".join(plain) if isinstance(plain, list) else str(plain)
    extra = [m for m in data if m != "text/plain"]
    return plain + (f" [{', '.join(extra)}]" if extra else "")
