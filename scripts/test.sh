#!/usr/bin/env bash
# The project's test command: lint, type check, unit/kernel/browser tests, tutorial notebooks (nbval).
# Assumes scripts/setup.sh has run. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$(pwd)/.venv/bin:$PATH"
ruff check pi_notebook tests bench
mypy
# Tutorials: nbval compares every output of every cell, after the sanitizers of
# notebooks/sanitize.cfg replace what changes from run to run (elapsed time, footer tokens/cost).
pytest tests notebooks --nbval --nbval-sanitize-with notebooks/sanitize.cfg -p no:cacheprovider \
    --module-durations=40 "$@"
