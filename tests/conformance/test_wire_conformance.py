"""Wire conformance: every scenario of ``scenarios/wire.json`` is played by the real Pi 0.83.0
(``@earendil-works/pi-ai``, from npm) and by ``pi_notebook.ai`` against loopback servers, and
the requests sent, the events streamed and the final message must be identical.

A scenario may declare ``"deviation"``: a deliberate product choice of ours. The test then
asserts the exact difference (``pi`` and ``ours`` values at the given paths) and that
everything else is identical, so a deviation can neither grow nor silently disappear.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pi_node import require_pi
from wire_harness import differences, get_path, load_scenarios, normalise, run_ours, run_pi_batch, set_path

SCENARIOS = load_scenarios()

# the first test to use pi_records runs node on the whole batch (up to 300 s on a slow machine)
pytestmark = pytest.mark.timeout(420)
BY_NAME = {s["name"]: s for s in SCENARIOS}


@pytest.fixture(scope="module")
def pi_records() -> dict[str, dict[str, Any]]:
    """The real Pi's records of every scenario: node started once for the whole batch."""
    require_pi()
    return run_pi_batch(SCENARIOS)


def test_scenarios_cover_the_four_apis() -> None:
    apis = {s["api"] for s in SCENARIOS}
    assert apis == {"openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai"}
    assert len(BY_NAME) == len(SCENARIOS), "scenario names must be unique"
    for s in SCENARIOS:
        if "deviation" in s:
            assert s["deviation"]["why"].strip(), f"{s['name']}: a deviation must say why"


@pytest.mark.parametrize("name", [s["name"] for s in SCENARIOS])
async def test_wire(name: str, pi_records: dict[str, dict[str, Any]]) -> None:
    scenario = BY_NAME[name]
    pi = normalise(pi_records[name], scenario)
    ours = normalise(await run_ours(scenario), scenario)
    deviation = scenario.get("deviation")
    if deviation is not None:
        for path, expected in deviation["pi"].items():
            assert get_path(pi, path) == expected, f"Pi no longer does what the deviation says at {path}"
        for path, expected in deviation["ours"].items():
            assert get_path(ours, path) == expected, f"we no longer do what the deviation says at {path}"
        for path in set(deviation["pi"]) | set(deviation["ours"]):
            set_path(pi, path, "<deviation>")
            set_path(ours, path, "<deviation>")
    diff = differences(pi, ours)
    assert not diff, f"{name}: {len(diff)} difference(s) from Pi\n" + "\n".join(diff)
