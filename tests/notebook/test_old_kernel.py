"""``%%pi`` on Colab's own kernel: a REAL ipykernel 6.17.1 with IPython 7.34.0, the degraded mode.

On ipykernel < 7.4 the runtime degrades, it does not break: widgets stream, approvals follow the
non-interactive policy, and the output says why buttons are inactive. ``test_kernel.py`` proves
the interactive path on this venv's ipykernel >= 7.4; this module starts the kernel from
``.venv-ipykernel6`` (made by ``scripts/setup-old-kernel.sh``, called from ``scripts/setup.sh``,
which installs pi_notebook there with its dependencies and fails if pip upgraded the kernel)
through the same driver, from this venv's pytest, and runs the InteractiveShell-level notebook
tests inside that venv. Skipped when that venv is missing.
"""

from __future__ import annotations

import html
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch

pytestmark = pytest.mark.kernel

OLD_PYTHON = Path(
    os.environ.get("PI_OLD_KERNEL_PYTHON")
    or Path(__file__).resolve().parents[2] / ".venv-ipykernel6" / "bin" / "python"
)
NOTICE_PREFIX = "Controls inactive: ipykernel 6."
WHY = "handles widget messages only after the cell ends (needs ipykernel >= 7.4)."


@pytest.fixture(scope="module")
def old_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    if not OLD_PYTHON.exists():
        pytest.skip(f"{OLD_PYTHON} missing: run scripts/setup-old-kernel.sh to create it")
    k = Kernel(tmp_path_factory.mktemp("old-kernel"), python=str(OLD_PYTHON))
    try:
        yield k
    finally:
        k.close()


@pytest.fixture
def k(old_kernel: Kernel) -> Kernel:
    return old_kernel.fresh()


def value(k: Kernel, expr: str) -> str:
    return k.value(expr)


def notice_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(NOTICE_PREFIX)]


def test_the_kernel_is_ipykernel_6_and_the_extension_loads(k: Kernel) -> None:
    assert value(k, "__import__('ipykernel').__version__").startswith("6.")
    assert value(k, "__import__('IPython').__version__").split(".")[0] in {"7", "8"}
    assert value(k, "__import__('sys').executable") == str(OLD_PYTHON)
    assert k.run("%reload_ext pi_notebook")["status"] == "ok"  # SETUP already ran %load_ext
    # the comm_msg status wrapper is for ipykernel >= 7.4 only
    assert value(k, "hasattr(get_ipython().kernel.shell_handlers['comm_msg'], '__wrapped__')") == "False"


def run_set_variable(k: Kernel, approve: str) -> tuple[Watch, str, str]:
    k.run(
        "faux.set_responses([tool_use('set_variable', {'name': 'old_var', 'value': 7}, 'v1'),"
        " 'Scripted answer, ' + 'streamed words ' * 20])"  # ~1.6 s at 40 tokens/s
    )
    first = k.execute(f"%%pi --model faux:faux-1{approve}\nset old_var")
    second = k.execute("print('queued sees:', _pi.text[:15])")
    watch = Watch(k).until_replies([first, second], timeout=20)
    return watch, first, second


def check_degraded_run(watch: Watch, first: str, second: str) -> str:
    """The shared proof: streamed widgets, no controls, the notice, the queued cell ran after."""
    (first_at, first_reply), (second_at, second_reply) = watch.replies[first], watch.replies[second]
    assert first_reply["status"] == "ok", first_reply
    assert second_reply["status"] == "ok", second_reply
    assert second_at > first_at
    assert [text for _, text in watch.stdout] == ["queued sees: Scripted answer\n"]
    # widgets stream: the live view was displayed and updated before the reply ...
    assert any("pi-view" in w.state.get("_dom_classes", ()) for w in watch.find("VBoxModel"))
    before = [t for t, _, _ in watch.updates if t < first_at]
    assert len(before) >= 5, f"only {len(before)} widget updates before the reply"
    # ... without buttons nobody could click in time
    for name in ("Stop", "Approve", "Deny", "Send"):
        assert not watch.find("ButtonModel", description=name), f"a {name} button on ipykernel 6"
    frozen = watch.final_bundle()["text/plain"]
    [notice] = notice_lines(frozen)
    assert WHY in notice
    return notice


