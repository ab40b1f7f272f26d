"""Plan mode on the Pi kernel, headless under nbclient: ``%%pi --plan`` in a Pi-kernel cell
prints the plan and runs nothing; with ``c.PiMagics.plan`` on, a plain prompt plans too; and
``%%pi --plan-run`` plans, then runs the plan with its checklist."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_nbclient_kernel import execute, notebook

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

pytestmark = pytest.mark.kernel

PLAN = "1. Set x to 2\n2. Print x\n"
SETUP = f"""\
%%python
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_tool_call
faux = register_faux_provider(token_size={{"min": 4, "max": 4}})
def use(name, args):
    return faux_assistant_message([faux_tool_call(name, args, id=name)], stop_reason="toolUse")
step, code = use("plan_step", {{"step": 1}}), use("run_code", {{"code": "x = 2"}})
faux.set_responses([{PLAN!r}, code, {PLAN!r}, code, {PLAN!r}, step, "ran step 1"])
get_ipython().run_line_magic("config", 'PiMagics.model = "faux:faux-1"')
x = 1
"""


def text_of(cell: object) -> str:
    outputs = cell.outputs  # type: ignore[attr-defined]
    return "\n".join(str(o.get("data", {}).get("text/plain", o.get("text", ""))) for o in outputs)


def test_plan_in_pi_kernel_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nb = notebook(
        SETUP,
        "%%pi --plan\nset x to 2",
        "%%python\nprint(x, faux.get_pending_response_count())",
        "%%python\nget_ipython().run_line_magic('config', 'PiMagics.plan = True')",
        "set x to 2, as a plain prompt",
        "%%python\nprint(x, faux.get_pending_response_count())",
        "%%pi --plan-run\nset x to 2 and go",
        "%%python\nprint(faux.get_pending_response_count())",
    )
    execute(nb, tmp_path, monkeypatch)
    cells = [text_of(c) for c in nb.cells]  # type: ignore[attr-defined]
    assert "1. Set x to 2\n2. Print x" in cells[1]
    assert "Plan ready (2 steps); nothing was run." in cells[1]
    assert cells[2].strip() == "1 6"
    assert "Plan ready (2 steps); nothing was run." in cells[4]
    assert cells[5].strip() == "1 4"
    assert "Plan ready (2 steps): running it (--plan-run)." in cells[6]
    assert "[>] 1. Set x to 2" in cells[6]
    assert cells[7].strip() == "0"
