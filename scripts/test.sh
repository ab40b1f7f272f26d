#!/usr/bin/env bash
# The project's test command: lint, type check, unit/kernel/browser tests, tutorial notebooks (nbval).
# Assumes scripts/setup.sh has run. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$(pwd)/.venv/bin:$PATH"
ruff check pi_notebook tests bench
mypy
pytest tests notebooks --nbval-lax -p no:cacheprovider "$@"
