"""The package builds without warnings, offline, with the build backend named in
``pyproject.toml`` (hatchling, with hatch-jupyter-builder and jupyterlab: the ``dev`` extra): a
wheel holding ``pi_notebook`` and, as data files, the ``pi-notebook-bridge`` labextension and
the ``pi`` kernelspec (what ``python -m pi_notebook.kernel install`` writes, with ``python`` as
the interpreter); an editable wheel mapping only the package, whose kernelspec names this
interpreter; an sdist with what rebuilds both (``labextension/`` with its lock file, never
``node_modules``). The labextension is built once (``scripts/setup.sh``, or the first build
here), then reused: the hook skips a built one.

``tests/test_wheel_install.py`` installs the wheel into a fresh venv."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import pi_notebook
from pi_notebook.kernel.spec import kernel_json

ROOT = Path(__file__).resolve().parents[1]
BUILD = """
import importlib, sys, tomllib, warnings
warnings.simplefilter("error")  # any warning of the backend fails the build
with open("pyproject.toml", "rb") as f:
    name = tomllib.load(f)["build-system"]["build-backend"]
print(getattr(importlib.import_module(name), sys.argv[1])(sys.argv[2]))
"""
DATA = "pi_notebook-{v}.data/data/share/jupyter/"


def build(kind: str, out: Path) -> tuple[Path, str]:
    """``kind`` (``build_wheel``, ``build_editable``, ``build_sdist``) into ``out``: the artifact
    and the backend's stderr, less hatch-jupyter-builder's INFO log lines and the progress lines
    of a labextension build (the editable build rebuilds it when its sources are newer)."""
    if importlib.util.find_spec("hatch_jupyter_builder") is None:
        pytest.fail(
            "hatch-jupyter-builder is missing: pip install -e '.[dev]' (it is in the dev extra)",
            pytrace=False,
        )
    done = subprocess.run(
        [sys.executable, "-c", BUILD, kind, str(out)],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,  # a first build of the labextension runs npm ci
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines(keepends=True)
    progress = ("INFO:hatch_jupyter_builder", "Compilation starting", "Compilation finished")
    stderr = "".join(line for line in lines if line.strip() and not line.startswith(progress))
    return out / done.stdout.strip().splitlines()[-1], stderr


def test_the_wheel_builds_quietly_with_the_package_the_labextension_and_kernelspec(tmp_path: Path) -> None:
    wheel, stderr = build("build_wheel", tmp_path)
    assert stderr == ""
    files = zipfile.ZipFile(wheel)
    names = files.namelist()
    assert "pi_notebook/py.typed" in names
    assert "pi_notebook/ai/data/models.json" in names
    assert "pi_notebook/notebook/run/runner.py" in names
    version = pi_notebook.__version__
    tops = {name.split("/")[0] for name in names}
    assert tops == {"pi_notebook", f"pi_notebook-{version}.dist-info", f"pi_notebook-{version}.data"}, tops
    data = DATA.format(v=version)
    bridge = data + "labextensions/pi-notebook-bridge/"
    assert json.loads(files.read(bridge + "install.json"))["packageName"] == "pi-notebook"
    assert json.loads(files.read(bridge + "package.json"))["version"] == version
    assert any(n.startswith(bridge + "static/remoteEntry.") for n in names)
    assert not any("bridge/labextension" in n for n in names)  # only as data, not in the package
    spec = json.loads(files.read(data + "kernels/pi/kernel.json"))
    assert spec == kernel_json(python="python")  # one source: pi_notebook/kernel/spec.py
    assert files.read(data + "kernels/pi/logo-svg.svg").startswith(b"<svg")
    assert f"Version: {version}\n" in files.read(f"pi_notebook-{version}.dist-info/METADATA").decode()


def test_the_editable_wheel_builds_quietly_and_maps_only_the_package(tmp_path: Path) -> None:
    wheel, stderr = build("build_editable", tmp_path)
    assert stderr == ""
    files = zipfile.ZipFile(wheel)
    hook = next(n for n in files.namelist() if n.endswith(".py"))
    mapping = files.read(hook).decode()
    assert str(ROOT / "pi_notebook") in mapping
    assert str(ROOT / "tests") not in mapping
    spec = json.loads(files.read(DATA.format(v=pi_notebook.__version__) + "kernels/pi/kernel.json"))
    assert spec["argv"][0] == sys.executable  # the interpreter that installs it, as ipykernel does


def test_the_sdist_holds_what_rebuilds_the_wheel_and_no_node_modules(tmp_path: Path) -> None:
    sdist, stderr = build("build_sdist", tmp_path)
    assert stderr == ""
    top = f"pi_notebook-{pi_notebook.__version__}/"
    with tarfile.open(sdist) as archive:
        names = {name.removeprefix(top) for name in archive.getnames()}
    for needed in (
        "pyproject.toml",
        "hatch_build.py",
        "README.md",
        "labextension/package.json",
        "labextension/package-lock.json",
        "labextension/install.json",
        "labextension/tsconfig.json",
        "labextension/src/index.ts",
        "pi_notebook/kernel/spec.py",
        "pi_notebook/notebook/bridge/labextension/package.json",  # built: no node needed from here
    ):
        assert needed in names, needed
    assert not any("node_modules" in n or n.startswith(("labextension/lib/", "tests/")) for n in names)


def test_the_version_lives_in_the_package_and_the_labextension_agrees() -> None:
    extension = json.loads((ROOT / "labextension" / "package.json").read_text())
    assert extension["version"] == pi_notebook.__version__
    assert 'dynamic = ["version"]' in (ROOT / "pyproject.toml").read_text()
