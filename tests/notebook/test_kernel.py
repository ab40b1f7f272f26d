"""``%%pi`` in a real ipykernel driven through jupyter_client: live widget updates before the
reply, Stop / Approve / Deny / steering handled while the cell runs, kernel interrupt, Run All
order, and headless detection. The faux provider is paced (40 tokens/s) so runs last long
enough to interact with."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from kernel_driver import KERNEL_NAME, SETUP, Kernel, Watch, write_kernelspec

pytestmark = pytest.mark.kernel

LONG_TEXT = "streaming " * 120  # 1200 chars = 300 chunks = ~7.5 s at 40 tokens/s
REACTION_S = 3.0  # generous: the machine is shared; the truncated text is the real proof


def value(k: Kernel, expr: str) -> str:
    return k.value(expr)


def test_widget_updates_arrive_before_the_reply_and_end_as_static_html(k: Kernel) -> None:
    k.run("faux.set_responses(['Hello **widgets**, ' + 'more words ' * 25])")  # ~1.9 s
    cell = k.execute("%%pi --model faux:faux-1\nstream something")
    watch = Watch(k).until_replies([cell])
    reply_at, reply = watch.replies[cell]
    assert reply["status"] == "ok"
    views = watch.find("VBoxModel")
    assert any("pi-view" in w.state.get("_dom_classes", ()) for w in views)
    before = [t for t, _, _ in watch.updates if t < reply_at]
    assert len(before) >= 10, f"only {len(before)} widget updates before the reply"
    assert before[-1] - before[0] >= 1.0
    # coalesced: well under one update per streamed chunk (~75 chunks here), at most ~20 frames/s
    markdown = [u for u in watch.updates if "outputs" in u[2]]
    assert 3 <= len(markdown) <= 2 + 20 * (before[-1] - before[0] + 0.5)
    [(shown_at, _, shown)] = [d for d in watch.displays if d[1] == "display_data"]
    assert "application/vnd.jupyter.widget-view+json" in shown["data"]
    bundle = watch.final_bundle()
    final_at = next(t for t, kind, _ in watch.displays if kind == "update_display_data")
    assert shown_at < final_at <= reply_at + 0.05
    assert "pi-static" in bundle["text/html"]
    assert "<strong>widgets</strong>" in bundle["text/html"]
    assert bundle["text/plain"].startswith("> stream something\n\nHello **widgets**, more words")
    assert value(k, "_pi.stop_reason, _pi.text[:15]") == "stop Hello **widgets"


def test_stop_click_aborts_the_run(k: Kernel) -> None:
    k.run(f"faux.set_responses([{LONG_TEXT!r}])")
    cell = k.execute("%%pi --model faux:faux-1\ntalk")
    clicked: list[float] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        if (
            not clicked
            and watch.find("ButtonModel", description="Stop")
            and "streaming streaming" in (watch.shown_text())
        ):
            clicked.append(watch.now())
            k.click(watch.button("Stop").comm_id)

    watch = Watch(k).until_replies([cell], react)
    reply_at, reply = watch.replies[cell]
    assert clicked
    assert reply["status"] == "ok"
    assert reply_at - clicked[0] < REACTION_S, "the run did not stop soon after the click"
    frozen = watch.final_bundle()["text/plain"]
    assert "Aborted: Request was aborted" in frozen
    assert frozen.rstrip().endswith("Stopped with the Stop button.")
    assert value(k, "_pi.stop_reason, 0 < len(_pi.text) < 1200") == "aborted True"
    assert watch.button("Stop").state.get("disabled") is True


def test_approve_and_deny_resolve_pending_tool_calls(k: Kernel) -> None:
    k.run(
        "faux.set_responses([tool_use('run_code', {'code': 'approved_var = 1'}, 'c1'),"
        " tool_use('run_code', {'code': 'denied_var = 2'}, 'c2'), 'all done'])"
    )
    cell = k.execute("%%pi --model faux:faux-1\nset two variables")
    answered: list[str] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        approvals = watch.find("ButtonModel", description="Approve")
        denials = watch.find("ButtonModel", description="Deny")
        if len(approvals) == 1 and not answered:
            answered.append("approve")
            k.click(approvals[0].comm_id)
        elif len(denials) == 2 and len(answered) == 1:
            answered.append("deny")
            k.click(denials[1].comm_id)

    watch = Watch(k).until_replies([cell], react)
    assert answered == ["approve", "deny"]
    assert watch.replies[cell][1]["status"] == "ok"
    assert value(k, "approved_var, 'denied_var' in globals()") == "1 False"
    results = value(
        k, "[(m.tool_call_id, m.is_error, m.content[0].text) for m in _pi.messages if m.role == 'toolResult']"
    )
    assert results == "[('c1', False, '(no output)'), ('c2', True, 'Tool call denied by the user.')]"
    text = watch.final_bundle()["text/plain"]
    assert "[tool] run_code (done)" in text
    assert "[tool] run_code (denied)" in text


def test_the_comm_msg_wrapper_is_installed_once(k: Kernel) -> None:
    reload = (
        "from pi_notebook.notebook import load as extension\n"
        "extension.load_ipython_extension(get_ipython())\n"
        "extension.load_ipython_extension(get_ipython())\n"
        "%reload_ext pi_notebook"
    )
    assert k.run(reload)["status"] == "ok"
    assert k.run("_h = get_ipython().kernel.shell_handlers['comm_msg']")["status"] == "ok"
    check = (
        "getattr(_h, '__pi_notebook_comm_ack__', False), hasattr(_h.__wrapped__, '__pi_notebook_comm_ack__')"
    )
    assert value(k, check) == "True False"


def test_steering_typed_during_a_tool_call_is_injected_after_the_turn(k: Kernel) -> None:
    setup = """
