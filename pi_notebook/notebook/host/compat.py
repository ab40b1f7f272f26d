"""What the running kernel can do, and the one kernel patch ``pi_notebook`` installs.

Owns four decisions:

* whether widget messages (Stop, Approve, steering) are handled *while* an awaiting cell runs:
  only ipykernel >= 7.4 dispatches ``comm_msg`` concurrently with a cell holding the shell lock;
* whether a top-level ``await`` cell runs on an asyncio loop (``can_await``), which the
  ``%%pi`` transformer needs to await the agent;
* whether this shell has a kernel at all (a terminal IPython or a bare ``InteractiveShell``
  has no widget frontend);
* the guarded ``comm_msg`` wrapper: ipykernel 7.4 publishes no ``status: idle`` for comms it
  handles concurrently, and the ipywidgets frontend then stops syncing a ``Text`` widget after
  its first keystroke. The wrapper publishes that status. It is idempotent: wrapping twice
  made the Text box stop syncing entirely in one measured run;
* keeping the status ``busy`` while a ``%%pi`` run is active (``cell_running``): JupyterLab's
  status bar shows the last status it saw, and showed ``Idle`` after every click or keystroke
  (the wrapper's idle) and after the widget frontend's ``create_subshell_request`` on the
  control channel, although the cell was still running. Every ``idle`` published for another
  request while the cell runs is followed by ``busy`` under the cell's own request.

Nothing here imports ipykernel at module import time; the kernel object comes from the shell.
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Awaitable, Callable
from typing import Any

MIN_INTERACTIVE_IPYKERNEL = (7, 4)

_ACK_MARKER = "__pi_notebook_comm_ack__"
_RUNNING_CELL = "_pi_notebook_running_cell"
_BUSY_MARKER = "__pi_notebook_keep_busy__"


def parse_version(text: str) -> tuple[int, ...]:
    """The leading numeric release of a version string: ``"7.4.0rc1"`` -> ``(7, 4, 0)``."""
    parts: list[int] = []
    for piece in text.split("."):
        match = re.match(r"\d+", piece)
        if match is None:
            break
        parts.append(int(match.group()))
        if match.end() != len(piece):
            break
    return tuple(parts)


def ipykernel_version() -> tuple[int, ...] | None:
    """The installed ipykernel's version: the running kernel's own ``__version__`` when it is
    imported (``importlib.metadata`` costs tens of milliseconds to import at ``%load_ext``)."""
    version = getattr(sys.modules.get("ipykernel"), "__version__", None)
    if isinstance(version, str):
        return parse_version(version)
    from importlib import metadata

    try:
        return parse_version(metadata.version("ipykernel"))
    except metadata.PackageNotFoundError:
        return None


def get_kernel(shell: Any) -> Any | None:
    """The ipykernel ``Kernel`` behind ``shell``, or ``None`` (terminal / bare shell)."""
    kernel = getattr(shell, "kernel", None)
    if kernel is None or not hasattr(kernel, "shell_handlers"):
        return None
    return kernel


def comms_during_cell(kernel: Any, version: tuple[int, ...] | None = None) -> bool:
    """True when ``kernel`` handles widget messages while an awaiting cell runs."""
    if kernel is None:
        return False
    version = ipykernel_version() if version is None else version
    if version is None or version < MIN_INTERACTIVE_IPYKERNEL:
        return False
    lock = getattr(kernel, "_main_asyncio_lock", None)
    return lock is not None and hasattr(lock, "locked")


def inactive_controls_reason(shell: Any, version: tuple[int, ...] | None = None) -> str | None:
    """One line saying why Stop / Approve / steering cannot work here, or ``None`` if they can."""
    kernel = get_kernel(shell)
    if kernel is None:
        return "Controls inactive: no Jupyter kernel, so there is no widget frontend."
    version = ipykernel_version() if version is None else version
    if not comms_during_cell(kernel, version):
        shown = ".".join(map(str, version)) if version else "unknown"
        return (
            f"Controls inactive: ipykernel {shown} handles widget messages only after the cell ends "
            "(needs ipykernel >= 7.4)."
        )
    return None


def can_await(shell: Any) -> bool:
    """True when IPython will run a top-level ``await`` cell on an asyncio loop."""
    if not getattr(shell, "autoawait", False):
        return False
    from IPython.core.async_helpers import _asyncio_runner

    return getattr(shell, "loop_runner", None) is _asyncio_runner


def widgets_available() -> bool:
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def execute_request_content(kernel: Any) -> dict[str, Any] | None:
    """The content of the ``execute_request`` being handled, if the kernel exposes it."""
    try:
        parent = kernel.get_parent("shell")
    except Exception:  # older kernels: get_parent() takes no channel
        try:
            parent = kernel.get_parent()
        except Exception:
            return None
    if not isinstance(parent, dict):
        return None
    header = parent.get("header") or {}
    if header.get("msg_type") != "execute_request":
        return None
    content = parent.get("content")
    return content if isinstance(content, dict) else None


# --- the comm_msg status wrapper ------------------------------------------------------------


def install_comm_ack(kernel: Any) -> bool:
    """Publish ``status: idle`` for every ``comm_msg`` handled while a cell runs (idempotent).

    Returns True if the wrapper is in place after the call. Only ipykernel >= 7.4 needs it
    (older kernels do not handle comms during a cell at all).
    """
    if not comms_during_cell(kernel):
        return False
    handlers = kernel.shell_handlers
    current = handlers.get("comm_msg")
    if current is None:
        return False
    _keep_busy(kernel)
    if getattr(current, _ACK_MARKER, False):
        return True
    original: Callable[..., Any] = current
    lock = kernel._main_asyncio_lock

    def ack(msg: Any) -> None:
        # The lock is held by a running cell: the kernel dispatched this comm concurrently
        # and sends no busy/idle pair, which the widget frontend waits for before its next sync.
        if lock.locked():
            kernel._publish_status("idle", "shell", parent=msg)

    def comm_msg_with_ack(stream: Any, ident: Any, msg: Any) -> Any:
        result = original(stream, ident, msg)
        if inspect.isawaitable(result):
            return _ack_after(result, ack, msg)
        ack(msg)
        return result

    setattr(comm_msg_with_ack, _ACK_MARKER, True)
    comm_msg_with_ack.__wrapped__ = original  # type: ignore[attr-defined]
    handlers["comm_msg"] = comm_msg_with_ack
    return True


def _keep_busy(kernel: Any) -> None:
    """Follow every ``idle`` of another request by ``busy`` under the running cell (idempotent;
    does nothing while no ``%%pi`` run is active)."""
    publish = getattr(kernel, "_publish_status", None)
    if publish is None or getattr(publish, _BUSY_MARKER, False):
        return

    def publish_status(status: str, channel: str, parent: Any = None) -> None:
        publish(status, channel, parent)
        cell = getattr(kernel, _RUNNING_CELL, None)
        if status != "idle" or cell is None:
            return
        shown = parent if parent is not None else _parent_of(kernel, channel)
        if _msg_id(shown) != _msg_id(cell):
            publish("busy", "shell", cell)

    setattr(publish_status, _BUSY_MARKER, True)
    kernel._publish_status = publish_status
    _remember_execute_requests(kernel)


_LAST_EXECUTE = "__pi_notebook_last_execute_request__"


def _remember_execute_requests(kernel: Any) -> None:
    """Keep the last ``execute_request`` the kernel started, whatever it handled since.

    On ipykernel >= 7.4 comm, info and subshell requests are handled while a cell runs, and each
    replaces the kernel's current shell parent; asking for it when the run starts could then
    name one of them instead of the cell (seen under load: the status bar stayed Idle for a
    whole run). Execute requests run one at a time, so the last one started is the cell."""
    original = getattr(kernel, "set_parent", None)
    if original is None or getattr(original, _BUSY_MARKER, False):
        return

    def set_parent(ident: Any, parent: Any, channel: str = "shell") -> Any:
        header = parent.get("header") if isinstance(parent, dict) else None
        if channel == "shell" and isinstance(header, dict) and header.get("msg_type") == "execute_request":
            setattr(kernel, _LAST_EXECUTE, parent)
        return original(ident, parent, channel)

    setattr(set_parent, _BUSY_MARKER, True)
    kernel.set_parent = set_parent


def _parent_of(kernel: Any, channel: str) -> Any:
    try:
        return kernel.get_parent(channel)
    except Exception:
        return None


def _msg_id(msg: Any) -> Any:
    header = msg.get("header") if isinstance(msg, dict) else None
    return header.get("msg_id") if isinstance(header, dict) else None


def cell_running(kernel: Any) -> Callable[[], None]:
    """Record the ``execute_request`` being handled as a cell whose ``%%pi`` run is active (call
    on the main thread while the cell runs); returns the function that clears it."""
    parent = _shell_parent(kernel) if kernel is not None else None
    if parent is None:
        return lambda: None
    setattr(kernel, _RUNNING_CELL, parent)
    # An idle published before this point (a control or comm request handled while the cell
    # started, such as the widget manager's first create_subshell_request) saw no running cell
    # and was not followed by busy; say busy now, or a silent run shows Idle until it ends.
    publish = getattr(kernel, "_publish_status", None)
    if publish is not None:
        publish("busy", "shell", parent)

    def done() -> None:
        if getattr(kernel, _RUNNING_CELL, None) is parent:
            setattr(kernel, _RUNNING_CELL, None)

    return done


def _shell_parent(kernel: Any) -> dict[str, Any] | None:
    remembered = getattr(kernel, _LAST_EXECUTE, None)
    if isinstance(remembered, dict):
        return remembered
    try:
        parent = kernel.get_parent("shell")
    except Exception:
        return None
    header = parent.get("header") if isinstance(parent, dict) else None
    return parent if isinstance(header, dict) and header.get("msg_type") == "execute_request" else None


def uninstall_comm_ack(kernel: Any) -> None:
    """Restore the original ``comm_msg`` handler if ours is still the installed one."""
    if kernel is None:
        return
    current = kernel.shell_handlers.get("comm_msg")
    if current is not None and getattr(current, _ACK_MARKER, False):
        kernel.shell_handlers["comm_msg"] = current.__wrapped__
    if getattr(getattr(kernel, "_publish_status", None), _BUSY_MARKER, False):
        del kernel._publish_status  # the class's own method again


async def _ack_after(result: Awaitable[Any], ack: Callable[[Any], None], msg: Any) -> Any:
    value = await result
    ack(msg)
    return value


def running_cell_id(kernel: Any) -> str | None:
    """The id of the notebook cell being executed, as JupyterLab and Notebook 7 send it in the
    ``execute_request`` metadata (``cellId``); ``None`` from other clients."""
    parent = _shell_parent(kernel) if kernel is not None else None
    metadata = parent.get("metadata") if isinstance(parent, dict) else None
    cell_id = metadata.get("cellId") if isinstance(metadata, dict) else None
    return cell_id if isinstance(cell_id, str) and cell_id else None


def execute_request_cell_id(kernel: Any) -> str | None:
    """The notebook cell id of the ``execute_request`` being handled (JupyterLab and Notebook 7
    send it as the request's ``metadata.cellId``), or ``None``."""
    parent = _shell_parent(kernel)
    metadata = parent.get("metadata") if parent is not None else None
    cell_id = metadata.get("cellId") if isinstance(metadata, dict) else None
    return cell_id if isinstance(cell_id, str) and cell_id else None


def execute_request_code(kernel: Any) -> str | None:
    """The code of the ``execute_request`` being handled (for a ``%%pi`` cell: the cell's whole
    source, as the page that ran it had it), or ``None``."""
    parent = _shell_parent(kernel)
    content = parent.get("content") if parent is not None else None
    code = content.get("code") if isinstance(content, dict) else None
    return code if isinstance(code, str) else None
