"""A kernel interrupt at every point of a ``%%pi`` run that calls ``run_code`` ends the cell with
``KeyboardInterrupt`` in bounded time and leaves the kernel usable.

Where a SIGINT lands depends on timing: under load it once landed while ``run_code`` waited for
its clock's thread to start, where Python's handler was already in place but no ``try`` caught
the ``KeyboardInterrupt``; it escaped into the event loop, which stopped, and ipykernel exited.
To hit each point every time, the kernel raises a real SIGINT in itself there
(``sigint_at`` of ``kernel_driver.SIGINT_AT``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import SIGINT_AT, Kernel, Watch

pytestmark = pytest.mark.kernel

REPLY_S = 8.0
"""Bound on the interrupted cell's reply, from the cell's start: generous for a loaded machine,
and shorter than the 10 s ``SLEEPS`` sleeps, so code the interrupt did not stop fails the test."""

SLEEPS = "import time\nfor _ in range(100):\n    time.sleep(0.1)\nran = True"
QUICK = "ran = True"

POINTS = [
    # (function, file, code run by run_code, whether the code ran to its end)
    pytest.param("_run_code_now", "notebook_tools", SLEEPS, False, id="before-run-code"),
    pytest.param("__enter__", "code_clock", SLEEPS, False, id="clock-starting"),
    pytest.param("begin", "code_clock", SLEEPS, False, id="code-starting"),
    pytest.param("finish", "code_clock", QUICK, True, id="code-just-ended"),
    pytest.param("__exit__", "code_clock", QUICK, True, id="clock-stopping"),
    pytest.param("take_figures", "outputs", QUICK, True, id="after-run-code"),
    pytest.param("fit_run", "fit", QUICK, False, id="run-starting"),
    pytest.param("_pace", "faux", QUICK, False, id="model-streaming"),
]


@pytest.mark.parametrize(("name", "where", "code", "ran"), POINTS)
def test_an_interrupt_at_any_point_ends_the_cell_and_keeps_the_kernel(
    k: Kernel, name: str, where: str, code: str, ran: bool
) -> None:
    assert k.run(SIGINT_AT)["status"] == "ok"
    k.run(f"faux.set_responses([tool_use('run_code', {{'code': {code!r}}}, 'r1'), 'never reached'])")
    assert k.run(f"ran = False; sigint_fired.clear(); sigint_at({name!r}, {where!r})")["status"] == "ok"
    cell = k.execute("%%pi --model faux:faux-1 --approve auto\nrun it")
    watch = Watch(k).until_replies([cell], timeout=REPLY_S)
    _, reply = watch.replies[cell]
    assert k.value("sigint_fired") == f"[{name!r}]"
    assert (reply["status"], reply["ename"]) == ("error", "KeyboardInterrupt"), reply
    assert k.value("ran, _pi.stop_reason, 1 + 1") == f"{ran} aborted 2"
    # the kernel runs the next run as before
    k.run("faux.set_responses(['after the interrupt'])")
    after = k.execute("%%pi\nstill there?")
    assert Watch(k).until_replies([after]).replies[after][1]["status"] == "ok"
    assert k.value("_pi.text") == "after the interrupt"


FALLBACK_POINTS = [
    # (function, file, whether just as it returns to the file rather than as it starts)
    pytest.param("_run_code_now", "notebook_tools", False, id="tool-on-main-thread"),
    pytest.param("get", "interrupts", True, id="job-just-taken"),
    pytest.param("set_running_or_notify_cancel", "_base", False, id="job-starting"),
    pytest.param("set_result", "_base", False, id="job-done"),
]


@pytest.mark.parametrize(("name", "where", "returning"), FALLBACK_POINTS)
def test_an_interrupt_in_the_fallback_ends_the_cell_and_keeps_the_kernel(
    k: Kernel, name: str, where: str, returning: bool
) -> None:
    """``%autoawait off``: the agent runs on a worker thread, the main thread runs its tools."""
    assert k.run(SIGINT_AT)["status"] == "ok"
    k.run(f"faux.set_responses([tool_use('run_code', {{'code': {QUICK!r}}}, 'r1'), 'never reached'])")
    arm = f"%autoawait off\nsigint_fired.clear(); sigint_at({name!r}, {where!r}, {returning})"
    assert k.run(arm)["status"] == "ok"
    try:
        cell = k.execute("%%pi --model faux:faux-1 --approve auto\nrun it")
        watch = Watch(k).until_replies([cell], timeout=REPLY_S)
        _, reply = watch.replies[cell]
        assert k.value("sigint_fired") == f"[{name!r}]"
        assert (reply["status"], reply["ename"]) == ("error", "KeyboardInterrupt"), reply
        assert k.value("_pi.stop_reason, 1 + 1") == "aborted 2"
    finally:
        k.run("%autoawait on")
