#!/usr/bin/env bash
# The main job: set up, then execute the quickstart tutorial end to end with the offline faux model.
# The executed notebook is written to build/01-quickstart.executed.ipynb.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$(pwd)/.venv/bin:$PATH"
mkdir -p build
jupyter nbconvert --to notebook --execute notebooks/01-quickstart.ipynb \
    --ExecutePreprocessor.timeout=300 --output-dir build --output 01-quickstart.executed.ipynb
python - <<'PY'
import json
nb = json.load(open("build/01-quickstart.executed.ipynb"))
for cell in nb["cells"]:
    if cell["cell_type"] != "code":
        continue
    for out in cell.get("outputs", []):
        text = out.get("text") or out.get("data", {}).get("text/plain", "")
        if text:
            print("".join(text) if isinstance(text, list) else text)
PY
