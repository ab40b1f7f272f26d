"""Calls a model printed in its text, and code-first mode, at the ``%%pi`` level on a real
``InteractiveShell`` with the faux provider (nobody can click here: a headless-like run).

Code mode: the model's ```python block runs in the shell as a ``run_code`` call, its output
is the next message, the final text is the answer; the session file holds the call and its
result, loads back, and ``%pi export`` gives the code. Recovery: a printed call is left as
text with one line where nobody can be asked, and runs under ``--recovered-calls policy``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.utils.capture import capture_output

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401
from session_helpers import MODEL, cell, files, line, plain, restart, rows, sdir_fixture  # noqa: F401

from pi_notebook.ai.faux import FauxRegistration
from pi_notebook.ai.types import Context, UserMessage
from pi_notebook.notebook.run.printed import CODE_PROMPT
from pi_notebook.session import SessionManager

ANSWER_WITH_CODE = "Let me compute it.\n```python\nanswer_x = 6 * 7\nprint(answer_x)\n```"


@pytest.fixture(autouse=True)
def _reset_traits(ip: Any) -> Any:
    yield
    magics = ip.magics_manager.registry["PiMagics"]
    for trait in ("tool_mode", "recovered_calls", "approve"):
        setattr(magics, trait, magics.trait_defaults(trait))


def html(captured: Any) -> str:
    [found] = outputs(captured)
    return str(found["text/html"])


def recorder(seen: list[Context], text: str) -> Any:
    def respond(context: Context, *_: Any) -> str:
        seen.append(context)
        return text

    return respond


def test_code_mode_runs_the_block_and_the_model_answers_its_output(
    ip: Any, faux: FauxRegistration, sdir: Path
) -> None:
    seen: list[Context] = []
    faux.set_responses([recorder(seen, ANSWER_WITH_CODE), recorder(seen, "The answer is 42.")])
    _, captured = cell(ip, f"{MODEL} --tool-mode code --approve auto", "what is 6 * 7?")
    assert ip.user_ns["answer_x"] == 42
    result = ip.user_ns["_pi"]
    assert result.text == "The answer is 42."
    assert [m.role for m in result.messages] == ["user", "assistant", "toolResult", "assistant"]
    call = result.messages[1].content[-1]
    assert (call.name, call.arguments, call.model_extra) == (
        "run_code",
        {"code": "answer_x = 6 * 7\nprint(answer_x)\n"},
        {"recovered": "code"},
    )
    # what the model got: no tools, the short prompt, its block as text, the output as a user message
    first, second = seen
    assert first.tools is None
    assert second.tools is None
    assert first.system_prompt == CODE_PROMPT
    assert [m.role for m in second.messages] == ["user", "assistant", "user"]
    assert second.messages[1].content == result.messages[1].content[:1]  # the text, no call
    output = second.messages[2]
    assert isinstance(output, UserMessage)
    assert output.content == "Output:\n```\nstdout:\n42\n```"
    shown = plain(captured)
    assert "[tool] run_code (done)" in shown
    assert "tool mode: code" in html(captured)  # the footer
    assert "recovered from the model's text" not in shown  # code mode's calls are its own way


def test_code_mode_keeps_the_users_system_prompt_after_its_own(ip: Any, faux: FauxRegistration) -> None:
    seen: list[Context] = []
    faux.set_responses([recorder(seen, "No code needed: 4.")])
    cell(ip, f"{MODEL} --tool-mode code --system 'Answer in French.'", "2 + 2?")
    assert seen[0].system_prompt == f"{CODE_PROMPT}\n\nAnswer in French."
    assert [m.role for m in ip.user_ns["_pi"].messages] == ["user", "assistant"]


def test_code_mode_follows_the_approval_policy(ip: Any, faux: FauxRegistration) -> None:
    """Nobody can click here: run_code is denied (the default policy), the model is told."""
    seen: list[Context] = []
    faux.set_responses([ANSWER_WITH_CODE, recorder(seen, "I could not run it.")])
    _, captured = cell(ip, f"{MODEL} --tool-mode code", "what is 6 * 7?")
    assert "answer_x" not in ip.user_ns
    assert "[tool] run_code (denied)" in plain(captured)
    assert seen[0].messages[-1].content.startswith("Error:\n```\nTool call denied")


def test_code_mode_without_run_code_says_so_and_uses_tools(ip: Any, faux: FauxRegistration) -> None:
    seen: list[Context] = []
    faux.set_responses([recorder(seen, "Fine.")])
    _, captured = cell(ip, f"{MODEL} --tool-mode code --tools none", "hi")
    assert "--tool-mode code needs the run_code tool" in plain(captured)
    assert "tool mode: code" not in html(captured)


def test_the_trait_sets_code_mode_and_a_bad_value_is_refused(ip: Any, faux: FauxRegistration) -> None:
    magics = ip.magics_manager.registry["PiMagics"]
    magics.tool_mode = "code"
    faux.set_responses([ANSWER_WITH_CODE, "42."])
    cell(ip, f"{MODEL} --approve auto", "6 * 7?")
    assert ip.user_ns["answer_x"] == 42
    result, _ = run(ip, f"%%pi {MODEL} --tool-mode codes\nhi")
    assert "invalid choice: 'codes'" in str(result.error_in_exec)


def test_a_code_mode_session_file_holds_run_code_calls_loads_back_and_exports(
    ip: Any, faux: FauxRegistration, sdir: Path
) -> None:
    faux.set_responses([ANSWER_WITH_CODE, "The answer is 42."])
    cell(ip, f"{MODEL} --tool-mode code --approve auto", "what is 6 * 7?")
    [path] = files(sdir)
    messages = [r["message"] for r in rows(path) if r["type"] == "message"]
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    [call] = [b for b in messages[1]["content"] if b["type"] == "toolCall"]
    assert (call["name"], call["recovered"]) == ("run_code", "code")
    assert messages[2]["toolCallId"] == call["id"]
    assert messages[2]["content"][0]["text"].strip() == "stdout:\n42"
    loaded = SessionManager.open(str(path)).build_session_context().messages
    assert [m.role for m in loaded] == ["user", "assistant", "toolResult", "assistant"]
    restart(ip)
    text = line(ip, "export 1")
    assert "%%pi run 1: 1 cell of code the agent ran" in text
    assert "answer_x = 6 * 7\nprint(answer_x)" in text


# --- recovery where nobody can click ------------------------------------------------------------

PRINTED_JSON = 'I will run it: {"name": "run_code", "arguments": {"code": "printed_y = 5"}}'


def test_a_printed_call_is_left_as_text_with_one_line_where_nobody_can_click(
    ip: Any, faux: FauxRegistration
) -> None:
    faux.set_responses([PRINTED_JSON])
    _, captured = cell(ip, f"{MODEL} --approve auto", "set y")
    shown = plain(captured)
    assert "printed_y" not in ip.user_ns
    [note] = [ln for ln in shown.splitlines() if "in its text instead of making it" in ln]
    assert "The model wrote a call of run_code in its text" in note
    assert "it was not run (nobody can click Approve in this run" in note
    assert "--recovered-calls policy" in note
    assert [m.role for m in ip.user_ns["_pi"].messages] == ["user", "assistant"]


def test_recovered_calls_policy_runs_it_under_approve_and_the_model_answers(
    ip: Any, faux: FauxRegistration, sdir: Path
) -> None:
    seen: list[Context] = []
    faux.set_responses([PRINTED_JSON, recorder(seen, "y is 5 now.")])
    _, captured = cell(ip, f"{MODEL} --approve auto --recovered-calls policy", "set y")
    assert ip.user_ns["printed_y"] == 5
    shown = plain(captured)
    assert "[tool] run_code (done) · recovered from the model's text" in shown
    result = ip.user_ns["_pi"]
    assert result.text == "y is 5 now."
    assert result.messages[1].content[0].text == PRINTED_JSON  # the original text is kept
    assert seen[0].tools is not None  # tools mode: the schemas are sent
    [path] = files(sdir)
    [call] = [
        b for r in rows(path) if r["type"] == "message" for b in r["message"].get("content", [])
        if isinstance(b, dict) and b.get("type") == "toolCall"
    ]  # fmt: skip
    assert call["recovered"] == "json"


def test_recovered_calls_policy_still_obeys_a_deny_policy(ip: Any, faux: FauxRegistration) -> None:
    faux.set_responses([PRINTED_JSON, "ok"])
    _, captured = cell(ip, f"{MODEL} --approve deny --recovered-calls policy", "set y")
    assert "printed_y" not in ip.user_ns
    assert "[tool] run_code (denied) · recovered from the model's text" in plain(captured)


def test_recovered_calls_off_leaves_the_text_alone(ip: Any, faux: FauxRegistration) -> None:
    faux.set_responses([PRINTED_JSON])
    _, captured = cell(ip, f"{MODEL} --approve auto --recovered-calls off", "set y")
    assert "printed_y" not in ip.user_ns
    assert "instead of making it" not in plain(captured)


def test_code_mode_keeps_the_turn_limit(ip: Any, faux: FauxRegistration) -> None:
    again = "```python\nturns_seen = globals().get('turns_seen', 0) + 1\n```"
    faux.set_responses([again, again, again, "done"])
    _, captured = cell(ip, f"{MODEL} --tool-mode code --approve auto --max-turns 2", "loop")
    assert ip.user_ns["turns_seen"] == 2
    assert "Stopped after 2 turns (--max-turns 2)." in plain(captured)
    assert faux.get_pending_response_count() == 2


def test_code_mode_in_the_fallback_magic_runs_the_block_on_the_main_thread(
    ip: Any, faux: FauxRegistration
) -> None:
    block = "```python\nimport threading\nfallback_thread = threading.current_thread().name\n```"
    faux.set_responses([block, "done"])
    with capture_output():
        ip.run_cell_magic("pi", f"{MODEL} --tool-mode code --approve auto", "where do you run?")
    assert ip.user_ns["fallback_thread"] == "MainThread"
    assert ip.user_ns["_pi"].text == "done"


def test_a_printed_call_in_the_fallback_magic_is_left_as_text(ip: Any, faux: FauxRegistration) -> None:
    faux.set_responses([PRINTED_JSON])
    with capture_output() as captured:
        ip.run_cell_magic("pi", f"{MODEL} --approve auto", "set y")
    assert "printed_y" not in ip.user_ns
    assert "it was not run (nobody can click Approve in this run" in plain(captured)
