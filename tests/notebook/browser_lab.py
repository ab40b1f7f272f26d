"""JupyterLab (or Jupyter Notebook 7) for the browser tests: a server on 127.0.0.1 with a temp
root dir, a token, isolated Jupyter/IPython dirs, no news or update checks, and its own kernelspec
for this venv's Python. Or (``venv=``) the server, labextensions and ``pi`` kernelspec of a venv
the wheel was installed into (``tests/wheel_venv.py``), and nothing of this checkout's.

Browser pitfalls it avoids, each of which broke a headless run: the news toast (its button
opens an external tab), restored workspaces, and the PyPI-backed extension manager.

A plain ``Lab`` (this checkout's, not a subclass's nor a venv's) reuses the server a previous
test left, per app and bridge setting, instead of starting one (1-4 s each): each test gets a
directory of its own under the server's root, and leaves the server with no session and no
kernel (or it is stopped). ``stop_idle_servers`` stops what is left at the end of the run.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wheel_venv import WheelVenv

KERNEL_NAME = "pi-notebook-browser"
BRIDGE_BUILD = Path(__file__).resolve().parents[2] / "pi_notebook" / "notebook" / "bridge" / "labextension"
"""Where ``scripts/setup.sh`` builds the ``pi-notebook-bridge`` labextension of this checkout."""
CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "browser"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
LAB_DIRS = {
    "JUPYTER_CONFIG_DIR": "config",
    "JUPYTER_DATA_DIR": "data",
    "JUPYTER_RUNTIME_DIR": "runtime",
    "IPYTHONDIR": "ipython",
    "JUPYTERLAB_SETTINGS_DIR": "settings",
    "JUPYTERLAB_WORKSPACES_DIR": "workspaces",
}
"""The server's own dirs (environment variable: subdirectory of the lab's root)."""


_IDLE: dict[tuple[str, bool], tuple[subprocess.Popen[bytes], int, str, Path]] = {}
"""Servers a finished test left, by (app, bridge): the process, port, token and its dirs' root."""
_NEXT = itertools.count()


def stop_idle_servers() -> None:
    """Stop the servers tests left for the next one (the end of the test run)."""
    while _IDLE:
        _, (proc, _port, _token, home) = _IDLE.popitem()
        _stop(proc)
        shutil.rmtree(home, ignore_errors=True)


