#!/usr/bin/env bash
# Rebuild the pi-notebook-bridge labextension (labextension/, TypeScript) into
# pi_notebook/notebook/bridge/labextension/ after editing it, and install it into .venv (or the
# venv of the Python given as $1): the build hook of `pip install -e .` does the same, the build
# step only when the sources are newer than the last build. Needs node and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:-.venv/bin/python}"
"$PY" -c 'import hatch_build; hatch_build.build_bridge("wheel", "standard", force=True)'
"$PY" -m pip install -q --disable-pip-version-check --no-deps -e .
