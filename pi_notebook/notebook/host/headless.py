"""Headless detection: a run with nobody to click must never wait for a human (the rules are
in ``run/approval.py``'s docstring). Apart from the approval machinery so that what needs only
this answer (the Explain / Fix offer under a failing cell, ``error_actions.py``) loads nothing
of the agent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .compat import execute_request_content, get_kernel

__all__ = ["HEADLESS_ENV", "Headless", "detect_headless"]

HEADLESS_ENV = "PI_NOTEBOOK_HEADLESS"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True, slots=True)
class Headless:
    headless: bool
    reason: str


def detect_headless(shell: Any, env: Mapping[str, str] | None = None) -> Headless:
    """Decide whether nobody can click in this run (the rules: ``run/approval.py``)."""
    forced = (os.environ if env is None else env).get(HEADLESS_ENV, "").strip().lower()
    if forced in _TRUE:
        return Headless(True, f"{HEADLESS_ENV}={forced}")
    if forced in _FALSE:
        return Headless(False, f"{HEADLESS_ENV}={forced}")
    kernel = get_kernel(shell)
    if kernel is None:
        return Headless(False, "no kernel")
    content = execute_request_content(kernel)
    if content is not None and not content.get("allow_stdin", False):
        return Headless(
            True, "the client sent the cell without stdin (nbclient, nbconvert, nbval, papermill)"
        )
    return Headless(False, "interactive client")
