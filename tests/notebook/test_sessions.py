"""Conversations recorded as Pi session files, on a real ``InteractiveShell`` with the faux
provider: where the files go and what they say, secrets kept out, ``%pi sessions / resume /
branch / fork / name``, the restart note, ``--resume`` and ``--replay`` (compaction:
``test_sessions_compaction.py``; the shared helpers: ``session_helpers.py``)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401
from session_helpers import (
    MODEL,
    cell,
    files,
    line,
    plain,
    restart,
    rows,
    sdir_fixture,  # noqa: F401  (the `sdir` fixture)
)
from test_magic import Recorder

from pi_notebook.ai.faux import (
    FauxRegistration,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from pi_notebook.notebook import conversations
from pi_notebook.notebook.sessions.files import NOTEBOOK_ENTRY, RESTART_MESSAGE, RESTART_NOTE, RUN_ENTRY
from pi_notebook.notebook.state import state_for
from pi_notebook.session import SessionManager, list_sessions
from pi_notebook.session.storage import encode_cwd

# --- recording ------------------------------------------------------------------------------------


def test_each_conversation_is_recorded_as_it_runs(ip: Any, faux: FauxRegistration, sdir: Path) -> None:
    faux.set_responses(["first answer", "second answer", "other answer"])
    cell(ip, MODEL, "first question")
    [path] = files(sdir)
    lines = rows(path)
    assert lines[0]["type"] == "session"
    assert lines[0]["cwd"] == os.getcwd()
    tag = next(r for r in lines if r["type"] == "custom" and r["customType"] == NOTEBOOK_ENTRY)
    assert tag["data"] == {"notebook": None, "conversation": "default"}
    run_entry = next(r for r in lines if r.get("customType") == RUN_ENTRY)
    assert run_entry["data"] == {"prompt": "first question", "model": "faux:faux-1"}
    assert [r["message"]["role"] for r in lines if r["type"] == "message"] == ["user", "assistant"]
    assert f"session: {path}\n" in line(ip, "status")
    cell(ip, "", "second question")
    assert len(rows(path)) == len(lines) + 3  # run entry, user, assistant: appended as they end
    cell(ip, f"{MODEL} --name other", "a question for the other conversation")
    assert len(files(sdir)) == 2
    # Pi reads it back: the same two turns in its context
    context = SessionManager.open(str(path)).build_session_context()
    assert [m.role for m in context.messages] == ["user", "assistant", "user", "assistant"]
    assert context.model is not None
    assert context.model.model_id == "faux-1"


def test_files_go_to_pis_folder_for_the_notebook(
    ip: Any, faux: FauxRegistration, sdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PI_NOTEBOOK_SESSION_DIR")
    agent_dir = tmp_path / "agent"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    folder = tmp_path / "project"
    folder.mkdir()
    notebook = folder / "analysis.ipynb"
    ip.user_ns["__vsc_ipynb_file__"] = str(notebook)
    faux.set_responses(["noted"])
    cell(ip, MODEL, "hello")
    expected = agent_dir / "sessions" / encode_cwd(str(folder))
    [path] = files(expected)
    assert rows(path)[0]["cwd"] == str(folder)
    tag = next(r for r in rows(path) if r.get("customType") == NOTEBOOK_ENTRY)
    assert tag["data"]["notebook"] == str(notebook)
    assert [i.path for i in list_sessions(str(folder))] == [str(path)]  # what `pi --resume` lists


def test_a_prompt_without_an_answer_leaves_no_file_and_record_off_writes_nothing(
    ip: Any, faux: FauxRegistration, sdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ip.run_line_magic("config", "PiMagics.record = False")
    faux.set_responses(["not written"])
    cell(ip, MODEL, "hello")
    assert files(sdir) == []
    ip.run_line_magic("config", "PiMagics.record = True")
    monkeypatch.setenv("PI_NOTEBOOK_RECORD", "0")
    faux.set_responses(["not written either"])
    cell(ip, f"{MODEL} --new", "hello again")
    assert files(sdir) == []
    monkeypatch.setenv("PI_NOTEBOOK_RECORD", "1")
    faux.set_responses(["written"])
    cell(ip, f"{MODEL} --new", "now")
    assert len(files(sdir)) == 1


def test_secrets_never_reach_the_file(
    ip: Any, faux: FauxRegistration, sdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_key = "sk-proj-" + "Q" * 24
    service_token = "tok-9f8e7d6c5b4a-notebook"
    password = "correct-horse-battery-staple"
    monkeypatch.setenv("OPENAI_API_KEY", env_key)
    monkeypatch.setenv("MY_SERVICE_TOKEN", service_token)
    ip.user_ns["db_password"] = password
    code = "import os; print(os.environ['MY_SERVICE_TOKEN']); print(db_password)"
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("run_code", {"code": code}, id="c1")], stop_reason="toolUse"
            ),
            faux_assistant_message(
                [faux_tool_call("inspect_variable", {"name": "db_password"}, id="c2")], stop_reason="toolUse"
            ),
            f"The key {env_key}, the token {service_token} and the password {password}.",
        ]
    )
    _, _captured = cell(ip, f"{MODEL} --approve auto", "show me the credentials")
    state = state_for(ip)
    results = [m for m in conversations.current().state.messages if m.role == "toolResult"]
    # the tools never show a secret value, not even to the model
    assert results[0].content[0].text == "stdout:\n[REDACTED]\n[REDACTED]\n"
    [path] = files(sdir)
    text = path.read_text()
    for secret in (env_key, service_token, password):
        assert secret not in text
    assert "[REDACTED]" in text
    # the transcript in memory is untouched: the model keeps its context (here, its own answer)
    assert (
        state.conversations.get("default")
        .manager.build_session_context()
        .messages[-1]
        .content[0]
        .text.count(password)
        == 1
    )


# --- resume, branch, fork, name ------------------------------------------------------------------


def test_resume_continues_the_latest_conversation_and_tells_the_model_once(
    ip: Any, faux: FauxRegistration, sdir: Path
) -> None:
    seen = Recorder()
    faux.set_responses(["Paris.", seen.reply("Lyon."), seen.reply("Nice.")])
    cell(ip, MODEL, "capital of France?")
    [path] = files(sdir)
    restart(ip)
    out = line(ip, "resume")
    assert f"resumed from {path.name}: 2 messages, model faux:faux-1" in out
    cell(ip, "", "and its second city?")  # no --model: the recorded one is back
    assert seen.texts()[:2] == ["capital of France?", "Paris."]
    assert RESTART_NOTE in seen.texts()[2]
    assert seen.texts()[3] == "and its second city?"
    cell(ip, "", "and the third?")
    assert sum(RESTART_NOTE in t for t in seen.texts()) == 1  # told once
    assert files(sdir) == [path]  # the same file goes on
    note = [r for r in rows(path) if r["type"] == "custom_message"]
    assert [(n["customType"], n["display"]) for n in note] == [(RESTART_MESSAGE, False)]


def test_resume_flag_on_a_cell_and_nothing_to_resume(ip: Any, faux: FauxRegistration, sdir: Path) -> None:
    seen = Recorder()
    faux.set_responses([seen.reply("nothing before"), "one", seen.reply("two")])
    _, captured = cell(ip, f"{MODEL} --resume", "start")
    assert "Nothing recorded to resume" in plain(captured)
    assert seen.texts() == ["start"]
    cell(ip, f"{MODEL} --new", "remember 42")
    restart(ip)
    _, captured = cell(ip, "--resume", "what did I ask you to remember?")
    assert "Resumed " in plain(captured)
    assert "(2 messages)" in plain(captured)
    assert seen.texts()[0] == "remember 42"
    with pytest.raises(UsageError, match="no recorded conversation 'nobody'"):
        line(ip, "--name nobody resume")


RECORDED = "A recorded conversation of this notebook exists"


def test_a_restarted_kernel_says_a_recorded_conversation_exists(
    ip: Any, faux: FauxRegistration, sdir: Path, tmp_path: Path
) -> None:
    ip.user_ns["__vsc_ipynb_file__"] = str(tmp_path / "analysis.ipynb")
    faux.set_responses([f"answer {i}" for i in range(10)])
    _, captured = cell(ip, MODEL, "q1")
    assert RECORDED not in plain(captured)  # a fresh notebook has nothing recorded
    cell(ip, "", "q2")
    cell(ip, f"{MODEL} --name side", "s1")
    restart(ip)
    _, captured = cell(ip, MODEL, "q3")
    assert f"{RECORDED} (default, 4 messages): %pi resume continues it." in plain(captured)
    assert [m.content[0].text for m in conversations.current().state.messages] == ["q3", "answer 3"]
    _, captured = cell(ip, "", "q4")
    assert RECORDED not in plain(captured)  # said once
    line(ip, "reset")
    _, captured = cell(ip, MODEL, "q5")
    assert RECORDED not in plain(captured)  # once per conversation in this kernel, even emptied
    _, captured = cell(ip, f"{MODEL} --name side", "s2")
    assert f"{RECORDED} (side, 2 messages): %pi --name side resume continues it." in plain(captured)


def test_no_recorded_conversation_line_with_resume_new_or_replay(
    ip: Any, faux: FauxRegistration, sdir: Path, tmp_path: Path
) -> None:
    ip.user_ns["__vsc_ipynb_file__"] = str(tmp_path / "analysis.ipynb")
    faux.set_responses([f"answer {i}" for i in range(10)])
    cell(ip, MODEL, "q1")
    for flags in ("--resume", "--new", "--replay"):
        restart(ip)
        _, captured = cell(ip, f"{MODEL} {flags}", "q1")
        assert RECORDED not in plain(captured), flags
    assert "Resumed " not in plain(captured)  # the replay showed the recorded answer
    del ip.user_ns["__vsc_ipynb_file__"]  # an unknown notebook: every file of the folder would count
    restart(ip)
    _, captured = cell(ip, MODEL, "q2")
    assert RECORDED not in plain(captured)


def test_sessions_lists_this_notebooks_conversations_and_resume_picks_one(
    ip: Any, faux: FauxRegistration, sdir: Path
) -> None:
    faux.set_responses(["a1", "b1"])
    cell(ip, MODEL, "alpha question")
    cell(ip, f"{MODEL} --new", "beta question")
    line(ip, "name Beta work")
    listing = line(ip, "sessions").splitlines()
    assert "first prompt" in listing[0]
    assert listing[1].startswith("*  1  Beta work")
    assert "beta question" in listing[1]
    assert listing[2].startswith("   2  default")
    assert "alpha question" in listing[2]
    assert " 2 " in listing[2]
    assert "B" in listing[2]
    restart(ip)
    line(ip, "resume 2")
    assert [m.content[0].text for m in conversations.current().state.messages] == ["alpha question", "a1"]
    line(ip, "resume Beta work")
    assert conversations.current().state.messages[0].content[0].text == "beta question"
    with pytest.raises(UsageError, match="no session number 7"):
        line(ip, "resume 7")
    assert line(ip, "name") == "Beta work\n"


def test_branch_goes_back_without_losing_the_other_branch(
    ip: Any, faux: FauxRegistration, sdir: Path
) -> None:
    seen = Recorder()
    faux.set_responses(["r1", "r2", "r3", seen.reply("r2 again")])
    for prompt in ("one", "two", "three"):
        cell(ip, MODEL, prompt)
    history = line(ip, "history")
    assert history.splitlines()[0] == "#1 user: one"
    assert "#3 user: three" in history
    out = line(ip, "branch 1")
    assert "continues after turn 1 (2 messages)" in out
    cell(ip, "", "two, differently")
    assert seen.texts() == ["one", "r1", "two, differently"]
    [path] = files(sdir)
    manager = SessionManager.open(str(path))
    users = [
        e.message.content[0].text
        for e in manager.get_entries()
        if e.type == "message" and e.message.role == "user"
    ]
    assert users == ["one", "two", "three", "two, differently"]  # both branches are in the file
    assert [m.role for m in manager.build_session_context().messages] == ["user", "assistant"] * 2
    with pytest.raises(UsageError, match="there are 2 user turns"):
        line(ip, "branch 5")
    line(ip, "branch 0")
    assert conversations.current().state.messages == []


def test_fork_copies_the_path_into_a_new_file(ip: Any, faux: FauxRegistration, sdir: Path) -> None:
    faux.set_responses(["r1", "r2"])
    cell(ip, MODEL, "one")
    [old] = files(sdir)
    out = line(ip, "fork")
    assert f"{old.name} is kept" in out
    cell(ip, "", "two")
    new = next(p for p in files(sdir) if p != old)
    assert rows(new)[0]["parentSession"] == str(old)
    assert len([r for r in rows(old) if r["type"] == "message"]) == 2
    assert len([r for r in rows(new) if r["type"] == "message"]) == 4


# --- replay -----------------------------------------------------------------------------------------


def test_replay_shows_the_recorded_answers_without_calling_a_model(
    ip: Any, faux: FauxRegistration, sdir: Path
) -> None:
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("list_variables", {}, id="v1")], stop_reason="toolUse"),
            "You have **no** variables.",
            "Second answer.",
        ]
    )
    _, first = cell(ip, MODEL, "# NBVAL_IGNORE_OUTPUT\nwhat variables do I have?")
    _, second = cell(ip, "", "and then?")
    recorded = [plain(first), plain(second)]
    size = [p.stat().st_size for p in files(sdir)]
    calls = faux.state.call_count
    restart(ip)
    ip.run_line_magic("config", "PiMagics.replay = True")
    _, again1 = cell(ip, MODEL, "what variables do I have?")
    _, again2 = cell(ip, "", "and then?")
    # the same output, marked as replayed (with when it was recorded)
    marked = re.compile(
        r"Replayed \(--replay\): the answer recorded at \S+Z, not a new run; no model was called\.\n"
    )
    assert [marked.sub("", plain(again1)), marked.sub("", plain(again2))] == recorded
    assert marked.search(plain(again1))
    assert marked.search(plain(again2))
    assert "list_variables" in recorded[0]
    assert faux.state.call_count == calls
    assert [p.stat().st_size for p in files(sdir)] == size  # replay writes nothing
    assert ip.user_ns["_pi"].text == "Second answer."
    assert len(conversations.current().state.messages) == 6  # the conversation goes on from there
    _, rerun = cell(ip, MODEL, "what variables do I have?")  # re-running a cell finds it again
    assert marked.sub("", plain(rerun)) == recorded[0]
    with pytest.raises(
        UsageError, match="--replay: no recorded answer for this prompt with model faux:faux-1"
    ):
        cell(ip, "", "a prompt nobody recorded")
    other = register_faux_provider(provider="other", models=[{"id": "m"}])
    try:
        with pytest.raises(UsageError, match="with model other:m"):
            cell(ip, "--model other:m", "and then?")  # recorded with faux:faux-1 only
    finally:
        other.unregister()
    assert faux.state.call_count == calls


def test_replay_flag_on_one_cell_and_a_live_cell_after_it(
    ip: Any, faux: FauxRegistration, sdir: Path
) -> None:
    seen = Recorder()
    faux.set_responses(["recorded", seen.reply("live")])
    cell(ip, MODEL, "q1")
    restart(ip)
    _, captured = cell(ip, f"{MODEL} --replay", "q1")
    assert "recorded" in plain(captured)
    cell(ip, "", "q2")  # live again: continues from the replayed turn, in the same file
    assert seen.texts() == ["q1", "recorded", RESTART_NOTE, "q2"]  # replayed tools did not run here
    [path] = files(sdir)
    assert [r["message"]["role"] for r in rows(path) if r["type"] == "message"] == ["user", "assistant"] * 2


def test_the_notebook_path_comes_from_the_frontend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from pi_notebook.notebook.tools.cells import notebook_path

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert notebook_path(SimpleNamespace(user_ns={})) is None
    monkeypatch.setenv("JPY_SESSION_NAME", "work/here.ipynb")  # relative to the server's root
    assert notebook_path(SimpleNamespace(user_ns={})) == str(tmp_path / "here.ipynb")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "here.ipynb").write_text("{}")
    assert notebook_path(SimpleNamespace(user_ns={})) == str(tmp_path / "work" / "here.ipynb")
    shell = SimpleNamespace(user_ns={"__session__": str(tmp_path / "lab.ipynb")})
    assert notebook_path(shell) == str(tmp_path / "lab.ipynb")
    shell.user_ns["__vsc_ipynb_file__"] = "/code/vs.ipynb"  # VS Code's wins: it is always absolute
    assert notebook_path(shell) == "/code/vs.ipynb"


def test_the_real_pi_lists_and_opens_a_notebook_session(
    ip: Any, faux: FauxRegistration, sdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `pi --resume` in the notebook's folder sees: Pi 0.83 from npm lists the file with
    its name and first prompt and rebuilds the same context."""
    import shutil
    import subprocess

    conformance = Path(__file__).parents[1] / "conformance"
    sys.path.insert(0, str(conformance))
    from pi_node import missing_reason

    reason = missing_reason()
    if reason is not None:
        pytest.skip(reason)
    monkeypatch.delenv("PI_NOTEBOOK_SESSION_DIR")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    folder = tmp_path / "project"
    folder.mkdir()
    ip.user_ns["__vsc_ipynb_file__"] = str(folder / "nb.ipynb")
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("list_variables", {}, id="t1")], stop_reason="toolUse"),
            "Nothing much.",
        ]
    )
    cell(ip, MODEL, "what is defined?")
    line(ip, "name Notebook chat")
    script = (
        'import { SessionManager } from "./node_modules/@earendil-works/pi-coding-agent/dist/core/'
        'session-manager.js";\n'
        f"const list = await SessionManager.list({json.dumps(str(folder))});\n"
        "const sm = SessionManager.open(list[0].path);\n"
        "const ctx = sm.buildSessionContext();\n"
        "console.log(JSON.stringify({list: list.map(s => [s.name, s.firstMessage, s.messageCount]),"
        " roles: ctx.messages.map(m => m.role), model: ctx.model}));\n"
    )
    node = shutil.which("node")
    assert node is not None
    proc = subprocess.run(
        [node, "--input-type=module", "-e", script],
        cwd=conformance,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent")},
    )
    seen = json.loads(proc.stdout)
    assert seen["list"] == [["Notebook chat", "what is defined?", 4]]
    assert seen["roles"] == ["user", "assistant", "toolResult", "assistant"]
    assert seen["model"] == {"provider": "faux", "modelId": "faux-1"}


