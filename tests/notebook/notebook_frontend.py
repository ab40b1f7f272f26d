"""A notebook frontend with the pi-notebook-bridge, in the test process: it answers the bridge's
comm as ``labextension/src/index.ts`` does (``hello``, then ``read``, ``insert``, ``edit``,
``delete`` and ``set_outputs`` on a list of cells, refusing a write whose cell no longer holds
the source the kernel expects), so a real kernel's run edits this notebook as it would edit
JupyterLab's, and a test reads the result exactly.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from kernel_driver import Kernel, Watch

from pi_notebook.notebook.bridge.client import PROTOCOL, TARGET


class Refused(Exception):
    pass


class NotebookFrontend:
    """``react`` (for ``Watch.until_replies``) answers the bridge; ``cells`` is the document."""

    def __init__(self, k: Kernel, cells: list[tuple[str, str, str]]) -> None:
        """``cells``: (id, cell_type, source) each."""
        self.k = k
        self.cells: list[dict[str, Any]] = [
            {"id": i, "cell_type": t, "source": s, "metadata": {}, "outputs": [], "execution_count": None}
            for i, t, s in cells
        ]
        self.comm: str | None = None
        self.requests: list[dict[str, Any]] = []
        self._new = itertools.count(1)

    def shape(self) -> list[tuple[str, str, str]]:
        return [(c["id"], c["cell_type"], c["source"]) for c in self.cells]

    def cell(self, cell_id: str) -> dict[str, Any]:
        return self.cells[self._index(cell_id)]

    def react(self, watch: Watch, msg: dict[str, Any]) -> None:
        content = msg["content"]
        if msg["msg_type"] == "comm_open" and content.get("target_name") == TARGET:
            self.comm = content["comm_id"]
            hello = {
                "op": "hello",
                "protocol": PROTOCOL,
                "frontend": "JupyterLab",
                "version": "4",
                "path": "n.ipynb",
            }
            self.k.send_comm(content["comm_id"], hello)
        elif msg["msg_type"] == "comm_msg" and {"op", "req"} <= set(content["data"]):
            # the bridge's requests (widgets' messages have a method); the kernel keeps its comm
            # open across runs, so a frontend made for a later test answers on the same one
            data = content["data"]
            self.requests.append(data)
            try:
                reply = {"req": data["req"], "ok": True, "result": self._answer(data)}
            except Refused as exc:
                reply = {"req": data["req"], "ok": False, "error": str(exc), "refused": True}
            self.k.send_comm(content["comm_id"], reply)

    def _index(self, cell_id: str) -> int:
        for i, cell in enumerate(self.cells):
            if cell["id"] == cell_id:
                return i
        raise Refused(f"no cell with id {cell_id} in the notebook (deleted since it was read?)")

    def _check(self, cell_id: str, expect: str | None) -> dict[str, Any]:
        cell = self.cells[self._index(cell_id)]
        if expect is not None and cell["source"] != expect:
            raise Refused(f"cell {cell_id} changed since it was read")
        return cell

    def _answer(self, data: dict[str, Any]) -> dict[str, Any]:
        op = data["op"]
        if op == "read":
            return {"path": "n.ipynb", "dirty": True, "cells": copy.deepcopy(self.cells)}
        if op == "insert":
            index = data.get("index", len(self.cells))
            if isinstance(data.get("after"), str):
                index = self._index(data["after"]) + 1
            index = max(0, min(index, len(self.cells)))
            made = []
            for offset, cell in enumerate(data["cells"]):
                new = {"metadata": {}, **copy.deepcopy(cell)}
                new.setdefault("id", f"new-{next(self._new)}")
                if new["cell_type"] == "code":
                    new.setdefault("outputs", [])
                    new.setdefault("execution_count", None)
                self.cells.insert(index + offset, new)
                made.append(new["id"])
            return {"index": index, "ids": made}
        if op == "edit":
            self._check(data["id"], data.get("expect"))["source"] = data["source"]
            return {"id": data["id"]}
        if op == "delete":
            for cell_id in data["ids"]:
                self._check(cell_id, (data.get("expect") or {}).get(cell_id))
            removed = []
            for cell_id in data["ids"]:
                index = self._index(cell_id)
                removed.append({"index": index, "cell": self.cells.pop(index)})
            return {"removed": removed}
        if op == "set_outputs":
            cell = self._check(data["id"], data.get("expect"))
            before = {
                "outputs": cell["outputs"],
                "execution_count": cell["execution_count"],
                "created": False,
            }
            cell["outputs"], cell["execution_count"] = data["outputs"], data.get("execution_count")
            return before
        raise Refused(f"unknown request {op!r}")
