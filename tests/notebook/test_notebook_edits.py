"""The edit tools' pieces that need no frontend: the quoted-part replacement, the diff the
approval card draws, the gate's rules for them (``delete_cells`` always asks, a call whose
cell changed since the agent read it is refused without asking), the undo journal's summary
and the ``%pi undo`` cell the input transformer recognises."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_notebook.agent.types import AgentContext, BeforeToolCallContext
from pi_notebook.ai.types import AssistantMessage, ToolCall
from pi_notebook.notebook.load import is_undo_cell
from pi_notebook.notebook.run.approval import USER_REJECTED, ApprovalGate
from pi_notebook.notebook.run.unparsed import offer_unparsed
from pi_notebook.notebook.tools.changes import Change, RunChanges
from pi_notebook.notebook.tools.edits import EditTools, PreviewRefused, replaced, unified
from pi_notebook.notebook.tools.previews import approval_labels, insert_preview
from pi_notebook.notebook.view.render.static_html import progress_html


def test_replaced_takes_a_whole_source_or_one_quoted_part() -> None:
    assert replaced("a = 1\nb = 2", "c = 3", None, None) == "c = 3"
    assert replaced("a = 1\nb = 2", None, "b = 2", "b = 20") == "a = 1\nb = 20"
    with pytest.raises(ValueError, match="does not occur"):
        replaced("a = 1", None, "zzz", "y")
    with pytest.raises(ValueError, match="occurs 2 times"):
        replaced("x\nx", None, "x", "y")
    with pytest.raises(ValueError, match="not both"):
        replaced("x", "y", "x", "y")
    with pytest.raises(ValueError, match="give the new source"):
        replaced("x", None, "x", None)
    with pytest.raises(ValueError, match="old and new are the same text, so the edit changes nothing"):
        replaced("x = 1", None, "x = 1", "x = 1")
    with pytest.raises(ValueError, match="the new source is the cell's source as you read it"):
        replaced("x = 1", "x = 1", None, None)


def test_edit_and_insert_cards_say_what_apply_does_in_their_buttons_words() -> None:
    assert approval_labels("edit_cell") == ("Apply", "Reject")
    assert approval_labels("insert_cells") == approval_labels("insert_cell") == ("Apply", "Reject")
    assert approval_labels("run_code") == ("Approve", "Deny")
    cells = {"cells": [{"source": "a = 1"}, {"source": "# T", "cell_type": "markdown"}], "after": "c9"}
    assert insert_preview("insert_cells", cells, "c0") == (
        "Apply inserts 2 cells after cell c9; Reject leaves the notebook as it is.\n"
        "[1] code cell:\na = 1\n[2] markdown cell:\n# T"
    )
    assert insert_preview("insert_cells", {"cells": [{"source": ""}]}, None).startswith(
        "Apply inserts 1 cell at the end;"
    )
    assert insert_preview("insert_cell", {"code": "b = 2"}, None) == (
        "Apply inserts 1 cell below this %%pi cell; Reject leaves the notebook as it is.\n"
        "[1] code cell:\nb = 2"
    )
    assert "Apply runs it (the model then gets its result), Reject leaves it." in offer_unparsed("edit_cell")
    assert "Approve runs it (the model then gets its result), Deny leaves it." in offer_unparsed("run_code")


def test_an_edit_preview_refuses_what_cannot_change_anything() -> None:
    tools = EditTools()
    tools.known["c1"] = "x = 1"
    with pytest.raises(PreviewRefused, match=r"^Not done: old and new are the same text"):
        asyncio.run(tools.preview("edit_cell", {"cell_id": "c1", "old": "x = 1", "new": "x = 1"}))
    with pytest.raises(PreviewRefused, match=r"^Not done: old does not occur"):
        asyncio.run(tools.preview("edit_cell", {"cell_id": "c1", "old": "zzz", "new": "y"}))
    with pytest.raises(PreviewRefused, match=r"^Not done: give either source, or old and new, not both\."):
        asyncio.run(tools.preview("edit_cell", {"cell_id": "c9", "source": "y", "old": "x", "new": "y"}))
    shown = asyncio.run(tools.preview("edit_cell", {"cell_id": "c1", "old": "1", "new": "2"}))
    assert shown is not None
    assert shown.startswith("Apply this change?\n--- cell c1\n")
    assert "-x = 1\n+x = 2" in shown  # a diff, even where no live notebook is (said below it)
    assert shown.endswith("(no live notebook here: Apply gives the change to the model, to show you how)")
    unread = asyncio.run(tools.preview("edit_cell", {"cell_id": "c7", "source": "z = 3"}))
    assert unread == "Apply replaces the source of cell c7 with:\nz = 3"


def test_the_card_draws_an_edit_as_a_coloured_diff() -> None:
    diff = unified("y = 10 / 0\ny", "y = 10 / 5\ny", "c-fix")
    assert diff.splitlines()[2:] == ["@@ -1,2 +1,2 @@", "-y = 10 / 0", "+y = 10 / 5", " y"]
    drawn = progress_html("Apply this change?\n" + diff)
    assert '<pre class="pi-pre pi-diff"' in drawn
    assert 'background:rgba(46,160,67,.22);display:block;">+y = 10 / 5</span>' in drawn
    assert 'background:rgba(248,81,73,.22);display:block;">-y = 10 / 0</span>' in drawn
    assert "pi-diff" not in progress_html("Run cell c-fix?\nx = 1")  # not a diff: plain progress


def _context(name: str, args: dict[str, Any]) -> BeforeToolCallContext:
    call = ToolCall(id="t1", name=name, arguments=args)
    message = AssistantMessage(content=[call], api="faux", provider="faux", model="m")
    return BeforeToolCallContext(assistant_message=message, tool_call=call, args=args, context=AgentContext())


def _gate(policy: Any, answer: bool | None, shown: list[str | None], refuse: bool = False) -> ApprovalGate:
    async def request(call_id: str) -> bool:
        assert answer is not None, "nobody should have been asked"
        shown.append(f"asked {call_id}")
        return answer

    async def preview(name: str, args: dict[str, Any]) -> str | None:
        if refuse:
            raise PreviewRefused("Not done: cell c1 changed since you read it.")
        return f"Apply this change to {args['cell_id']}?" if name == "edit_cell" else None

    def note(call_id: str, text: str) -> None:
        shown.append(text)

    return ApprovalGate(policy, request=request if answer is not None else None, note=note, preview=preview)


def test_delete_cells_asks_even_under_approve_auto() -> None:
    asked: list[str | None] = []
    assert asyncio.run(_gate("auto", True, asked)(_context("delete_cells", {"cell_ids": ["c1"]}))) is None
    assert asked == ["asked t1"]
    not_asked: list[str | None] = []
    assert asyncio.run(_gate("auto", True, not_asked)(_context("edit_cell", {"cell_id": "c1"}))) is None
    assert not_asked == []
    blocked = asyncio.run(_gate("auto", None, [])(_context("delete_cells", {"cell_ids": ["c1"]})))
    assert blocked is not None
    assert blocked.block
    assert (
        blocked.reason
        == "Tool call denied: delete_cells always asks the user, and nobody can click Approve in this run."
    )


def test_an_edit_shows_its_preview_and_a_reject_tells_the_model() -> None:
    shown: list[str | None] = []
    result = asyncio.run(_gate("ask", False, shown)(_context("edit_cell", {"cell_id": "c1"})))
    assert shown == ["Apply this change to c1?", "asked t1"]
    assert result is not None
    assert result.block
    assert result.reason == USER_REJECTED


def test_a_refused_preview_never_reaches_the_user() -> None:
    asked: list[str] = []

    async def request(call_id: str) -> bool:
        asked.append(call_id)
        return True

    async def preview(name: str, args: dict[str, Any]) -> str | None:
        raise PreviewRefused("Not done: cell c1 changed since you read it.")

    gate = ApprovalGate("ask", request=request, preview=preview)
    result = asyncio.run(gate(_context("edit_cell", {"cell_id": "c1"})))
    assert asked == []
    assert result is not None
    assert result.block
    assert result.reason == "Not done: cell c1 changed since you read it."


def test_the_undo_journal_summarises_a_run() -> None:
    run = RunChanges()
    assert not run
    for change in (Change("insert", "a"), Change("insert", "b"), Change("edit", "c"), Change("delete", "d")):
        run.add(change)
    assert run.summary() == "inserted 2 cells, edited 1 cell, deleted 1 cell"


def test_only_a_cell_that_is_pi_undo_alone_is_awaited() -> None:
    assert is_undo_cell(["%pi undo\n"])
    assert is_undo_cell(["# take it back\n", "\n", "  %pi undo  \n"])
    assert not is_undo_cell(["%pi undo\n", "x = 1\n"])
    assert not is_undo_cell(["%pi status\n"])


def test_the_insert_card_draws_each_cell_as_code() -> None:
    cells = {"cells": [{"source": "def f():\n    return '<b>'"}, {"source": "# T", "cell_type": "markdown"}]}
    drawn = progress_html(insert_preview("insert_cells", cells, "c0"))
    assert drawn.count('<pre class="pi-pre pi-cell-source"') == 2
    head = "Apply inserts 2 cells after this %%pi cell; Reject leaves the notebook as it is."
    assert f"<div>{head}</div>" in drawn
    assert "<div>[1] code cell:</div>" in drawn
    assert "def f():\n    return &#x27;&lt;b&gt;&#x27;</pre>" in drawn  # escaped, indentation kept
    assert "<div>[2] markdown cell:</div>" in drawn
