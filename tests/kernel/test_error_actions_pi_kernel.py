"""Explain / Fix in the Pi kernel: a ``%%python`` cell that raises gets the buttons (the line as
their text), a prompt whose run fails gets none (it is the agent's own cell), and a ``%pi fix``
cell runs the fix as in a Python kernel."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "notebook"))
sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Watch
from pi_kernel_driver import PiKernelUnderTest

from pi_notebook.notebook.error_actions import help_line

pytestmark = pytest.mark.kernel


def test_a_python_cell_that_raises_gets_the_buttons_a_failed_prompt_none(p: PiKernelUnderTest) -> None:
    msg = p.execute_cell("%%python\nratio = 1 / 0", "py")
    watch = Watch(p).until_replies([msg], timeout=30)
    reply = watch.replies[msg][1]
    assert reply["ename"] == "ZeroDivisionError"
    [shown] = [c for _, kind, c in watch.displays if kind == "display_data"]
    assert shown["data"]["text/plain"] == help_line(int(reply["execution_count"]))
    assert watch.button("Fix")
    # a prompt whose run fails (raise_on_error) is the agent's cell: no offer under it
    p.python("faux.set_responses([faux_assistant_message('', stop_reason='error', error_message='boom')])")
    assert p.run("%config PiMagics.raise_on_error = True")["status"] == "ok"
    try:
        msg = p.execute_cell("summarise my notebook", "prompt")
        watch = Watch(p).until_replies([msg], timeout=30)
    finally:
        assert p.run("%config PiMagics.raise_on_error = None")["status"] == "ok"
    assert watch.replies[msg][1]["ename"] == "RunFailed"
    assert watch.find("ButtonModel", description="Fix") == []
    p.python("faux.set_responses(['Division by zero: the divisor is 0.'])")
    reply = p.run("%pi explain")
    assert reply["status"] == "ok", reply
    assert p.value("_pi.text") == "Division by zero: the divisor is 0."
