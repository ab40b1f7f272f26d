"""Drive the installed Pi kernel through jupyter_client, as ``kernel_driver.Kernel`` drives a
plain ipykernel: the same ``run`` / ``execute`` / ``Watch``, with the setup sent as ``%%python``
cells (in the Pi kernel every other cell is a prompt)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from kernel_driver import SETUP, Kernel, kernel_env

REPO = Path(__file__).resolve().parents[2]
NAME = "pi"


DEFAULT_MODEL = "faux:faux-1"

ECHO = """
seen = []
def echo(context, options, state, model):
    message = context.messages[-1]
    content = message.content
    seen.append(content if isinstance(content, str) else "".join(b.text for b in content if b.type == "text"))
    return faux_assistant_message("heard you")
"""
"""Kernel code: ``echo``, a faux answer that records the text of the message the model got."""


def install_spec(prefix: Path, python: str | None = None) -> Path:
    """``python -m pi_notebook.kernel install --prefix prefix`` run by ``python`` (default: this
    interpreter), whose spec then starts that interpreter; returns the ``JUPYTER_PATH`` entry."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(
        [python or sys.executable, "-m", "pi_notebook.kernel", "install", "--prefix", str(prefix)],
        check=True,
        capture_output=True,
        env=env,
        timeout=60,
    )
    return prefix / "share" / "jupyter"


def pi_env(root: Path, jupyter_path: Path) -> dict[str, str]:
    env = kernel_env(root)
    env.update({"JUPYTER_PATH": str(jupyter_path), "PYTHONPATH": str(REPO)})
    return env


def pi_manager(root: Path, jupyter_path: Path) -> KernelManager:
    """A manager (not started) of the kernelspec ``pi`` that ``JUPYTER_PATH`` finds, on unix sockets."""
    saved = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = str(jupyter_path)
    try:
        specs = KernelSpecManager()
        assert str(jupyter_path / "kernels") in specs.kernel_dirs  # the default, read now
    finally:
        if saved is None:
            del os.environ["JUPYTER_PATH"]
        else:
            os.environ["JUPYTER_PATH"] = saved
    assert specs.get_kernel_spec(NAME).resource_dir.startswith(str(jupyter_path))
    km = KernelManager(kernel_name=NAME, kernel_spec_manager=specs)
    km.connection_file = str(root / "kernel.json")
    km.transport = "ipc"
    km.ip = str(root / "ipc")
    return km


class PiKernelUnderTest(Kernel):
    """The Pi kernel started from its installed spec; ``SETUP`` (the faux provider at 40 tokens a
    second, ``tool_use``) has run as a ``%%python`` cell."""

    def __init__(self, root: Path, jupyter_path: Path, *, configured: bool = True) -> None:
        """``configured=False``: the kernel as a new user starts it, with no setup cell run and
        no model or key from the environment."""
        self.root, self.jupyter_path = root, jupyter_path
        self.km = pi_manager(root, jupyter_path)
        env = pi_env(root, jupyter_path)
        if not configured:
            env = {k: v for k, v in env.items() if not k.endswith("_API_KEY")}
        self.km.start_kernel(env=env, cwd=str(root))
        self.kc: BlockingKernelClient = self.km.blocking_client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        if configured:
            self.setup()

    def setup(self) -> None:
        reply = self.run("%%python\n" + SETUP + ECHO)
        assert reply["status"] == "ok", reply
        reply = self.run(f"%config PiMagics.model = {DEFAULT_MODEL!r}")  # the kernel's default model
        assert reply["status"] == "ok", reply

    def fresh(self) -> PiKernelUnderTest:
        reply = self.run("%%python\nconversations.clear(); faux.set_responses([]); seen.clear(); _pi = None")
        assert reply["status"] == "ok", reply
        self.drain()
        return self

    def execute_cell(self, code: str, cell_id: str = "cell-1") -> str:
        """Execute as a notebook frontend does: with the ``cellId`` of the cell (JupyterLab,
        Notebook 7), so a prompt draws the live widgets. ``execute`` and ``run`` send none, as
        ``jupyter console`` does, so a prompt streams as text."""
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": True,
            "stop_on_error": True,
        }
        msg = self.kc.session.msg("execute_request", content, metadata={"cellId": cell_id})
        self.kc.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def python(self, code: str, timeout: float = 30) -> dict[str, Any]:
        return self.run("%%python\n" + code, timeout)

    def value(self, expr: str) -> str:
        reply = self.python(f"print({expr})")
        assert reply["status"] == "ok", reply
        return str(reply["stdout"]).strip()

    def restart(self) -> None:
        self.km.restart_kernel(now=True)
        self.kc.wait_for_ready(timeout=60)
        self.setup()
