"""Running the real Pi 0.83.0 (npm, pinned in this folder) from the conformance tests.

``require_pi()`` is called by every test that needs node and the npm packages. Locally a
missing node or a folder without ``npm ci`` skips with a one-line reason; in CI
(``PI_NOTEBOOK_REQUIRE_CONFORMANCE=1``, set by ``.ci/run``) it fails, because a skipped
conformance suite would hide every difference from Pi.

``run_node(script, payload)`` runs one ES-module script of this folder with ``payload`` as
JSON on stdin and returns its stdout parsed as JSON, so a test starts node once for a whole
batch of scenarios rather than once per scenario.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
PACKAGES = ("pi-ai", "pi-agent-core", "pi-coding-agent")


def missing_reason() -> str | None:
    """Why the real Pi cannot run here, or ``None`` when it can."""
    if shutil.which("node") is None:
        return "node is not installed (the conformance suite runs the real Pi from npm)"
    for name in PACKAGES:
        if not (HERE / "node_modules" / "@earendil-works" / name / "package.json").exists():
            return f"@earendil-works/{name} is missing: run `cd tests/conformance && npm ci`"
    return None


def require_pi() -> None:
    reason = missing_reason()
    if reason is None:
        return
    if os.environ.get("PI_NOTEBOOK_REQUIRE_CONFORMANCE"):
        pytest.fail(f"conformance suite required in CI, but {reason}")
    pytest.skip(reason)


def run_node(script: str, payload: Any, timeout: float = 120.0) -> Any:
    """Run ``node <script>`` in this folder with ``payload`` on stdin; return its JSON stdout."""
    require_pi()
    proc = subprocess.run(
        ["node", str(HERE / script)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=HERE,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"node {script} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout)
