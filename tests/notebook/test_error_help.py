"""``%pi fix`` / ``%pi explain`` and the line under a failing cell in a real ``InteractiveShell``
without a kernel (terminal IPython): the line is printed; the prompt is the ``/fix`` or
``/explain`` template (the agent dir's wins over the built-in one) with the cell's number,
source, error and id as its arguments; Explain offers the model read-only tools only."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, run  # noqa: F401

from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message
from pi_notebook.notebook.error_actions import help_line
from pi_notebook.notebook.state import state_for
from pi_notebook.notebook.tools.cell_log import error_text, is_own_cell
from pi_notebook.notebook.tools.notebook_tools import READ_TOOLS

BAD = "def price(n):\n    return n * unit_price\nprice(3)"


def _recorder(seen: list[Any], text: str) -> Any:
    def factory(context: Any, options: Any, state: Any, model: Any) -> Any:
        seen.append(context)
        return faux_assistant_message(text)

    return factory


def _fail(ip: Any) -> int:
    state_for(ip).errors.failed.clear()
    result, captured = run(ip, BAD)
    assert result.error_in_exec is not None
    count = int(result.execution_count)
    assert captured.stdout.strip().endswith(help_line(count))  # no kernel: the line, printed
    return count


def test_the_prompt_is_the_template_with_the_failing_cell(ip: Any, faux: FauxRegistration) -> None:
    count = _fail(ip)
    seen: list[Any] = []
    faux.set_responses([_recorder(seen, "Define unit_price first.")])
    result, _ = run(ip, "%pi model faux:faux-1\n")
    assert result.error_in_exec is None
    result, _ = run(ip, "%pi explain")
    assert result.error_in_exec is None, result.error_in_exec
    assert ip.user_ns["_pi"].text == "Define unit_price first."
    prompt = seen[0].messages[-1].content[0].text
    head = f"Cell [{count}] of this notebook raised an error. Its source:\n\n```python\n{BAD}\n```"
    assert prompt.startswith(head)
    assert "NameError: name 'unit_price' is not defined" in prompt
    assert "return n * unit_price" in prompt  # the frame in the function, not IPython's own
    # as IPython names the cell (IPython 7, Colab's, calls its frame "<cell line: 0>")
    assert f'File "Cell In[{count}]", line 3, in ' in prompt
    assert "interactiveshell.py" not in prompt
    offered = {tool.name for tool in seen[0].tools or []}
    assert offered
    assert offered <= set(READ_TOOLS)


def test_a_template_in_the_agent_dir_wins(ip: Any, faux: FauxRegistration, private_agent_dir: Path) -> None:
    prompts = private_agent_dir / "prompts"
    prompts.mkdir(exist_ok=True)
    (prompts / "fix.md").write_text("---\ndescription: ours\n---\nOUR FIX of [$1] ($4): $3", encoding="utf-8")
    try:
        count = _fail(ip)
        seen: list[Any] = []
        faux.set_responses([_recorder(seen, "ok")])
        run(ip, "%pi model faux:faux-1")
        result, _ = run(ip, f"%pi fix {count}")
        assert result.error_in_exec is None, result.error_in_exec
        prompt = seen[0].messages[-1].content[0].text
        assert prompt.startswith(f"OUR FIX of [{count}] (): Traceback (most recent call last):")
        assert prompt.endswith("NameError: name 'unit_price' is not defined")
        assert "run_code" in {tool.name for tool in seen[0].tools or []}  # fix: the usual tools
    finally:
        (prompts / "fix.md").unlink()


def test_no_failure_yet_and_the_extensions_own_cells(ip: Any) -> None:
    state_for(ip).errors.failed.clear()
    result, _ = run(ip, "%pi fix")
    assert str(result.error_in_exec) == (
        "%pi fix: no cell has failed since the kernel started; run the cell that raises, then %pi fix again"
    )
    result, captured = run(ip, "# a comment first\n%pi fix 3")
    assert "Pi can help" not in captured.stdout  # an error of %pi itself gets no offer
    assert state_for(ip).errors.failed == {}
    assert is_own_cell("%%pi\nhello")
    assert is_own_cell("plain prompt", "await _pi_run('', 'plain prompt\\n')")  # the Pi kernel's prompt
    assert not is_own_cell("pi = 3\n1/0")


def test_the_trait_turns_the_line_off(ip: Any) -> None:
    ip.magics_manager.registry["PiMagics"].error_actions = False
    try:
        result, captured = run(ip, "1/0")
        assert result.error_in_exec is not None
        assert "Pi can help" not in captured.stdout
    finally:
        ip.magics_manager.registry["PiMagics"].error_actions = True


def test_a_long_traceback_keeps_its_end() -> None:
    try:
        raise ValueError("x" * 10_000 + " the end")
    except ValueError as exc:
        text = error_text(exc)
    assert len(text) == 4000
    assert text.startswith("…")
    assert text.endswith(" the end")


@pytest.mark.parametrize("rest", ["0", "-1", "two", "1 2"])
def test_a_bad_number_is_a_usage_error(ip: Any, rest: str) -> None:
    result, _ = run(ip, f"%pi explain {rest}")
    assert type(result.error_in_exec).__name__ == "UsageError"
    assert "takes the number of a cell that failed, the N of its [N]" in str(result.error_in_exec)


def test_among_other_lines_it_runs_as_the_fallback_does(ip: Any, faux: FauxRegistration) -> None:
    count = _fail(ip)
    seen: list[Any] = []
    faux.set_responses([_recorder(seen, "Because unit_price is missing.")])
    run(ip, "%pi model faux:faux-1")
    result, _ = run(ip, f"%pi explain {count}\nafter = 1")
    assert result.error_in_exec is None, result.error_in_exec
    assert ip.user_ns["after"] == 1
    assert ip.user_ns["_pi"].text == "Because unit_price is missing."
    assert {tool.name for tool in seen[0].tools or []} <= set(READ_TOOLS)


def test_name_chooses_the_conversation(ip: Any, faux: FauxRegistration) -> None:
    _fail(ip)
    faux.set_responses(["In another conversation."])
    run(ip, "%pi --name helper model faux:faux-1")
    result, _ = run(ip, "%pi --name helper explain")
    assert result.error_in_exec is None, result.error_in_exec
    assert ip.user_ns["_pi"].conversation == "helper"
