#!/usr/bin/env bash
# Create .venv and install pi_notebook with its dev extras, editable. Idempotent.
# The install is the package's own: its build hooks (hatch_build.py) build the notebook bridge
# labextension from labextension/ with npm (only when its sources changed) and put it and the
# `pi` kernelspec into the venv's share/jupyter, where its JupyterLab and nbval find them.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
BRIDGE=pi_notebook/notebook/bridge/labextension/package.json
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
if ! command -v npm >/dev/null; then
    # everything else works; the agent then edits the notebook only by showing the code
    [ -n "${CI:-}" ] && { echo "error: CI needs node and npm for the notebook bridge" >&2; exit 1; }
    [ -f "$BRIDGE" ] || echo "warning: npm not found, so the notebook bridge labextension is not built (install node and npm, then rerun)" >&2
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -U pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[dev]"
echo "pi_notebook installed in $(pwd)/.venv"
# The degraded-mode test's second venv (ipykernel 6.x). Optional on a developer machine (the
# test then skips); required in CI, where a skip would hide the only real old-kernel check.
if ! bash scripts/setup-old-kernel.sh; then
    if [ -n "${CI:-}" ]; then
        echo "error: scripts/setup-old-kernel.sh failed" >&2
        exit 1
    fi
    echo "warning: scripts/setup-old-kernel.sh failed; tests/notebook/test_old_kernel.py will skip" >&2
fi