def test_branch_with_a_summary_of_the_branch_left_behind(ip: Any, faux: FauxRegistration, sdir: Path) -> None:
    seen = Recorder()
    faux.set_responses(["r1", "r2", "We tried the second idea.", seen.reply("fresh")])
    cell(ip, MODEL, "one")
    cell(ip, "", "two")
    out = line(ip, "branch 1 --summarize")
    assert "continues after turn 1" in out
    cell(ip, "", "another idea")
    assert seen.texts()[:2] == ["one", "r1"]
    assert "We tried the second idea." in seen.texts()[2]  # the branch summary, as user text
    assert seen.texts()[3] == "another idea"
    [path] = files(sdir)
    [summary] = [r for r in rows(path) if r["type"] == "branch_summary"]
    assert summary["summary"].endswith("We tried the second idea.")


def test_resume_restores_a_model_of_a_provider_an_extension_registers(
    ip: Any, sdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider exists again only once the kernel's extensions load (here the trusted
    project's): ``%pi resume`` loads them before it looks the recorded model up."""
    # the backend labels its answers with the provider they are recorded under, as a real one does
    backend = register_faux_provider(api="acme-backend", provider="acme")
    backend.set_responses(["first", "second"])
    project = tmp_path / "project"
    (project / ".pi" / "extensions").mkdir(parents=True)
    (project / ".pi" / "extensions" / "acme.py").write_text(
        "from pi_notebook.ai.registry import get_api_provider\n"
        "MODELS = [{'id': 'acme-1', 'context_window': 8000}]\n"
        "def setup(pi):\n"
        "    stream = get_api_provider('acme-backend').stream_simple\n"
        "    pi.register_provider('acme', {'api': 'acme-api', 'stream_simple': stream, 'models': MODELS})\n"
    )
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(project)  # no notebook file: the folder is the working directory
    extensions = state_for(ip).extensions
    extensions.reset()
    try:
        assert "is trusted" in line(ip, "trust")
        cell(ip, "--model acme:acme-1", "hello")
        restart(ip)
        extensions.reset()  # a new kernel: no extension loaded, no provider 'acme'
        out = line(ip, "resume")
        assert "2 messages, model acme:acme-1." in out
        assert "unknown" not in out
        cell(ip, "", "again")  # no --model: the recorded one, served by the extension
        assert ip.user_ns["_pi"].text == "second"
    finally:
        extensions.reset()
        backend.unregister()
