#!/usr/bin/env bash
# Create .venv-ipykernel6: pi_notebook installed the way a Colab user installs it, on Colab's own
# kernel (ipykernel 6.17.1, IPython 7.34.0), for tests/notebook/test_old_kernel.py, which proves
# the degraded mode (widgets stream, no interactive controls) and runs the InteractiveShell tests
# on these versions. pi_notebook is installed WITH its dependencies and the script fails if pip
# upgraded the host's kernel or IPython: that upgrade is what would break a Colab runtime.
# Idempotent and quiet. Without this venv the test skips (CI requires it, see scripts/setup.sh).
# To try other versions: OLD_KERNEL_VENV=/tmp/v6 OLD_IPYKERNEL=6.29.5 OLD_IPYTHON=8.20.0 bash $0,
# then PI_OLD_KERNEL_PYTHON=/tmp/v6/bin/python pytest tests/notebook/test_old_kernel.py
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
VENV="${OLD_KERNEL_VENV:-.venv-ipykernel6}"
KERNEL="${OLD_IPYKERNEL:-6.17.1}"
IPY="${OLD_IPYTHON:-7.34.0}"
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)
"${PIP[@]}" -U pip
"${PIP[@]}" "ipykernel==$KERNEL" "ipython==$IPY"
"${PIP[@]}" -e . pytest pytest-asyncio hypothesis nbformat
got="$("$VENV/bin/python" -c 'import IPython, ipykernel; print(ipykernel.__version__, IPython.__version__)')"
if [ "$got" != "$KERNEL $IPY" ]; then
    echo "error: installing pi_notebook changed ipykernel/IPython from $KERNEL $IPY to $got" >&2
    exit 1
fi
echo "ipykernel $KERNEL, IPython $IPY installed in $VENV (pi_notebook kept them)"
