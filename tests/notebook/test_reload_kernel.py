"""A page that connects while a ``%%pi`` run streams, or after it, in a real ipykernel driven
through jupyter_client: the client opens the ``jupyter.widget.control`` comm and asks for the
widget states, as the widget manager of a reloaded JupyterLab or Notebook 7 page does. The run
still ends with the static ``update_display_data`` (for the page that ran the cell), and the
live widget itself takes the frozen look with the line saying how to keep it: at the end of the
run when the page connected during it, when the next page connects otherwise. A run no other
page saw sends nothing more."""

from __future__ import annotations

import contextlib
import sys
import time
import uuid
from pathlib import Path
from queue import Empty
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch

pytestmark = pytest.mark.kernel

NOTICE = "saved during the run and opened again"


def connect_page(k: Kernel) -> str:
    """What a new page's widget manager sends: the control comm, then ``request_states``."""
    comm_id = uuid.uuid4().hex
    session = k.kc.session
    content = {"comm_id": comm_id, "target_name": "jupyter.widget.control", "data": {}}
    k.kc.shell_channel.send(session.msg("comm_open", content, metadata={"version": "1.0.0"}))
    return k.send_comm(comm_id, {"method": "request_states"})


def frozen_looks(watch: Watch) -> list[str]:
    """The HTML the live view's root box shows in place of its transcript, if it does."""
    roots = [w for w in watch.find("VBoxModel") if "pi-view" in w.state.get("_dom_classes", ())]
    found = []
    for root in roots:
        children = [c.removeprefix("IPY_MODEL_") for c in root.state.get("children", ())]
        if len(children) == 1 and children[0] in watch.widgets:
            found.append(str(watch.widgets[children[0]].state.get("value", "")))
    return found


def states_sent(watch: Watch, msgs: list[dict[str, Any]]) -> bool:
    return any(m["content"].get("data", {}).get("method") == "update_states" for m in msgs)


def test_a_page_that_connects_during_the_run_sees_it_freeze(k: Kernel) -> None:
    k.run("faux.set_responses(['Counting ' + 'slowly ' * 30 + 'to the end.'])")  # ~1.5 s
    cell = k.execute("%%pi --model faux:faux-1\ncount")
    seen: list[dict[str, Any]] = []
    asked: list[str] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        seen.append(msg)
        streaming = msg["msg_type"] == "comm_msg" and "outputs" in msg["content"]["data"].get("state", {})
        if not asked and streaming:
            asked.append(connect_page(k))  # mid-stream

    watch = Watch(k).until_replies([cell], react)
    assert watch.replies[cell][1]["status"] == "ok"
    assert asked
    assert states_sent(watch, seen)  # the new page got every widget's state
    assert NOTICE not in watch.final_bundle()["text/html"]  # the page that ran the cell
    [frozen] = frozen_looks(watch)
    assert "pi-static" in frozen
    assert "to the end." in frozen
    assert NOTICE in frozen
    assert "%pi show" in frozen


def test_a_page_that_connects_after_the_run_sees_it_frozen(k: Kernel) -> None:
    k.run("faux.set_responses(['A short answer.', 'Another one.'])")
    cell = k.execute("%%pi --model faux:faux-1\nanswer")
    watch = Watch(k).until_replies([cell])
    assert frozen_looks(watch) == []  # nobody else saw it: nothing more was sent
    later = k.execute("x = 1")
    request = connect_page(k)
    watch.until_replies([later])
    watch._settle()
    [frozen] = frozen_looks(watch)
    assert "A short answer." in frozen
    assert NOTICE in frozen
    assert request
    # once: the next run, which no page saw after it, stays as it is
    cell = k.execute("%%pi\nagain")
    second = Watch(k).until_replies([cell])
    assert frozen_looks(second) == []


