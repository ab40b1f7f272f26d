"""Approvals that remember in a real ipykernel driven through jupyter_client: clicking "Allow
for this conversation" on a ``run_code`` card lets the next identical call through without a
card (the card says so, and that it repeats call 1); ``%pi approvals`` lists and clears the
grant; a headless run of the same conversation gets no grant; the loop guard asks before the
third identical call."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch

pytestmark = pytest.mark.kernel

ALLOW = "Allow for this conversation"
RESULTS = "[(m.tool_call_id, m.is_error) for m in _pi.messages if m.role == 'toolResult']"


def click_once(k: Kernel, label: str) -> tuple[list[str], Any]:
    """A reaction that clicks the first ``label`` button once it appears."""
    clicked: list[str] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        found = watch.find("ButtonModel", description=label)
        if found and not clicked:
            clicked.append(watch.shown_text())
            k.click(found[0].comm_id)

    return clicked, react


def test_a_grant_lets_the_next_identical_call_through_and_approvals_clear_it(k: Kernel) -> None:
    k.run("hits = []")
    k.run(
        "faux.set_responses([tool_use('run_code', {'code': 'hits.append(1)'}, 'r1'),"
        " tool_use('run_code', {'code': 'hits.append(1)'}, 'r2'), 'done'])"
    )
    cell = k.execute("%%pi --model faux:faux-1\nappend twice")
    clicked, react = click_once(k, ALLOW)
    watch = Watch(k).until_replies([cell], react, timeout=60)
    assert watch.replies[cell][1]["status"] == "ok"
    assert len(clicked) == 1
    assert len(watch.find("ButtonModel", description="Approve")) == 1  # r2 asked nobody
    assert k.value("hits") == "[1, 1]"
    assert k.value(RESULTS) == "[('r1', False), ('r2', False)]"
    text = watch.final_bundle()["text/plain"]
    assert "[tool] run_code (done) · allowed for this conversation" in text
    assert "[tool] run_code (done) · same as call 1, which succeeded · allowed for this conversation" in text

    listed = k.run("%pi approvals")
    assert "tool run_code: allowed for this conversation" in listed["stdout"], listed

    # a headless run (nbclient, nbval, papermill) of the same conversation: the grant is not applied
    k.run("faux.set_responses([tool_use('run_code', {'code': 'hits.append(2)'}, 'h1'), 'done'])")
    headless = k.execute("%%pi\nagain, headless", allow_stdin=False)
    watch = Watch(k).until_replies([headless], timeout=60)
    assert k.value("hits") == "[1, 1]"
    assert k.value(RESULTS) == "[('h1', True)]"
    assert not watch.find("ButtonModel", description=ALLOW)

    cleared = k.run("%pi approvals clear")
    assert "cleared 1 grant; its tools ask again" in cleared["stdout"], cleared
    assert "no grants" in k.run("%pi approvals")["stdout"]
    k.run("faux.set_responses([tool_use('run_code', {'code': 'hits.append(3)'}, 'c1'), 'done'])")
    cell = k.execute("%%pi\nonce more")
    clicked, react = click_once(k, "Deny")  # asks again
    watch = Watch(k).until_replies([cell], react, timeout=60)
    assert len(clicked) == 1
    assert k.value("hits") == "[1, 1]"


def test_the_loop_guard_asks_before_the_third_identical_call(k: Kernel) -> None:
    k.run("x = 41")
    k.run(
        "faux.set_responses([tool_use('inspect_variable', {'name': 'x'}, f'i{n}') for n in range(4)]"
        " + ['never'])"
    )
    cell = k.execute("%%pi --model faux:faux-1\nwhat is x?")
    clicked, react = click_once(k, "Deny")
    watch = Watch(k).until_replies([cell], react, timeout=60)
    assert watch.replies[cell][1]["status"] == "ok"
    assert len(clicked) == 1
    assert "for the 3rd time in a row (the loop guard asks before it runs)" in clicked[0]
    assert k.value(RESULTS) == "[('i0', False), ('i1', False), ('i2', True)]"
    text = watch.final_bundle()["text/plain"]
    assert "same as call 1, which succeeded" in text
    assert "the 3rd did not run (not approved)" in text


def test_delete_cells_is_offered_no_grant_and_keeps_asking(k: Kernel) -> None:
    k.run(
        "faux.set_responses([tool_use('delete_cells', {'cell_ids': ['nope']}, 'd1'), 'done',"
        " tool_use('delete_cells', {'cell_ids': ['nope']}, 'd2'), 'done'])"
    )
    for n in (1, 2):
        cell = k.execute(f"%%pi --model faux:faux-1 --approve auto\ndelete a cell ({n})")
        clicked, react = click_once(k, "Deny")
        watch = Watch(k).until_replies([cell], react, timeout=60)
        assert watch.replies[cell][1]["status"] == "ok"
        assert len(clicked) == 1, f"run {n}: delete_cells did not ask"
        assert not watch.find("ButtonModel", description=ALLOW)
    assert "no grants" in k.run("%pi approvals")["stdout"]
