"""Build steps of the wheel beyond the Python package (hatchling runs this file; it is no part of
the installed package).

* ``KernelspecHook`` (the ``custom`` build hook): the ``pi`` kernelspec in the wheel's data files,
  ``share/jupyter/kernels/pi``, as ipykernel ships ``python3``. A standard wheel's ``argv[0]`` is
  ``python``, which ``jupyter_client`` replaces with the interpreter of the environment that
  launches the kernel; an editable install names the interpreter that installs it. The files
  come from ``pi_notebook/kernel/spec.py`` (what ``python -m pi_notebook.kernel install`` writes),
  loaded by path: the build environment has none of the package's dependencies.
* ``build_bridge`` (the ``build-function`` of the ``jupyter-builder`` hook of
  hatch-jupyter-builder): the ``pi-notebook-bridge`` labextension from ``labextension/``, with
  ``npm ci`` (exactly the versions in ``package-lock.json``) and JupyterLab's
  ``build-labextension`` against the build environment's ``jupyterlab`` (its ``staging``
  versions of the shared packages; ``jupyter labextension build`` would fetch
  ``@jupyterlab/core-meta`` from the network).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ROOT = Path(__file__).resolve().parent
BRIDGE_SOURCE = ROOT / "labextension"
BRIDGE_BUILD = ROOT / "pi_notebook" / "notebook" / "bridge" / "labextension"


def _spec_module() -> Any:
    path = ROOT / "pi_notebook" / "kernel" / "spec.py"
    spec = importlib.util.spec_from_file_location("_pi_notebook_kernelspec", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


class KernelspecHook(BuildHookInterface):  # type: ignore[type-arg]  # generic in hatchling >= 1.27
    """Adds ``share/jupyter/kernels/pi`` to the wheel (standard and editable), and the
    labextension's ``install.json`` when it was built (an editable install without node has
    none: an ``install.json`` alone would be a broken extension in ``jupyter labextension list``).
    Runs after the ``jupyter-builder`` hook (its place in ``pyproject.toml``)."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        spec = _spec_module()
        out = Path(tempfile.mkdtemp(prefix="pi-kernelspec-"))
        self._made = out
        spec.write_spec(out, python="python" if version == "standard" else sys.executable)
        build_data["shared_data"][str(out)] = f"share/jupyter/kernels/{spec.KERNEL_NAME}"
        # JupyterLab's build-labextension copies labextension/install.json into its output;
        # an older build has none. Added twice, the wheel refuses the second copy.
        built = BRIDGE_BUILD / "package.json"
        if built.is_file() and not (BRIDGE_BUILD / "install.json").is_file():
            extension = "share/jupyter/labextensions/pi-notebook-bridge"
            build_data["shared_data"][str(BRIDGE_SOURCE / "install.json")] = f"{extension}/install.json"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        made = getattr(self, "_made", None)
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)


def build_bridge(target_name: str, version: str, force: bool = False) -> None:
    """Build the labextension into ``pi_notebook/notebook/bridge/labextension`` (its
    ``package.json`` says where) when its sources are newer than the last build, or ``force``;
    ``npm ci`` first when ``node_modules`` is older than the lock file."""
    from hatch_jupyter_builder.utils import is_stale

    build = BRIDGE_BUILD
    sources = (BRIDGE_SOURCE / "src", BRIDGE_SOURCE / "package.json", BRIDGE_SOURCE / "package-lock.json")
    if not force and not any(is_stale(build, source) for source in sources):
        return
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(
            "building pi-notebook from source needs node and npm (node 18 or newer) for its "
            "JupyterLab extension: install them and retry, or install the published wheel "
            "(pip install pi-notebook), which carries the built extension"
        )
    import jupyterlab

    env = {**os.environ, "PI_JUPYTERLAB_STAGING": str(Path(jupyterlab.__file__).parent / "staging")}
    # npm ci writes node_modules/.package-lock.json: older than the lock file means outdated
    if force or is_stale(
        BRIDGE_SOURCE / "node_modules" / ".package-lock.json", BRIDGE_SOURCE / "package-lock.json"
    ):
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=BRIDGE_SOURCE, env=env, check=True
        )
    subprocess.run([npm, "run", "--silent", "build"], cwd=BRIDGE_SOURCE, env=env, check=True)
