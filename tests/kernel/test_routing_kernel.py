"""The cell rule of the Pi kernel, through jupyter_client against the installed kernelspec:
every kind of cell, what the model receives, errors as ipykernel gives them, a prompt with no
model, an interrupt during a slow answer, and a restart followed by ``%pi resume``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from kernel_driver import Kernel, Watch
from pi_kernel_driver import PiKernelUnderTest

from pi_notebook.session.storage import encode_cwd

pytestmark = pytest.mark.kernel

LONG_TEXT = "streaming " * 120  # 1200 chars = 300 chunks = ~7.5 s at 40 tokens/s
REACTION_S = 3.0  # generous: the machine is shared; the truncated text is the real proof


def test_a_python_cell_runs_the_rest_as_ipython(p: PiKernelUnderTest) -> None:
    cell = "%%python\nx = 41\nprint('printed')\nx + 1"
    out = p.run(cell)
    assert out["status"] == "ok", out
    assert out["stdout"] == "printed\n"
    # the raw history holds the cell as written, In[] the Python that ran
    hist = "get_ipython().history_manager.input_hist_raw[-2] == {!r}, In[-2].rstrip() == {!r}"
    assert p.value(hist.format(cell, cell.removeprefix("%%python\n"))) == "True True"
    assert p.value("x, seen") == "41 []"  # no prompt was sent


def test_ipython_cells_run_as_ipython(p: PiKernelUnderTest) -> None:
    assert (
        p.run("%timeit -n1 -r1 pass")["stdout"].strip().endswith("(mean ± std. dev. of 1 run, 1 loop each)")
    )
    assert p.run("!echo from the shell")["stdout"].strip() == "from the shell"
    assert p.run("\n   %who_ls str")["status"] == "ok"  # blank lines and indentation before it
    assert p.value("seen") == "[]"


def test_a_prompt_goes_to_the_model_as_written_with_percent_and_bang_mid_text(p: PiKernelUnderTest) -> None:
    p.python("faux.set_responses([echo, echo])")
    prompt = "what is 100% of x? then run !ls and %timeit\n  %% not magic here"
    assert p.run(prompt)["status"] == "ok"
    assert p.value("seen") == repr([prompt])
    assert p.value("_pi.text, _pi.model") == "heard you faux:faux-1"
    assert p.run("# only a comment")["status"] == "ok"  # a comment is prose too
    assert p.value("seen[-1]") == "# only a comment"


def test_a_pi_cell_is_a_prompt_with_its_options(p: PiKernelUnderTest) -> None:
    # run_code's Python is not routed: it runs as code although it is not a cell
    p.python("faux.set_responses([tool_use('run_code', {'code': 'y = 6 * 7'}, 'r1'), 'ran it'])")
    out = p.run("%%pi --approve auto --name side\nrun the code")
    assert out["status"] == "ok", out
    assert p.value("y, _pi.text, _pi.conversation") == "42 ran it side"


def test_the_conversation_continues_across_prompts(p: PiKernelUnderTest) -> None:
    p.python("faux.set_responses(['first answer', echo])")
    assert p.run("first question")["status"] == "ok"
    assert p.run("second question")["status"] == "ok"
    assert p.value("[m.role for m in pi_notebook.current().state.messages]") == (
        "['user', 'assistant', 'user', 'assistant']"
    )


def test_an_empty_cell_does_nothing(p: PiKernelUnderTest) -> None:
    for cell in ("", "\n\n", "   \n"):
        out = p.run(cell)
        assert out["status"] == "ok", out
        assert out["stdout"] == ""
    assert p.value("seen, _pi") == "[] None"


def test_a_silent_request_runs_as_python(p: PiKernelUnderTest) -> None:
    msg_id = p.kc.execute("silent_value = 'from an extension'", silent=True)
    Watch(p).until_replies([msg_id])
    assert p.value("silent_value, seen") == "from an extension []"


def test_no_model_configured_says_how_to_set_one_and_the_kernel_lives(p: PiKernelUnderTest) -> None:
    assert p.run("%config PiMagics.model = ''")["status"] == "ok"
    try:
        out = p.run("hello?")
        assert out["status"] == "error"
        assert out["stdout"].startswith("UsageError: no model: pass --model provider:id, or run %pi model")
        assert p.value("1 + 1") == "2"
    finally:
        p.run("%config PiMagics.model = 'faux:faux-1'")


def normalized(reply: dict[str, Any]) -> tuple[Any, ...]:
    """A reply without what differs between two kernels: cell file names and counters."""

    def clean(text: str) -> str:
        return re.sub(r"\d+\.py|ipykernel_\d+|In\[\d+\]|line \d+, in <module>", "X", text)

    traceback = [clean(line) for line in reply.get("traceback", [])]
    return reply["status"], reply.get("ename"), clean(reply.get("evalue", "")), reply["stdout"], traceback


def test_python_cells_give_what_ipykernel_gives(p: PiKernelUnderTest, tmp_path: Path) -> None:
    cells = ["x = (", "def f(:\n    pass", "1 / 0", "print('a'); undefined_name", "print('fine')"]
    plain = Kernel(tmp_path)
    try:
        expected = [normalized(plain.run(cell)) for cell in cells]
    finally:
        plain.close()
    got = [normalized(p.run("%%python\n" + cell)) for cell in cells]
    assert got == expected
    assert got[0][1] == "SyntaxError"


def test_a_notebook_frontend_gets_the_live_view(p: PiKernelUnderTest) -> None:
    p.python("faux.set_responses(['drawn in widgets'])")
    cell = p.execute_cell("hello, notebook")
    watch = Watch(p).until_replies([cell])
    assert watch.replies[cell][1]["status"] == "ok"
    assert watch.find("ButtonModel", description="Stop")  # the live view's controls
    assert "drawn in widgets" in watch.final_bundle()["text/plain"]
    assert "drawn in widgets" not in "".join(text for _, text in watch.stdout)


def test_interrupt_during_a_slow_answer_ends_the_cell_and_the_kernel_works(p: PiKernelUnderTest) -> None:
    p.python(f"faux.set_responses([{LONG_TEXT!r}, 'after the interrupt'])")
    cell = p.execute_cell("talk until interrupted")
    interrupted: list[float] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        if not interrupted and "streaming streaming" in watch.shown_text():
            interrupted.append(watch.now())
            p.interrupt()

    watch = Watch(p).until_replies([cell], react)
    reply_at, reply = watch.replies[cell]
    assert reply["status"] == "error"
    assert reply["ename"] == "KeyboardInterrupt"
    assert reply_at - interrupted[0] < REACTION_S
    assert p.value("_pi.stop_reason, len(_pi.text) < len(" + repr(LONG_TEXT) + ")") == "aborted True"
    p.drain()
    after = p.execute_cell("are you still there?")
    assert Watch(p).until_replies([after]).replies[after][1]["status"] == "ok"
    assert p.value("_pi.text") == "after the interrupt"


def test_restart_then_resume_continues_the_recorded_conversation(
    tmp_path: Path, pi_prefix: Path, private_agent_dir: Path
) -> None:
    pi = PiKernelUnderTest(tmp_path, pi_prefix)  # its own directory: one session file
    try:
        pi.python("faux.set_responses(['Noted: 42.'])")
        assert pi.run("remember the number 42")["status"] == "ok"
        [path] = (private_agent_dir / "sessions" / encode_cwd(str(tmp_path))).glob("*.jsonl")
        pi.restart()
        assert pi.value("'_pi' in globals(), len(conversations.current().state.messages)") == "False 0"
        out = pi.run("%pi resume")
        assert out["status"] == "ok", out
        assert f"resumed from {path.name}: 2 messages" in out["stdout"]
        pi.python(
            "roles = []\n"
            "def reply(context, options, state, model):\n"
            "    roles.append([m.role for m in context.messages])\n"
            "    return faux_assistant_message('You asked me to remember 42.')\n"
            "faux.set_responses([reply])"
        )
        assert pi.run("which number?")["status"] == "ok"
        # the previous turn, the restart note, the prompt
        assert pi.value("roles") == "[['user', 'assistant', 'user', 'user']]"
        assert pi.value("_pi.text") == "You asked me to remember 42."
    finally:
        pi.close()
