#!/usr/bin/env bash
# Build the pi-notebook-bridge labextension (labextension/, TypeScript) into
# pi_notebook/notebook/bridge/labextension/, where the wheel and an editable install take it
# from. Needs node and npm, and jupyterlab installed in the Python given as $1 (its staging
# package.json fixes the versions of the shared JupyterLab packages, so nothing is downloaded
# at build time beyond `npm ci`'s pinned packages). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:-.venv/bin/python}"
STAGING="$("$PY" -c 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))')"
cd labextension
npm ci --no-audit --no-fund --loglevel=error
PI_JUPYTERLAB_STAGING="$STAGING" npm run --silent build
