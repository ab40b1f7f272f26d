"""Drive a real ipykernel through jupyter_client and record what a frontend would see.

The kernel is started from this venv's Python through a kernelspec written to a temp dir (never
the user's global kernelspecs), with isolated IPython/Jupyter dirs. ``Watch`` pumps IOPub and
shell replies for one or more ``execute_request``s, keeps the state of every widget model
(from ``comm_open`` and ``comm_msg`` updates), and calls a reaction on every message, so a
test can click a button or type into a text box *while the cell runs*, as a browser would.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

KERNEL_NAME = "pi-notebook-test"

SETUP = """\
%load_ext pi_notebook
import asyncio, pi_notebook
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_tool_call
from pi_notebook.notebook import conversations
faux = register_faux_provider(token_size={"min": 1, "max": 1}, tokens_per_second=40)
def tool_use(name, args, call_id):
    return faux_assistant_message([faux_tool_call(name, args, id=call_id)], stop_reason="toolUse")
"""


APPROVAL_TOOLS = '''
from pi_notebook.agent import BeforeToolCallResult, tool
from pi_notebook.notebook.run.approval import ask_approval
wiped = []

@tool(requires_approval=True)
def wipe(path: str) -> str:
    """Wipe a path."""
    wiped.append(path)
    return "wiped " + path

@tool
def peek(path: str) -> str:
    """Look at a path."""
    return "peeked " + path

async def confirm(ctx, signal):
    path = ctx.tool_call.arguments["path"]
    if await ask_approval(ctx.tool_call, f"{ctx.tool_call.name} touches {path}"):
        return None
    return BeforeToolCallResult(block=True, reason="The user said no.")

agent = pi_notebook.current().agent
agent.state.tools = [wipe, peek]
agent.before_tool_call = confirm
'''
"""Kernel code: ``wipe`` (``requires_approval``), ``peek`` (no approval of its own) and a
``before_tool_call`` hook, ``confirm``, that asks with ``ask_approval`` and a reason, all on the
default conversation (``agent``)."""

SIGINT_AT = """
import signal as _signal, sys as _sys
sigint_fired = []

def sigint_at(name, where, returning=False):
    def hook(frame, event, arg):
        if event == "call" and not returning:
            called, caller = frame.f_code.co_name, frame.f_code.co_filename
        elif event == "return" and returning and frame.f_back is not None:
            called, caller = frame.f_code.co_name, frame.f_back.f_code.co_filename
        elif event == "c_return" and returning:
            called, caller = getattr(arg, "__name__", ""), frame.f_code.co_filename
        else:
            return
        if called == name and where in caller:
            _sys.setprofile(None)
            sigint_fired.append(name)
            _signal.raise_signal(_signal.SIGINT)
    _sys.setprofile(hook)
"""
"""Kernel code: ``sigint_at(name, where)`` raises a real SIGINT in the kernel the moment the next
call of function ``name`` in a file whose path contains ``where`` begins on the main thread;
with ``returning=True``, the moment a function ``name`` (Python or C) called from such a file
returns to it. A profile hook, removed as it fires; ``sigint_fired`` lists what fired. The
kernel handles the SIGINT exactly as a frontend's Interrupt, at a point no real interrupt could
be timed to hit."""

LOOPBACK_SHORT = {"openai-completions": "cc", "anthropic-messages": "an"}
"""The wire APIs a kernel can reach the loopback server with, and their short names."""


def loopback_models(url: str, refused: str) -> str:
    """Kernel code registering, per API of ``LOOPBACK_SHORT``, the model ``loop-<short>:<id>``
    served by the loopback server at ``url`` and ``loop-<short>-refused:<id>`` at ``refused``
    (where nothing listens), each with a test key; ``tests/`` joins the kernel's path."""
    return f"""\
import os, sys
sys.path[:0] = [{str(Path(__file__).parent.parent)!r}]
from faults.wire import WIRES
from pi_notebook.ai.models import register_models
for api, short in {LOOPBACK_SHORT!r}.items():
    for suffix, base in (("", {url!r}), ("-refused", {refused!r})):
        provider = f"loop-{{short}}{{suffix}}"
        register_models([WIRES[api].model(base).model_copy(update={{"provider": provider}})])
        os.environ[provider.upper().replace("-", "_") + "_API_KEY"] = "test-key"
"""


