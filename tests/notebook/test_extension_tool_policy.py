"""Under which policies an extension's own tools run, as ``docs/extensions.md`` says: they join
every run whatever ``--tools`` says; one without ``requires_approval`` runs without asking under
every ``--approve`` policy; ``requires_approval=True`` puts it under the run's policy; an entry
in ``c.PiMagics.approvals`` wins over both."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, run  # noqa: F401

from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_tool_call
from pi_notebook.notebook.state import state_for

EXTENSION = '''
from pi_notebook.agent import tool

calls = []

@tool
def plain_tool(text: str) -> str:
    """A tool with no approval of its own."""
    calls.append(("plain", text))
    return "plain ran"

@tool(requires_approval=True)
def gated_tool(text: str) -> str:
    """A tool that asks for approval."""
    calls.append(("gated", text))
    return "gated ran"

def setup(pi):
    pi.register_tool(plain_tool)
    pi.register_tool(gated_tool)
'''


@pytest.fixture
def loaded(ip: Any, tmp_path: Path) -> Iterator[Any]:
    path = tmp_path / "policy_ext.py"
    path.write_text(textwrap.dedent(EXTENSION))
    run(ip, f"%pi extension load {path}")
    try:
        yield sys.modules.get("policy_ext") or state_for(ip).extensions
    finally:
        state_for(ip).extensions.reset()
        ip.config.PiMagics.approvals = {}


def call(ip: Any, faux: FauxRegistration, name: str, options: str) -> Any:
    use = faux_assistant_message([faux_tool_call(name, {"text": "x"}, id="c1")], stop_reason="toolUse")
    faux.set_responses([use, "done"])
    result, _ = run(ip, f"%%pi --model faux:faux-1 {options}\ngo")
    assert result.error_in_exec is None
    [tool_result] = [m for m in ip.user_ns["_pi"].messages if m.role == "toolResult"]
    return tool_result


@pytest.mark.parametrize("options", ["--approve deny --tools none", "--approve auto", "--approve ask"])
def test_a_tool_without_requires_approval_runs_under_every_policy(
    ip: Any, faux: FauxRegistration, loaded: Any, options: str
) -> None:
    result = call(ip, faux, "plain_tool", options)
    assert not result.is_error
    assert result.content[0].text == "plain ran"


def test_requires_approval_follows_the_run_policy_and_the_approvals_map_wins(
    ip: Any, faux: FauxRegistration, loaded: Any
) -> None:
    denied = call(ip, faux, "gated_tool", "--approve deny")
    assert denied.is_error
    assert "denied" in denied.content[0].text.lower()
    assert call(ip, faux, "gated_tool", "--approve auto").content[0].text == "gated ran"
    ip.run_line_magic("config", 'PiMagics.approvals = {"plain_tool": "deny"}')
    blocked = call(ip, faux, "plain_tool", "--approve auto")
    assert blocked.is_error
    assert "approvals['plain_tool']" in blocked.content[0].text
