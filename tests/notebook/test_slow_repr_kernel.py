"""A 60 s ``__repr__`` in a real kernel: ``inspect_variable`` and ``list_variables`` run it off
the kernel's loop, so Stop and a kernel interrupt end the run within a second (the reply comes
while the summary still sleeps), the kernel answers the next cell at once, and a summary left
alone is abandoned after the time limit with the model and the user told."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch

pytestmark = pytest.mark.kernel

REACTION_S = 1.5  # "within a second", plus the shared machine's slack; the repr sleeps 60 s
SLOW = """
import time
class Slow:
    def __repr__(self):
        time.sleep(60)
        return "slow"
slow{n} = Slow()
"""


def run_until_summary(
    k: Kernel, tool: str, n: int, action: str | None, options: str = ""
) -> tuple[Watch, str, list[float]]:
    args = {"name": f"slow{n}"} if tool == "inspect_variable" else {"pattern": f"slow{n}"}
    assert k.run(SLOW.format(n=n))["status"] == "ok"
    k.run(f"faux.set_responses([tool_use({tool!r}, {args!r}, 's{n}'), 'looked'])")
    cell = k.execute(f"%%pi --model faux:faux-1 {options}\nlook at slow{n}")
    acted: list[float] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        shown = watch.shown_text()
        if action is None or acted or tool not in shown or "running</span>" not in shown:
            return
        acted.append(watch.now())
        if action == "interrupt":
            k.interrupt()
        else:
            k.click(watch.button("Stop").comm_id)

    watch = Watch(k).until_replies([cell], react, timeout=30)
    return watch, cell, acted


@pytest.mark.parametrize("tool", ["inspect_variable", "list_variables"])
@pytest.mark.parametrize("action", ["stop", "interrupt"])
def test_stop_and_interrupt_end_a_60_s_repr_within_a_second(k: Kernel, tool: str, action: str) -> None:
    n = hash((tool, action)) % 10_000
    watch, cell, acted = run_until_summary(k, tool, n, action)
    reply_at, reply = watch.replies[cell]
    assert acted, "the tool never showed as running"
    took = reply_at - acted[0]
    print(f"{tool} {action}: the cell replied {took:.2f} s after the {action}")
    assert took < REACTION_S, f"the run took {took:.1f} s to end after the {action}"
    if action == "interrupt":
        assert (reply["status"], reply["ename"]) == ("error", "KeyboardInterrupt")
    else:
        assert reply["status"] == "ok"
    usable = k.execute("print(1 + 1)")
    later = Watch(k).until_replies([usable], timeout=5)
    assert later.replies[usable][0] < 2.0, "the kernel did not answer the next cell at once"
    assert [text for _, text in later.stdout] == ["2\n"]
    assert k.value("_pi.stop_reason") == "aborted"


def test_a_60_s_repr_is_abandoned_after_the_limit(k: Kernel) -> None:
    assert (
        k.run("from pi_notebook.notebook.tools import bounded; bounded.SUMMARY_SECONDS = 1")["status"] == "ok"
    )
    try:
        watch, cell, _ = run_until_summary(k, "inspect_variable", 1, None)
    finally:
        k.run("bounded.SUMMARY_SECONDS = 5")
    reply_at, reply = watch.replies[cell]
    assert reply["status"] == "ok"
    assert reply_at < 10
    assert k.value("_pi.stop_reason, _pi.text") == "stop looked"
    told = k.value("_pi.messages[2].content[0].text")
    assert told.startswith("The summary of slow1 did not finish within 1 s")
    assert "did not finish within 1 s" in watch.final_bundle()["text/plain"], "the user was not told"