from pi_notebook.agent import tool
@tool
async def slow_step(seconds: float, on_update) -> str:
    '''Wait for a while.'''
    on_update("waiting for steer")
    await asyncio.sleep(seconds)
    return "slow step finished"
conversations.current().state.tools = [slow_step]
faux.set_responses([tool_use('slow_step', {'seconds': 1.5}, 's1'), 'steered answer'])
"""
    assert k.run(setup)["status"] == "ok"
    cell = k.execute("%%pi --model faux:faux-1 --tools none\ndo the slow step")
    sent: dict[str, str] = {}

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        if sent or "waiting for steer" not in watch.shown_text():
            return
        [box] = watch.find("TextModel", placeholder="Steer the agent")
        sent["update"] = k.set_value(box.comm_id, "go left")
        sent["click"] = k.click(watch.button("Send").comm_id)

    watch = Watch(k).until_replies([cell], react)
    assert sent
    assert watch.replies[cell][1]["status"] == "ok"
    transcript = (
        "[(m.role, getattr(m, 'tool_name', None)"
        " or pi_notebook.notebook.view.reduce.content_to_text(m.content)[:20]) for m in _pi.messages]"
    )
    roles = value(k, transcript)
    assert roles == (
        "[('user', 'do the slow step'), ('assistant', ''), ('toolResult', 'slow_step'),"
        " ('user', 'go left'), ('assistant', 'steered answer')]"
    )
    # the comm_msg wrapper answered the concurrent state sync with an idle status (what the
    # ipywidgets frontend waits for before it syncs the next keystroke)
    assert sent["update"] in watch.idle_parents
    assert "[steer] go left" in watch.final_bundle()["text/plain"]
    # ... and then said busy again under the cell's own request: JupyterLab's status bar shows
    # the last status it saw, which read Idle after every click while the cell still ran.
    statuses = [(state, parent) for _, state, parent in watch.statuses]
    for comm in (sent["update"], sent["click"]):
        after = statuses.index(("idle", comm))
        assert statuses[after + 1] == ("busy", cell), statuses
    assert statuses[-1] == ("idle", cell)
    assert statuses[-2] == ("busy", cell)  # the last word before the cell ended: busy


def test_the_status_stays_busy_after_control_requests_during_a_run(k: Kernel) -> None:
    """JupyterLab's widget manager sends a ``create_subshell_request`` on the control channel
    when the live view appears; its ``idle`` turned the status bar to Idle for the whole run."""
    k.run("faux.set_responses(['quiet answer ' * 25])")  # ~4.5 s: still running when the request lands
    cell = k.execute("%%pi --model faux:faux-1 --tools none\nanswer quietly")
    sent: dict[str, str] = {}

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        if not sent and watch.find("ButtonModel", description="Stop"):
            request = k.kc.session.msg("kernel_info_request", {})
            k.kc.control_channel.send(request)
            sent["control"] = request["header"]["msg_id"]

    watch = Watch(k).until_replies([cell], react)
    statuses = [(state, parent) for _, state, parent in watch.statuses]
    after = statuses.index(("idle", sent["control"]))
    assert statuses[after + 1] == ("busy", cell), statuses
    assert statuses[-1] == ("idle", cell)
    assert k.run("1")["status"] == "ok"
    k.drain()
    # A control request handled while the cell starts, before the run exists: its idle is
    # followed by busy once the run begins (a silent model sends nothing else that would).
    hook = (
        "import time as _t\n_slow = lambda *a: _t.sleep(1.0)\n"
        "get_ipython().events.register('pre_run_cell', _slow)"
    )
    assert k.run(hook)["status"] == "ok"
    k.run("faux.set_responses(['quiet'])")
    cell = k.execute("%%pi --model faux:faux-1 --tools none\nanswer quietly")
    early = k.kc.session.msg("kernel_info_request", {})
    k.kc.control_channel.send(early)
    watch = Watch(k).until_replies([cell])
    k.run("get_ipython().events.unregister('pre_run_cell', _slow)")
    statuses = [(state, parent) for _, state, parent in watch.statuses]
    after = statuses.index(("idle", early["header"]["msg_id"]))
    assert ("busy", cell) in statuses[after + 1 : -1], statuses
    k.drain()
    idle_only = k.execute("x_after = 1")  # no run active: nothing is added
    watch = Watch(k).until_replies([idle_only])
    assert [s for _, s, p in watch.statuses if p == idle_only] == ["busy", "idle"]


def test_kernel_interrupt_aborts_cleanly_and_the_next_cell_runs(k: Kernel) -> None:
    k.run(f"faux.set_responses([{LONG_TEXT!r}, 'after the interrupt'])")
    cell = k.execute("%%pi --model faux:faux-1\ntalk until interrupted")
    interrupted: list[float] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        if not interrupted and "streaming streaming" in watch.shown_text():
            interrupted.append(watch.now())
            k.interrupt()

    watch = Watch(k).until_replies([cell], react)
    reply_at, reply = watch.replies[cell]
    assert reply["status"] == "error"  # Run All stops here
    assert reply["ename"] == "KeyboardInterrupt"
    assert reply_at - interrupted[0] < REACTION_S
    assert "Aborted: Request was aborted" in watch.final_bundle()["text/plain"]
    # One line, not a traceback through the transformed cell and the runner.
    [error] = watch.errors
    assert error["traceback"] == [error["evalue"]]
    assert error["evalue"].startswith("Interrupted: the %%pi run was aborted.")
    state = "_pi.stop_reason, pi_notebook.current().state.is_streaming, [m.role for m in _pi.messages]"
    assert value(k, state) == "aborted False ['user', 'assistant']"
    k.drain()
    after = k.execute("%%pi\nare you still there?")
    watch = Watch(k).until_replies([after])
    assert watch.replies[after][1]["status"] == "ok"
    assert value(k, "_pi.text, len(pi_notebook.current().state.messages)") == "after the interrupt 4"


def test_interrupt_during_run_code_stops_the_user_code_and_the_run(k: Kernel) -> None:
    code = "import time\nfor _ in range(100):\n    time.sleep(0.1)\nfinished_sleeping = True"
    k.run(f"faux.set_responses([tool_use('run_code', {{'code': {code!r}}}, 'r1'), 'never reached'])")
    cell = k.execute("%%pi --model faux:faux-1 --approve auto\nsleep in the kernel")
    interrupted: list[float] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        shown = watch.shown_text()
        if not interrupted and "run_code" in shown and "running</span>" in shown:
            interrupted.append(watch.now())
            k.interrupt()

    watch = Watch(k).until_replies([cell], react)
    reply_at, reply = watch.replies[cell]
    assert reply["status"] == "error"
    assert reply["ename"] == "KeyboardInterrupt"
    assert reply_at - interrupted[0] < REACTION_S  # the 10 s of user code did not run out
    result = (
        "'finished_sleeping' in globals(), _pi.stop_reason, _pi.messages[2].is_error,"
        " _pi.messages[2].content[0].text"
    )
    expected = "False aborted True KeyboardInterrupt: the kernel was interrupted while run_code was running"
    assert value(k, result) == expected
    assert "Aborted: Request was aborted" in watch.final_bundle()["text/plain"]
    assert value(k, "1 + 1") == "2"


def test_a_queued_cell_runs_after_the_pi_cell(k: Kernel) -> None:
    k.run("faux.set_responses(['first cell answer ' * 6])")  # ~1.3 s
    first = k.execute("%%pi --model faux:faux-1\nfirst")
    second = k.execute("print('second sees:', _pi.text[:17])")
    watch = Watch(k).until_replies([first, second])
    (first_at, first_reply), (second_at, second_reply) = watch.replies[first], watch.replies[second]
    assert first_reply["status"] == second_reply["status"] == "ok"
    assert second_at > first_at
    assert [text for _, text in watch.stdout] == ["second sees: first cell answer\n"]


def test_headless_client_gets_static_output_and_denied_approvals(k: Kernel) -> None:
    k.run("faux.set_responses([tool_use('set_variable', {'name': 'hv', 'value': 1}, 'h1'), 'ok'])")
    cell = k.execute("%%pi --model faux:faux-1\nset hv", allow_stdin=False)  # what nbclient / nbval send
    watch = Watch(k).until_replies([cell])
    assert watch.replies[cell][1]["status"] == "ok"
    assert not watch.widgets
    [(_, kind, shown)] = watch.displays
    assert kind == "display_data"
    assert set(shown["data"]) == {"text/plain", "text/html"}
    assert "Headless run: approvals follow --approve deny" in shown["data"]["text/plain"]
    assert value(k, "'hv' in globals(), _pi.messages[2].is_error") == "False True"


def test_nbclient_runs_are_headless_and_their_text_is_deterministic(tmp_path: Path) -> None:
    """What nbconvert, papermill and nbval do: no widgets, approvals denied, stable text/plain."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    setup = SETUP.replace("tokens_per_second=40", "tokens_per_second=None") + (
        "faux.set_responses([tool_use('run_code', {'code': 'ran = True'}, 'n1'), 'Blocked, as expected.'])"
    )
    sources = [
        setup,
        "# NBVAL_IGNORE_OUTPUT\n%%pi --model faux:faux-1\nplease run code",
        "print(_pi.stop_reason)",
    ]
    runs = []
    for _ in range(2):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
        specs = KernelSpecManager(kernel_dirs=[str(write_kernelspec(tmp_path))])
        km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
        nbclient.NotebookClient(nb, km=km, timeout=60).execute()
        runs.append(nb.cells)
    for cells in runs:
        [output] = cells[1].outputs
        assert output.output_type == "display_data"
        assert set(output.data) == {"text/plain", "text/html"}
        assert "Headless run: approvals follow --approve deny" in output.data["text/plain"]
        assert "[tool] run_code (denied)" in output.data["text/plain"]
        assert cells[2].outputs[0].text == "stop\n"
    assert runs[0][1].outputs[0].data["text/plain"] == runs[1][1].outputs[0].data["text/plain"]


