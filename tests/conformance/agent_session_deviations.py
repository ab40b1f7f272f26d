"""The deliberate differences of pi_notebook's ``AgentSession`` from Pi's, each as a function
that turns Pi's (normalised) result of a scenario into exactly the result ours must produce.

A scenario declares the differences it hits (``"deviation": [...]`` in
scenarios/agent_session.json); the test applies them in order to Pi's result and compares the
outcome with ours exactly. Each function first checks that Pi's result has the shape it
rewrites, so a scenario that stops hitting its deviation fails instead of passing vacuously.

``KNOWN_DIFFERENCES`` is not a list of deviations: it names the scenarios where ours still
differs from Pi by mistake, each with what Pi does and what we do. Their tests are expected
failures, and fail outright once the difference is gone, so the entry is removed with the fix.

Not a deviation but an input the runners align: Pi's AgentSession builds the system prompt
from its resource loader, ours takes the agent's as given (see ``agent_session_runner``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from conformance.agent_deviations import ShapeError

Result = dict[str, Any]

PI_BUSY = (
    "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
)
OUR_BUSY = (
    "Agent is already processing. Specify streaming_behavior ('steer' or 'follow_up') to queue the message."
)


def python_option_names(pi: Result, scenario: dict[str, Any]) -> Result:
    """Pi's busy-prompt error names its option and value (``streamingBehavior``, ``'followUp'``);
    ours names the keyword a Python caller passes (``streaming_behavior``, ``'follow_up'``)."""
    out = copy.deepcopy(pi)
    errors = out["actionErrors"] + [step.get("error") for step in out["steps"]]
    if PI_BUSY not in errors:
        raise ShapeError(f"Pi's result has no busy-prompt error: {errors}")
    out["actionErrors"] = [OUR_BUSY if e == PI_BUSY else e for e in out["actionErrors"]]
    out["steps"] = [{"error": OUR_BUSY} if s.get("error") == PI_BUSY else s for s in out["steps"]]
    return out


DEVIATIONS: dict[str, Callable[[Result, dict[str, Any]], Result]] = {
    "python-option-names": python_option_names,
}


KNOWN_DIFFERENCES: dict[str, str] = {}
