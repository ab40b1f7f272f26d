"""Agent code with a time limit, in a real ipykernel driven through jupyter_client: a
``run_code`` of ``time.sleep(60)`` under ``--code-timeout`` is interrupted the way the
kernel's interrupt does, the model is told (with what the code printed), the run answers and the kernel
stays usable; while the code runs, its card says so with the elapsed time and the last line it
printed. Headless (nbclient) the same, and ``c.PiMagics.headless_code_timeout`` is the limit
when nothing else is set."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch
from test_headless_kernel import FAUX_SETUP, execute, printed, shown

from pi_notebook.notebook.config import PiConfig
from pi_notebook.notebook.host.code_clock import CodeClock, still_running
from pi_notebook.notebook.host.interrupts import interruptible
from pi_notebook.notebook.options import parse_options

pytestmark = pytest.mark.kernel

SLEEPER = "import time\\nprint('epoch 1')\\ntime.sleep(60)\\nprint('never')"
SCRIPT = (
    f'faux.set_responses([tool_use("run_code", {{"code": "{SLEEPER}"}}, "c1"), '
    '"It timed out; I will train on a sample."])'
)
RESULT = (
    "[m.content[0].text for m in pi_notebook.current().agent.state.messages if m.role == 'toolResult'][-1]"
)


def test_sleeping_code_is_interrupted_at_its_limit_and_the_run_answers(k: Kernel) -> None:
    assert k.run(SCRIPT)["status"] == "ok"
    started = time.monotonic()
    cell = k.execute("%%pi --model faux:faux-1 --approve auto --code-timeout 5\ntrain the model")
    watch = Watch(k).until_replies([cell], timeout=40)
    took = time.monotonic() - started
    assert watch.replies[cell][1]["status"] == "ok"
    assert took < 20, took  # not the 60 s of the sleep
    lines = [str(v) for _, _, state in watch.updates for v in state.values() if "Still running" in str(v)]
    still = re.compile(r"Still running: \d s of its 5 s limit · last printed: epoch 1")
    assert any(still.search(line) for line in lines), lines
    result = k.value(RESULT)
    assert "stdout:\nepoch 1" in result
    assert "TimeoutError: run_code was interrupted at its time limit of 5 s" in result
    assert "never" not in result
    assert "It timed out; I will train on a sample." in watch.shown_text()
    assert k.value("1 + 1") == "2"  # the kernel is usable
    assert k.value("pi_notebook.current().agent.state.messages[-1].stop_reason") == "stop"


def test_a_headless_run_interrupts_at_its_limit(tmp_path: Path) -> None:
    sources = [
        FAUX_SETUP + SCRIPT,
        "%%pi --model faux:faux-1 --approve auto --code-timeout 2\ntrain the model",
        f"print({RESULT})\nprint(1 + 1)",
    ]
    started = time.monotonic()
    nb = execute(tmp_path, sources, timeout=60)
    assert time.monotonic() - started < 45
    assert "[tool] run_code (error)" in shown(nb.cells[1])
    assert "It timed out; I will train on a sample." in shown(nb.cells[1])
    out = printed(nb.cells[2])
    assert any("interrupted at its time limit of 2 s" in line for line in out), out
    assert out[-1] == "2"


# --- the limit's defaults and the clock, without a kernel ----------------------------------------


@pytest.mark.parametrize(
    ("line", "config", "headless", "limit"),
    [
        ("", {}, False, None),  # off by default where someone watches
        ("", {}, True, 600.0),  # headless: nobody can press Stop
        ("", {"headless_code_timeout": 0.0}, True, None),
        ("", {"code_timeout": 30.0}, True, 30.0),
        ("--code-timeout 2", {}, False, 2.0),
        ("--code-timeout 0", {}, True, None),  # the cell turns it off
    ],
)
def test_the_limit_of_a_run(line: str, config: dict[str, Any], headless: bool, limit: float | None) -> None:
    options = parse_options(f"--model faux:faux-1 {line}", PiConfig(**config))
    assert options.code_limit(headless) == limit


def test_a_negative_limit_is_a_usage_error() -> None:
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="--code-timeout must be 0 or more seconds"):
        parse_options("--code-timeout -1", PiConfig())


def test_the_still_running_line() -> None:
    assert (
        still_running(12.4, "loss 0.3\n", 600)
        == "Still running: 12 s of its 600 s limit · last printed: loss 0.3"
    )
    assert still_running(4, "", None) == "Still running: 4 s · nothing printed yet"


def test_the_clock_interrupts_sleeping_code_on_the_main_thread() -> None:
    seen: list[str] = []
    started = time.monotonic()
    with interruptible(), CodeClock(0.5, lambda: "step 1\n", seen.append, quiet=0.1, tick=0.1) as clock:
        try:
            time.sleep(30)
            clock.finish()
        except KeyboardInterrupt:
            clock.stop()
    assert clock.timed_out
    assert time.monotonic() - started < 5
    assert seen
    assert seen[0].startswith("Still running: 0 s of its 0.5 s limit · last printed: step 1")


def test_a_deferred_clock_counts_from_begin() -> None:
    """``run_code`` starts the clock before SIGINT raises in the code: until ``begin`` the
    clock neither interrupts nor counts (a KeyboardInterrupt here would fail the test)."""
    with CodeClock(0.3, lambda: "", None, deferred=True) as clock, interruptible():
        time.sleep(0.6)  # past the limit, not begun
        assert not clock.timed_out
        started = time.monotonic()
        try:
            clock.begin()
            time.sleep(30)
            clock.finish()
        except KeyboardInterrupt:
            clock.stop()
    assert clock.timed_out
    assert 0.25 < clock.elapsed < 5
    assert time.monotonic() - started < 5


def test_code_that_ends_in_time_is_not_interrupted() -> None:
    with CodeClock(0.3, lambda: "", None) as clock:
        clock.finish()
    time.sleep(0.5)  # past the limit: no stray SIGINT lands here
    assert not clock.timed_out
