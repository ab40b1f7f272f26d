"""Budgets on ``%%pi`` in a real ``InteractiveShell`` with the faux provider (a priced faux
model for dollars): ``--max-cost`` / ``--max-total-tokens`` and their errors, the
``PiMagics`` defaults per run and per conversation, the stop line in the output, the live
view and ``_pi``, and ``%pi usage``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401

from pi_notebook.ai.faux import (
    FauxRegistration,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from pi_notebook.notebook.view.live import LiveView
from pi_notebook.runtime import BudgetReachedEvent
from pi_notebook.runtime.budget import format_usd

MODEL = "--model faux:faux-1"
PRICED = "--model faux-priced:priced"
PRICES = {"input": 1000.0, "output": 1000.0, "cacheRead": 0.0, "cacheWrite": 0.0}


@pytest.fixture
def priced() -> Iterator[FauxRegistration]:
    registration = register_faux_provider(
        provider="faux-priced", models=[{"id": "priced", "cost": PRICES}], token_size={"min": 1, "max": 1}
    )
    yield registration
    registration.unregister()


def pi(shell: Any, line: str, body: str) -> tuple[Any, Any]:
    return run(shell, f"%%pi {line}\n{body}")


def plain(captured: Any) -> str:
    [found] = outputs(captured)
    return str(found["text/plain"])


def look(n: int) -> Any:
    return faux_assistant_message([faux_tool_call("list_variables", {}, id=f"c{n}")], stop_reason="toolUse")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--max-cost -1", "--max-cost takes US dollars, e.g. 0.50 (0: no limit), not '-1'"),
        ("--max-cost abc", "--max-cost takes US dollars"),
        ("--max-cost 0,50", "not '0,50'"),
        ("--max-cost nan", "not 'nan'"),
        ("--max-cost inf", "not 'inf'"),
        ("--max-total-tokens -3", "--max-total-tokens takes tokens, e.g. 20000 (0: no limit), not '-3'"),
        ("--max-total-tokens 1.5", "--max-total-tokens takes a whole number of tokens, not 1.5"),
        ("--max-total-tokens", "argument --max-total-tokens: expected one argument"),
        ("--max-cost 0.5", "--max-cost needs the model's prices, and faux:faux-1 has none in the catalogue"),
    ],
)
def test_bad_budgets_are_one_line_usage_errors(
    ip: Any, faux: FauxRegistration, line: str, message: str
) -> None:
    result, captured = pi(ip, f"{MODEL} {line}", "hello")
    error = result.error_in_exec
    assert isinstance(error, UsageError)
    assert message in str(error)
    assert "\n" not in str(error)
    assert faux.state.call_count == 0
    assert "_pi" not in ip.user_ns
    assert "Traceback" not in captured.stdout + captured.stderr


def test_a_token_budget_works_where_prices_are_missing(ip: Any, faux: FauxRegistration) -> None:
    faux.set_responses([look(1), look(2), "never"])
    result, captured = pi(ip, f"{MODEL} --max-total-tokens 1,000,000", "look")
    assert result.error_in_exec is None
    assert ip.user_ns["_pi"].budget_reason is None
    faux.set_responses([look(1), look(2), "never"])
    first = ip.user_ns["_pi"].messages[1].usage
    limit = first.input + first.output + 1  # reached while the second answer streams
    result, captured = pi(ip, f"--new --max-total-tokens {limit}", "look")
    done = ip.user_ns["_pi"]
    assert done.budget_reason is not None
    assert done.budget_reason.startswith(f"stopped: the run reached its budget of {limit:,} tokens (")
    assert done.stop_reason == "aborted"
    assert faux.get_pending_response_count() == 1
    text = plain(captured)
    assert done.budget_reason in text
    assert "Aborted: Request was aborted" in text  # the answer it stopped, as after Stop


def test_a_cost_budget_stops_the_run_and_says_so(ip: Any, priced: FauxRegistration) -> None:
    priced.set_responses([look(1), look(2), "done"])
    pi(ip, PRICED, "look")  # no budget: what the answers cost
    costs = [m.usage.cost.total for m in ip.user_ns["_pi"].messages if m.role == "assistant"]
    priced.set_responses([look(1), look(2), "done"])
    limit = round(costs[0] * 1.5, 4)
    result, captured = pi(ip, f"{PRICED} --new --max-cost {limit}", "look")
    assert result.error_in_exec is None
    done = ip.user_ns["_pi"]
    assert done.budget_reason is not None
    assert done.budget_reason.startswith(f"stopped: the run reached its budget of {format_usd(limit)} ($")
    assert [m.role for m in done.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert done.budget_reason in plain(captured)
    assert done.cost >= limit


def test_traits_set_a_default_per_run_and_per_conversation(ip: Any, faux: FauxRegistration) -> None:
    magics = ip.magics_manager.registry["PiMagics"]
    faux.set_responses(["one", "two", "three", "four"])
    pi(ip, MODEL, "first")
    spent = ip.user_ns["_pi"].usage
    first = spent.input + spent.output
    magics.max_total_tokens = 1  # every run stops at its first answer...
    pi(ip, "", "second")
    used = ip.user_ns["_pi"].usage.input + ip.user_ns["_pi"].usage.output
    assert (
        ip.user_ns["_pi"].budget_reason == f"stopped: the run reached its budget of 1 token ({used:,} used)"
    )
    pi(ip, "--max-total-tokens 0", "third")  # ...unless the cell lifts the limit
    assert ip.user_ns["_pi"].budget_reason is None
    assert ip.user_ns["_pi"].stop_reason == "stop"
    magics.max_total_tokens = 0
    magics.max_conversation_tokens = first  # already spent: the next cell does not start
    calls = faux.state.call_count
    result, _ = pi(ip, "", "fourth")
    assert isinstance(result.error_in_exec, UsageError)
    assert str(result.error_in_exec).startswith("The conversation 'default' reached its budget of ")
    assert "or start a fresh one with --new" in str(result.error_in_exec)
    assert faux.state.call_count == calls
    result, _captured = pi(ip, "--new", "fourth")  # a fresh conversation starts its own count
    assert result.error_in_exec is None


@pytest.mark.parametrize("trait", ["max_cost", "max_total_tokens", "max_conversation_cost"])
def test_a_bad_budget_trait_is_refused(ip: Any, trait: str) -> None:
    magics = ip.magics_manager.registry["PiMagics"]
    for bad in (-1, float("nan")) if trait.endswith("cost") else (-1,):
        with capture_output():
            ip.run_line_magic("config", f"PiMagics.{trait} = {bad!r}".replace("nan", "float('nan')"))
        assert getattr(magics, trait) == 0


def test_the_live_view_shows_the_budget_line() -> None:
    view = LiveView("q", interactive=False)
    reason = "stopped: the run reached its budget of $0.50 ($0.52 spent)"
    view.handle(BudgetReachedEvent(reason))
    view.close()
    assert reason in view.state.notice
    assert reason in view._notice.value


def test_pi_usage_shows_runs_conversations_and_session_files(ip: Any, priced: FauxRegistration) -> None:
    magics = ip.magics_manager.registry["PiMagics"]
    magics.max_conversation_cost = 5.0
    priced.set_responses(["one", "two", "three"])
    pi(ip, PRICED, "first")
    pi(ip, "--max-total-tokens 1", "second")
    pi(ip, f"{PRICED} --name usage-other", "third")
    with capture_output() as captured:
        ip.run_line_magic("pi", "usage")
    text = captured.stdout
    # three tables (and, when an earlier test's run was estimated, the footnote saying so)
    runs, conversations, files = text.strip().split("\n\n")[:3]
    assert runs.splitlines()[1].split() == [
        "run",
        "cell",
        "conversation",
        "model",
        "input",
        "output",
        "cached",
        "tokens",
        "cost",
        "budget",
    ]
    rows = runs.splitlines()[-3:]  # the shell's earlier tests ran too
    assert [row.split()[2] for row in rows] == ["default", "default", "usage-other"]
    assert "stopped: the run reached its budget of 1 token" in rows[1]
    assert "stopped" not in rows[0] + rows[2]
    conv = conversations.splitlines()[2:]
    assert [row.split()[0] for row in conv] == ["default", "usage-other"]
    assert conv[0].split()[1] == "2"
    assert conv[0].endswith("$5.00")
    other = [row.split() for row in files.splitlines()[2:] if row.split()[1] == "usage-other"]
    assert len(other) == 1
    assert other[0][2] == "1"  # one answer
    assert other[0][-1] == conv[1].split()[-2]  # the file's cost is the conversation's
    with capture_output() as captured:
        ip.run_line_magic("pi", "--name usage-other usage")
    assert "default" not in captured.stdout
    with pytest.raises(UsageError, match="usage takes no arguments"):
        ip.run_line_magic("pi", "usage now")
