"""The edit tools where no frontend can edit the notebook, over a real ipykernel.

* A client that ignores the bridge's comm (as VS Code, Colab and ``jupyter console`` do):
  ``read_notebook`` falls back to the kernel's history and says why, ``insert_cells`` to the
  ``set_next_input`` payload, and the run waits for the bridge once, not once per tool.
* A client that closes the comm at once (JupyterLab without the labextension): the same,
  without the wait, and the reason names the missing extension.
* Headless (nbclient, as nbconvert, papermill and nbval run notebooks): every edit tool ends
  by policy with a one-line reason, nothing waits; with ``--approve auto`` each tool says what
  it could not do, and ``delete_cells``, which always asks, is still denied.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch
from test_headless_kernel import FAUX_SETUP, execute, printed

from pi_notebook.notebook.bridge.client import HELLO_TIMEOUT, NO_ANSWER, NO_EXTENSION, TARGET

pytestmark = pytest.mark.kernel

SCRIPT = """
faux.set_responses([
    tool_use("read_notebook", {}, "r1"),
    tool_use("insert_cells", {"cells": [{"source": "a = 1"}, {"source": "# Notes", "cell_type": "markdown"}]},
             "i1"),
    tool_use("edit_cell", {"cell_id": "c1", "source": "x = 2"}, "e1"),
    "Done.",
])
"""
RUN = "%%pi --model faux:faux-1 --approve auto --text\nfix it"
RESULTS = "print(*[m.content[0].text for m in _pi.messages if m.role == 'toolResult'], sep='\\n---\\n')"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    k = Kernel(tmp_path_factory.mktemp("edits-kernel"))
    try:
        yield k
    finally:
        k.close()


def _run(kernel: Kernel, close_bridge: bool) -> tuple[str, float, dict[str, Any]]:
    kernel.fresh()
    assert kernel.run(SCRIPT)["status"] == "ok"
    opened: list[str] = []
    payloads: list[dict[str, Any]] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        content = msg["content"]
        if msg["msg_type"] == "comm_open" and content.get("target_name") == TARGET:
            opened.append(content["comm_id"])
            if close_bridge:  # what JupyterLab does with a comm whose target nobody registered
                closing = kernel.kc.session.msg("comm_close", {"comm_id": content["comm_id"], "data": {}})
                kernel.kc.shell_channel.send(closing)

    started = time.monotonic()
    msg_id = kernel.execute(RUN)
    watch = Watch(kernel).until_replies([msg_id], react, timeout=30)
    took = time.monotonic() - started
    assert len(opened) == 1  # the bridge was tried once for the whole run
    for _, reply in watch.replies.values():
        payloads.extend(reply.get("payload", []))
    return kernel.value(RESULTS.removeprefix("print(").removesuffix(")")), took, {"payload": payloads}


def test_a_client_that_ignores_the_bridge_gets_the_fallbacks(kernel: Kernel) -> None:
    text, took, reply = _run(kernel, close_bridge=False)
    read, insert, edit = text.split("\n---\n")
    assert read.startswith(f"Not the live notebook ({NO_ANSWER}). The notebook file is unknown")
    assert insert.startswith(f"Not inserted now ({NO_ANSWER}). A new code cell will be inserted")
    assert edit == (
        f"Not edited: {NO_ANSWER}. Tell the user to replace the source of cell c1 with:\n"
        "```python\nx = 2\n```"
    )
    [payload] = reply["payload"]
    assert payload["source"] == "set_next_input"
    assert payload["text"] == "a = 1"
    assert HELLO_TIMEOUT <= took < HELLO_TIMEOUT + 8


def test_a_frontend_without_the_extension_is_told_at_once(kernel: Kernel) -> None:
    text, took, _ = _run(kernel, close_bridge=True)
    read, insert, _edit = text.split("\n---\n")
    assert read.startswith(f"Not the live notebook ({NO_EXTENSION}).")
    assert insert.startswith(f"Not inserted now ({NO_EXTENSION}).")
    assert took < HELLO_TIMEOUT + 2


HEADLESS_SCRIPT = """
faux.set_responses([
    tool_use("insert_cells", {"cells": [{"source": "a = 1"}]}, "t1"),
    tool_use("edit_cell", {"cell_id": "c1", "source": "x = 2"}, "t2"),
    tool_use("delete_cells", {"cell_ids": ["c1"]}, "t3"),
    tool_use("run_cell", {"cell_id": "c1"}, "t4"),
    "Nothing done.",
] * 2)
"""
HEADLESS_RESULTS = "print(*[m.content[0].text for m in _pi.messages if m.role == 'toolResult'], sep='\\n')"


def test_headless_every_edit_tool_ends_by_policy_with_one_line(tmp_path: Path) -> None:
    sources = [
        FAUX_SETUP + HEADLESS_SCRIPT,
        "%%pi --model faux:faux-1\nfix my notebook",
        HEADLESS_RESULTS,
        "%%pi --approve auto\nfix it anyway",
        HEADLESS_RESULTS,
    ]
    cells = execute(tmp_path, sources, timeout=60).cells
    denied = (
        "Tool call denied: the approval policy in this headless run is 'deny'. The user can allow "
        "state-changing tools with `%%pi --approve auto`."
    )
    assert printed(cells[2]) == [denied] * 4
    assert printed(cells[4]) == [
        "Not inserted: this headless run (nbclient, nbconvert, papermill or nbval) does not insert cells "
        "from the kernel. Tell the user to copy this code into a new cell:",
        "```python",
        "a = 1",
        "```",
        "Not edited: this headless run has no notebook frontend. Tell the user to replace the source of "
        "cell c1 with:",
        "```python",
        "x = 2",
        "```",
        "Tool call denied: delete_cells always asks the user, and this run is headless.",
        "Not run: cell c1 is in a notebook this kernel cannot reach: this headless run has no notebook "
        "frontend.",
    ]
