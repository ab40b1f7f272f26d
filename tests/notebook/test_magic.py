"""``%%pi`` and ``%pi`` on a real ``InteractiveShell`` with the faux provider: options and their
errors, traitlets defaults, subcommands, conversations, ``_pi``, approvals, references, the
cell-magic fallback and its interrupt."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401

import pi_notebook
from pi_notebook.agent import BeforeToolCallResult, tool
from pi_notebook.ai.faux import (
    FauxRegistration,
    faux_assistant_message,
    faux_text,
    faux_tool_call,
    register_faux_provider,
)
from pi_notebook.notebook import conversations
from pi_notebook.notebook.host.compat import comms_during_cell, parse_version
from pi_notebook.notebook.magics import PiMagics
from pi_notebook.notebook.run.approval import ApprovalSetup, Headless, resolve_policy

MODEL = "--model faux:faux-1"


class Recorder:
    """A faux response factory that records the context each model call saw."""

    def __init__(self) -> None:
        self.contexts: list[Any] = []

    def reply(self, text: str) -> Any:
        def factory(context: Any, options: Any, state: Any, model: Any) -> Any:
            self.contexts.append(context)
            return faux_assistant_message(text)

        return factory

    def texts(self, index: int = -1) -> list[str]:
        """Text of each message the model saw in call ``index``."""
        out = []
        for message in self.contexts[index].messages:
            content = message.content
            out.append(
                content if isinstance(content, str) else "|".join(getattr(b, "text", "") for b in content)
            )
        return out


def tool_use(name: str, args: dict[str, Any], call_id: str = "call-1") -> Any:
    return faux_assistant_message([faux_tool_call(name, args, id=call_id)], stop_reason="toolUse")


def pi(shell: Any, line: str, body: str) -> tuple[Any, Any]:
    return run(shell, f"%%pi {line}\n{body}")


def plain(captured: Any) -> str:
    found = outputs(captured)
    assert len(found) == 1, found
    return str(found[0]["text/plain"])


# --- a run and _pi ------------------------------------------------------------------------------


def test_run_displays_a_static_bundle_and_sets_pi(ip: Any, faux: FauxRegistration) -> None:
    faux.set_responses(["Hello **there**"])
    result, captured = pi(ip, MODEL, "say hi")
    assert result.error_in_exec is None
    [bundle] = outputs(captured)
    assert set(bundle) == {"text/plain", "text/html"}
    assert bundle["text/plain"].startswith("> say hi\n\nHello **there**\n")
    assert "<strong>there</strong>" in bundle["text/html"]
    done = ip.user_ns["_pi"]
    assert (done.text, done.stop_reason, done.error_message) == ("Hello **there**", "stop", None)
    assert [m.role for m in done.messages] == ["user", "assistant"]
    assert done.usage.input == done.messages[1].usage.input > 0
    assert done.usage.output == done.messages[1].usage.output > 0
    assert done.cost == 0.0
    assert (done.conversation, done.model, done.turns, str(done)) == (
        "default",
        "faux:faux-1",
        1,
        "Hello **there**",
    )
    assert pi_notebook.current() is conversations.current()
    assert pi_notebook.current().state.messages == done.messages


def test_provider_error_is_shown_and_recorded_without_raising(ip: Any, faux: FauxRegistration) -> None:
    faux.set_responses(
        [faux_assistant_message([faux_text("partial")], stop_reason="error", error_message="boom")]
    )
    result, captured = pi(ip, MODEL, "go")
    assert result.error_in_exec is None
    assert "Error: boom" in plain(captured)
    assert (ip.user_ns["_pi"].stop_reason, ip.user_ns["_pi"].error_message) == ("error", "boom")


def test_text_option_outputs_plain_text_only(ip: Any, faux: FauxRegistration) -> None:
    faux.set_responses(["plain answer"])
    _, captured = pi(ip, f"{MODEL} --text", "q")
    [bundle] = outputs(captured)
    assert list(bundle) == ["text/plain"]
    assert "plain answer" in bundle["text/plain"]


# --- conversations ------------------------------------------------------------------------------


def test_conversation_continues_across_cells_new_and_name(ip: Any, faux: FauxRegistration) -> None:
    rec = Recorder()
    faux.set_responses([rec.reply(f"answer {i}") for i in range(4)])
    pi(ip, MODEL, "first")
    pi(ip, "", "second")  # the conversation keeps its model
    assert rec.texts() == ["first", "answer 0", "second"]
    pi(ip, f"--name side {MODEL}", "elsewhere")
    assert rec.texts() == ["elsewhere"]
    assert ip.user_ns["_pi"].conversation == "side"
    assert len(conversations.current().state.messages) == 4
    pi(ip, f"--new {MODEL}", "fresh start")
    assert rec.texts() == ["fresh start"]
    assert len(conversations.current().state.messages) == 2
    assert len(conversations.current("side").state.messages) == 2
    assert sorted(conversations.names()) == ["default", "side"]


def test_model_thinking_and_system_apply_to_the_conversation(ip: Any, faux: FauxRegistration) -> None:
    rec = Recorder()
    faux.set_responses([rec.reply("a"), rec.reply("b")])
    pi(ip, f"{MODEL} --thinking high --system 'Be terse.'", "q1")
    session = conversations.current()
    # the faux model does not reason: the level is clamped to "off", as Pi's set_thinking_level does
    assert (session.thinking_level, session.state.system_prompt) == ("off", "Be terse.")
    pi(ip, "", "q2")
    assert rec.contexts[1].system_prompt == "Be terse."


def test_nbval_lines_are_not_part_of_the_prompt_and_braces_pass_untouched(
    ip: Any, faux: FauxRegistration
) -> None:
    rec = Recorder()
    faux.set_responses([rec.reply("ok")])
    _, captured = run(
        ip, f"# NBVAL_IGNORE_OUTPUT\n%%pi {MODEL}\n# NBVAL_CHECK_OUTPUT\nfix {{k: v for k in d}}\n"
    )
    assert rec.texts() == ["fix {k: v for k in d}"]
    assert plain(captured).startswith("> fix {k: v for k in d}\n")


def test_references_attach_bounded_summaries(ip: Any, faux: FauxRegistration) -> None:
    rec = Recorder()
    faux.set_responses([rec.reply("6")])
    ip.user_ns["rows"] = [1, 2, 3]
    ip.user_ns["SERVICE_TOKEN"] = "sk-" + "z" * 40
    pi(ip, MODEL, "Sum $`rows`, not {rows}; token $`SERVICE_TOKEN`")
    [message] = rec.contexts[0].messages
    prompt, attached = (b.text for b in message.content)
    assert prompt == "Sum `rows`, not {rows}; token `SERVICE_TOKEN`"
    assert "`rows` (value):\n```\nlist, 3 items: [1, 2, 3]\n```" in attached
    assert "z" * 40 not in attached
    assert "looks like a secret" in attached


# --- options, errors and defaults --------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--thinking huge", "argument --thinking: invalid choice: 'huge'"),
        ("--approve maybe", "argument --approve: invalid choice: 'maybe'"),
        ("--max-turns -1", "--max-turns must be 0 or more, not -1"),
        ("--max-turns two", "argument --max-turns: invalid int value: 'two'"),
        ("--model gpt-4o-nonexistent", "--model: Unknown model 'gpt-4o-nonexistent'"),
        ("--model nope:nothing", "--model: Unknown model nope:nothing"),
        ("--tools read,bogus", "unknown tool 'bogus' in --tools"),
        ("--frobnicate", "unrecognized arguments: --frobnicate"),
        ("--modle x", "unrecognized arguments: --modle x; --modle: did you mean --model?"),
        ("--max-token 9", "; --max-token: did you mean --max-total-tokens?"),
        ("--system 'unclosed", "cannot parse %%pi options"),
        ("--name", "argument --name: expected one argument"),
    ],
)
def test_bad_options_raise_a_one_line_usage_error(
    ip: Any, faux: FauxRegistration, line: str, message: str
) -> None:
    result, captured = pi(ip, line, "hello")
    error = result.error_in_exec
    assert isinstance(error, UsageError)
    assert message in str(error)
    assert "\n" not in str(error)
    assert faux.state.call_count == 0
    assert "_pi" not in ip.user_ns
    assert "Traceback" not in captured.stdout + captured.stderr


def test_a_bad_default_model_is_a_usage_error(
    ip: Any, faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_NOTEBOOK_MODEL", "no-such-model-anywhere")
    result, _ = pi(ip, "", "hello")
    assert isinstance(result.error_in_exec, UsageError)
    message = str(result.error_in_exec)
    assert "PI_NOTEBOOK_MODEL): Unknown model 'no-such-model-anywhere'" in message
    assert "\n" not in message
    with pytest.raises(UsageError, match="Unknown model"):
        ip.run_line_magic("pi", "status")


def test_missing_model_and_empty_prompt_are_usage_errors(ip: Any, faux: FauxRegistration) -> None:
    result, _ = pi(ip, "", "hello")
    assert isinstance(result.error_in_exec, UsageError)
    assert "no model" in str(result.error_in_exec)
    result, _ = pi(ip, MODEL, "# NBVAL_SKIP\n   \n")
    assert isinstance(result.error_in_exec, UsageError)
    assert "needs a prompt" in str(result.error_in_exec)


def test_traitlets_config_and_env_give_the_defaults(
    ip: Any, faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = Recorder()
    faux.set_responses([rec.reply("one"), rec.reply("two"), rec.reply("three")])
    monkeypatch.setenv("PI_NOTEBOOK_MODEL", "faux:faux-1")
    assert PiMagics().defaults().model == "faux:faux-1"
    pi(ip, "", "via env")
    assert ip.user_ns["_pi"].model == "faux:faux-1"
    monkeypatch.delenv("PI_NOTEBOOK_MODEL")
    ip.run_line_magic("config", "PiMagics.model = 'faux:faux-1'")
    ip.run_line_magic("config", "PiMagics.tools = 'read'")
    ip.run_line_magic("config", "PiMagics.system = 'From config.'")
    pi(ip, "--new", "via config")
    assert [t.name for t in rec.contexts[-1].tools] == [
        "list_variables",
        "inspect_variable",
        "read_cells",
        "read_notebook",
    ]
    assert rec.contexts[-1].system_prompt == "From config."
    ip.run_line_magic("config", "PiMagics.text = True")
    _, captured = pi(ip, "--tools none", "text by config")
    assert list(outputs(captured)[0]) == ["text/plain"]
    assert rec.contexts[-1].tools in (None, [])
    magics = ip.magics_manager.registry["PiMagics"]
    with pytest.raises(Exception, match="ask, auto, deny"):
        magics.approve = "sometimes"
    with pytest.raises(Exception, match="unknown tool"):
        magics.tools = "everything"


# --- approvals and tools ----------------------------------------------------------------------


def test_deny_blocks_state_changing_tools_and_the_model_sees_why(ip: Any, faux: FauxRegistration) -> None:
    rec = Recorder()
    faux.set_responses([tool_use("run_code", {"code": "blocked_var = 1"}), rec.reply("understood")])
    _, captured = pi(ip, f"{MODEL} --approve deny", "set it")
    assert "blocked_var" not in ip.user_ns
    result = ip.user_ns["_pi"].messages[2]
    assert result.role == "toolResult"
    assert result.is_error
    assert "denied: the approval policy is 'deny'" in result.content[0].text
    assert "denied: the approval policy is 'deny'" in rec.texts()[-1]
    assert "[tool] run_code (denied)" in plain(captured)


def test_default_policy_without_a_frontend_is_deny_and_says_so(ip: Any, faux: FauxRegistration) -> None:
    faux.set_responses([tool_use("set_variable", {"name": "v", "value": 1}), "ok"])
    _, captured = pi(ip, MODEL, "set v")
    assert "v" not in ip.user_ns
    assert "Controls inactive: no Jupyter kernel" in plain(captured)
    assert (
        "Approvals follow --approve deny: delete_cells, edit_cell, insert_cell, insert_cells, run_cell, "
        "run_code, set_variable are blocked."
    ) in plain(
        captured
    )


def test_read_only_tools_are_never_gated(ip: Any, faux: FauxRegistration) -> None:
    ip.user_ns["visible_value"] = 123
    rec = Recorder()
    faux.set_responses([tool_use("list_variables", {}), rec.reply("seen")])
    pi(ip, f"{MODEL} --approve deny", "look")
    assert "visible_value: int = 123" in rec.texts()[-1]


def test_read_cells_from_inside_a_run_sees_earlier_cells_and_marks_its_own(
    ip: Any, faux: FauxRegistration
) -> None:
    run(ip, "earlier_total = 40 + 2")
    rec = Recorder()
    faux.set_responses([tool_use("read_cells", {"last": 2}), rec.reply("seen")])
    pi(ip, MODEL, "what did I compute?")
    seen = rec.texts()[-1]
    assert "earlier_total = 40 + 2" in seen
    assert "(this %%pi cell)\n%%pi --model faux:faux-1\nwhat did I compute?" in seen


def test_auto_runs_state_changing_tools(ip: Any, faux: FauxRegistration) -> None:
    rec = Recorder()
    code = "made_here = 7 * 6\nprint('printed', made_here)"
    faux.set_responses([tool_use("run_code", {"code": code}), rec.reply("done")])
    _, captured = pi(ip, f"{MODEL} --approve auto", "compute")
    assert ip.user_ns["made_here"] == 42
    assert "stdout:\nprinted 42" in rec.texts()[-1]
    assert "[tool] run_code (done)" in plain(captured)


def test_headless_is_forced_by_the_environment(
    ip: Any, faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_NOTEBOOK_HEADLESS", "1")
    set_v = tool_use("set_variable", {"name": "v", "value": 1})
    faux.set_responses([set_v, "a", set_v, "b"])
    _, captured = pi(ip, MODEL, "q")
    assert (
        "Headless run: approvals follow --approve deny; delete_cells, edit_cell, insert_cell, insert_cells, "
        "run_cell, run_code, set_variable are blocked"
        in (plain(captured))
    )
    _, captured = pi(ip, f"{MODEL} --approve auto", "q")
    assert "Headless run: approvals follow --approve auto" in plain(captured)


def test_policy_resolution_rules() -> None:
    interactive, headless = Headless(False, "x"), Headless(True, "nbclient")
    assert resolve_policy(None, can_ask=True, headless=interactive) == ApprovalSetup("ask", None)
    assert resolve_policy("auto", can_ask=True, headless=interactive) == ApprovalSetup("auto", None)
    setup = resolve_policy("ask", can_ask=False, headless=interactive, inactive_reason="Old kernel.")
    assert setup.policy == "deny"
    assert setup.notice is not None
    assert setup.notice.startswith("Old kernel.")
    assert resolve_policy(None, can_ask=False, headless=headless).policy == "deny"
    assert resolve_policy("ask", can_ask=False, headless=headless).policy == "deny"
    assert resolve_policy("auto", can_ask=False, headless=headless).policy == "auto"


def test_old_kernels_have_no_interactive_controls() -> None:
    class KernelWithLock:
        shell_handlers: dict[str, Any] = {}

        class _main_asyncio_lock:
            @staticmethod
            def locked() -> bool:
                return False

    assert comms_during_cell(KernelWithLock(), (7, 4, 0))
    assert not comms_during_cell(KernelWithLock(), (7, 3, 0))
    assert not comms_during_cell(KernelWithLock(), (6, 17, 1))
    assert not comms_during_cell(None, (7, 4, 0))
    assert parse_version("7.4.0rc1") == (7, 4, 0)
    assert parse_version("10.1") == (10, 1)


def test_max_turns_stops_after_n_turns(ip: Any, faux: FauxRegistration) -> None:
    faux.set_responses([tool_use("list_variables", {}), tool_use("list_variables", {}, "call-2"), "never"])
    _, captured = pi(ip, f"{MODEL} --max-turns 1", "loop")
    assert faux.state.call_count == 1
    done = ip.user_ns["_pi"]
    assert done.stop_reason == "toolUse"
    assert [m.role for m in done.messages] == [
        "user",
        "assistant",
        "toolResult",
    ]
    assert "Stopped after 1 turn (--max-turns 1)." in plain(captured)


def inspect(name: str, call_id: str) -> Any:
    return tool_use("inspect_variable", {"name": name}, call_id)


LOOP_NOTICE = (
    "Stopped: the model called inspect_variable 3 times in a row with the same arguments; the 3rd "
    "did not run (not approved). %config PiMagics.loop_guard = 0 turns this check off."
)


def test_the_loop_guard_stops_identical_tool_calls(ip: Any, faux: FauxRegistration) -> None:
    ip.user_ns["x"] = 41
    faux.set_responses([inspect("x", f"call-{i}") for i in range(5)] + ["never"])
    result, captured = pi(ip, MODEL, "what is x?")
    assert result.error_in_exec is None
    assert faux.state.call_count == 3
    done = ip.user_ns["_pi"]
    assert done.stop_reason == "toolUse"  # as a run --max-turns stopped
    assert [m.role for m in done.messages] == ["user"] + ["assistant", "toolResult"] * 3
    results = [m for m in done.messages if m.role == "toolResult"]
    assert all("41" in m.content[0].text for m in results[:2])
    # nobody can click here, so the guard's question before the third is a no: it does not run
    assert results[2].is_error
    assert "3rd identical call of inspect_variable" in results[2].content[0].text
    assert LOOP_NOTICE in plain(captured)
    assert "loop guard: asks before identical tool call 3 in a row runs" in line(ip, "status")
    faux.set_responses(["x is 41."])  # the transcript is valid: the conversation goes on
    pi(ip, "", "so?")
    assert ip.user_ns["_pi"].text == "x is 41."


def test_other_arguments_in_between_do_not_trip_the_loop_guard(ip: Any, faux: FauxRegistration) -> None:
    ip.user_ns.update(x=1, y=2)
    calls = [inspect(name, f"c{i}") for i, name in enumerate("xxyxx")]
    faux.set_responses([*calls, "x is 1, y is 2."])
    _, captured = pi(ip, MODEL, "x and y?")
    assert faux.state.call_count == 6
    assert ip.user_ns["_pi"].stop_reason == "stop"
    assert "Stopped" not in plain(captured)


def test_loop_guard_zero_turns_it_off(ip: Any, faux: FauxRegistration) -> None:
    ip.user_ns["x"] = 1
    ip.run_line_magic("config", "PiMagics.loop_guard = 0")
    try:
        faux.set_responses([inspect("x", f"call-{i}") for i in range(5)] + ["x is 1."])
        _, captured = pi(ip, MODEL, "x?")
        assert faux.state.call_count == 6
        assert ip.user_ns["_pi"].text == "x is 1."
        assert "Stopped" not in plain(captured)
        assert "loop guard: off" in line(ip, "status")
        ip.run_line_magic("config", "PiMagics.loop_guard = 4")
        faux.set_responses([inspect("x", f"again-{i}") for i in range(5)] + ["never"])
        _, captured = pi(ip, "", "x again?")
        assert "called inspect_variable 4 times in a row" in plain(captured)
        with pytest.raises(Exception, match="must be 0 or more"):
            ip.magics_manager.registry["PiMagics"].loop_guard = -1
    finally:
        ip.run_line_magic("config", "PiMagics.loop_guard = 3")


def test_user_hooks_run_first_and_are_restored(ip: Any, faux: FauxRegistration) -> None:
    agent = conversations.current().agent

    def veto(ctx: Any, signal: Any) -> BeforeToolCallResult | None:
        return (
            BeforeToolCallResult(block=True, reason="not today")
            if ctx.tool_call.name == "read_cells"
            else None
        )

    agent.before_tool_call = veto
    rec = Recorder()
    faux.set_responses([tool_use("read_cells", {}), rec.reply("fine")])
    pi(ip, f"{MODEL} --approve auto", "read")
    assert rec.texts()[-1] == "not today"
    assert agent.before_tool_call is veto
    assert agent.should_stop_after_turn is None


def test_user_tools_join_the_run_but_stay_alone_on_the_agent(ip: Any, faux: FauxRegistration) -> None:
    @tool
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    agent = conversations.current().agent
    agent.state.tools = [shout]
    rec = Recorder()
    faux.set_responses([tool_use("shout", {"text": "hey"}), rec.reply("ok")])
    pi(ip, f"{MODEL} --tools read_cells", "shout")
    assert [t.name for t in rec.contexts[-1].tools] == ["shout", "read_cells"]
    assert rec.texts()[-1] == "HEY"
    assert [t.name for t in agent.state.tools] == ["shout"]  # the run's tools are the run's only


# --- %pi -----------------------------------------------------------------------------------------


def line(shell: Any, text: str) -> str:
    with capture_output() as captured:
        shell.run_line_magic("pi", text)
    return str(captured.stdout)


def test_the_cell_magic_help_names_it_with_two_percent_signs(ip: Any) -> None:
    doc = ip.find_cell_magic("pi").__doc__
    assert "\n  %%pi [--model provider:id]" in doc
    assert "%%%pi" not in doc


def test_line_magic_subcommands(ip: Any, faux: FauxRegistration) -> None:
    assert "%%pi [options]" in line(ip, "help")
    assert "steer TEXT" in line(ip, "")
    assert line(ip, "model") == "no model set\n"
    assert line(ip, "model faux:faux-1") == "faux:faux-1\n"
    assert line(ip, "thinking low") == "off\n"  # clamped: the faux model does not reason, as in Pi
    faux.set_responses(["the answer"])
    pi(ip, "", "the question")
    assert line(ip, "history") == "#1 user: the question\nassistant: the answer\n"
    status = line(ip, "status")
    for expected in (
        "conversation: default",
        "model: faux:faux-1",
        "thinking: off",
        "messages: 2; running: no",
        "controls: inactive: no Jupyter kernel",
        "headless: no (no kernel)",
    ):
        assert expected in status
    used = ip.user_ns["_pi"].usage
    assert (
        f"tokens: {used.input} in, {used.output} out, {used.cache_read} cache read, "
        f"{used.cache_write} cache write; cost: $0.0000"
    ) in status
    assert (
        line(ip, "tools read")
        == "notebook tools: list_variables, inspect_variable, read_cells, read_notebook\n"
    )
    assert line(ip, "steer go left") == "steering message queued for the next run\n"
    assert conversations.current().get_steering_messages() == ["go left"]
    assert line(ip, "reset") == "conversation 'default' cleared\n"
    assert conversations.current().state.messages == []
    assert "conversation: other" in line(ip, "--name other status")
    for bad, message in (
        ("bogus", "unknown %pi subcommand 'bogus'; try %pi help"),
        ("sesions", "unknown %pi subcommand 'sesions'; did you mean %pi sessions\\? try"),
        ("thinking huge", "thinking must be one of"),
        ("history x", "history takes a number"),
        ("model nocolon", "Unknown model 'nocolon'"),
        ("steer", "steer needs the message text"),
        ("--name", "--name needs a value"),
    ):
        with pytest.raises(UsageError, match=message):
            ip.run_line_magic("pi", bad)


# --- the cell-magic fallback --------------------------------------------------------------------


def test_fallback_magic_runs_tools_on_the_main_thread_and_continues_the_conversation(
    ip: Any, faux: FauxRegistration
) -> None:
    rec = Recorder()
    code = "import threading\nran_on = threading.current_thread().name"
    faux.set_responses([rec.reply("awaited"), tool_use("run_code", {"code": code}), rec.reply("fallback")])
    pi(ip, MODEL, "first, awaited")
    with capture_output() as captured:
        ip.run_cell_magic("pi", "--approve auto", "second, as a plain magic")
    assert ip.user_ns["ran_on"] == "MainThread"
    assert rec.texts(0) == ["first, awaited"]
    assert len(rec.contexts[-1].messages) == 5
    assert ip.user_ns["_pi"].text == "fallback"
    assert "ran as a plain cell magic" in plain(captured)


def test_autoawait_off_runs_through_the_fallback_even_after_comments(ip: Any, faux: FauxRegistration) -> None:
    ip.autoawait = False
    faux.set_responses(["sync ok"])
    result, captured = run(ip, f"# NBVAL_IGNORE_OUTPUT\n%%pi {MODEL}\nhello")
    assert result.error_in_exec is None
    assert ip.user_ns["_pi"].text == "sync ok"
    assert "ran as a plain cell magic" in plain(captured)


def test_interrupting_the_fallback_aborts_the_run(ip: Any) -> None:
    paced = register_faux_provider(
        token_size={"min": 1, "max": 1}, tokens_per_second=100, provider="fauxslow"
    )
    try:
        paced.set_responses([faux_assistant_message("word " * 200)])
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        with capture_output() as captured, pytest.raises(KeyboardInterrupt):
            ip.run_cell_magic("pi", "--model fauxslow:faux-1 --text", "talk for a while")
        timer.join(10)
        done = ip.user_ns["_pi"]
        assert done.stop_reason == "aborted"
        assert 0 < len(done.text) < len("word " * 200)
        assert "Aborted: Request was aborted" in plain(captured)
        assert not conversations.current().state.is_streaming
    finally:
        paced.unregister()


def test_local_server_models_resolve_without_registration(
    ip: Any, faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    assert line(ip, "model ollama:llama3.2") == "ollama:llama3.2\n"
    model = conversations.current().state.model
    assert (model.api, model.base_url) == ("openai-completions", "http://127.0.0.1:11434/v1")
