"""The tools that work on the live notebook document through the bridge (``bridge/``):
``insert_cells``, ``edit_cell``, ``delete_cells`` and ``run_cell``, and the live read behind
``read_notebook``. ``NotebookTools`` inherits them (``EditTools``).

Nothing is lost: the agent edits only cells it has read (``known``: the source of each cell
as the agent last saw it), and the frontend refuses an edit, a deletion or a run when the cell
no longer has that source, so a user's keystroke since the read is never overwritten. Every
change is journaled (``changes.py``) for ``%pi undo``. Where there is no bridge (VS Code,
Colab, ``jupyter console``, headless runs), each tool says what it could not do and shows the
code for the user to paste.

Approval: the gate asks before these tools run (``delete_cells`` always, see
``run/approval.py``); ``preview`` gives it what the card shows while it asks (the diff of an
edit, the cells a deletion removes, the code a run runs), and refuses at once an edit whose
cell changed since the agent read it, before anyone is asked to approve it.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from ...agent.types import AgentToolResult
from ...ai.types import TextContent
from ..bridge import BridgeRefused, BridgeUnavailable, NotebookBridge
from .cells import format_saved_cell
from .changes import Change, RunChanges
from .declare import notebook_tool
from .outputs import ImageBudget
from .previews import EditRefused, check_edit, edit_text, insert_preview
from .references import truncate

NO_COMMS = (
    "this cell cannot hear the notebook while it runs (autoawait off, %%pi called from code, or "
    "ipykernel < 7.4)"
)
DIFF_CHARS = 6_000


class NewCell(BaseModel):
    """A cell for ``insert_cells``."""

    source: str
    cell_type: Literal["code", "markdown"] = "code"


class PreviewRefused(Exception):
    """The call would be refused anyway (its cell changed since the agent read it): the gate
    blocks it with this message instead of asking the user."""


class EditTools:
    """The live-document tools of ``NotebookTools`` (which provides ``_text``, ``dispatch``,
    ``_run_code_now``, ``_insert_fallback``, and sets ``bridge`` and ``current_cell`` per run)."""

    bridge: NotebookBridge | None = None
    no_bridge: str = NO_COMMS
    current_cell: str | None = None
    """The id of the ``%%pi`` cell running (from JupyterLab's execute request), if known."""

    def __init__(self) -> None:
        self.known: dict[str, str] = {}
        self.changes = RunChanges()
        self.history: list[RunChanges] = []

    # provided by NotebookTools --------------------------------------------------------------

    def _text(self, text: str) -> TextContent:
        raise NotImplementedError

    def image_budget(self) -> ImageBudget:
        raise NotImplementedError

    async def _insert_fallback(self, code: str, why: str) -> AgentToolResult:
        raise NotImplementedError

    async def _run_source(self, code: str) -> tuple[AgentToolResult | None, str | None]:
        raise NotImplementedError

    # the bridge ------------------------------------------------------------------------------

    def start_changes(self) -> None:
        """A run begins: its changes are journaled apart (``%pi undo`` takes back the last
        run that changed the notebook)."""
        self.changes = RunChanges()
        self.history = [run for run in self.history if run][-9:]
        self.history.append(self.changes)

    def last_changes(self) -> RunChanges | None:
        return next((run for run in reversed(self.history) if run), None)

    async def live(self) -> NotebookBridge:
        """The bridge, connected; ``BridgeUnavailable`` saying why there is none."""
        if self.bridge is None:
            raise BridgeUnavailable(self.no_bridge)
        await self.bridge.connect()
        return self.bridge

    async def read_live(self) -> dict[str, Any]:
        """The live document (``path``, ``dirty``, ``cells``); remembers every cell's source."""
        bridge = await self.live()
        document = await bridge.request("read")
        for cell in document.get("cells", []):
            self.known[cell["id"]] = cell.get("source", "")
        return document

    def live_text(self, document: dict[str, Any], max_cells: int, images: ImageBudget | None) -> str:
        bridge = self.bridge
        frontend = (
            bridge.hello.frontend if bridge is not None and bridge.hello is not None else "the frontend"
        )
        cells = document.get("cells", [])
        unsaved = "with unsaved edits" if document.get("dirty") else "no unsaved edits"
        parts = [
            f"Notebook {document.get('path', '')}, live from {frontend} ({len(cells)} cells, {unsaved}). "
            "Use the ids with insert_cells, edit_cell, delete_cells and run_cell."
        ]
        for i, cell in enumerate(cells[:max_cells]):
            note = "this %%pi cell" if cell.get("id") == self.current_cell else ""
            parts.append(format_saved_cell(i, cell, images is not None, images, note))
        if len(cells) > max_cells:
            parts.append(f"... {len(cells) - max_cells} more cells")
        return "\n\n".join(parts)

    def _known(self, cell_id: str) -> str:
        if cell_id not in self.known:
            raise ValueError(f"cell {cell_id!r} is not one you have read: call read_notebook first")
        return self.known[cell_id]

    # tools -----------------------------------------------------------------------------------

    @notebook_tool(changes_state=True)
    async def insert_cells(
        self, cells: Annotated[list[NewCell], Field(min_length=1, max_length=50)], after: str | None = None
    ) -> AgentToolResult:
        """Insert cells (code or markdown) into the notebook, in order, right away. The user
        sees them at once and can undo them (%pi undo). Where the frontend cannot edit the
        notebook, the result says so and shows the code.

        Args:
            cells: The cells to insert, each {"source": ..., "cell_type": "code" | "markdown"}.
            after: Id of the cell to insert after (default: after this %%pi cell, else at the end).
        """
        try:
            bridge = await self.live()
        except BridgeUnavailable as exc:
            code = "\n\n".join(c.source.rstrip("\n") for c in cells if c.cell_type == "code")
            notes = [c.source for c in cells if c.cell_type == "markdown"]
            result = await self._insert_fallback(code, str(exc)) if code else None
            if not notes and result is not None:
                return result
            text = "\n\n".join(f"```markdown\n{note}\n```" for note in notes)
            text = f"Markdown cells not inserted ({exc}); tell the user to add them by hand:\n{text}"
            content = [*(result.content if result is not None else []), self._text(text)]
            return AgentToolResult(content=content, details=result.details if result is not None else {})
        anchor = after or self.current_cell
        where = {"after": anchor} if anchor else {"index": 1 << 30}
        payload = [{"cell_type": c.cell_type, "source": c.source, "metadata": {}} for c in cells]
        try:
            made = await bridge.request("insert", cells=payload, **where)
        except BridgeRefused as exc:
            raise RuntimeError(f"Not inserted: {exc}. Call read_notebook for the current cell ids.") from None
        ids = [str(i) for i in made.get("ids", [])]
        for cell_id, cell in zip(ids, cells, strict=False):
            self.known[cell_id] = cell.source
            self.changes.add(Change("insert", cell_id, after=cell.source))
        listed = ", ".join(f"{i} ({c.cell_type})" for i, c in zip(ids, cells, strict=False))
        place = f"after cell {anchor}" if anchor else "at the end"
        text = f"Inserted {len(ids)} cell{'s' if len(ids) != 1 else ''} {place}: {listed}."
        return AgentToolResult(
            content=[self._text(text)], details={"inserted": ids, "index": made.get("index")}
        )

    @notebook_tool(changes_state=True)
    async def edit_cell(
        self, cell_id: str, source: str | None = None, old: str | None = None, new: str | None = None
    ) -> AgentToolResult:
        """Change one cell's source: give the whole new source, or replace the quoted part
        `old` (it must occur exactly once in the cell as you read it) with `new`. The user sees
        the diff and applies or rejects it. Refused when the cell changed since you read it:
        read the notebook again.

        Args:
            cell_id: Id of the cell, as read_notebook shows it.
            source: The cell's complete new source.
            old: A part of the current source to replace (exact text).
            new: What replaces `old`.
        """
        try:
            bridge = await self.live()
        except BridgeUnavailable as exc:
            text = f"Not edited: {exc}. {_edit_by_hand(cell_id, source, old, new)}"
            return AgentToolResult(content=[self._text(text)], details={"edited": False, "reason": str(exc)})
        before = self._known(cell_id)
        after = replaced(before, source, old, new)
        try:
            await bridge.request("edit", id=cell_id, expect=before, source=after)
        except BridgeRefused as exc:
            raise RuntimeError(
                f"Not edited: {exc}. Call read_notebook and redo the edit on the current source."
            ) from None
        self.known[cell_id] = after
        self.changes.add(Change("edit", cell_id, before={"source": before}, after=after))
        diff = unified(before, after, cell_id)
        text = f"Edited cell {cell_id}:\n{diff}"
        return AgentToolResult(content=[self._text(text)], details={"edited": cell_id, "diff": diff})

    @notebook_tool(changes_state=True)
    async def delete_cells(
        self, cell_ids: Annotated[list[str], Field(min_length=1, max_length=50)]
    ) -> AgentToolResult:
        """Delete cells by id (the user is always asked; %pi undo restores them). Refused when
        a cell changed since you read it.

        Args:
            cell_ids: Ids of the cells to delete, as read_notebook shows them.
        """
        try:
            bridge = await self.live()
        except BridgeUnavailable as exc:
            text = f"Not deleted: {exc}. Tell the user which cells to delete: {', '.join(cell_ids)}."
            return AgentToolResult(content=[self._text(text)], details={"deleted": [], "reason": str(exc)})
        expect = {cell_id: self._known(cell_id) for cell_id in cell_ids}
        try:
            done = await bridge.request("delete", ids=cell_ids, expect=expect)
        except BridgeRefused as exc:
            raise RuntimeError(f"Nothing deleted: {exc}. Call read_notebook and decide again.") from None
        for item in done.get("removed", []):
            cell = item["cell"]
            self.changes.add(Change("delete", cell["id"], before={"index": item["index"], "cell": cell}))
            self.known.pop(cell["id"], None)
        text = f"Deleted {len(cell_ids)} cell{'s' if len(cell_ids) != 1 else ''}: {', '.join(cell_ids)}."
        return AgentToolResult(content=[self._text(text)], details={"deleted": cell_ids})

    @notebook_tool(changes_state=True)
    async def run_cell(self, cell_id: str) -> AgentToolResult:
        """Run one code cell of the notebook in the kernel (after the user approves) and put its
        outputs into the cell; returns its output and error like run_code. Refused when the
        cell changed since you read it.

        Args:
            cell_id: Id of the code cell, as read_notebook shows it.
        """
        bridge = await self._live_or_fail(
            f"Not run: cell {cell_id} is in a notebook this kernel cannot reach"
        )
        source = self._known(cell_id)
        result, error = await self._run_source(source)
        outputs = nb_outputs(result, error)
        try:
            before = await bridge.request("set_outputs", id=cell_id, expect=source, outputs=outputs)
        except BridgeRefused as exc:
            raise RuntimeError(f"Ran the code, but the outputs were not written: {exc}.") from None
        self.changes.add(Change("outputs", cell_id, before=before, after=source))
        if error is not None:
            raise RuntimeError(f"{error}\n(the error is now in cell {cell_id}'s output)")
        assert result is not None
        note = TextContent(text=f"(these outputs are now in cell {cell_id})")
        # The source it ran, kept in the session: ``%pi export`` turns the call into that code.
        details = {**(result.details if isinstance(result.details, dict) else {}), "source": source}
        return AgentToolResult(content=[*result.content, note], details=details)

    async def _live_or_fail(self, what: str) -> NotebookBridge:
        try:
            return await self.live()
        except BridgeUnavailable as exc:
            raise RuntimeError(f"{what}: {exc}.") from None

    # what the approval card shows ------------------------------------------------------------

    async def _edit_preview(self, args: dict[str, Any]) -> str:
        """What Apply does to the cell (its diff, or the replacement where the agent has not
        read the cell); refuses arguments that cannot make a change, and a cell that changed."""
        cell_id = str(args.get("cell_id"))
        source, old, new = args.get("source"), args.get("old"), args.get("new")
        before = self.known.get(cell_id)
        try:
            check_edit(source, old, new)
            after = edit_text(before, source, old, new) if before is not None else None
        except EditRefused as exc:
            raise PreviewRefused(f"Not done: {exc}.") from None
        changed = await _changed_since_read(self, cell_id)
        if changed and before is not None:
            raise PreviewRefused(
                f"Not done: cell {cell_id} changed (or was deleted) since you read it; the user's "
                "version is kept. Call read_notebook and work on the current source."
            )
        if before is None or after is None:
            if changed is not None:  # a live notebook: the tool would refuse a cell it never read
                raise PreviewRefused(
                    f"Not done: cell {cell_id!r} is not one you have read: call read_notebook first."
                )
            if source is not None:
                return f"Apply replaces the source of cell {cell_id} with:\n{truncate(source, DIFF_CHARS)}"
            return f"Apply replaces, in cell {cell_id}:\n{old}\nwith:\n{new}"
        diff = "Apply this change?\n" + unified(before, after, cell_id)
        if changed is None:
            diff += "\n(no live notebook here: Apply gives the change to the model, to show you how)"
        return diff

    async def preview(self, name: str, args: dict[str, Any]) -> str | None:
        """The text the card shows while the gate asks about a call of ``name`` (``None``:
        the arguments say it all): what Apply inserts, an edit's diff; ``PreviewRefused`` when
        the call's cell changed since the agent read it, or its arguments contradict each other
        or change nothing (``previews.py``)."""
        if name in ("insert_cells", "insert_cell"):
            return insert_preview(name, args, self.current_cell)
        if name == "edit_cell":
            return await self._edit_preview(args)
        if name not in ("delete_cells", "run_cell"):
            return None
        ids = (
            [str(i) for i in args.get("cell_ids", [])]
            if name == "delete_cells"
            else [str(args.get("cell_id"))]
        )
        if any(i not in self.known for i in ids) or self.bridge is None:
            return None  # the tool itself says what is wrong
        try:
            live = {
                c["id"]: c.get("source", "") for c in (await self.bridge.request("read")).get("cells", [])
            }
        except BridgeUnavailable:
            return None
        for cell_id in ids:
            if live.get(cell_id) != self.known[cell_id]:
                raise PreviewRefused(
                    f"Not done: cell {cell_id} changed (or was deleted) since you read it; the user's "
                    "version is kept. Call read_notebook and work on the current source."
                )
        if name == "run_cell":
            return f"Run cell {ids[0]}?\n" + truncate(self.known[ids[0]], DIFF_CHARS)
        shown = "\n".join(f"- {i}: {truncate(self.known[i].strip(), 200)}" for i in ids)
        return f"Delete {len(ids)} cell{'s' if len(ids) != 1 else ''}?\n{shown}"


async def _changed_since_read(tools: EditTools, cell_id: str) -> bool | None:
    """Whether the live cell differs from what the agent read (``None``: no live notebook)."""
    if tools.bridge is None:
        return None
    try:
        cells = (await tools.bridge.request("read")).get("cells", [])
    except BridgeUnavailable:
        return None
    return {c["id"]: c.get("source", "") for c in cells}.get(cell_id) != tools.known.get(cell_id)


def _edit_by_hand(cell_id: str, source: str | None, old: str | None, new: str | None) -> str:
    """What the user can do instead of an ``edit_cell`` the notebook could not take."""
    if source is not None:
        return f"Tell the user to replace the source of cell {cell_id} with:\n```python\n{source}\n```"
    return (
        f"Tell the user to replace, in cell {cell_id}:\n```python\n{old or ''}\n```\n"
        f"with:\n```python\n{new or ''}\n```"
    )


def replaced(before: str, source: str | None, old: str | None, new: str | None) -> str:
    """The new source of an ``edit_cell`` call; ``ValueError`` saying what to send instead
    (also for an edit that changes nothing: ``previews.edit_text``)."""
    return edit_text(before, source, old, new)


def unified(before: str, after: str, cell_id: str) -> str:
    """A unified diff of a cell's source, bounded."""
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), f"cell {cell_id}", f"cell {cell_id} (edited)", lineterm=""
    )
    return truncate("\n".join(lines) or "(no change)", DIFF_CHARS)


def nb_outputs(result: AgentToolResult | None, error: str | None) -> list[dict[str, Any]]:
    """The notebook outputs of a ``run_cell``: its streams, displayed images and value, and
    the error as a stderr stream (the kernel ran the code as ``run_code`` does)."""
    details: dict[str, Any] = (
        result.details if result is not None and isinstance(result.details, dict) else {}
    )
    outputs: list[dict[str, Any]] = []
    for name in ("stdout", "stderr"):
        if details.get(name):
            outputs.append({"output_type": "stream", "name": name, "text": details[name]})
    for item in details.get("display", []):
        if item.get("type") == "image":
            outputs.append(
                {"output_type": "display_data", "data": {item["mime"]: item["data"]}, "metadata": {}}
            )
    if details.get("result") is not None:
        data = {"text/plain": details["result"]}
        outputs.append(
            {"output_type": "execute_result", "data": data, "metadata": {}, "execution_count": None}
        )
    if error is not None:
        outputs.append({"output_type": "stream", "name": "stderr", "text": error})
    return outputs
