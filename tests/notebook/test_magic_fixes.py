"""User-facing behaviour of ``%%pi`` / ``%pi`` on a real ``InteractiveShell``: the honest faux
stand-in, mapping answers of ``before_tool_call`` hooks, failed turns in ``%pi history``, the
effective approval policy in ``%pi status``, and the ``NotebookState`` observer hooks."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401

from pi_notebook.ai.faux import (
    FauxRegistration,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from pi_notebook.ai.models import get_models
from pi_notebook.notebook import conversations

MODEL = "--model faux:faux-1"


def pi(shell: Any, line: str, body: str) -> tuple[Any, str]:
    result, captured = run(shell, f"%%pi {line}\n{body}")
    found = outputs(captured)
    return result, "\n".join(str(b.get("text/plain", "")) for b in found)


def line(shell: Any, text: str) -> str:
    result, captured = run(shell, f"%pi {text}")
    assert result.error_in_exec is None, result.error_in_exec
    return str(captured.stdout)


@pytest.fixture
def no_faux() -> Iterator[None]:
    """No faux provider registered; the stand-in a test creates is removed afterwards."""
    assert not get_models("faux"), "a faux provider leaked from another test"
    yield
    from pi_notebook.notebook.run import faux_stand_in

    faux_stand_in.remove_stand_in()
    assert not get_models("faux")


# --- a. faux:faux-1 without a script -------------------------------------------------------------


def test_unscripted_faux_model_answers_honestly_every_time(ip: Any, no_faux: None) -> None:
    for prompt in ("hello", "and again"):
        result, text = pi(ip, MODEL, prompt)
        assert result.error_in_exec is None, result.error_in_exec
        assert "scripted offline stand-in, not a language model" in text
        assert "register_faux_provider()" in text
        assert "set_responses" in text
        assert (ip.user_ns["_pi"].stop_reason, ip.user_ns["_pi"].model) == ("stop", "faux:faux-1")


def test_a_registered_faux_provider_still_wins_over_the_stand_in(ip: Any, no_faux: None) -> None:
    pi(ip, MODEL, "who are you?")
    scripted = register_faux_provider()
    try:
        scripted.set_responses(["scripted answer"])
        _, text = pi(ip, MODEL, "again")
        assert "scripted answer" in text
        assert "stand-in" not in text
        assert scripted.get_pending_response_count() == 0
    finally:
        scripted.unregister()


# --- b. a before_tool_call hook answering with a mapping --------------------------------------


def test_before_tool_call_hook_may_answer_with_a_mapping(ip: Any, faux: FauxRegistration) -> None:
    agent = conversations.current().agent
    agent.before_tool_call = lambda ctx, signal: {"block": True, "reason": "not in this notebook"}
    call = faux_assistant_message([faux_tool_call("list_variables", {}, id="c1")], stop_reason="toolUse")
    faux.set_responses([call, "understood"])
    result, text = pi(ip, MODEL, "list my variables")
    assert result.error_in_exec is None
    [tool_result] = [m for m in ip.user_ns["_pi"].messages if m.role == "toolResult"]
    assert tool_result.is_error
    assert tool_result.content[0].text == "not in this notebook"
    assert "has no attribute" not in text
    assert agent.before_tool_call is not None  # the user's hook, never replaced by the run's gate


# --- c. failed turns in %pi history -----------------------------------------------------------


def test_history_shows_how_a_failed_turn_ended(ip: Any, faux: FauxRegistration) -> None:
    failed = faux_assistant_message([], stop_reason="error", error_message="429 rate limited, retry later")
    faux.set_responses(["fine", failed])
    pi(ip, MODEL, "first")
    pi(ip, "", "second")
    assert line(ip, "history").splitlines() == [
        "#1 user: first",
        "assistant: fine",
        "#2 user: second",
        "assistant: [error: 429 rate limited, retry later]",
    ]


# --- d. the effective approval policy in %pi status -------------------------------------------


def _approve_line(status: str) -> str:
    [found] = [row[row.index("approve: ") :] for row in status.splitlines() if "approve: " in row]
    return found


def test_status_reports_the_policy_a_headless_run_applies(
    ip: Any, faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_NOTEBOOK_HEADLESS", "1")
    run(ip, "%config PiMagics.approve = 'ask'")
    status = line(ip, "status")
    assert (
        _approve_line(status) == "approve: deny (configured 'ask', but headless run: PI_NOTEBOOK_HEADLESS=1)"
    )
    faux.set_responses(
        [faux_assistant_message([faux_tool_call("run_code", {"code": "x = 1"})], "toolUse"), "ok"]
    )
    pi(ip, MODEL, "set x")
    assert "x" not in ip.user_ns  # the run did deny, as status said
    run(ip, "%config PiMagics.approve = 'auto'")
    assert _approve_line(line(ip, "status")) == "approve: auto (configured 'auto')"


def test_status_without_a_kernel_says_nobody_can_click(ip: Any) -> None:
    assert _approve_line(line(ip, "status")) == (
        "approve: deny (default when nobody can click; no Jupyter kernel, so there is no widget frontend.)"
    )


# --- the observer hooks of NotebookState ------------------------------------------------------


def test_state_observers_hear_conversations_runs_and_messages(ip: Any, faux: FauxRegistration) -> None:
    from pi_notebook.notebook.state import StateObserver, state_for

    heard: list[tuple[str, ...]] = []

    class Recorder(StateObserver):
        def conversation_created(self, name: str, agent: Any) -> None:
            heard.append(("created", name))

        def conversation_reset(self, name: str, agent: Any) -> None:
            heard.append(("reset", name))

        def run_started(self, name: str, agent: Any, prompt: Any) -> None:
            heard.append(("started", name, prompt.content[0].text))

        def run_ended(self, name: str, agent: Any, result: Any) -> None:
            heard.append(("ended", name, result.text))

        def message_appended(self, name: str, agent: Any, message: Any) -> None:
            heard.append(("message", name, message.role))

    remove = state_for(ip).observe(Recorder())
    try:
        faux.set_responses(["hi", "again"])
        pi(ip, f"{MODEL} --name side", "hello")
        line(ip, "--name side reset")
        pi(ip, "--name side", "once more")
    finally:
        remove()
    assert heard == [
        ("created", "side"),
        ("started", "side", "hello"),
        ("message", "side", "user"),
        ("message", "side", "assistant"),
        ("ended", "side", "hi"),
        ("reset", "side"),
        ("started", "side", "once more"),
        ("message", "side", "user"),
        ("message", "side", "assistant"),
        ("ended", "side", "again"),
    ]


@pytest.mark.parametrize(
    ("setting", "kept"),
    [("PiMagics.tools = 'raed'", ("tools", "all")), ("PiMagics.approve = 'maybe'", ("approve", ""))],
)
def test_a_rejected_config_value_is_not_kept(
    ip: Any, caplog: pytest.LogCaptureFixture, setting: str, kept: tuple[str, str]
) -> None:
    """``%config`` with a bad value says why and leaves the old value in place (traitlets only
    rolls back a TraitError); before, the bad value stayed and every later cell failed."""
    from pi_notebook.notebook.state import state_for

    ip.run_line_magic("config", setting)
    name, old = kept
    assert getattr(state_for(ip).config, name) == old
    assert any("PiMagics." in record.getMessage() for record in caplog.records)


def test_history_shows_the_text_of_summary_messages() -> None:
    """Compaction and branch summaries keep their text in ``summary``: a history line shows it
    (it read ``compactionSummary:`` and nothing more)."""
    from pi_notebook.notebook.commands.conversation import history_line
    from pi_notebook.session import BranchSummaryMessage, CompactionSummaryMessage

    compacted = CompactionSummaryMessage(
        summary="The user asked about  sales.", tokens_before=900, timestamp=1
    )
    branched = BranchSummaryMessage(summary="Tried plan B.", from_id="abcd1234", timestamp=2)
    assert history_line(compacted) == "compactionSummary: The user asked about sales."
    assert history_line(branched) == "branchSummary: Tried plan B."
