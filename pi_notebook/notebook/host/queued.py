"""Execute requests that arrive while a cell runs, seen before they wait for it.

ipykernel (>= 7, with subshells) hands every shell message of the main shell to
``Kernel.shell_main``, which waits for the running cell's lock before it reads an
``execute_request``. ``watch_queued`` puts a wrapper in front of it (through the subshell
manager's ``set_on_recv_callback``, the call ipykernel itself uses) that shows each waiting
``execute_request`` to the listeners first, then hands it on unchanged.

Why: a page reloaded during a ``%%pi`` run, from a notebook not saved since the run began,
has no output for the run, and the frontend drops every output message of the closed page's
request. A cell that page runs is a request of its own: output published with that request as
parent reaches that cell at once, while the request still waits, so the run can show its live
view there (``run.runner``).

Idempotent; does nothing on kernels without a subshell manager. Installed from the kernel's
main thread, in an empty ``contextvars.Context`` (ipykernel copies the current context into the
callback, and the installing cell's context must not become every later message's).
"""

from __future__ import annotations

import contextvars
import hmac
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_MARKER = "__pi_notebook_queued__"
_listeners: list[Callable[[dict[str, Any]], None]] = []


def _manager(kernel: Any) -> Any | None:
    thread = getattr(kernel, "shell_channel_thread", None)
    manager = getattr(thread, "manager", None)
    if manager is None or not hasattr(manager, "set_on_recv_callback"):
        return None
    return manager


def _bytes(frame: Any) -> bytes:
    return bytes(frame.bytes if hasattr(frame, "bytes") else frame)


def _read(session: Any, frames: Any) -> dict[str, Any] | None:
    """The ``execute_request`` in ``frames`` if it is one, signature checked. Not through
    ``Session.deserialize``: that records the signature, and the kernel's own reading of the
    same message would then fail as a replay."""
    _, parts = session.feed_identities(frames, copy=False)
    signature, header, parent, metadata, content = (_bytes(part) for part in parts[:5])
    if session.auth is not None:
        expected = session.sign([header, parent, metadata, content])
        if not hmac.compare_digest(signature, expected):
            return None
    head = session.unpack(header)
    if head.get("msg_type") != "execute_request":
        return None
    return {
        "header": head,
        "parent_header": session.unpack(parent),
        "metadata": session.unpack(metadata),
        "content": session.unpack(content),
    }


def _peek(kernel: Any, frames: Any) -> None:
    try:
        msg = _read(kernel.session, frames)
    except Exception:
        return  # ipykernel reports a malformed message itself
    if msg is None:
        return
    for listener in list(_listeners):
        try:
            listener(msg)
        except Exception:
            log.exception("pi_notebook: a queued-request listener failed")


def _install(kernel: Any, manager: Any) -> None:
    original = kernel.shell_main

    async def shell_main(subshell_id: str | None, msg: Any) -> Any:
        if subshell_id is None and _listeners:
            _peek(kernel, msg)
        return await original(subshell_id, msg)

    setattr(shell_main, _MARKER, True)
    manager.set_on_recv_callback(shell_main)
    setattr(kernel, _MARKER, True)


def watch_queued(kernel: Any, listener: Callable[[dict[str, Any]], None]) -> Callable[[], None] | None:
    """Call ``listener(msg)`` for every main-shell ``execute_request`` as it arrives, until the
    returned function is called; ``None`` when this kernel cannot (no subshell manager)."""
    manager = _manager(kernel) if kernel is not None else None
    if manager is None:
        return None
    if not getattr(kernel, _MARKER, False):
        try:
            contextvars.Context().run(_install, kernel, manager)
        except Exception:
            log.exception("pi_notebook: could not watch queued requests")
            return None
    _listeners.append(listener)

    def stop() -> None:
        if listener in _listeners:
            _listeners.remove(listener)

    return stop
