"""``inspect_variable`` and ``list_variables`` never run code that could change state or hold
the kernel: a property on a dotted path is reported, not evaluated; ``__getattr__`` is not
called; a slow ``__repr__`` is abandoned after the time limit with the user told. Against a
real ``InteractiveShell``; the 60 s ``__repr__`` stopped by Stop and by a kernel interrupt is in
``test_slow_repr_kernel.py``."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture  # noqa: F401
from test_notebook_tools import call, text_of

from pi_notebook.notebook.state import state_for
from pi_notebook.notebook.tools.notebook_tools import NotebookTools

SETUP = """
import time
class Account:
    __slots__ = ()
class Counter:
    reads = 0
    def __init__(self):
        self.name = "counter"
    @property
    def value(self):
        Counter.reads += 1
        return Counter.reads
    def __getattr__(self, attr):
        Counter.reads += 100
        return attr
    def method(self):
        return 1
class Slow:
    def __repr__(self):
        time.sleep(3)
        return "slow at last"
counter = Counter()
slow = Slow()
aaa = 1
zzz = "last"
"""


@pytest.fixture
def tools(ip: Any) -> NotebookTools:
    ip.run_cell(SETUP)
    return state_for(ip).tools


def test_a_property_on_a_dotted_path_is_not_evaluated(ip: Any, tools: NotebookTools) -> None:
    shown = text_of(call(tools, "inspect_variable", name="counter.value"))
    assert "counter.value: a property of Counter, not evaluated" in shown
    assert "run_code" in shown
    assert ip.user_ns["Counter"].reads == 0, "the getter ran"
    with pytest.raises(ValueError, match="no stored attribute 'missing'"):
        call(tools, "inspect_variable", name="counter.missing")
    assert ip.user_ns["Counter"].reads == 0, "__getattr__ ran"
    assert "'counter'" in text_of(call(tools, "inspect_variable", name="counter.name"))
    assert "method" in text_of(call(tools, "inspect_variable", name="counter.method"))
    assert ip.user_ns["Counter"].reads == 0


def test_a_slow_repr_is_abandoned_after_the_limit(
    ip: Any, tools: NotebookTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_notebook.notebook.tools import bounded

    monkeypatch.setattr(bounded, "SUMMARY_SECONDS", 0.5)
    started = time.monotonic()
    with pytest.raises(bounded.SummaryTimedOut, match=r"The summary of slow did not finish within 0.5 s"):
        call(tools, "inspect_variable", name="slow")
    assert time.monotonic() - started < 2.0
    # the abandoned summary still runs: asking again does not start another one
    with pytest.raises(bounded.SummaryStillRunning, match="still running"):
        call(tools, "inspect_variable", name="slow")
    listed = text_of(call(tools, "list_variables"))
    assert "aaa: int = 1" in listed
    assert "slow: Slow = (not shown: an earlier summary of it is still running)" in listed
    assert "zzz: str = 'last'" in listed
    assert time.monotonic() - started < 3.0


def test_list_variables_names_the_slow_value_and_keeps_the_rest(
    ip: Any, tools: NotebookTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_notebook.notebook.tools import bounded

    monkeypatch.setattr(bounded, "SUMMARY_SECONDS", 0.5)
    ip.user_ns["slow2"] = ip.user_ns["Slow"]()
    started = time.monotonic()
    listed = text_of(call(tools, "list_variables", pattern="*"))
    assert time.monotonic() - started < 2.0
    assert "aaa: int = 1" in listed
    assert "slow" in listed
    assert "did not finish within 0.5 s" in listed
    assert listed.rstrip().endswith("zzz: str")  # after the slow one: names and types only


def test_two_summaries_of_one_value_at_once_both_finish() -> None:
    """Two tools of one turn run in parallel and may summarise the same value (list_variables
    and inspect_variable of a DataFrame): the second waits for the first instead of refusing."""
    import threading

    from pi_notebook.notebook.tools import bounded

    value = object()
    inside = threading.Event()
    outcomes: list[str] = []

    def first() -> None:
        with bounded.summarising(value, "first"):
            inside.set()
            time.sleep(0.2)
        outcomes.append("first")

    thread = threading.Thread(target=first)
    thread.start()
    assert inside.wait(5)
    with bounded.summarising(value, "second"):
        outcomes.append("second")
    thread.join(5)
    assert outcomes == ["first", "second"]
