"""``%pi export`` in a real kernel (jupyter_client): a ``%%pi`` run whose code partly ran
(one call denied), a kernel restart, ``%pi export --py`` read from the session file alone,
and a second restart in which ``%run`` of that file (no ``%%pi``, no model) brings the
variables back. ``%pi export`` alone in a cell with no notebook frontend prints the cells
after the line saying why they were not inserted."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import SETUP, Kernel

pytestmark = pytest.mark.kernel

SCRIPT = """\
MEDIAN = "middle = statistics.median(values)\\n%time spread = max(values) - min(values)"
get_ipython().magics_manager.registry["PiMagics"].approvals = {"set_variable": "deny", "run_code": "auto"}
faux.set_responses([
    faux_assistant_message([
        faux_tool_call("run_code", {"code": "import statistics\\nvalues = [3, 1, 4, 1, 5]"}, id="a"),
        faux_tool_call("set_variable", {"name": "blocked", "value": 1}, id="b"),
    ], stop_reason="toolUse"),
    tool_use("run_code", {"code": MEDIAN}, "c"),
    "The median is 3.",
])
"""


def _restart(kernel: Kernel) -> None:
    kernel.km.restart_kernel(now=True)
    kernel.kc.wait_for_ready(timeout=60)
    assert kernel.run(SETUP)["status"] == "ok"


def test_export_after_a_restart_reproduces_the_variables_without_the_model(
    tmp_path: Path, private_agent_dir: Path
) -> None:
    kernel = Kernel(tmp_path)
    try:
        assert kernel.run(SCRIPT)["status"] == "ok"
        reply = kernel.run("%%pi --model faux:faux-1\nfind the median of my values")
        assert reply["status"] == "ok", reply
        assert kernel.value("len(_pi.code), middle, spread") == "2 3 4"
        _restart(kernel)
        assert kernel.value("'middle' in globals()") == "False"
        target = tmp_path / "work.py"
        out = kernel.run(f"%pi export --py {target}")
        assert out["status"] == "ok", out
        skipped = "%%pi run 1: 2 cells of code the agent ran; skipped 1 call(s) that did not run: "
        assert skipped in out["stdout"]
        assert "set_variable call 2 (denied)" in out["stdout"]
        # alone in its cell, with no notebook frontend: printed after the reason
        shown = kernel.run("%pi export")
        assert shown["status"] == "ok", shown
        assert "Not inserted (no notebook frontend answered the bridge" in shown["stdout"]
        assert "# from %%pi run 1 (run_code, call 3)\nmiddle = statistics.median(values)" in shown["stdout"]
        _restart(kernel)
        ran = kernel.run(f"%run {target}")
        assert ran["status"] == "ok", ran
        assert kernel.value("middle, spread, 'blocked' in globals(), '_pi' in globals()") == "3 4 False False"
    finally:
        kernel.close()