atexit.register(stop_idle_servers)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)  # the server shuts its kernels down
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # our own session only
        proc.wait(timeout=5)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Lab:
    """``with Lab(root) as lab:`` starts the server and stops it (and its kernels) at the end.

    ``app="notebook"`` starts Jupyter Notebook 7 instead of JupyterLab (the same frontend
    components in a one-document shell, opened at ``/notebooks/NAME``)."""

    def __init__(
        self, root: Path, app: str = "lab", *, bridge: bool = True, venv: WheelVenv | None = None
    ) -> None:
        self.root = root
        self.app = app
        self.bridge = bridge
        """Whether the frontend gets this checkout's pi-notebook-bridge labextension."""
        self.venv = venv
        """The wheel's venv: its Python runs the server, which then finds the bridge and the
        ``pi`` kernelspec in the venv's ``share/jupyter`` only (its own environment, with no
        node on the PATH); notebooks are written for the ``pi`` kernel."""
        self.kernelspec = {"name": KERNEL_NAME, "display_name": "pi_notebook (browser test)"}
        if venv is not None:
            self.kernelspec = {"name": "pi", "display_name": "Pi (Python 3)"}
        self.notebooks = root / "nb"
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.home = root
        """Where the server's dirs and log are: ``root``, or a shared server's own temp dir."""
        self.shared = type(self) is Lab and venv is None
        """Whether the server is shared with the tests before and after (module docstring)."""
        self._prefix = ""  # the notebooks' path under the server's root dir
        self._log_from = 0

    def _env(self) -> dict[str, str]:
        if self.venv is not None:
            return self._venv_env(self.venv)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_NOTEBOOK_", "JPY_", "JUPYTER"))}
        env.update({name: str(self.home / sub) for name, sub in LAB_DIRS.items()})
        # This checkout's notebook bridge (the venv may hold another checkout's, or none).
        env["JUPYTER_PATH"] = str(self.home / "share")
        return env

    def _venv_env(self, venv: WheelVenv) -> dict[str, str]:
        # The venv's JUPYTER_PATH (its dependencies' labextensions only); the bridge and the
        # kernelspec come from the server's own prefix, the venv's share/jupyter
        env = {**venv.env, "HOME": str(self.root / "home")}
        env.update({name: str(self.root / sub) for name, sub in LAB_DIRS.items()})
        if "PI_CODING_AGENT_DIR" in os.environ:  # the test run's session dir (tests/conftest.py)
            env["PI_CODING_AGENT_DIR"] = os.environ["PI_CODING_AGENT_DIR"]
        return env

    def _write_settings(self, env: dict[str, str]) -> None:
        notify = Path(env["JUPYTERLAB_SETTINGS_DIR"]) / "@jupyterlab" / "apputils-extension"
        notify.mkdir(parents=True, exist_ok=True)
        (notify / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False})
        )
        if not self.bridge:  # the venv may have it too (scripts/setup.sh links it there): disable it
            labconfig = Path(env["JUPYTER_CONFIG_DIR"]) / "labconfig"
            labconfig.mkdir(parents=True, exist_ok=True)
            disabled = {"disabledExtensions": {"pi-notebook-bridge": True}}
            (labconfig / "page_config.json").write_text(json.dumps(disabled))
        elif self.venv is None and (BRIDGE_BUILD / "package.json").exists():
            extensions = self.home / "share" / "labextensions"
            extensions.mkdir(parents=True, exist_ok=True)
            (extensions / "pi-notebook-bridge").symlink_to(BRIDGE_BUILD, target_is_directory=True)
        if self.venv is not None:
            return  # the wheel's kernelspec
        spec = Path(env["JUPYTER_DATA_DIR"]) / "kernels" / KERNEL_NAME
        spec.mkdir(parents=True, exist_ok=True)
        (spec / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                    "display_name": "pi_notebook (browser test)",
                    "language": "python",
                }
            )
        )

    def __enter__(self) -> Lab:
        if self.shared:
            self._prefix = f"t{next(_NEXT)}/nb/"  # the folder is "nb" as on a server of its own
            if self._adopt():
                return self
            self.home = Path(tempfile.mkdtemp(prefix="pi-browser-lab-"))
            self.notebooks = self.home / "nb"
        self._start()
        if self.shared:
            self.notebooks = self.notebooks / self._prefix
            self.notebooks.mkdir(parents=True)
        return self

    def _adopt(self) -> bool:
        """Take the idle server of this app and bridge setting, if it is still up."""
        idle = _IDLE.pop((self.app, self.bridge), None)
        if idle is None:
            return False
        proc, port, token, home = idle
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=5):
                pass
        except OSError:
            _stop(proc)
            return False
        self.proc, self.port, self.token, self.home = proc, port, token, home
        self.url = f"http://127.0.0.1:{port}"
        self.notebooks = home / "nb" / self._prefix
        self.notebooks.mkdir(parents=True)
        log = home / "lab.log"
        self._log_from = log.stat().st_size if log.exists() else 0
        return True

    def _start(self) -> None:
        self.notebooks.mkdir(parents=True, exist_ok=True)
        env = self._env()
        self._write_settings(env)
        cmd = [
            sys.executable if self.venv is None else str(self.venv.python),
            "-m",
            "jupyterlab" if self.app == "lab" else "notebook",
            "--no-browser",
            "--ServerApp.open_browser=False",
            f"--port={self.port}",
            "--ip=127.0.0.1",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.notebooks}",
            "--allow-root",
        ]
        if self.app == "lab":
            cmd += [
                "--LabApp.extension_manager=readonly",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                "--LabApp.news_url=None",
            ]
        log = (self.home / "lab.log").open("wb")
        self.proc = subprocess.Popen(
            cmd, env=env, cwd=self.home, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self._wait_up(60)

    def _wait_up(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited: {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"JupyterLab did not start in {timeout} s: {self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        """The server's log since this test took it, its last ``lines``."""
        path = self.home / "lab.log"
        if not path.exists():
            return ""
        with path.open("rb") as log:
            log.seek(self._log_from)
            text = log.read().decode(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def __exit__(self, *exc: Any) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        key = (self.app, self.bridge)
        if self.shared and key not in _IDLE and self._shut_kernels_down():
            _IDLE[key] = (proc, self.port, self.token, self.home)
            return
        _stop(proc)

    def _api(self, method: str, path: str) -> Any:
        request = urllib.request.Request(f"{self.url}/api/{path}?token={self.token}", method=method)
        with urllib.request.urlopen(request, timeout=15) as reply:
            body = reply.read()
        return json.loads(body) if body else None

    def _shut_kernels_down(self, timeout: float = 20.0) -> bool:
        """End every session and kernel of this test, as a fresh server has none: whether the
        server got there within ``timeout`` (if not, it is stopped, not shared)."""
        try:
            for session in self._api("GET", "sessions"):
                self._api("DELETE", f"sessions/{session['id']}")
            for kernel in self._api("GET", "kernels"):
                self._api("DELETE", f"kernels/{kernel['id']}")
            deadline = time.monotonic() + timeout
            while self._api("GET", "kernels") or self._api("GET", "sessions"):
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.1)
        except OSError:
            return False
        return True

    def write_notebook(self, name: str, cells: list[str], ids: list[str] | None = None) -> str:
        """Write code cells (``ids``: their cell ids; a source starting ``# md\n`` is a
        markdown cell) and return the URL that opens the notebook."""
        made: list[dict[str, Any]] = []
        for i, source in enumerate(cells):
            cell: dict[str, Any] = {"cell_type": "code", "source": source, "metadata": {}}
            if source.startswith("# md\n"):
                cell = {"cell_type": "markdown", "source": source.removeprefix("# md\n"), "metadata": {}}
            else:
                cell.update(outputs=[], execution_count=None)
            if ids is not None:
                cell["id"] = ids[i]
            made.append(cell)
        notebook = {
            "cells": made,
            "metadata": {"kernelspec": {**self.kernelspec, "language": "python"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        (self.notebooks / name).write_text(json.dumps(notebook))
        if self.app == "lab":
            return f"{self.url}/lab/tree/{self._prefix}{name}?token={self.token}&reset"
        return f"{self.url}/notebooks/{self._prefix}{name}?token={self.token}"


@contextmanager
def chromium_page(
    playwright: Any, lab: Lab | None, failure_shot: str, height: int = 1000, width: int = 1280
) -> Iterator[Any]:
    """A page of Debian's Chromium (never a browser Playwright downloads). On a failure inside
    the block it saves a full-page screenshot as ``test-output/browser/<failure_shot>`` and
    prints the server's log tail (``lab``: None for a page without a server); the browser is
    closed either way."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / failure_shot).unlink(missing_ok=True)
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    page = browser.new_page(viewport={"width": width, "height": height})
    try:
        yield page
    except Exception:
        page.screenshot(path=str(SHOTS / failure_shot), full_page=True)
        if lab is not None:
            print(lab.log_tail())
        raise
    finally:
        browser.close()
