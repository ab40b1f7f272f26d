#!/usr/bin/env bash
# Start JupyterLab on the tutorials (notebooks/), with pi_notebook installed in .venv. The first
# time (no .venv, or one of scripts/tutorial.sh without JupyterLab) it installs the `lab` extra:
# JupyterLab and what the tutorials use, and the notebook bridge labextension (built with npm
# when node is there; without it the agent edits the notebook only by showing the code).
# Extra arguments go to JupyterLab, e.g. `bash scripts/lab.sh --port 8890` or `--no-browser`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
if ! .venv/bin/python -c 'import jupyterlab, matplotlib, pandas, mcp, pi_notebook' 2>/dev/null; then
    command -v npm >/dev/null || echo "warning: npm not found, so the notebook bridge labextension is not built" >&2
    echo "installing JupyterLab and what the tutorials use into $(pwd)/.venv ..."
    .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[lab]"
fi
exec .venv/bin/jupyter lab --notebook-dir=notebooks "$@"
