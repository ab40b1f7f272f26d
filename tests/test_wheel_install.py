"""``pip install`` of the wheel is the whole install: the wheel, built once for the module by the
build backend of ``pyproject.toml``, goes into a fresh venv (``python -m venv``, pip from
``ensurepip``, ``--no-index --no-deps``: offline) with no node on the PATH, and there
``jupyter labextension list`` shows the ``pi-notebook-bridge`` labextension enabled and OK,
``jupyter kernelspec list`` shows ``pi`` in the venv, and that kernelspec starts a Pi kernel that
runs the venv's interpreter and imports the package from the wheel.

The venv sees the dependencies (jupyterlab, ipykernel, pydantic, ...) of the environment running
the tests through a ``.pth`` file: only paths, so their ``.pth`` files (an editable install of
this checkout) do not run and their ``share/jupyter`` is not on the venv's Jupyter path; HOME and
the Jupyter dirs point into the test's directory, so nothing of the user's is found either.
Select with ``-m wheel``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from test_packaging import build  # tests/ is on sys.path (conftest.py)

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parents[1]

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


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with the wheel installed, and the environment to run it in (no node)."""
    root = tmp_path_factory.mktemp("wheel-install")
    wheel, _ = build("build_wheel", root / "dist")
    where = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=120)
    # The dependencies from the test's environment, by path only (see the module docstring).
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(where), "platbase": str(where)}))
    deps = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (purelib / "test-deps.pth").write_text("\n".join(deps) + "\n")
    home = root / "home"
    home.mkdir()
    env = {
        "PATH": str(where / "bin"),  # its python and pip only: no node, no npm
        "HOME": str(home),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "LANG": "C.UTF-8",
    }
    assert shutil.which("node", path=env["PATH"]) is None
    python = str(where / "bin" / "python")
    done = run(
        env,
        python,
        "-m",
        "pip",
        "install",
        "--no-index",
        "--no-deps",
        "-q",
        "--disable-pip-version-check",
        str(wheel),
    )
    assert done.returncode == 0, done.stderr
    return where, env


def run(env: dict[str, str], *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), env=env, capture_output=True, text=True, timeout=timeout, check=False, cwd=env["HOME"]
    )


def test_the_wheel_carries_the_labextension_and_the_kernelspec_as_data(
    venv: tuple[Path, dict[str, str]],
) -> None:
    where, _ = venv
    share = where / "share" / "jupyter"
    bridge = share / "labextensions" / "pi-notebook-bridge"
    assert json.loads((bridge / "install.json").read_text())["packageName"] == "pi-notebook"
    assert json.loads((bridge / "package.json").read_text())["name"] == "pi-notebook-bridge"
    assert list((bridge / "static").glob("remoteEntry.*.js"))
    spec = json.loads((share / "kernels" / "pi" / "kernel.json").read_text())
    assert spec["argv"][0] == "python"  # jupyter_client puts the launching environment's interpreter


def test_jupyter_labextension_list_shows_the_bridge_enabled_and_ok(venv: tuple[Path, dict[str, str]]) -> None:
    where, env = venv
    done = run(env, str(where / "bin" / "python"), "-m", "jupyterlab.labextensions", "list")
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    line = next((ln for ln in out.splitlines() if "pi-notebook-bridge" in ln), None)
    assert line is not None, out
    assert "enabled" in line, line
    assert "OK" in line, line
    assert "(python, pi-notebook)" in line, line  # installed by pip, not by hand
    assert str(where / "share" / "jupyter" / "labextensions") in out


def test_jupyter_kernelspec_list_shows_pi_and_it_runs_in_the_venv(venv: tuple[Path, dict[str, str]]) -> None:
    where, env = venv
    python = str(where / "bin" / "python")
    done = run(env, python, "-m", "jupyter_client.kernelspecapp", "list", "--json")
    assert done.returncode == 0, done.stderr
    pi = json.loads(done.stdout)["kernelspecs"]["pi"]
    assert pi["resource_dir"] == str(where / "share" / "jupyter" / "kernels" / "pi")
    started = run(env, python, "-c", KERNEL_SCRIPT, timeout=150)
    assert started.returncode == 0, started.stderr
    lines = started.stdout.splitlines()
    assert lines[-1] == "status: ok", started.stdout
    assert Path(lines[-3]).parent == where / "bin", lines  # the venv's interpreter
    site = Path(sysconfig.get_path("purelib", vars={"base": str(where), "platbase": str(where)}))
    assert Path(lines[-2]) == site / "pi_notebook" / "__init__.py", lines  # the wheel's package


REQUIREMENTS_SCRIPT = """
from importlib.metadata import requires, version
from packaging.requirements import Requirement
for line in requires("pi-notebook"):
    req = Requirement(line)
    if req.marker is None or req.marker.evaluate({"extra": ""}):
        print(req.name, req.specifier, version(req.name) in req.specifier)
"""


def test_the_installed_wheels_requirements_are_met(venv: tuple[Path, dict[str, str]]) -> None:
    """``--no-deps`` kept the install offline; the wheel's own ``Requires-Dist`` (its base
    dependencies) is what the venv then has."""
    where, env = venv
    done = run(env, str(where / "bin" / "python"), "-c", REQUIREMENTS_SCRIPT)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert {row[0] for row in rows} >= {"ipykernel", "pydantic", "httpx", "ipywidgets"}, rows
    assert all(row[-1] == "True" for row in rows), rows
