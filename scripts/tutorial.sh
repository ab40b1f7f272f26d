#!/usr/bin/env bash
# The main job: install what the quickstart needs, then execute it end to end with the offline
# faux model (no API key, no network once installed). Writes the executed notebook and a readable
# HTML copy to build/, prints the answers, and says how to open the tutorials in JupyterLab.
# Installs into .venv (made here if missing; a .venv of scripts/setup.sh is used as it is):
# pi_notebook (editable) and nbconvert, nothing else: no JupyterLab, no test tools, no npm.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
if ! .venv/bin/python -c 'import pi_notebook, nbconvert' 2>/dev/null; then
    echo "installing pi_notebook and nbconvert into $(pwd)/.venv ..."
    # The notebook bridge labextension is for JupyterLab (scripts/lab.sh builds it): no npm here.
    SKIP_JUPYTER_BUILDER=1 .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[tutorial]"
fi
export PATH="$(pwd)/.venv/bin:$PATH"
unset PI_NOTEBOOK_MODEL  # the tutorial's own stand-in model, even where a real one is configured
mkdir -p build
jupyter nbconvert --to notebook --execute notebooks/01-quickstart.ipynb \
    --ExecutePreprocessor.timeout=300 --output-dir build --output 01-quickstart.executed.ipynb
jupyter nbconvert --to html build/01-quickstart.executed.ipynb --output-dir build \
    --output 01-quickstart.html >/dev/null 2>&1
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
cat <<DONE

Done. The quickstart ran end to end with the offline stand-in model:
  executed notebook: $(pwd)/build/01-quickstart.executed.ipynb
  readable copy:     $(pwd)/build/01-quickstart.html   (open it in any browser)
To work through all the tutorials in JupyterLab:
  bash scripts/lab.sh          (installs JupyterLab and what the tutorials use the first time,
                                then starts it on notebooks/ and prints its URL)
DONE
