"""papermill runs a notebook on the Pi kernel: ``papermill -k pi -p alpha 2`` injects its
``# Parameters`` cell after the notebook's ``parameters`` cell, both run as Python (the kernel
sees code, not tags: ``routing.classify``), and the cells after them use ``alpha`` in Python
and in a prompt to the faux model. A real papermill process, the installed kernelspec."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from kernel_driver import SETUP
from pi_kernel_driver import DEFAULT_MODEL, pi_env

pytestmark = pytest.mark.kernel

CELLS = [
    ("%%python\n" + SETUP + f"%config PiMagics.model = {DEFAULT_MODEL!r}\n", []),
    ("# Parameters\nalpha = 1  # the default\n", ["parameters"]),
    ("%%python\nfaux.set_responses([f'alpha is {alpha}'])\nprint('alpha * 21 =', alpha * 21)", []),
    ("What is alpha?", []),
    ("%%python\nprint('the model said:', _pi.text)", []),
]


def write_notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "pi", "display_name": "Pi", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for source, tags in CELLS:
        cell = nbformat.v4.new_code_cell(source)
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    nbformat.write(nb, path)


def stdout_of(cell: nbformat.NotebookNode) -> str:
    streams = [o for o in cell.outputs if o.output_type == "stream" and o.name == "stdout"]
    return "".join(o.text for o in streams)


def test_papermill_parameters_run_as_python_on_the_pi_kernel(tmp_path: Path, pi_prefix: Path) -> None:
    source, out = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    write_notebook(source)
    command = [sys.executable, "-m", "papermill", "-k", "pi", "-p", "alpha", "2", str(source), str(out)]
    command += ["--cwd", str(tmp_path), "--execution-timeout", "60", "--start-timeout", "60"]
    env = pi_env(tmp_path, pi_prefix)
    done = subprocess.run(
        command, check=False, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=150
    )
    assert done.returncode == 0, done.stderr[-3000:]
    cells = nbformat.read(out, as_version=4).cells
    injected = cells[2]
    assert injected.metadata["tags"] == ["injected-parameters"]
    assert injected.source.splitlines() == ["# Parameters", "alpha = 2"]
    assert [cell.metadata.papermill.status for cell in cells] == ["completed"] * 6
    assert [o.output_type for o in injected.outputs] == []  # assignments print nothing
    assert stdout_of(cells[3]) == "alpha * 21 = 42\n"
    answer = [o for o in cells[4].outputs if o.output_type == "display_data"]
    assert answer
    assert "alpha is 2" in answer[-1].data["text/plain"]
    assert stdout_of(cells[5]) == "the model said: alpha is 2\n"
