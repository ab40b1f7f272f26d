"""A terminal frontend (``jupyter console --kernel pi``: stdin allowed, no ``cellId``) through
jupyter_client's stdin channel: the answer streams as text on stdout, approvals are asked with
an ``input_request`` and answered on stdin, and an interrupt ends the run, also while the
question waits."""

from __future__ import annotations

import re
import time
from queue import Empty
from typing import Any

import pytest
from kernel_driver import SIGINT_AT, Watch
from pi_kernel_driver import PiKernelUnderTest

pytestmark = pytest.mark.kernel

CODE = "six = 6\napproved_value = six * 7"


def answer_questions(
    p: PiKernelUnderTest, msg_id: str, answers: list[str], timeout: float = 30
) -> dict[str, Any]:
    """Pump IOPub and stdin until ``msg_id``'s reply: each ``input_request`` gets the next answer
    (``"^C"``: interrupt the kernel instead). Returns the reply with ``stdout``, ``questions``
    and, for an interrupt, ``reply_after_interrupt_s``."""
    out: list[str] = []
    questions: list[str] = []
    interrupted_at: float | None = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            request = p.kc.get_stdin_msg(timeout=0.02)
        except Empty:
            request = None
        if request is not None and request["msg_type"] == "input_request":
            questions.append(request["content"]["prompt"])
            answer = answers.pop(0)
            if answer == "^C":
                interrupted_at = time.monotonic()
                p.interrupt()
            else:
                p.kc.input(answer)
        while True:
            try:
                msg = p.kc.get_iopub_msg(timeout=0)
            except Empty:
                break
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])
        try:
            reply = p.kc.get_shell_msg(timeout=0)
        except Empty:
            continue
        if reply["parent_header"].get("msg_id") == msg_id:
            content = dict(reply["content"])
            if interrupted_at is not None:
                content["reply_after_interrupt_s"] = time.monotonic() - interrupted_at
            time.sleep(0.3)  # the last stream flush follows the reply
            while True:
                try:
                    msg = p.kc.get_iopub_msg(timeout=0.05)
                except Empty:
                    break
                if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
                    out.append(msg["content"]["text"])
            content["stdout"], content["questions"] = "".join(out), questions
            return content
    raise TimeoutError(f"no reply to {msg_id} in {timeout} s; questions so far: {questions}")


def script_run_code(p: PiKernelUnderTest) -> None:
    p.python(f"faux.set_responses([tool_use('run_code', {{'code': {CODE!r}}}, 'r1'), 'finished'])")


def test_the_answer_streams_as_text(p: PiKernelUnderTest) -> None:
    text = "streamed to the terminal " * 12  # ~75 tokens: ~2 s at 40 tokens a second
    p.python(f"faux.set_responses([{text.strip()!r}])")
    watch = Watch(p).until_replies([p.execute("hello, terminal")])
    chunks = [text for _, text in watch.stdout]
    assert "".join(chunks) == text.strip() + "\n"
    assert len(chunks) > 3  # sent as it came, flush by flush
    assert not watch.widgets  # no widget was made
    [footer] = [c["data"]["text/plain"] for _, kind, c in watch.displays if kind == "display_data"]
    assert footer.startswith("1 turn · ")
    assert footer.endswith("faux-1")
    # the time the answer took to stream (~2 s), not the gap between the messages' timestamps
    elapsed = float(re.search(r" · ([\d.]+) s · ", footer).group(1))  # type: ignore[union-attr]
    assert elapsed >= 1.0, footer


def test_a_tool_result_is_printed_bounded(p: PiKernelUnderTest) -> None:
    code = "print('result line 1')\nfor i in range(500): print('row', i)"
    p.python(f"faux.set_responses([tool_use('run_code', {{'code': {code!r}}}, 'r1'), 'done'])")
    reply = answer_questions(p, p.execute("%%pi --approve auto\nprint things"), [])
    assert reply["status"] == "ok", reply
    lines = reply["stdout"].splitlines()
    at = lines.index("[tool] run_code: done")
    assert lines[at + 1 : at + 4] == ["    stdout:", "    result line 1", "    row 0"]
    # 20 lines of the result, then how much more there is; the model got it whole
    more = "    … (482 more lines of the result not shown here; the model received it whole)"
    assert lines[at + 21] == more
    assert lines[at + 22] == "done"
    assert "row 499" in p.value("_pi.messages[2].content[0].text")


def test_an_approval_is_asked_on_stdin_and_yes_runs_the_tool(p: PiKernelUnderTest) -> None:
    script_run_code(p)
    reply = answer_questions(p, p.execute("run the code"), ["y"])
    assert reply["status"] == "ok", reply
    # the code as lines, as in the frozen text of the card; the question follows it
    assert reply["questions"] == ["Approve run_code? [y/N] "]
    assert reply["stdout"].splitlines() == [
        "[tool] run_code",
        "    code:",
        "        six = 6",
        "        approved_value = six * 7",
        "[tool] run_code: done",
        "    (no output)",
        "finished",
    ]
    assert p.value("approved_value, _pi.text") == "42 finished"


