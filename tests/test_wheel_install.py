"""``pip install`` of the wheel is the whole install: the wheel, built by the build backend of
``pyproject.toml`` and installed into a fresh venv with no node on the PATH (``wheel_venv.py``,
once per session: fixture ``wheel_venv``), and there ``jupyter labextension list`` shows the
``pi-notebook-bridge`` labextension enabled and OK, ``jupyter kernelspec list`` shows ``pi`` in
the venv, and that kernelspec starts a Pi kernel that runs the venv's interpreter and imports the
package from the wheel. ``notebook/test_browser_edits.py`` drives the agent's notebook edits in a
JupyterLab served from the same venv. Select with ``-m wheel``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from wheel_venv import WheelVenv  # tests/ is on sys.path (conftest.py)

pytestmark = pytest.mark.wheel

KERNEL_SCRIPT = """
import sys
from jupyter_client.manager import start_new_kernel
km, kc = start_new_kernel(kernel_name="pi", startup_timeout=60)
try:
    cell = "%%python\\nimport sys, pi_notebook\\nprint(sys.executable)\\nprint(pi_notebook.__file__)"
    reply = kc.execute_interactive(cell, timeout=60, output_hook=lambda m: (
        m["msg_type"] == "stream" and print(m["content"]["text"], end="")))
    print("status:", reply["content"]["status"])
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
"""


def test_the_wheel_carries_the_labextension_and_the_kernelspec_as_data(wheel_venv: WheelVenv) -> None:
    share = wheel_venv.share
    bridge = share / "labextensions" / "pi-notebook-bridge"
    assert json.loads((bridge / "install.json").read_text())["packageName"] == "pi-notebook"
    assert json.loads((bridge / "package.json").read_text())["name"] == "pi-notebook-bridge"
    assert list((bridge / "static").glob("remoteEntry.*.js"))
    spec = json.loads((share / "kernels" / "pi" / "kernel.json").read_text())
    assert spec["argv"][0] == "python"  # jupyter_client puts the launching environment's interpreter


def test_jupyter_labextension_list_shows_the_bridge_enabled_and_ok(wheel_venv: WheelVenv) -> None:
    done = wheel_venv.run(str(wheel_venv.python), "-m", "jupyterlab.labextensions", "list")
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    line = next((ln for ln in out.splitlines() if "pi-notebook-bridge" in ln), None)
    assert line is not None, out
    assert "enabled" in line, line
    assert "OK" in line, line
    assert "(python, pi-notebook)" in line, line  # installed by pip, not by hand
    assert str(wheel_venv.share / "labextensions") in out


def test_jupyter_kernelspec_list_shows_pi_and_it_runs_in_the_venv(wheel_venv: WheelVenv) -> None:
    python = str(wheel_venv.python)
    done = wheel_venv.run(python, "-m", "jupyter_client.kernelspecapp", "list", "--json")
    assert done.returncode == 0, done.stderr
    pi = json.loads(done.stdout)["kernelspecs"]["pi"]
    assert pi["resource_dir"] == str(wheel_venv.share / "kernels" / "pi")
    started = wheel_venv.run(python, "-c", KERNEL_SCRIPT, timeout=150)
    assert started.returncode == 0, started.stderr
    lines = started.stdout.splitlines()
    assert lines[-1] == "status: ok", started.stdout
    assert Path(lines[-3]).parent == wheel_venv.where / "bin", lines  # the venv's interpreter
    assert Path(lines[-2]) == wheel_venv.site / "pi_notebook" / "__init__.py", lines  # the wheel's package


REQUIREMENTS_SCRIPT = """
from importlib.metadata import requires, version
from packaging.requirements import Requirement
for line in requires("pi-notebook"):
    req = Requirement(line)
    if req.marker is None or req.marker.evaluate({"extra": ""}):
        print(req.name, req.specifier, version(req.name) in req.specifier)
"""


def test_the_installed_wheels_requirements_are_met(wheel_venv: WheelVenv) -> None:
    """``--no-deps`` kept the install offline; the wheel's own ``Requires-Dist`` (its base
    dependencies) is what the venv then has."""
    done = wheel_venv.run(str(wheel_venv.python), "-c", REQUIREMENTS_SCRIPT)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert {row[0] for row in rows} >= {"ipykernel", "pydantic", "httpx", "ipywidgets"}, rows
    assert all(row[-1] == "True" for row in rows), rows