def test_a_waiting_pi_show_gets_the_live_view_and_its_approval(k: Kernel) -> None:
    """A reloaded page that has no output for the run runs ``%pi show``: the request waits for
    the running cell, but the live view is published under it at once; Approve clicked there
    works, the freeze reaches it, and the ``%pi show`` itself adds nothing when it runs."""
    k.run(
        "faux.set_responses([tool_use('set_variable', {'name': 'set_on_new_page', 'value': 5}, 'a1'),"
        " 'Set from the new page.'])"
    )
    cell = k.execute("%%pi --model faux:faux-1\nset it")
    shown: list[str] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        if not shown and watch.find("ButtonModel", description="Approve"):
            shown.append(k.execute("%pi show"))  # queued behind the running cell
        if shown and msg["msg_type"] == "display_data" and msg["parent_header"].get("msg_id") == shown[0]:
            k.click(watch.button("Approve").comm_id)

    watch = Watch(k).until_replies([cell], react)
    watch.until_replies(shown)
    assert watch.replies[cell][1]["status"] == "ok"
    assert k.value("set_on_new_page") == "5"
    # what the waiting request's cell got: the live widget, then the frozen output, nothing more
    for_show = [(kind, c) for _, kind, c in watch.displays if kind == "display_data"]
    [(_, first), (_, attached)] = for_show
    assert "application/vnd.jupyter.widget-view+json" in attached["data"]
    assert attached["transient"]["display_id"] == first["transient"]["display_id"]
    assert "Set from the new page." in watch.final_bundle()["text/html"]
    assert watch.replies[shown[0]][1]["status"] == "ok"
    assert not [t for t, text in watch.stdout if t > watch.replies[cell][0]]


def test_a_page_with_the_bridge_gets_the_run_back_with_its_source(k: Kernel) -> None:
    """A page that connects mid-run, with the notebook bridge: the kernel writes the run into
    its cell by id, the first write carrying the run's source (the reloaded document may hold
    an empty or older input, or no such cell: ``create``), the freeze only the output."""
    from pi_notebook.notebook.bridge.client import PROTOCOL, TARGET

    k.run("faux.set_responses(['Counting ' + 'slowly ' * 30 + 'to the end.'])")  # ~1.5 s
    source = "%%pi --model faux:faux-1\ncount, typed after the last save"
    content = {
        "code": source,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": True,  # a page, not a headless client
        "stop_on_error": True,
    }
    request = k.kc.session.msg("execute_request", content, metadata={"cellId": "run-cell"})
    k.kc.shell_channel.send(request)
    cell = str(request["header"]["msg_id"])
    writes: list[dict[str, Any]] = []
    asked: list[str] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        data = msg["content"].get("data", {})
        streaming = msg["msg_type"] == "comm_msg" and "outputs" in data.get("state", {})
        if not asked and streaming:
            asked.append(connect_page(k))  # a reloaded page, mid-stream
        if msg["msg_type"] == "comm_open" and msg["content"].get("target_name") == TARGET:
            hello = {
                "op": "hello",
                "protocol": PROTOCOL,
                "frontend": "JupyterLab",
                "version": "4",
                "path": "n.ipynb",
            }
            k.send_comm(msg["content"]["comm_id"], hello)
        if msg["msg_type"] == "comm_msg" and data.get("op") == "set_outputs":
            writes.append(data)
            k.send_comm(msg["content"]["comm_id"], {"req": data["req"], "ok": True, "result": {}})

    watch = Watch(k)
    deadline = time.monotonic() + 30
    while len(writes) < 2 and time.monotonic() < deadline:  # the freeze is written as the run ends
        with contextlib.suppress(Empty):
            msg = k.kc.get_iopub_msg(timeout=0.05)
            watch._record(msg)
            react(watch, msg)
        watch._poll_shell()
    watch.until_replies([cell])
    assert watch.replies[cell][1]["status"] == "ok"
    assert asked
    live, frozen = writes[0], writes[-1]
    assert len(writes) >= 2
    assert (live["id"], live["source"], live["create"]) == ("run-cell", source, True)
    assert "application/vnd.jupyter.widget-view+json" in live["outputs"][0]["data"]
    assert "source" not in frozen  # the page has it since the first write
    assert "create" not in frozen
    assert "to the end." in frozen["outputs"][0]["data"]["text/html"]
