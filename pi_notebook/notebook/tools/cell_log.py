"""``CellErrorLog``: the errors and display outputs of executed cells, by execution count.

``%load_ext`` installs its recorder (``post_run_cell``) and ``watch`` wraps the shell's display
publisher, so the notebook tools can read what cells showed and raised before the first
``%%pi``; this module imports nothing heavy for that reason. The record is bounded:
``MAX_OUTPUTS`` bundles a cell, the last ``MAX_CELLS`` cells.

``failed`` keeps what ``%pi fix`` / ``%pi explain`` need of each failing cell (its source, its
traceback without IPython's own frames, its notebook cell id), except cells that are
``%%pi`` / ``%pi`` themselves: their errors are the extension's, not the user's code's.
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass
from typing import Any

from .references import truncate

TRACEBACK_CHARS = 4000
UNRECORDED = "pi_notebook_unrecorded"
"""A display whose metadata has this key is the extension's (the Explain / Fix offer shown after
the cell was filed): it is not recorded as the next cell's output."""
_OWN_CELL = re.compile(r"^(?:[ \t]*(?:#[^\n]*)?\n)*[ \t]*%%?pi(?:\s|$)")
_OLD_CELL_FILE = re.compile(r"<ipython-input-(\d+)-[0-9a-f]+>")
"""A cell's file name before IPython 8 named it ``Cell In[N]`` (``_filename_map``)."""


@dataclass(frozen=True, slots=True)
class FailedCell:
    """A cell that raised: its execution count, source, error text and notebook cell id."""

    count: int
    source: str
    error: str
    """The traceback (the cell's frames and the exception), bounded."""
    cell_id: str | None

_RECORDER = "__pi_notebook_recorder__"
MAX_OUTPUTS = 8
MAX_CELLS = 40


class CellErrorLog:
    """Errors and display outputs of executed cells by execution count, filed by IPython's
    ``post_run_cell`` event (``record``)."""

    def __init__(self) -> None:
        self.errors: dict[int, str] = {}
        self.outputs: dict[int, list[dict[str, Any]]] = {}
        self.failed: dict[int, FailedCell] = {}
        """The failing cells that are not ``%%pi`` / ``%pi`` cells, the last ``MAX_CELLS``."""
        self._pending: list[dict[str, Any]] = []

    def watch(self, shell: Any) -> None:
        """Record what ``shell``'s display publisher shows (once per publisher)."""
        publisher = getattr(shell, "display_pub", None)
        publish = getattr(publisher, "publish", None)
        if publish is None or getattr(publish, _RECORDER, None) is self:
            return

        def recording_publish(data: Any = None, metadata: Any = None, *args: Any, **kwargs: Any) -> Any:
            mine = isinstance(metadata, dict) and metadata.get(UNRECORDED)  # the extension's offer
            room = len(self._pending) < MAX_OUTPUTS
            if isinstance(data, dict) and not mine and not kwargs.get("update") and room:
                self._pending.append(dict(data))
            return publish(data, metadata, *args, **kwargs)

        setattr(recording_publish, _RECORDER, self)
        setattr(publisher, "publish", recording_publish)

    def record(self, result: Any) -> None:
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        count = getattr(result, "execution_count", None)
        pending, self._pending = self._pending, []
        if not isinstance(count, int):
            return
        if error is not None:
            self.errors[count] = truncate(f"{type(error).__name__}: {error}", 500)
            self._file_failure(result, error, count)
        if pending:
            self.outputs[count] = pending
            for old in sorted(self.outputs)[:-MAX_CELLS]:
                del self.outputs[old]

    def _file_failure(self, result: Any, error: BaseException, count: int) -> None:
        info = getattr(result, "info", None)
        source = str(getattr(info, "raw_cell", "") or "")
        if is_own_cell(source, str(getattr(info, "transformed_cell", "") or "")):
            return
        cell_id = getattr(info, "cell_id", None)
        from IPython import get_ipython  # IPython is loaded: this runs in its post_run_cell

        cells = getattr(getattr(get_ipython(), "compile", None), "_filename_map", None)
        text = error_text(error, cells if isinstance(cells, dict) else None)
        cell_id = cell_id if isinstance(cell_id, str) and cell_id else None
        self.failed[count] = FailedCell(count, source, text, cell_id)
        for old in sorted(self.failed)[:-MAX_CELLS]:
            del self.failed[old]

    def last_failed(self) -> FailedCell | None:
        return self.failed[max(self.failed)] if self.failed else None


def is_own_cell(source: str, transformed: str = "") -> bool:
    """The cell is the extension's: ``%%pi``, ``%pi ...``, or a prompt the Pi kernel turned
    into a run (its transformed code calls the run or a command)."""
    code = transformed.lstrip()
    return bool(_OWN_CELL.match(source)) or code.startswith("await _pi_") or "run_cell_magic('pi'" in code


def error_text(error: BaseException, cells: dict[str, int] | None = None) -> str:
    """The traceback of ``error`` as a user reads it: the frames from the cell on (IPython's
    own frames before it left out; a cell's file named ``Cell In[N]`` as IPython shows it, by
    ``cells``, the shell compiler's file name -> execution count), then the exception line; its
    last ``TRACEBACK_CHARS`` characters (the innermost frames and the exception are what a fix
    needs)."""
    frames = traceback.extract_tb(error.__traceback__)
    while frames and "/IPython/" in frames[0].filename.replace("\\", "/"):
        frames.pop(0)
    for frame in frames:
        if cells and frame.filename in cells:
            frame.filename = f"Cell In[{cells[frame.filename]}]"
        elif found := _OLD_CELL_FILE.fullmatch(frame.filename):  # IPython < 8 (Colab's 7.34)
            frame.filename = f"Cell In[{found.group(1)}]"
    lines = traceback.format_list(frames) if frames else []
    text = "".join(["Traceback (most recent call last):\n", *lines] if lines else [])
    text += "".join(traceback.format_exception_only(type(error), error))
    text = text.rstrip()
    return text if len(text) <= TRACEBACK_CHARS else "…" + text[1 - TRACEBACK_CHARS :]
