"""The package builds without warnings, offline: a wheel and an editable wheel from the build
backend named in ``pyproject.toml`` (hatchling, installed by the ``dev`` extra), holding
``pi_notebook`` with its data files and nothing else of the repository."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = """
import importlib, sys, tomllib, warnings
warnings.simplefilter("error")  # any warning of the backend fails the build
with open("pyproject.toml", "rb") as f:
    name = tomllib.load(f)["build-system"]["build-backend"]
print(getattr(importlib.import_module(name), sys.argv[1])(sys.argv[2]))
"""


def build(kind: str, out: Path) -> tuple[Path, str]:
    done = subprocess.run(
        [sys.executable, "-c", BUILD, kind, str(out)],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return out / done.stdout.strip().splitlines()[-1], done.stderr


def test_the_wheel_builds_quietly_with_the_package_and_its_data(tmp_path: Path) -> None:
    wheel, stderr = build("build_wheel", tmp_path)
    assert stderr == ""
    names = zipfile.ZipFile(wheel).namelist()
    assert "pi_notebook/py.typed" in names
    assert "pi_notebook/ai/data/models.json" in names
    assert "pi_notebook/notebook/run/runner.py" in names
    tops = {name.split("/")[0] for name in names}
    assert tops == {"pi_notebook", "pi_notebook-0.1.0.dist-info"}, tops


def test_the_editable_wheel_builds_quietly_and_maps_only_the_package(tmp_path: Path) -> None:
    wheel, stderr = build("build_editable", tmp_path)
    assert stderr == ""
    files = zipfile.ZipFile(wheel)
    hook = next(n for n in files.namelist() if n.endswith(".py"))
    mapping = files.read(hook).decode()
    assert str(ROOT / "pi_notebook") in mapping
    assert str(ROOT / "tests") not in mapping
