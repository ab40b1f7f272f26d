"""The kernel's end of the notebook bridge: one comm (target ``pi_notebook.bridge``) to the
frontend's notebook panel of this kernel, opened on first use and kept for the next runs.

The frontend answers the comm's opening with a ``hello`` (frontend name, notebook path), then
one reply per request ``{req, op, ...}`` (``req`` numbers it). Replies arrive as
``comm_msg`` on the shell channel, which ipykernel (>= 7.4) handles while a cell awaits, so
``request`` can be awaited from a ``%%pi`` run or an awaited ``%pi undo``, never from code
that blocks the kernel's loop.

Where no frontend has the extension: JupyterLab and Notebook 7 without it close the comm at
once (unknown target); a frontend that ignores comms (VS Code, ``jupyter console``, Colab) does
not answer, so the opening waits at most ``HELLO_TIMEOUT``; the reason is kept until the next
run, so a run pays that wait once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from dataclasses import dataclass
from typing import Any

TARGET = "pi_notebook.bridge"
PROTOCOL = 1
HELLO_TIMEOUT = 3.0
"""Seconds the opening waits for the frontend's hello (JupyterLab answers in milliseconds)."""
REQUEST_TIMEOUT = 20.0
"""Seconds a request waits for its reply (a reloaded page no longer holds the comm)."""

NO_EXTENSION = (
    "the frontend has no pi-notebook-bridge extension (pip install pi-notebook into the environment "
    "JupyterLab runs in, restart JupyterLab and reload the page)"
)
NO_ANSWER = (
    "no notebook frontend answered the bridge (VS Code, Colab and jupyter console cannot edit "
    "cells from the kernel)"
)


class BridgeUnavailable(Exception):
    """Nothing in the frontend can read or edit the notebook; the message says why."""


class BridgeRefused(Exception):
    """The frontend refused a request (a conflict, an unknown cell id); the message says why."""


@dataclass(frozen=True, slots=True)
class Hello:
    frontend: str
    """``JupyterLab`` or ``Jupyter Notebook``."""
    version: str
    path: str
    """The notebook's path relative to the server's root."""


class NotebookBridge:
    """The comm to this kernel's notebook panel. Nothing is opened before ``connect``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.hello: Hello | None = None
        self.unavailable: str | None = None
        self.latency: list[float] = []
        """Seconds each request took, request to reply (for ``bench/``)."""
        self._comm: Any = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._hello: asyncio.Future[Hello] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def forget(self) -> None:
        """Forget why the bridge was unavailable: the next run tries again (a new page may
        have the extension)."""
        if self._comm is None:
            self.unavailable = None

    async def connect(self) -> Hello:
        """Open the comm (once) and wait for the frontend's hello; ``BridgeUnavailable`` when
        nothing answers."""
        if self.hello is not None and self._comm is not None:
            return self.hello
        if self.unavailable is not None:
            raise BridgeUnavailable(self.unavailable)
        if self.kernel is None:
            raise self._fail("no Jupyter kernel, so there is no notebook frontend")
        from comm import create_comm

        self._loop = asyncio.get_running_loop()
        self._hello = self._loop.create_future()
        self._comm = create_comm(target_name=TARGET, data={"protocol": PROTOCOL})
        self._comm.on_msg(self._on_msg)
        self._comm.on_close(self._on_close)
        try:
            self.hello = await asyncio.wait_for(asyncio.shield(self._hello), HELLO_TIMEOUT)
        except TimeoutError:
            self._drop()
            raise self._fail(NO_ANSWER) from None
        except BridgeUnavailable as exc:
            self._drop()
            raise self._fail(str(exc)) from None
        return self.hello

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send ``op`` and return the frontend's ``result``; ``BridgeRefused`` when the frontend
        refused it, ``BridgeUnavailable`` when the comm is gone or silent."""
        await self.connect()
        request_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        started = time.perf_counter()
        self._comm.send({"req": request_id, "op": op, **fields})
        try:
            reply = await asyncio.wait_for(future, REQUEST_TIMEOUT)
        except TimeoutError:
            self._drop()
            self.hello = None
            raise BridgeUnavailable(
                f"the notebook did not answer within {REQUEST_TIMEOUT:g} s (page closed or reloaded?)"
            ) from None
        finally:
            self._waiting.pop(request_id, None)
        self.latency.append(time.perf_counter() - started)
        if not reply.get("ok"):
            error = str(reply.get("error") or "unknown error")
            if reply.get("refused"):
                raise BridgeRefused(error)
            raise BridgeUnavailable(f"the notebook frontend failed: {error}")
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    def _on_msg(self, msg: dict[str, Any]) -> None:
        """A frontend message. ipykernel may handle it on a subshell's thread (JupyterLab sends
        comm messages to a subshell when the kernel has them): the waiting futures belong to
        the loop that opened the comm, so they are resolved there."""
        data = (msg.get("content") or {}).get("data") or {}
        self._on_loop(self._deliver, data)

    def _on_close(self, msg: dict[str, Any]) -> None:
        self._on_loop(self._closed)

    def _on_loop(self, fn: Any, *args: Any) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    def _deliver(self, data: dict[str, Any]) -> None:
        if data.get("op") == "hello":
            hello = Hello(
                str(data.get("frontend", "")), str(data.get("version", "")), str(data.get("path", ""))
            )
            if self._hello is not None and not self._hello.done():
                self._hello.set_result(hello)
            return
        future = self._waiting.get(data.get("req"))  # type: ignore[arg-type]
        if future is not None and not future.done():
            future.set_result(data)

    def _closed(self) -> None:
        opened = self.hello is not None
        self._comm = None
        self.hello = None
        if self._hello is not None and not self._hello.done():
            self._hello.set_exception(BridgeUnavailable(NO_EXTENSION))
        gone = BridgeUnavailable("the notebook closed the bridge (page closed or reloaded?)")
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(gone)
        if not opened:
            self.unavailable = self.unavailable or NO_EXTENSION

    def _drop(self) -> None:
        comm, self._comm = self._comm, None
        if comm is not None:
            with contextlib.suppress(Exception):  # the kernel may be shutting down: nobody to tell
                comm.close()

    def _fail(self, reason: str) -> BridgeUnavailable:
        self.unavailable = reason
        return BridgeUnavailable(reason)
