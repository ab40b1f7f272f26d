"""What a cell of the Pi kernel is, by one rule, and the input transformer that applies it.

The rule, on the cell's text as the user wrote it:

1. first line exactly ``%%python`` (trailing spaces allowed): the rest of the cell is ordinary
   IPython code;
2. else, the first non-blank line starts (after indentation) with ``%`` or ``!``: IPython
   (``%pi resume``, ``%timeit``, ``!pip install``), and ``%%pi OPTIONS`` is the ``%%pi`` cell it
   reads as: a prompt with those options;
3. else, a cell with any non-blank text is a prompt: the ``%%pi`` cell with no options, with the
   whole cell as its body (a ``%`` or ``!`` later in the text is prose);
4. a cell with nothing but blank lines runs as IPython, which does nothing.

Only the cell of the kernel's own ``execute_request`` is routed (``CellRouter.current``):
IPython also transforms code that tools and user code run (``run_code``, ``run_cell``), and
that code is Python. A prompt becomes ``%%pi`` + the cell, which the ``%%pi`` transformer
behind this one turns into the awaited run, so a prompt and a ``%%pi`` cell take one path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

__all__ = ["PYTHON_MARKER", "CellKind", "CellRouter", "classify", "install_router"]

CellKind: TypeAlias = Literal["python", "ipython", "prompt", "empty"]

PYTHON_MARKER = "%%python"


def classify(cell: str) -> CellKind:
    """The kind of ``cell`` by the module's rule."""
    lines = cell.splitlines()
    if lines and lines[0].rstrip() == PYTHON_MARKER:
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
            return lines[1:]
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
