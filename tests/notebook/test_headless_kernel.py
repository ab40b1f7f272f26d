"""Headless runs end by policy, never hang: notebooks executed by ``nbclient.NotebookClient``
(what nbconvert, papermill and nbval do) against the faux provider and a loopback server.

* A tool that needs approval is denied at once, whatever asked for it (the run's default
  policy, an explicit ``--approve ask``, a ``c.PiMagics.approvals`` entry, ``ask_approval`` in a
  hook): the output says why in one line and the model gets the denial as the tool's result.
* A server that never answers, or stops in the middle of its answer, ends the cell by the run's
  own ``--timeout`` (a few seconds here) long before nbclient's 60 s cell timeout, with one
  line that says what to do.
* When nbclient's cell timeout comes first (``interrupt_on_timeout``), its one interrupt ends
  the run: the cell ends with the one-line ``KeyboardInterrupt``, a retry it was waiting for is
  said to be cancelled, the session file keeps the aborted turn, and the next cell works.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from faults.wire import WIRES
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from kernel_driver import APPROVAL_TOOLS, KERNEL_NAME, SETUP, loopback_models, write_kernelspec
from loopback import Delay, LoopbackServer, Reply, serving

from pi_notebook.notebook.run.errors import INTERRUPTED

pytestmark = pytest.mark.kernel
nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

CELL_TIMEOUT_S = 60  # nbclient's cell timeout for the runs that must end by their own timeout
SILENT_S = 120.0  # how long the silent server holds out: past every cell timeout here
WIRE = WIRES["openai-completions"]
MODEL = f"--model loop-cc:{WIRE.model_id}"
FAUX_SETUP = SETUP.replace("tokens_per_second=40", "tokens_per_second=None")


def execute(tmp_path: Path, sources: list[str], **options: Any) -> Any:
    """Run ``sources`` as a notebook under nbclient; the executed notebook.

    The kernel manager is asynchronous, as the one nbclient makes for nbconvert and papermill:
    with a blocking one nbclient waits for output in blocking calls and its cell timeout never
    fires."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    specs = KernelSpecManager(kernel_dirs=[str(write_kernelspec(tmp_path))])
    km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
    resources = {"metadata": {"path": str(tmp_path)}}
    nbclient.NotebookClient(nb, km=km, resources=resources, **options).execute()
    return nb


def shown(cell: Any) -> str:
    """The ``%%pi`` cell's one static output (a headless run draws no widget)."""
    [output] = [o for o in cell.outputs if o.output_type == "display_data"]
    return str(output.data["text/plain"])


def printed(cell: Any) -> list[str]:
    return "".join(o.text for o in cell.outputs if o.output_type == "stream").splitlines()


# --- approvals -----------------------------------------------------------------------------------

SCRIPT = """
agent.before_tool_call = None  # until the last run
faux.set_responses([
    tool_use("wipe", {"path": "/a"}, "w1"), "Not wiped.",
    tool_use("wipe", {"path": "/b"}, "w2"), "Not wiped either.",
    tool_use("peek", {"path": "/c"}, "p1"), "Not allowed to peek.",
    tool_use("peek", {"path": "/d"}, "p2"), "The hook said no.",
])
"""
RESULTS = "print(*[m.content[0].text for m in agent.state.messages if m.role == 'toolResult'], sep='\\n')"


def test_tools_that_need_approval_are_denied_at_once_with_a_reason(tmp_path: Path) -> None:
    sources = [
        FAUX_SETUP + APPROVAL_TOOLS + SCRIPT,
        "%%pi --model faux:faux-1 --tools none --approve ask\nwipe /a",  # asked for buttons
        "%%pi --tools none\nwipe /b",  # the default policy
        "%config PiMagics.approvals = {'peek': 'ask'}",
        "%%pi --tools none\npeek at /c",  # a per-tool policy of ask
        "%config PiMagics.approvals = {}\nagent.before_tool_call = confirm",
        "%%pi --tools none\npeek at /d",  # a hook that asks
        f"print(wiped)\n{RESULTS}",
    ]
    # every %%pi cell would wait for a click until nbclient's timeout if anything asked a human
    nb = execute(tmp_path, sources, timeout=CELL_TIMEOUT_S)
    cells = nb.cells
    assert (
        "Headless run (the client sent the cell without stdin (nbclient, nbconvert, nbval, papermill)): "
        "--approve ask became deny, since nobody can click Approve; wipe is blocked (pass --approve "
        "auto to allow them)."
    ) in shown(cells[1]).splitlines()
    assert (
        "Headless run: approvals follow --approve deny; wipe is blocked (pass --approve auto to allow them)."
    ) in shown(cells[2]).splitlines()
    for index, tool in ((1, "wipe"), (2, "wipe"), (4, "peek"), (6, "peek")):
        assert f"[tool] {tool} (denied)" in shown(cells[index])
        assert [o.output_type for o in cells[index].outputs] == ["display_data"]  # no error
    assert printed(cells[7]) == [
        "[]",  # nothing was wiped
        "Tool call denied: the approval policy in this headless run is 'deny'. The user can allow "
        "state-changing tools with `%%pi --approve auto`.",
        "Tool call denied: the approval policy in this headless run is 'deny'. The user can allow "
        "state-changing tools with `%%pi --approve auto`.",
        "Tool call denied: peek needs approval (c.PiMagics.approvals['peek'] is 'ask') and this run "
        "is headless.",
        "The user said no.",
    ]


