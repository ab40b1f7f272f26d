"""A notebook on the Pi kernel under nbclient (how nbconvert and papermill execute): a headless
run, so a state-changing tool is denied without asking, and a prompt whose run fails fails the
notebook, as a ``%%pi`` cell does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pi_kernel_driver import REPO, install_spec

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

pytestmark = pytest.mark.kernel

SETUP = """\
%%python
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_tool_call
faux = register_faux_provider(token_size={"min": 1, "max": 1})
faux.set_responses([
    faux_assistant_message(
        [faux_tool_call("run_code", {"code": "ran = True"}, id="r1")], stop_reason="toolUse"
    ),
    "I could not run it.",
    faux_assistant_message("", stop_reason="error", error_message="upstream exploded"),
])
get_ipython().run_line_magic("config", 'PiMagics.model = "faux:faux-1"')
"""


def notebook(*sources: str) -> object:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nb.metadata["kernelspec"] = {"name": "pi", "display_name": "Pi (Python 3)", "language": "python"}
    return nb


def execute(nb: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_PATH", str(install_spec(tmp_path / "prefix")))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    for name in [n for n in os.environ if n.startswith("PI_NOTEBOOK_")]:
        monkeypatch.delenv(name)
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="pi", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()


def test_headless_prompts_and_a_failed_run_fails_the_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = notebook(SETUP, "run the code", "%%python\nprint('ran' in globals())", "this one fails")
    with pytest.raises(nbclient.exceptions.CellExecutionError) as failed:
        execute(nb, tmp_path, monkeypatch)
    assert "upstream exploded" in str(failed.value)
    cells = nb.cells  # type: ignore[attr-defined]
    shown = cells[1].outputs[-1]["data"]["text/plain"]
    assert "Headless run" in shown
    assert "I could not run it." in shown
    assert cells[2].outputs[0]["text"] == "False\n"  # run_code was denied: nobody could approve
