"""Feedback the user can trust, on a real ``InteractiveShell`` with the faux provider and
loopback servers: notices that say why (headless approvals, an ignored thinking level),
errors that say what to do, headless failures that fail the notebook, ``--temperature`` /
``--seed`` on the request, and local servers' real context window."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401

from pi_notebook.ai.faux import FauxRegistration

MODEL = "--model faux:faux-1"


def pi(shell: Any, line: str, body: str) -> tuple[Any, Any]:
    return run(shell, f"%%pi {line}\n{body}")


def plain(captured: Any) -> str:
    found = outputs(captured)
    assert len(found) == 1, found
    return str(found[0]["text/plain"])


# --- notices --------------------------------------------------------------------------------------


def test_headless_ask_says_it_became_deny_and_why(
    ip: Any, faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_NOTEBOOK_HEADLESS", "1")
    faux.set_responses(["a"])
    _, captured = pi(ip, f"{MODEL} --approve ask", "q")
    assert (
        "Headless run (PI_NOTEBOOK_HEADLESS=1): --approve ask became deny, since nobody can click "
        "Approve; insert_cell, run_code, set_variable are blocked (pass --approve auto to allow them)."
    ) in plain(captured)


def test_the_approval_notice_appears_only_when_a_gated_tool_is_on(
    ip: Any, faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_NOTEBOOK_HEADLESS", "1")
    faux.set_responses(["a", "b", "c"])
    _, captured = pi(ip, f"{MODEL} --tools read", "q")
    assert plain(captured) == "> q\n\na\n"
    _, captured = pi(ip, "--tools none", "q")
    assert "Headless run" not in plain(captured)
    _, captured = pi(ip, "--tools read,run_code", "q")
    assert "Headless run: approvals follow --approve deny" in plain(captured)


def test_an_ignored_thinking_level_is_said_once(ip: Any, faux: FauxRegistration) -> None:
    faux.set_responses(["a", "b", "c"])
    _, captured = pi(ip, f"{MODEL} --thinking high --tools none", "q")
    note = "--thinking high is ignored: faux:faux-1 does not support reasoning."
    assert note in plain(captured)
    _, captured = pi(ip, "--tools none", "again")
    assert "--thinking" not in plain(captured)
    _, captured = pi(ip, "--thinking low --tools none", "and low")
    assert "--thinking low is ignored" in plain(captured)