# --- silent servers ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with serving(LoopbackServer()) as srv:
        yield srv


def served_setup(server: LoopbackServer, **config: Any) -> str:
    lines = [f"%config PiMagics.{name} = {value!r}" for name, value in config.items()]
    return FAUX_SETUP + loopback_models(server.url, "http://127.0.0.1:9") + "\n".join(lines)


def started_then_silent() -> Reply:
    script = WIRE.text_script("Half an answer, then nothing")
    return Reply(200, [*script.head, *script.text[:1], Delay(SILENT_S)])


def good_answer(text: str) -> Reply:
    return Reply(200, WIRE.text_script(text).parts())


def test_a_silent_server_ends_the_cell_by_the_runs_own_timeout(
    tmp_path: Path, server: LoopbackServer
) -> None:
    """nbclient would fail the notebook with a CellTimeoutError at 60 s; the run's --timeout of
    1 s (and one retry) ends each cell first, with a line that says what to do."""
    server.replies.clear()
    server.queue(Reply(head_delay=SILENT_S), Reply(head_delay=SILENT_S))  # the call and its retry
    server.queue(started_then_silent(), started_then_silent())
    server.queue(good_answer("All good."))
    sources = [
        served_setup(server, retries=1, retry_base_delay=0.1),
        f"%%pi {MODEL} --timeout 1\nhello?",
        f"%%pi {MODEL} --timeout 1 --no-raise-on-error\nhello again?",
        f"%%pi {MODEL}\nand now?",
        "print(_pi.stop_reason, _pi.text)",
    ]
    nb = execute(tmp_path, sources, timeout=CELL_TIMEOUT_S, allow_error_names=["RunFailed"])
    silent, stalled, good, check = nb.cells[1:]
    url = f"{server.url}/v1"
    what_to_do = "The server is overloaded or stuck. Run the cell again, or allow longer with %%pi --timeout"
    assert f"Error: No answer from {url} in 1 s (ReadTimeout). {what_to_do}" in shown(silent)
    assert "Retry failed after 1 attempt." in shown(silent)
    [error] = [o for o in silent.outputs if o.output_type == "error"]
    assert error.ename == "RunFailed"  # headless: the notebook run fails here, in one line
    [line] = error.traceback
    assert line.startswith(f"RunFailed: The %%pi run ended with an error: No answer from {url} in 1 s")
    assert f"Error: The answer stalled, nothing more from {url} in 1 s (ReadTimeout). {what_to_do}" in (
        shown(stalled)
    )
    assert "Half an answer" in shown(stalled)
    assert [o.output_type for o in stalled.outputs] == ["display_data"]
    assert "All good." in shown(good)
    assert printed(check) == ["stop All good."]


# --- nbclient's own timeout ----------------------------------------------------------------------


SESSION = """\
import json
from pi_notebook.notebook.state import state_for
path = state_for().conversations.get("default").manager.session_file
for line in open(path):
    entry = json.loads(line)
    message = entry.get("message") or {}
    if message.get("role") == "assistant":
        print(message["role"], message.get("stopReason"))
    elif message:
        print(message["role"])
"""


def test_nbclient_interrupting_at_its_cell_timeout_ends_the_run_cleanly(
    tmp_path: Path, server: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    """One interrupt per timed-out cell ends it (nbclient interrupts again while no reply
    comes); what the run did stays in the output and the session file; Run All goes on."""
    server.replies.clear()
    server.queue(Reply(head_delay=SILENT_S))  # no --timeout: only the interrupt ends this one
    server.queue(Reply(head_delay=SILENT_S))  # --timeout 0.5, then a 30 s wait for the retry
    server.queue(good_answer("Back again."))
    sources = [
        served_setup(server, retry_base_delay=30.0),
        f"%%pi {MODEL}\nhello?",
        f"%%pi {MODEL} --timeout 0.5\nanyone?",
        f"%%pi {MODEL}\nand now?",
        SESSION,
    ]
    log = logging.getLogger("nbclient-under-test")
    caplog.set_level(logging.ERROR, logger=log.name)

    timed_out = set(sources[1:3])

    def timeout_of(cell: Any) -> int:
        return 3 if cell.source in timed_out else CELL_TIMEOUT_S

    nb = execute(
        tmp_path,
        sources,
        timeout_func=timeout_of,
        interrupt_on_timeout=True,
        allow_error_names=["KeyboardInterrupt"],
        log=log,
    )
    interrupts = [r for r in caplog.records if r.getMessage() == "Interrupting kernel"]
    assert len(interrupts) == 2, "one interrupt per timed-out cell: the first one ended its run"
    waiting, retrying, good, session = nb.cells[1:]
    for cell in (waiting, retrying):
        [error] = [o for o in cell.outputs if o.output_type == "error"]
        assert (error.ename, error.traceback) == ("KeyboardInterrupt", [INTERRUPTED])
    assert "Aborted: Request was aborted" in shown(waiting)
    assert "Retry 1 of 3 cancelled after: Request timed out: no answer from the server in 0.5 s" in (
        shown(retrying)
    )
    assert "Back again." in shown(good)
    assert printed(session) == [
        "user",
        "assistant aborted",  # the interrupt ended the request
        "user",
        "assistant error",  # the request timed out; the interrupt came during the retry's wait
        "user",
        "assistant stop",
    ]
