"""Approvals and MCP servers in a real ipykernel driven through jupyter_client: a ``%%pi`` run
with the faux provider calls a tool of the real test MCP server (``tests/mcp/server_app.py``
over stdio) and the test clicks Approve on one call and Deny on the other; a user hook asks
with ``ask_approval`` (its reason shown on the card) and the policy does not ask twice; and
no server process outlives the kernel."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp_types", reason="the MCP SDK is an optional extra: pip install 'pi-notebook[mcp]'")

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "mcp"))

from kernel_driver import APPROVAL_TOOLS, Kernel, Watch
from mcp_helpers import STDIO_COMMAND, process_exists, wait_gone

pytestmark = pytest.mark.kernel

ADD_SERVER = f"%pi mcp add st -- {shlex.join(STDIO_COMMAND)}"
PID = (
    "[int(x.split('=')[1]) for x in __import__('pi_notebook.notebook.state', fromlist=['s'])"
    ".state_for().mcp.get('st').stderr_tail(200) if x.startswith('server_app pid=')][0]"
)
RESULTS = "[(m.tool_call_id, m.is_error, m.content[0].text) for m in _pi.messages if m.role == 'toolResult']"


def click_in_order(k: Kernel, answers: list[str]) -> tuple[list[str], Any]:
    """A reaction that answers the n-th approval prompt with ``answers[n]`` ("Approve" or
    "Deny"), recording what the view showed when each prompt appeared."""
    seen: list[str] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        n = len(seen)
        prompts = min(len(watch.find("ButtonModel", description=d)) for d in ("Approve", "Deny"))
        if prompts > n and n < len(answers):
            seen.append(watch.shown_text())
            label = answers[len(seen) - 1]
            k.click(watch.find("ButtonModel", description=label)[len(seen) - 1].comm_id)

    return seen, react


def test_an_mcp_tool_call_is_approved_and_another_denied(k: Kernel) -> None:
    reply = k.run(ADD_SERVER, timeout=60)
    assert reply["status"] == "ok", reply
    assert "st__echo [ask]" in reply["stdout"]
    k.run(
        "faux.set_responses([tool_use('st__echo', {'text': 'approved'}, 'm1'),"
        " tool_use('st__echo', {'text': 'denied'}, 'm2'), 'all done'])"
    )
    cell = k.execute("%%pi --model faux:faux-1 --approve auto\necho twice")  # MCP tools still ask
    seen, react = click_in_order(k, ["Approve", "Deny"])
    watch = Watch(k).until_replies([cell], react, timeout=40)
    assert len(seen) == 2
    assert watch.replies[cell][1]["status"] == "ok"
    assert (
        k.value(RESULTS) == "[('m1', False, 'echo: approved'), ('m2', True, 'Tool call denied by the user.')]"
    )
    text = watch.final_bundle()["text/plain"]
    assert "[tool] st__echo (done)" in text
    assert "[tool] st__echo (denied)" in text
    assert k.run("%pi mcp remove st")["status"] == "ok"




def test_a_hook_asks_with_its_reason_and_the_policy_does_not_ask_again(k: Kernel) -> None:
    assert k.run(APPROVAL_TOOLS)["status"] == "ok"
    k.run(
        "faux.set_responses([tool_use('peek', {'path': '/etc'}, 'p1'),"
        " tool_use('wipe', {'path': '/tmp/x'}, 'w1'), 'done'])"
    )
    cell = k.execute("%%pi --model faux:faux-1\nlook, then wipe")
    # two prompts: the hook's for peek, the hook's for wipe; wipe's own policy (ask) must not
    # ask a third time, or the run would wait here until the watch times out
    seen, react = click_in_order(k, ["Approve", "Approve"])
    watch = Watch(k).until_replies([cell], react, timeout=40)
    assert watch.replies[cell][1]["status"] == "ok"
    assert len(seen) == 2
    assert "peek touches /etc" in seen[0]
    assert "wipe touches /tmp/x" in seen[1]
    assert len(watch.find("ButtonModel", description="Approve")) == 2
    assert k.value(RESULTS) == "[('p1', False, 'peeked /etc'), ('w1', False, 'wiped /tmp/x')]"
    assert k.value("wiped") == "['/tmp/x']"
    k.run("agent.before_tool_call = None; agent.state.tools = []")


def test_no_server_process_outlives_the_kernel(tmp_path: Path) -> None:
    k = Kernel(tmp_path)
    try:
        reply = k.run(ADD_SERVER, timeout=60)
        assert reply["status"] == "ok", reply
        pid = int(k.value(PID))
        assert process_exists(pid)
    finally:
        k.kc.stop_channels()
        k.km.shutdown_kernel(now=False)  # a shutdown_request, as a frontend sends it
    assert wait_gone(pid, timeout=20), f"MCP server process {pid} outlived the kernel"


def test_no_server_process_outlives_a_killed_kernel(tmp_path: Path) -> None:
    """SIGKILL leaves no exit hook to run: the server sees its stdin close and exits."""
    k = Kernel(tmp_path)
    try:
        assert k.run(ADD_SERVER, timeout=60)["status"] == "ok"
        pid = int(k.value(PID))
    finally:
        k.close()  # shutdown_kernel(now=True): the kernel process is killed
    assert wait_gone(pid, timeout=20), f"MCP server process {pid} outlived the killed kernel"
