"""Edit and insert cards in a real ipykernel (jupyter_client; the client ignores the bridge,
as ``jupyter console`` or VS Code do): an ``edit_cell`` that changes nothing (``old == new``)
or contradicts itself is refused before anyone is asked, as a tool error the model sees; an
``insert_cells`` card shows the cells Apply inserts, in the words of its Apply / Reject
buttons."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch

pytestmark = pytest.mark.kernel

RESULTS = "[(m.tool_call_id, m.is_error, m.content[0].text) for m in _pi.messages if m.role == 'toolResult']"


def test_a_no_op_or_contradictory_edit_is_refused_before_asking(k: Kernel) -> None:
    k.run(
        "faux.set_responses([tool_use('edit_cell', {'cell_id': 'c1', 'old': 'x = 1', 'new': 'x = 1'}, 'e1'),"
        " tool_use('edit_cell', {'cell_id': 'c1', 'source': 'y', 'old': 'x', 'new': 'y'}, 'e2'), 'ok'])"
    )
    cell = k.execute("%%pi --model faux:faux-1 --approve ask\nfix x")
    watch = Watch(k).until_replies([cell], timeout=40)
    assert watch.replies[cell][1]["status"] == "ok"
    assert watch.find("ButtonModel", description="Apply") == []  # nobody was asked
    results = eval(k.value(RESULTS))
    assert results == [
        (
            "e1",
            True,
            "Not done: old and new are the same text, so the edit changes nothing; send in new what "
            "the part should become.",
        ),
        ("e2", True, "Not done: give either source, or old and new, not both."),
    ]


def test_an_insert_card_shows_the_cells_apply_inserts(k: Kernel) -> None:
    cells = [{"source": "df = load()\ndf.head()"}, {"source": "# Notes", "cell_type": "markdown"}]
    k.run(f"faux.set_responses([tool_use('insert_cells', {{'cells': {cells!r}}}, 'i1'), 'inserted'])")
    cell = k.execute("%%pi --model faux:faux-1 --approve ask\nadd cells")
    seen: list[str] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        buttons = watch.find("ButtonModel", description="Apply")
        if buttons and not seen and watch.find("ButtonModel", description="Reject"):
            seen.append(watch.shown_text())
            k.click(buttons[0].comm_id)

    watch = Watch(k).until_replies([cell], react, timeout=40)
    assert watch.replies[cell][1]["status"] == "ok"
    assert watch.find("ButtonModel", description="Approve") == []  # the buttons' own words
    [shown] = seen
    assert "Apply inserts 2 cells" in shown
    assert "Reject leaves the notebook as it is." in shown
    assert "[1] code cell:" in shown
    assert "df = load()" in shown
    assert "[2] markdown cell:" in shown
    assert "# Notes" in shown
    [(call_id, is_error, _text)] = eval(k.value(RESULTS))
    assert (call_id, is_error) == ("i1", False)
