"""``%pi export [N] [--py FILE]`` and ``_pi.code`` on a real ``InteractiveShell`` with the faux
provider: the code a run executed (``run_code``, ``set_variable``) comes back from the session
file, marked and in order; denied and failed calls are skipped and named; a fresh Python
process running the ``--py`` file has the variables the agent made; it works after a restart;
outside a notebook frontend the cells are printed with the reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, run  # noqa: F401
from session_helpers import MODEL, cell, line, restart, sdir_fixture  # noqa: F401

from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_text, faux_tool_call
from pi_notebook.notebook.load import export_line

FIRST_CODE = "import math\nbase = [1, 2, 3]\ntotal = sum(base)"


def _agent_run(faux: FauxRegistration) -> None:
    """One run: run_code (ok), set_variable (denied), run_code (fails), set_variable from an
    expression and from a JSON value, and an answer."""
    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_text("Computing."),
                    faux_tool_call("run_code", {"code": FIRST_CODE}, id="c1"),
                    faux_tool_call("set_variable", {"name": "plan_b", "value": 1}, id="c2"),
                    faux_tool_call("run_code", {"code": "1 / 0"}, id="c3"),
                ],
                stop_reason="toolUse",
            ),
            faux_assistant_message(
                [
                    faux_tool_call("set_variable", {"name": "doubled", "expression": "total * 2"}, id="c4"),
                    faux_tool_call("set_variable", {"name": "labels", "value": {"a": [True, None]}}, id="c5"),
                    faux_tool_call("run_code", {"code": "root = math.sqrt(doubled)\n%time x = 1"}, id="c6"),
                ],
                stop_reason="toolUse",
            ),
            "Done: total is 6.",
        ]
    )


def test_pi_code_and_export_print_the_executed_code_in_order_skipping_failures(
    ip: Any, faux: FauxRegistration, sdir: Path
) -> None:
    _agent_run(faux)
    cell(ip, f"{MODEL} --approve auto", "compute the totals")
    code = ip.user_ns["_pi"].code
    assert code == [
        "import math\nbase = [1, 2, 3]\ntotal = sum(base)",
        "plan_b = 1",
        "doubled = total * 2",
        "labels = {'a': [True, None]}",
        "root = math.sqrt(doubled)\n%time x = 1",
    ]
    text = line(ip, "export")
    assert "%%pi run 1: 5 cells of code the agent ran" in text
    assert "skipped 1 call(s) that did not run: run_code call 3 (failed)" in text
    assert "Not inserted (no Jupyter kernel, so there is no notebook frontend)" in text
    assert text.index("# from %%pi run 1 (run_code, call 1)\nimport math") < text.index(
        "# from %%pi run 1 (set_variable, call 4)\ndoubled = total * 2"
    ) < text.index("# from %%pi run 1 (run_code, call 6)\nroot = math.sqrt(doubled)")
    assert "1 / 0" not in text


def test_denied_calls_are_skipped_and_said_so(ip: Any, faux: FauxRegistration, sdir: Path) -> None:
    magics = ip.magics_manager.registry["PiMagics"]
    magics.approvals = {"set_variable": "deny"}
    try:
        _agent_run(faux)
        cell(ip, f"{MODEL} --approve auto", "compute the totals")
    finally:
        magics.approvals = {}
    # without the denied `doubled`, the last run_code failed too
    assert [c.splitlines()[0] for c in ip.user_ns["_pi"].code] == ["import math"]
    text = line(ip, "export 1")
    assert "%%pi run 1: 1 cell " in text
    assert "run_code call 6 (failed)" in text
    assert "set_variable call 2 (denied)" in text
    assert "set_variable call 4 (denied)" in text
    assert "run_code call 3 (failed)" in text
    assert "plan_b" not in text.split("copy them into cells:")[1]


def test_the_py_file_reproduces_the_variables_in_a_fresh_process_after_a_restart(
    ip: Any, faux: FauxRegistration, sdir: Path, tmp_path: Path
) -> None:
    faux.set_responses(["Nothing to run."])
    cell(ip, MODEL, "first, a run without code")
    _agent_run(faux)
    cell(ip, f"{MODEL} --approve auto", "compute the totals")
    restart(ip)  # the session file is the source
    target = tmp_path / "agent work.py"
    text = line(ip, f"export 2 --py '{target}'")
    assert f"Written to {target}." in text
    source = target.read_text()
    assert "# %% from %%pi run 2 (run_code, call 1)" in source
    assert "get_ipython().run_cell_magic('time'" in source or "get_ipython().run_line_magic('time'" in source
    check = (
        "import json, sys\n"
        "from IPython.testing.globalipapp import start_ipython\n"
        "ip = start_ipython()\n"
        f"ip.safe_execfile({str(target)!r}, ip.user_ns, raise_exceptions=True)\n"
        "u = ip.user_ns\n"
        "print(json.dumps([u['total'], u['doubled'], u['labels'], u['root'], 'plan_b' in u]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == '[6, 12, {"a": [true, null]}, 3.4641016151377544, true]'
    # the first run ran no code: an empty export says so
    assert "%%pi run 1: 0 cells" in line(ip, "export 1")


def test_export_errors_are_one_line_and_say_what_to_do(ip: Any, faux: FauxRegistration, sdir: Path) -> None:
    with pytest.raises(UsageError, match=r"no recorded %%pi run.*run a %%pi cell first"):
        line(ip, "--name nothing_here export")
    faux.set_responses(["only answer"])
    cell(ip, MODEL, "only question")
    with pytest.raises(UsageError, match=r"has 1 recorded run in .*; try %pi export 1"):
        line(ip, "export 3")
    with pytest.raises(UsageError, match=r"takes \[N\] \[--py FILE\]"):
        line(ip, "export last")
    with pytest.raises(UsageError, match="needs a file name"):
        line(ip, "export --py")
    with pytest.raises(UsageError, match="cannot write"):
        line(ip, "export --py /nonexistent-dir/x.py")


def test_not_alone_in_its_cell_export_prints_why_not_inserted(
    ip: Any, faux: FauxRegistration, sdir: Path
) -> None:
    _agent_run(faux)
    cell(ip, f"{MODEL} --approve auto", "compute the totals")
    result, captured = run(ip, "%pi export\nafter_export = 1")  # not alone: cannot await the bridge
    assert result.error_in_exec is None, result.error_in_exec
    assert "Not inserted (run %pi export alone in its cell to insert them)" in captured.stdout
    assert "# from %%pi run 1 (run_code, call 1)" in captured.stdout


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["%pi export\n"], "export"),
        (["# keep\n", "%pi export 2 --py a.py\n"], "export 2 --py a.py"),
        (["%pi --name other export 1\n"], "--name other export 1"),
        (["%pi show\n"], None),
        (["%pi export\n", "x = 1\n"], None),
        (["%pi --name export show\n"], None),
    ],
)
def test_which_cells_are_awaited_exports(lines: list[str], expected: str | None) -> None:
    assert export_line(lines) == expected


def test_insert_as_cell_without_a_bridge_says_why_and_names_pi_export(
    ip: Any, faux: FauxRegistration, sdir: Path
) -> None:
    import asyncio

    from pi_notebook.notebook.result import ExportedCell
    from pi_notebook.notebook.run import after_run
    from pi_notebook.notebook.state import state_for

    state = state_for(ip)
    state.tools.bridge, state.tools.no_bridge = None, "no notebook frontend here"
    row = after_run.insert_row(state, [ExportedCell(2, "run_code", 3, "y = 1")], None)
    [button] = row.children[0].children
    assert button.description == "Insert as cell (run_code, call 3)"

    async def click() -> None:
        button.click()
        await asyncio.gather(*after_run._RUNNING)

    asyncio.run(click())
    assert button.disabled
    assert row.children[1].value == (
        "Not inserted: no notebook frontend here. %pi export prints the code to copy."
    )
    # outside a loop (an old kernel) the click says what to run instead
    again = after_run.insert_row(state, [ExportedCell(2, "run_code", 3, "y = 1")], None)
    again.children[0].children[0].click()
    assert again.children[1].value == "Run %pi export alone in a cell instead."


def test_a_text_run_gets_no_insert_buttons(ip: Any, faux: FauxRegistration, sdir: Path) -> None:
    _agent_run(faux)
    _, captured = cell(ip, f"{MODEL} --approve auto --text", "compute the totals")
    assert "Insert as cell" not in str(captured.outputs) + captured.stdout
    assert len(ip.user_ns["_pi"].code) == 5


def test_a_headless_export_prints_at_once(
    ip: Any, faux: FauxRegistration, sdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _agent_run(faux)
    cell(ip, f"{MODEL} --approve auto", "compute the totals")
    monkeypatch.setenv("PI_NOTEBOOK_HEADLESS", "1")
    text = line(ip, "export")
    assert "Not inserted (a headless run has no notebook frontend: PI_NOTEBOOK_HEADLESS=1)" in text
