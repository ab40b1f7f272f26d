#!/usr/bin/env bash
# Create .venv-ipykernel6: pi_notebook on a real ipykernel 6.x (Colab ships 6.17), for
# tests/notebook/test_old_kernel.py, which proves the degraded mode (widgets stream, no interactive controls).
# Idempotent and quiet. pi_notebook declares ipykernel>=7.4, so it is installed with --no-deps
# after its other runtime dependencies. Without this venv the test skips.
# To try another 6.x (e.g. Colab's): OLD_KERNEL_VENV=/tmp/v617 OLD_IPYKERNEL=ipykernel==6.17.1,
# then PI_OLD_KERNEL_PYTHON=/tmp/v617/bin/python pytest tests/notebook/test_old_kernel.py
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
VENV="${OLD_KERNEL_VENV:-.venv-ipykernel6}"
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)
"${PIP[@]}" -U pip
"${PIP[@]}" "${OLD_IPYKERNEL:-ipykernel>=6.29,<7}" pydantic httpx jiter ipywidgets ipython markdown-it-py
"${PIP[@]}" --no-deps -e .
echo "ipykernel $("$VENV/bin/python" -c 'import ipykernel; print(ipykernel.__version__)') installed in $VENV"
