#!/usr/bin/env bash
# Create .venv and install pi_notebook with its dev extras. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -U pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[dev]"
# The notebook bridge labextension (the agent's live edits in JupyterLab and Notebook 7): built
# from labextension/ and linked into the venv's labextensions, as `jupyter labextension
# develop` would (an editable install copies no data files that do not exist yet).
if command -v npm >/dev/null || [ -n "${CI:-}" ]; then
    bash scripts/build-bridge.sh .venv/bin/python
    EXT=.venv/share/jupyter/labextensions/pi-notebook-bridge
    mkdir -p "$(dirname "$EXT")"
    rm -rf "$EXT"
    ln -s "$(pwd)/pi_notebook/notebook/bridge/labextension" "$EXT"
else  # everything else works; the agent then edits the notebook only by showing the code
    echo "warning: npm not found, so the notebook bridge labextension was not built (install node and npm, then rerun)" >&2
fi
echo "pi_notebook installed in $(pwd)/.venv"
# The Pi kernel's kernelspec, in the venv where its JupyterLab and nbval find it (the tutorial
# notebooks/10-pi-kernel.ipynb runs on it).
.venv/bin/python -m pi_notebook.kernel install --sys-prefix
# The degraded-mode test's second venv (ipykernel 6.x). Optional on a developer machine (the
# test then skips); required in CI, where a skip would hide the only real old-kernel check.
if ! bash scripts/setup-old-kernel.sh; then
    if [ -n "${CI:-}" ]; then
        echo "error: scripts/setup-old-kernel.sh failed" >&2
        exit 1
    fi
    echo "warning: scripts/setup-old-kernel.sh failed; tests/notebook/test_old_kernel.py will skip" >&2
fi