def test_status_reports_the_policy_each_client_gets(k: Kernel) -> None:
    """``%pi status`` says what a cell from *this* client would do: ``ask`` for an interactive
    client, ``deny`` (and why) for a headless one, with ``c.PiMagics.approve = 'ask'``."""
    capture = (
        "import contextlib, io\nbuf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n    get_ipython().run_line_magic('pi', 'status')\n"
        "lines = buf.getvalue().splitlines()\n"
        "status_text = [r[r.index('approve: '):] for r in lines if 'approve: ' in r][0]\n"
        "controls_text = [r for r in lines if r.startswith('controls: ')][0]"
    )
    k.run("%config PiMagics.approve = 'ask'")
    try:
        assert k.run(capture)["status"] == "ok"
        assert value(k, "status_text") == "approve: ask (configured 'ask')"
        assert value(k, "controls_text") == "controls: active"
        cell = k.execute(capture, allow_stdin=False)  # what nbclient / nbval send
        assert Watch(k).until_replies([cell]).replies[cell][1]["status"] == "ok"
        assert value(k, "status_text") == (
            "approve: deny (configured 'ask', but headless run: the client sent the cell without "
            "stdin (nbclient, nbconvert, nbval, papermill))"
        )
        # never "controls: active" next to "headless: yes"
        assert value(k, "controls_text") == "controls: inactive: headless run, nobody can click"
    finally:
        k.run("%config PiMagics.approve = ''")


