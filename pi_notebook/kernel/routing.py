"""What a cell of the Pi kernel is, by one rule, and the input transformer that applies it.

The rule, on the cell's text as the user wrote it:

1. first line exactly ``%%python`` (trailing spaces allowed): the rest of the cell is ordinary
   IPython code;
2. else, first line exactly ``# Parameters`` and the rest Python that does nothing but assign
   (at least one assignment; comments and blank lines allowed): the whole cell is Python. This
   is the cell papermill injects for ``-p NAME VALUE`` (its Python translator writes that
   comment line, then one assignment per parameter), and what a notebook's own ``parameters``
   cell may look like; a prompt that starts with that line but goes on in prose stays a prompt;
3. else, the first non-blank line starts (after indentation) with ``%`` or ``!``: IPython
   (``%pi resume``, ``%timeit``, ``!pip install``), and ``%%pi OPTIONS`` is the ``%%pi`` cell it
   reads as: a prompt with those options;
4. else, a cell with any non-blank text is a prompt: the ``%%pi`` cell with no options, with the
   whole cell as its body (a ``%`` or ``!`` later in the text is prose);
5. a cell with nothing but blank lines runs as IPython, which does nothing.

Only the cell of the kernel's own ``execute_request`` is routed (``CellRouter.current``):
IPython also transforms code that tools and user code run (``run_code``, ``run_cell``), and
that code is Python. A prompt becomes ``%%pi`` + the cell, which the ``%%pi`` transformer
behind this one turns into the awaited run, so a prompt and a ``%%pi`` cell take one path.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

__all__ = ["PARAMETERS_MARKER", "PYTHON_MARKER", "CellKind", "CellRouter", "classify", "install_router"]

CellKind: TypeAlias = Literal["python", "ipython", "prompt", "empty"]

PYTHON_MARKER = "%%python"
PARAMETERS_MARKER = "# Parameters"
"""The first line of papermill's injected parameters cell for Python kernels."""


def _is_parameters(lines: list[str]) -> bool:
    """``lines`` are a ``# Parameters`` line and Python that only assigns (rule 2)."""
    if not lines or lines[0].rstrip() != PARAMETERS_MARKER:
        return False
    try:
        body = ast.parse("\n".join(lines[1:])).body
    except (SyntaxError, ValueError):  # prose, or a NUL byte
        return False
    return bool(body) and all(isinstance(node, ast.Assign | ast.AnnAssign) for node in body)


def classify(cell: str) -> CellKind:
    """The kind of ``cell`` by the module's rule."""
    lines = cell.splitlines()
    if (lines and lines[0].rstrip() == PYTHON_MARKER) or _is_parameters(lines):
        return "python"
    for line in lines:
        stripped = line.lstrip()
        if stripped:
            return "ipython" if stripped[0] in "%!" else "prompt"
    return "empty"


def _same_cell(lines: list[str], code: str) -> bool:
    # IPython appends a newline to a cell that lacks one before splitting it into lines
    text = "".join(lines)
    return text == code or text == code + "\n"


@dataclass(slots=True)
class CellRouter:
    """The transformer at the front of ``input_transformers_cleanup``. ``current`` is the code
    of the ``execute_request`` the kernel is running (``None`` between requests)."""

    current: str | None = None

    # IPython's completeness check skips transformers with side effects: the kernel answers
    # ``is_complete_request`` by the rule itself.
    has_side_effects = True

    def __call__(self, lines: list[str]) -> list[str]:
        if self.current is None or not _same_cell(lines, self.current):
            return lines
        kind = classify(self.current)
        if kind == "python":
            # the %%python line goes; a parameters cell's comment line may stay
            return lines[1:] if lines[0].rstrip() == PYTHON_MARKER else lines
        if kind == "prompt":
            return ["%%pi\n", *lines]
        return lines


def install_router(shell: Any) -> CellRouter:
    """Put a ``CellRouter`` first in ``shell``'s cleanup transformers (replacing an earlier one),
    ahead of IPython's own cleanup and the ``%%pi`` transformer."""
    router = CellRouter()
    transforms = shell.input_transformers_cleanup
    transforms[:] = [router, *(t for t in transforms if not isinstance(t, CellRouter))]
    return router
