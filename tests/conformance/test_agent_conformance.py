"""Agent conformance: every scenario of scenarios/agent.json runs on the real Pi 0.83.0 (node,
``agent_runner.mjs``) and on pi_notebook (``agent_runner.py``); the traces must be identical
after normalising timestamps and random ids.

A scenario that hits one of our deliberate fixes declares it (``"deviation"``); the test then
rewrites Pi's result with that fix's function (``agent_deviations``) and still compares exactly,
so each deviation is asserted to the event, never skipped.

Node runs once per module for all scenarios, and ours once too; each scenario is its own test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conformance.agent_compare import normalise, readable_diff
from conformance.agent_deviations import DEVIATIONS
from conformance.agent_runner import run_scenarios
from conformance.pi_node import require_pi, run_node

HERE = Path(__file__).parent


def load_scenarios() -> list[dict[str, Any]]:
    document = json.loads((HERE / "scenarios" / "agent.json").read_text(encoding="utf-8"))
    return [{**document["defaults"], **scenario} for scenario in document["scenarios"]]


SCENARIOS = load_scenarios()


@pytest.fixture(scope="module")
def pi_results() -> dict[str, Any]:
    require_pi()
    results: dict[str, Any] = run_node("agent_runner.mjs", SCENARIOS)
    return results


@pytest.fixture(scope="module")
def our_results() -> dict[str, Any]:
    return run_scenarios(SCENARIOS)


def expected_result(scenario: dict[str, Any], pi: dict[str, Any]) -> dict[str, Any]:
    expected: dict[str, Any] = normalise(pi)
    for name in scenario.get("deviation", []):
        rewritten = DEVIATIONS[name](expected, scenario)
        assert rewritten != expected, f"deviation {name} changes nothing in Pi's trace"
        expected = rewritten
    return expected


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_agent_conformance(
    scenario: dict[str, Any], pi_results: dict[str, Any], our_results: dict[str, Any]
) -> None:
    name = scenario["name"]
    expected = expected_result(scenario, pi_results[name])
    ours = normalise(our_results[name])
    if ours != expected:
        pytest.fail(f"{name} ({scenario['description']}) differs from Pi:\n{readable_diff(expected, ours)}")


def test_scenarios_are_well_formed() -> None:
    names = [s["name"] for s in SCENARIOS]
    assert len(names) == len(set(names)), "scenario names must be unique"
    assert len(SCENARIOS) >= 26
    for scenario in SCENARIOS:
        assert scenario.get("description"), scenario["name"]
        assert set(scenario.get("deviation", [])) <= set(DEVIATIONS), scenario["name"]


def test_normalise_keeps_everything_but_timestamps_and_random_ids() -> None:
    pi = {"events": [{"timestamp": 5, "id": "tool:1796102530807:k3j2h1", "n": 0, "x": "call_1"}]}
    ours = {"events": [{"timestamp": 9, "id": "tool:1796102530999:ab12cd", "n": 0.0, "x": "call_1"}]}
    assert normalise(pi) == normalise(ours)
    assert normalise({"x": "call_1"}) != normalise({"x": "call_2"})
    assert normalise({"n": 0.5}) != normalise({"n": 0})