def test_default_policy_denies_and_the_output_says_why(k: Kernel) -> None:
    watch, first, second = run_set_variable(k, "")
    notice = check_degraded_run(watch, first, second)
    assert notice.endswith(
        "Approvals follow --approve deny: delete_cells, edit_cell, insert_cell, insert_cells, run_cell, "
        "run_code, set_variable are blocked."
    )
    assert "[tool] set_variable (denied)" in watch.final_bundle()["text/plain"]
    assert notice in html.unescape(watch.shown_text())  # the live view said it too, while streaming
    assert value(k, "'old_var' in globals()") == "False"
    result = "[(m.is_error, m.content[0].text) for m in _pi.messages if m.role == 'toolResult']"
    [(is_error, text)] = eval(value(k, result))
    assert is_error is True
    assert text.startswith("Tool call denied: the approval policy is 'deny'.")
    assert value(k, "_pi.stop_reason, _pi.text[:15]") == "stop Scripted answer"


def test_approve_auto_runs_the_tool(k: Kernel) -> None:
    watch, first, second = run_set_variable(k, " --approve auto")
    notice = check_degraded_run(watch, first, second)
    assert notice.endswith(
        "Approvals follow --approve auto: edit_cell, insert_cell, insert_cells, run_cell, run_code, "
        "set_variable run without asking (delete_cells always asks)."
    )
    assert "[tool] set_variable (done)" in watch.final_bundle()["text/plain"]
    assert value(k, "old_var") == "7"
    result = "[m.is_error for m in _pi.messages if m.role == 'toolResult']"
    assert value(k, result) == "[False]"
    assert value(k, "_pi.stop_reason, _pi.text[:15]") == "stop Scripted answer"


def test_a_click_sent_during_the_run_is_harmless(k: Kernel) -> None:
    """A comm_msg queued behind the cell is handled after it: the run is not disturbed."""
    k.run("faux.set_responses(['Scripted answer, ' + 'streamed words ' * 20])")
    cell = k.execute("%%pi --model faux:faux-1\nanswer")
    sent: list[str] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        html = watch.find("HTMLModel")
        if not sent and html:
            sent.append(k.click(html[0].comm_id))  # whatever widget: the kernel sees it only later

    watch = Watch(k).until_replies([cell], react)
    assert sent
    assert watch.replies[cell][1]["status"] == "ok"
    assert value(k, "_pi.stop_reason, _pi.text[:15]") == "stop Scripted answer"


def test_kernel_interrupt_aborts_cleanly_and_the_next_cell_runs(k: Kernel) -> None:
    """Without a Stop button, the kernel's interrupt is the way to stop a run: it must work."""
    k.run("faux.set_responses(['streaming ' * 120, 'after the interrupt'])")  # ~7.5 s uninterrupted
    cell = k.execute("%%pi --model faux:faux-1\ntalk until interrupted")
    interrupted: list[float] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        if not interrupted and "streaming streaming" in watch.shown_text():
            interrupted.append(watch.now())
            k.interrupt()

    watch = Watch(k).until_replies([cell], react)
    reply_at, reply = watch.replies[cell]
    assert interrupted
    assert reply["status"] == "error"
    assert reply["ename"] == "KeyboardInterrupt"
    assert reply_at - interrupted[0] < 3.0
    assert "Aborted: Request was aborted" in watch.final_bundle()["text/plain"]
    state = "_pi.stop_reason, pi_notebook.current().state.is_streaming, [m.role for m in _pi.messages]"
    assert value(k, state) == "aborted False ['user', 'assistant']"
    k.drain()
    after = k.execute("%%pi\nare you still there?")
    watch = Watch(k).until_replies([after])
    assert watch.replies[after][1]["status"] == "ok"
    assert value(k, "_pi.text") == "after the interrupt"


@pytest.mark.timeout(660)  # a whole pytest run in the old venv, bounded at 600 s itself
def test_the_shell_level_notebook_tests_pass_on_the_old_ipython() -> None:
    """The magic, transformer, tools, view and widget tests (everything below a real kernel or a
    browser) run inside the old venv, so IPython 7.x support is proven, not assumed."""
    if not OLD_PYTHON.exists():
        pytest.skip(f"{OLD_PYTHON} missing: run scripts/setup-old-kernel.sh to create it")
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [str(OLD_PYTHON), "-m", "pytest", "tests/notebook", "-q", "-p", "no:cacheprovider",
         "-m", "not kernel and not browser and not live", "-W", "ignore::DeprecationWarning"],
        cwd=root, capture_output=True, text=True, timeout=600, check=False,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    tail = result.stdout[-3000:] + result.stderr[-2000:]
    assert result.returncode == 0, tail
    assert " passed" in result.stdout.splitlines()[-1], tail
