"""Every ``execute_request`` of the Pi kernel gets its ``execute_reply``, through jupyter_client
against the installed kernelspec: the first prompt of a kernel with no model, and a request
whose running fails inside the kernel itself, reply ``error`` with one line, and the kernel
goes on."""

from __future__ import annotations

from pathlib import Path

import pytest
from pi_kernel_driver import PiKernelUnderTest

pytestmark = pytest.mark.kernel

NO_MODEL = "no model: pass --model provider:id, or run %pi model"


def test_a_prompt_with_no_model_replies_the_error(tmp_path: Path, pi_prefix: Path) -> None:
    pi = PiKernelUnderTest(tmp_path, pi_prefix, configured=False)
    try:
        assert pi.python("import os; print(sorted(k for k in os.environ if k.endswith('_API_KEY')))")[
            "stdout"
        ] == "[]\n"
        first = pi.run("hello?", timeout=20)  # not the first request: check the first prompt
        assert first["status"] == "error", first
        assert (first["ename"], first["traceback"]) == ("UsageError", [])
        assert first["evalue"].startswith(NO_MODEL)
        assert first["stdout"].splitlines() == [f"UsageError: {first['evalue']}"]  # one line
        assert pi.python("1 / 0")["ename"] == "ZeroDivisionError"
        again = pi.run("and now?", timeout=20)
        assert (again["status"], again["evalue"]) == ("error", first["evalue"])
        assert again["traceback"] == []  # not the ZeroDivisionError's of the cell before
        assert pi.value("6 * 7") == "42"
    finally:
        pi.close()


def test_the_very_first_request_being_a_prompt_with_no_model_replies(tmp_path: Path, pi_prefix: Path) -> None:
    pi = PiKernelUnderTest(tmp_path, pi_prefix, configured=False)
    try:
        reply = pi.run("what is 2 + 2?", timeout=20)
        assert reply["status"] == "error", reply
        assert reply["evalue"].startswith(NO_MODEL)
        assert reply["traceback"] == []  # no earlier cell's traceback either
    finally:
        pi.close()


BREAK_ONCE = """
shell = get_ipython()
def broken(*args, **kwargs):
    del shell.run_cell_async  # the next cell runs as usual
    raise RuntimeError("the kernel broke\\nsecond line")
shell.run_cell_async = broken
"""


def test_a_request_failing_inside_the_kernel_replies_one_line_and_the_kernel_goes_on(
    tmp_path: Path, pi_prefix: Path
) -> None:
    pi = PiKernelUnderTest(tmp_path, pi_prefix, configured=False)
    try:
        assert pi.python(BREAK_ONCE)["status"] == "ok"
        reply = pi.run("any prompt", timeout=20)
        assert reply["status"] == "error", reply
        assert (reply["ename"], reply["traceback"]) == ("RuntimeError", ["RuntimeError: the kernel broke"])
        assert reply["stdout"] == (
            "RuntimeError: the kernel broke (the kernel's log has the details; the kernel still runs)\n"
        )
        assert pi.value("'run_cell_async' in vars(shell), 1 + 1") == "False 2"
    finally:
        pi.close()


BREAK_ASSIST = """
import pi_notebook.kernel.assist as assist
saved = assist.complete_reply, assist.is_complete, assist.inspect_prompt
def broken(*args, **kwargs):
    raise RuntimeError("assist broke")
assist.complete_reply = assist.is_complete = assist.inspect_prompt = broken
"""


def test_completion_and_inspection_failing_in_the_kernel_still_reply(tmp_path: Path, pi_prefix: Path) -> None:
    pi = PiKernelUnderTest(tmp_path, pi_prefix, configured=False)
    try:
        assert pi.python(BREAK_ASSIST)["status"] == "ok"
        pi.kc.complete("%pi res")
        reply = pi.kc.get_shell_msg(timeout=20)["content"]
        assert (reply["status"], reply["evalue"]) == ("error", "assist broke")
        pi.kc.is_complete("hello")
        assert pi.kc.get_shell_msg(timeout=20)["content"] == {"status": "unknown"}
        pi.kc.inspect("a prompt about zip", 16)
        assert pi.kc.get_shell_msg(timeout=20)["content"]["status"] == "error"
        pi.python("assist.complete_reply, assist.is_complete, assist.inspect_prompt = saved")
        pi.kc.is_complete("hello")
        assert pi.kc.get_shell_msg(timeout=20)["content"] == {"status": "complete"}
    finally:
        pi.close()