def test_a_failing_pi_cell_fails_a_headless_notebook(tmp_path: Path) -> None:
    """nbconvert, papermill and CI must not exit 0 when a %%pi run ends in an error: the
    output is drawn, then the cell raises, and nbclient stops with that error."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from nbclient.exceptions import CellExecutionError

    port_probe = (
        "import socket\ns = socket.socket(); s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]; s.close()"
    )
    sources = [
        SETUP + port_probe + "\nimport os\nos.environ['LLAMA_CPP_BASE_URL'] = f'http://127.0.0.1:{port}'",
        "%%pi --model llama.cpp:tiny --tools none\nIs anyone there?",
        "print('never reached')",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    specs = KernelSpecManager(kernel_dirs=[str(write_kernelspec(tmp_path))])
    km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
    with pytest.raises(CellExecutionError) as failure:
        nbclient.NotebookClient(nb, km=km, timeout=60).execute()
    message = str(failure.value)
    assert "RunFailed" in message
    assert "The %%pi run ended with an error: Cannot connect to http://127.0.0.1:" in message
    assert "Is the llama.cpp server running? Set LLAMA_CPP_BASE_URL to its address." in message
    drawn, error = nb.cells[1].outputs
    assert drawn.output_type == "display_data"  # the run's output is there before the error
    assert "Error: Cannot connect to" in drawn.data["text/plain"]
    assert error.output_type == "error"
    assert error.ename == "RunFailed"
    assert nb.cells[2].outputs == []
