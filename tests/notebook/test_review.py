"""The review of a run's changes, without a kernel: its lines (one per change, compact, cell
ids shortened), the edits nobody answered (the reducer marks them), and the summary as text and
HTML in each mode: buttons under the run, the ``%pi undo`` line where nobody can click, the
summary alone when headless; after Accept all (folded) and Undo all (what it did)."""

from __future__ import annotations

from pi_notebook.agent.types import AgentEndEvent
from pi_notebook.notebook.run.review import change_line, edit_gist, first_line, summary_heading, waiting_edits
from pi_notebook.notebook.tools.changes import Change, RunChanges
from pi_notebook.notebook.view.reduce import ToolCard, ViewState, mark_approval, reduce
from pi_notebook.notebook.view.render import render_html, render_text
from pi_notebook.notebook.view.review import (
    COMMAND,
    leave_unanswered,
    review_html,
    review_text,
    settle_review,
    show_review,
)
from pi_notebook.notebook.view.state import Review

UUID = "3f2a9c1e-5b7d-4e2a-9c1e-5b7d4e2a9c1e"


def test_one_compact_line_per_change() -> None:
    assert change_line(Change("insert", UUID, after="import pandas as pd\ndf = pd.read_csv('x')")) == (
        "+ inserted cell 3f2a9c1e…: import pandas as pd (+1 lines)"
    )
    edit = Change("edit", "c1", before={"source": "a = 1\nb = 2"}, after="a = 1\nb = 3")
    assert change_line(edit) == "~ edited cell c1: b = 2 → b = 3"
    gone = {"id": "c2", "cell_type": "markdown", "source": ["# Old\n", "text"]}
    assert change_line(Change("delete", "c2", before={"index": 4, "cell": gone})) == (
        "- deleted markdown cell c2 (was cell 5): # Old (+1 lines)"
    )
    assert change_line(Change("outputs", "c3", after="x")) == "> ran cell c3: its outputs replaced"
    assert edit_gist("a\nb", "x\ny\nz") == "+3 −2 lines"
    long = "mean = sum(data) / 2  # the bug: it should divide by the number of values"
    assert edit_gist(long, long.replace("/ 2", "/ len(data)")) == "…sum(data) / 2… → …sum(data) / len(data)…"
    assert first_line("") == "(empty)"
    assert first_line("x" * 100) == "x" * 59 + "…"


def test_the_heading_counts_changes_and_waiting_edits() -> None:
    run = RunChanges([Change("insert", "a"), Change("insert", "b"), Change("delete", "c")])
    assert summary_heading(run, 0) == "This run changed the notebook: inserted 2 cells, deleted 1 cell"
    assert summary_heading(run, 2).endswith("deleted 1 cell; 2 edits waiting for Apply")
    assert summary_heading(RunChanges(), 1) == "This run left 1 edit waiting for Apply"


def test_edits_nobody_answered_are_the_waiting_ones() -> None:
    state = ViewState()
    for call_id, name in (("e1", "edit_cell"), ("e2", "edit_cell"), ("r1", "run_code"), ("e3", "edit_cell")):
        state.items.append(card := ToolCard(call_id, name, args={"cell_id": "c", "source": "x"}))
        state._cards[call_id] = card
        mark_approval(state, call_id, "pending_approval")
    mark_approval(state, "e1", "running")  # applied
    mark_approval(state, "e2", "denied")  # rejected by a click
    leave_unanswered(state, "e3")  # Stop while it asked (the live view)
    mark_approval(state, "e3", "denied")
    reduce(state, AgentEndEvent(messages=[]))  # r1 still asked when the run ended
    assert [card.tool_call_id for card in waiting_edits(state.items)] == ["e3"]
    card = state.tool_card("r1")
    assert card is not None
    assert (card.status, card.unanswered) == ("denied", True)


def _review(actions: str) -> Review:
    return Review("This run changed the notebook: inserted 1 cell", ["+ inserted cell c1: <b>x</b>"], actions)  # type: ignore[arg-type]


def test_the_summary_in_each_mode() -> None:
    assert (
        review_text(_review("none"))
        == "This run changed the notebook: inserted 1 cell\n  + inserted cell c1: <b>x</b>"
    )
    assert review_text(_review("command")).endswith(f"<b>x</b>\n{COMMAND}")
    shown = review_html(_review("command"))
    assert "&lt;b&gt;x&lt;/b&gt;" in shown
    assert "<b>x</b>" not in shown  # escaped, never raw
    assert '<details class="pi-review-fold" open>' in shown
    assert COMMAND in shown
    # the frozen output ends with it where nobody clicks; under the run (its own row) otherwise
    state = show_review(ViewState(prompt="p"), _review("none"))
    assert render_text(state).rstrip().endswith("+ inserted cell c1: <b>x</b>")
    assert "pi-review" in render_html(state)
    state = show_review(ViewState(prompt="p"), _review("buttons"))
    assert "inserted cell" not in render_text(state)
    assert "pi-review" not in render_html(state)
    assert review_text(None) == review_html(None) == ""


def test_after_accept_all_and_undo_all() -> None:
    accepted = settle_review(_review("buttons"), "accepted", "Accepted: kept inserted 1 cell", [])
    assert review_text(accepted) == "Accepted: kept inserted 1 cell"
    assert '<details class="pi-review-fold">' in review_html(accepted)  # folded
    undone = settle_review(
        _review("command"), "undone", "Undid the run (inserted 1 cell)", ["removed inserted cell c1"]
    )
    assert (
        review_text(undone) == "Undid the run (inserted 1 cell)\n  removed inserted cell c1"
    )  # no command now
    assert "pi-review-undone" in review_html(undone)