def test_a_call_asked_nothing_shows_its_code_as_lines(p: PiKernelUnderTest) -> None:
    script_run_code(p)
    reply = answer_questions(p, p.execute("%%pi --approve auto\nrun the code"), [])
    assert reply["status"] == "ok", reply
    assert reply["stdout"].splitlines() == [
        "[tool] run_code",
        "    code:",
        "        six = 6",
        "        approved_value = six * 7",
        "[tool] run_code: done",
        "    (no output)",
        "finished",
    ]


def test_no_denies_the_call(p: PiKernelUnderTest) -> None:
    script_run_code(p)
    reply = answer_questions(p, p.execute("run the code"), ["n"])
    assert reply["status"] == "ok", reply
    assert "[tool] run_code: denied" in reply["stdout"]
    assert p.value("'approved_value' in globals() and approved_value == 'unset'") == "False"
    assert p.value("_pi.messages[2].content[0].text") == "Tool call denied by the user."


def test_an_interrupt_at_the_question_ends_the_run_and_the_kernel_works(p: PiKernelUnderTest) -> None:
    p.python("approved_value = 'unset'")
    script_run_code(p)
    reply = answer_questions(p, p.execute("run the code"), ["^C"])
    assert (reply["status"], reply["ename"]) == ("error", "KeyboardInterrupt")
    assert reply["reply_after_interrupt_s"] < 1.5
    assert p.value("approved_value, _pi.stop_reason") == "unset aborted"
    p.python("faux.set_responses(['still here'])")
    assert p.run("are you there?")["stdout"].startswith("still here")


def test_an_interrupt_just_as_the_question_swaps_the_handler(p: PiKernelUnderTest) -> None:
    """The SIGINT lands right after the question put Python's handler in place: the
    ``KeyboardInterrupt`` is caught there, not raised into the event loop (the kernel exited)."""
    p.python("approved_value = 'unset'\n" + SIGINT_AT)
    script_run_code(p)
    p.python("sigint_at('signal', 'terminal', returning=True)")  # as signal.signal returns
    reply = answer_questions(p, p.execute("run the code"), [], timeout=15)
    assert p.value("sigint_fired") == "['signal']"
    assert (reply["status"], reply["ename"]) == ("error", "KeyboardInterrupt"), reply
    assert p.value("approved_value, _pi.stop_reason, 1 + 1") == "unset aborted 2"


def test_an_interrupt_while_the_answer_streams(p: PiKernelUnderTest) -> None:
    p.python(f"faux.set_responses([{'streaming ' * 120!r}])")
    msg_id = p.execute("talk")
    interrupted: list[float] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        if not interrupted and "streaming streaming" in "".join(t for _, t in watch.stdout):
            interrupted.append(watch.now())
            p.interrupt()

    watch = Watch(p).until_replies([msg_id], react)
    reply_at, reply = watch.replies[msg_id]
    assert reply["ename"] == "KeyboardInterrupt"
    assert reply_at - interrupted[0] < 1.5
    assert p.value("_pi.stop_reason") == "aborted"


def test_what_the_model_received_is_printed_before_the_answer(p: PiKernelUnderTest) -> None:
    p.python("shared_total = 1234\nfaux.set_responses(['seen'])")
    reply = answer_questions(p, p.execute("look at $`shared_total`"), [])
    assert reply["status"] == "ok", reply
    lines = reply["stdout"].splitlines()
    assert lines[0] == "[what the model received]"
    assert lines[1] == "    look at `shared_total`"
    assert "    `shared_total` (value):" in lines
    assert lines[-1] == "seen"


def test_code_past_its_time_limit_is_interrupted_and_the_run_answers(p: PiKernelUnderTest) -> None:
    code = "import time\nprint('epoch 1')\ntime.sleep(60)"
    p.python(f"faux.set_responses([tool_use('run_code', {{'code': {code!r}}}, 's1'), 'it timed out'])")
    started = time.monotonic()
    reply = answer_questions(p, p.execute("%%pi --approve auto --code-timeout 4\ntrain"), [])
    assert reply["status"] == "ok", reply
    assert time.monotonic() - started < 20
    lines = reply["stdout"].splitlines()
    # the clock's first line comes at 3 s (later on a loaded machine: its seconds are not compared)
    still = r"\[tool\] run_code: Still running: \d s of its 4 s limit · last printed: epoch 1"
    running = [i for i, line in enumerate(lines) if re.fullmatch(still, line)]
    ended = lines.index("[tool] run_code: error")
    assert running, lines
    assert running[-1] < ended  # then the result, bounded, and the answer
    assert "TimeoutError: run_code was interrupted at its time limit of 4 s" in "\n".join(lines[ended:])
    assert lines[-1] == "it timed out"
    result = p.value("_pi.messages[2].content[0].text")
    assert "TimeoutError: run_code was interrupted at its time limit of 4 s" in result
    assert p.value("1 + 1") == "2"
