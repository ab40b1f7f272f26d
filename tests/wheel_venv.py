"""A fresh venv with this checkout's wheel ``pip install``ed and nothing else, for the tests that
prove the wheel is the whole install (``test_wheel_install.py``, and the Chromium edit test that
runs once against a JupyterLab served from it). Built once per test session: the fixture
``wheel_venv`` of ``tests/conftest.py``.

The wheel comes from the build backend of ``pyproject.toml`` (``test_packaging.build``); the venv
from ``python -m venv``, with pip from ``ensurepip`` and ``--no-index --no-deps`` (offline), and
no node on its PATH. It sees the dependencies (jupyterlab, ipykernel, pydantic, ...) of the
environment running the tests through a ``.pth`` file: only paths, so their ``.pth`` files (an
editable install of a checkout) do not run. Their labextensions (ipywidgets' widget manager, ...),
which ``pip install`` of the dependencies would have put into the venv's ``share/jupyter``, are on
its ``JUPYTER_PATH`` as links, less any ``pi-notebook-bridge`` (an editable install's): the only
bridge the venv has is the wheel's. Nothing else of that environment's ``share/jupyter`` is (its
kernelspecs name its interpreter). HOME and the Jupyter dirs point into the venv's directory, so
nothing of the user's is found either."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class WheelVenv:
    """The venv (``where``) and the environment its programs run in (``env``: its ``bin`` as
    the whole PATH, a HOME and Jupyter dirs of its own)."""

    where: Path
    env: dict[str, str]

    @property
    def python(self) -> Path:
        return self.where / "bin" / "python"

    @property
    def share(self) -> Path:
        """Its ``share/jupyter``, where the wheel's data files went."""
        return self.where / "share" / "jupyter"

    @property
    def site(self) -> Path:
        """Its ``site-packages``, where the wheel's ``pi_notebook`` went."""
        paths = sysconfig.get_paths(vars={"base": str(self.where), "platbase": str(self.where)})
        return Path(paths["purelib"])

    def run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``argv`` in the venv's environment, from its HOME; never raises on a non-zero exit."""
        return subprocess.run(
            list(argv),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=self.env["HOME"],
        )


def install_wheel(root: Path) -> WheelVenv:
    """Build the wheel into ``root/dist`` and install it into a fresh venv at ``root/venv``."""
    from test_packaging import build  # tests/ is on sys.path (conftest.py); a test module: on demand

    wheel, _ = build("build_wheel", root / "dist")
    where = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, timeout=120)
    home = root / "home"
    home.mkdir()
    venv = WheelVenv(
        where,
        {
            "PATH": str(where / "bin"),  # its python and pip only: no node, no npm
            "HOME": str(home),
            "JUPYTER_DATA_DIR": str(home / "data"),
            "JUPYTER_CONFIG_DIR": str(home / "config"),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "JUPYTER_PATH": str(_dependency_labextensions(root / "deps-share")),
            "LANG": "C.UTF-8",
        },
    )
    # The dependencies from the test's environment, by path only (see the module docstring).
    deps = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (venv.site / "test-deps.pth").write_text("\n".join(deps) + "\n")
    assert shutil.which("node", path=venv.env["PATH"]) is None
    pip = ("-m", "pip", "install", "--no-index", "--no-deps", "-q", "--disable-pip-version-check")
    done = venv.run(str(venv.python), *pip, str(wheel))
    assert done.returncode == 0, done.stderr
    return venv


def _dependency_labextensions(share: Path) -> Path:
    """``share`` with a ``labextensions`` dir linking those of the test environment, less the bridge."""
    made = share / "labextensions"
    made.mkdir(parents=True)
    theirs = Path(sys.prefix) / "share" / "jupyter" / "labextensions"
    for entry in sorted(theirs.iterdir()) if theirs.is_dir() else []:
        if entry.name != "pi-notebook-bridge":
            (made / entry.name).symlink_to(entry.resolve(), target_is_directory=True)
    return share
