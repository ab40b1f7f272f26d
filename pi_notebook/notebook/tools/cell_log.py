"""``CellErrorLog``: the errors and display outputs of executed cells, by execution count.

``%load_ext`` installs its recorder (``post_run_cell``) and ``watch`` wraps the shell's display
publisher, so the notebook tools can read what cells showed and raised before the first
``%%pi``; this module imports nothing heavy for that reason. The record is bounded:
``MAX_OUTPUTS`` bundles a cell, the last ``MAX_CELLS`` cells.
"""

from __future__ import annotations

from typing import Any

from .references import truncate

_RECORDER = "__pi_notebook_recorder__"
MAX_OUTPUTS = 8
MAX_CELLS = 40


class CellErrorLog:
    """Errors and display outputs of executed cells by execution count, filed by IPython's
    ``post_run_cell`` event (``record``)."""

    def __init__(self) -> None:
        self.errors: dict[int, str] = {}
        self.outputs: dict[int, list[dict[str, Any]]] = {}
        self._pending: list[dict[str, Any]] = []

    def watch(self, shell: Any) -> None:
        """Record what ``shell``'s display publisher shows (once per publisher)."""
        publisher = getattr(shell, "display_pub", None)
        publish = getattr(publisher, "publish", None)
        if publish is None or getattr(publish, _RECORDER, None) is self:
            return

        def recording_publish(data: Any = None, metadata: Any = None, *args: Any, **kwargs: Any) -> Any:
            if isinstance(data, dict) and not kwargs.get("update") and len(self._pending) < MAX_OUTPUTS:
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
        if pending:
            self.outputs[count] = pending
            for old in sorted(self.outputs)[:-MAX_CELLS]:
                del self.outputs[old]