def write_kernelspec(root: Path, python: str | None = None) -> Path:
    """A kernelspec running ``python`` (default: this venv's interpreter)."""
    spec_dir = root / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [python or sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "pi_notebook test kernel",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return root / "kernels"


def kernel_env(root: Path) -> dict[str, str]:
    """This process's environment without pi_notebook's and Jupyter's own settings, with
    IPython and Jupyter dirs in ``root`` (never the user's profile or kernels)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_NOTEBOOK_", "JPY_"))}
    env.update(
        {
            "IPYTHONDIR": str(root / "ipython"),
            "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
            "JUPYTER_CONFIG_DIR": str(root / "config"),
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def kernel_manager(
    root: Path, python: str | None = None, manager: type[KernelManager] = KernelManager
) -> KernelManager:
    """A manager (not started) of a kernel of ``python`` (default: this venv's) through a
    kernelspec in ``root``, on unix sockets in ``root``: no TCP port, nothing on the network.
    ``manager``: ``AsyncKernelManager`` for nbclient."""
    specs = KernelSpecManager(kernel_dirs=[str(write_kernelspec(root, python))])
    km = manager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
    km.connection_file = str(root / "kernel.json")
    km.transport = "ipc"
    km.ip = str(root / "ipc")
    return km


class Kernel:
    """One running kernel with a blocking client; the ``SETUP`` cell has run.

    ``python``: the kernel's interpreter, e.g. another venv's (default: this one's).
    """

    def __init__(self, root: Path, python: str | None = None) -> None:
        self.km = kernel_manager(root, python)
        self.km.start_kernel(env=kernel_env(root), cwd=str(root))
        self._connect()

    def _connect(self) -> None:
        self.kc: BlockingKernelClient = self.km.blocking_client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        reply = self.run(SETUP)
        assert reply["status"] == "ok", reply

    def responsive(self, timeout: float = 10) -> bool:
        """The kernel is alive and runs a trivial cell within ``timeout`` seconds."""
        if not self.km.is_alive():
            return False
        try:
            return self.run("pass", timeout=timeout)["status"] == "ok"
        except (TimeoutError, RuntimeError):
            return False

    def revive(self) -> None:
        """Replace a dead or stuck kernel by a new one, set up as at the start, so that a test
        that broke the module's kernel fails alone rather than every test after it."""
        self.kc.stop_channels()
        self.km.restart_kernel(now=True)
        self._connect()

    def run(self, code: str, timeout: float = 30) -> dict[str, Any]:
        """Execute and wait; returns the reply content plus the printed ``stdout``."""
        out: list[str] = []

        def hook(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])

        reply = self.kc.execute_interactive(code, timeout=timeout, output_hook=hook)
        content = dict(reply["content"])
        content["stdout"] = "".join(out)
        return content

    def execute(self, code: str, *, allow_stdin: bool = True) -> str:
        return str(self.kc.execute(code, allow_stdin=allow_stdin))

    def send_comm(self, comm_id: str, data: dict[str, Any]) -> str:
        msg: dict[str, Any] = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.kc.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def click(self, comm_id: str) -> str:
        """The ipywidgets click payload of a ``Button``."""
        return self.send_comm(comm_id, {"method": "custom", "content": {"event": "click"}})

    def set_value(self, comm_id: str, value: str) -> str:
        """A frontend state sync of a ``Text`` widget's value."""
        return self.send_comm(comm_id, {"method": "update", "state": {"value": value}, "buffer_paths": []})

    def interrupt(self) -> None:
        self.km.interrupt_kernel()

    def drain(self) -> None:
        """Drop IOPub messages left over from earlier cells."""
        while True:
            try:
                self.kc.get_iopub_msg(timeout=0.05)
            except Empty:
                return

    def fresh(self) -> Kernel:
        """Reset between tests: fresh conversations, an empty faux queue, no ``_pi``."""
        reply = self.run("conversations.clear(); faux.set_responses([]); _pi = None")
        assert reply["status"] == "ok", reply
        self.drain()
        return self

    def value(self, expr: str) -> str:
        """``print(expr)`` in the kernel, stripped."""
        reply = self.run(f"print({expr})")
        assert reply["status"] == "ok", reply
        return str(reply["stdout"]).strip()

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


@dataclass
class Widget:
    comm_id: str
    state: dict[str, Any]
    opened_at: float


@dataclass
class Watch:
    """Everything seen while some cells ran; ``react(watch, msg)`` runs on every IOPub message."""

    kernel: Kernel
    started: float = field(default_factory=time.monotonic)
    widgets: dict[str, Widget] = field(default_factory=dict)
    updates: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    displays: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    replies: dict[str, tuple[float, dict[str, Any]]] = field(default_factory=dict)
    idle_parents: set[str] = field(default_factory=set)
    statuses: list[tuple[float, str, str]] = field(default_factory=list)
    """Every ``status`` message: (time, execution_state, parent msg_id)."""
    errors: list[dict[str, Any]] = field(default_factory=list)
    stdout: list[tuple[float, str]] = field(default_factory=list)
    done: set[str] = field(default_factory=set)

    def now(self) -> float:
        return time.monotonic() - self.started

    def until_replies(
        self,
        msg_ids: list[str],
        react: Callable[[Watch, dict[str, Any]], None] | None = None,
        timeout: float = 20,
    ) -> Watch:
        deadline = time.monotonic() + timeout
        while not all(m in self.replies for m in msg_ids):
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"no execute_reply for {msg_ids} after {timeout} s; seen {list(self.replies)}"
                )
            try:
                msg = self.kernel.kc.get_iopub_msg(timeout=0.01)
            except Empty:
                msg = None
            if msg is not None:
                self._record(msg)
                if react is not None:
                    react(self, msg)
            self._poll_shell()
        self._settle()
        return self

    def _poll_shell(self) -> None:
        while True:
            try:
                reply = self.kernel.kc.get_shell_msg(timeout=0)
            except Empty:
                return
            parent = reply["parent_header"].get("msg_id")
            if reply["msg_type"] == "execute_reply":
                self.replies[parent] = (self.now(), reply["content"])

    def _settle(self) -> None:
        """Collect IOPub messages already on their way (the idle status follows the reply)."""
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            try:
                self._record(self.kernel.kc.get_iopub_msg(timeout=0.05))
            except Empty:
                continue

    def _record(self, msg: dict[str, Any]) -> None:
        kind, content, t = msg["msg_type"], msg["content"], self.now()
        parent = msg["parent_header"].get("msg_id", "")
        if kind == "comm_open" and content.get("target_name") == "jupyter.widget":
            self.widgets[content["comm_id"]] = Widget(content["comm_id"], dict(content["data"]["state"]), t)
        elif kind == "comm_msg" and content["data"].get("method") == "update":
            widget = self.widgets.get(content["comm_id"])
            if widget is not None:
                widget.state.update(content["data"]["state"])
            self.updates.append((t, content["comm_id"], content["data"]["state"]))
        elif kind in ("display_data", "update_display_data"):
            self.displays.append((t, kind, content))
        elif kind == "status":
            self.statuses.append((t, content["execution_state"], parent))
            if content["execution_state"] == "idle":
                self.idle_parents.add(parent)
        elif kind == "error":
            self.errors.append(content)
        elif kind == "stream":
            self.stdout.append((t, content["text"]))

    # --- finding widgets ------------------------------------------------------------------------

    def find(self, model: str, **state: Any) -> list[Widget]:
        return [
            w
            for w in self.widgets.values()
            if w.state.get("_model_name") == model and all(w.state.get(k) == v for k, v in state.items())
        ]

    def button(self, description: str) -> Widget:
        found = self.find("ButtonModel", description=description)
        assert found, f"no {description!r} button yet"
        return found[-1]

    def shown_text(self) -> str:
        """What the live view shows now: HTML widget values and Output widgets' Markdown."""
        parts = [str(w.state.get("value", "")) for w in self.find("HTMLModel")]
        for output in self.find("OutputModel"):
            for item in output.state.get("outputs", ()):
                data = item.get("data", {})
                parts.append(str(data.get("text/plain", data.get("text/markdown", ""))))
        return "\n".join(parts)

    def final_bundle(self) -> dict[str, Any]:
        updates = [c for _, kind, c in self.displays if kind == "update_display_data"]
        assert updates, "the live view was never replaced by the static bundle"
        return dict(updates[-1]["data"])
