#!/usr/bin/env bash
# Start JupyterLab on the tutorials (notebooks/), with pi_notebook installed in .venv.
# Run scripts/setup.sh (or scripts/tutorial.sh) once first. Extra arguments go to JupyterLab,
# e.g. `bash scripts/lab.sh --port 8890` or `--no-browser` on a remote machine.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/jupyter ]; then
    echo "error: .venv is missing: run bash scripts/setup.sh first" >&2
    exit 1
fi
exec .venv/bin/jupyter lab --notebook-dir=notebooks "$@"
