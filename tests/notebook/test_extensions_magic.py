"""Pi extensions in a real ``InteractiveShell`` (no kernel: nobody can click): ``%pi
extension load`` / ``list``, a registered command as ``%pi NAME``, a blocking handler and the
headless answers of ``ctx.ui`` in a ``%%pi`` run, a provider an extension registered serving a
``%%pi`` run, and a raising extension that never breaks the cell."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401

from pi_notebook.ai.faux import (
    FauxRegistration,
    faux_assistant_message,
    faux_tool_call,
    register_faux_provider,
)
from pi_notebook.notebook.state import state_for

MODEL = "--model faux:faux-1"

GUARD = '''
from pi_notebook.agent import tool

@tool
def shout(text: str) -> str:
    """Say it loudly."""
    return text.upper()

def setup(pi):
    pi.register_tool(shout)

    async def guard(event, ctx):
        ctx.ui.notify(f"checking {event.tool_name}", "warning")
        if not await ctx.ui.confirm("Run shout?", "It is loud."):
            return {"block": True, "reason": "The user did not confirm."}
        return None

    pi.on("tool_call", guard)

    async def hello(args, ctx):
        choice = await ctx.ui.select("Greet whom?", ["world", "team"])
        name = await ctx.ui.input("Your name?")
        print(f"hello {args} (choice {choice}, name {name})")

    pi.register_command("hello", hello, description="say hello")
'''


@pytest.fixture
def loaded(ip: Any, tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "guard.py"
    path.write_text(textwrap.dedent(GUARD))
    try:
        yield path
    finally:
        state_for(ip).extensions.reset()


def plain(captured: Any) -> str:
    [bundle] = outputs(captured)
    return str(bundle["text/plain"])


def test_load_list_and_a_command(ip: Any, loaded: Path) -> None:
    result, captured = run(ip, f"%pi extension load {loaded}")
    assert result.error_in_exec is None
    assert captured.stdout.startswith(f"loaded {loaded} (load); on tool_call; tools shout; commands hello")
    _, captured = run(ip, "%pi extension list")
    assert captured.stdout.splitlines()[0] == f"{loaded} (load); on tool_call; tools shout; commands hello"
    result, captured = run(ip, "%pi hello there")
    assert result.error_in_exec is None
    nobody = "a %pi command cannot wait for a click; ask from inside a %%pi run"
    assert captured.stdout.splitlines() == [
        f"An extension asked \u201cGreet whom?\u201d: no option chosen ({nobody}).",
        f"An extension asked \u201cYour name?\u201d: no answer ({nobody}).",
        "hello there (choice None, name None)",
    ]


def test_an_unknown_subcommand_still_is_a_usage_error(ip: Any, loaded: Path) -> None:
    result, _ = run(ip, "%pi nosuch")
    assert "unknown %pi subcommand 'nosuch'" in str(result.error_in_exec)


def test_a_handler_asks_and_nobody_can_answer_so_the_tool_is_blocked(
    ip: Any, faux: FauxRegistration, loaded: Path
) -> None:
    run(ip, f"%pi extension load {loaded}")
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("shout", {"text": "hi"}, id="c1")], stop_reason="toolUse"),
            "ok",
        ]
    )
    result, captured = run(ip, f"%%pi {MODEL}\nshout hi")
    assert result.error_in_exec is None
    text = plain(captured)
    assert "Warning: checking shout" in text
    assert "An extension asked \u201cRun shout?\u201d: answered No (" in text
    [tool_result] = [m for m in ip.user_ns["_pi"].messages if m.role == "toolResult"]
    assert tool_result.is_error
    assert tool_result.content[0].text == "The user did not confirm."


def test_a_raising_extension_is_one_line_and_the_cell_runs(
    ip: Any, faux: FauxRegistration, tmp_path: Path
) -> None:
    path = tmp_path / "broken.py"
    path.write_text("def setup(pi):\n    pi.on('before_agent_start', lambda e: 1 / 0)\n")
    try:
        run(ip, f"%pi extension load {path}")
        faux.set_responses(["fine"])
        result, captured = run(ip, f"%%pi {MODEL}\nhi")
        assert result.error_in_exec is None
        text = plain(captured)
        assert f"Extension {path} failed in before_agent_start: ZeroDivisionError: division by zero" in text
        assert ip.user_ns["_pi"].text == "fine"
        bad = tmp_path / "bad_setup.py"
        bad.write_text("def setup(pi):\n    raise RuntimeError('no warehouse')\n")
        result, captured = run(ip, f"%pi extension load {bad}")
        assert result.error_in_exec is None
        assert captured.stdout == f"Extension {bad} failed in setup: RuntimeError: no warehouse\n"
    finally:
        state_for(ip).extensions.reset()


def test_a_provider_an_extension_registers_serves_a_run(ip: Any, tmp_path: Path) -> None:
    backend = register_faux_provider(api="acme-backend", provider="acme-backend")
    backend.set_responses(["served by acme"])
    path = tmp_path / "acme.py"
    path.write_text(
        textwrap.dedent("""
        from pi_notebook.ai.registry import get_api_provider

        def setup(pi):
            backend = get_api_provider("acme-backend")
            pi.register_provider("acme", {
                "api": "acme-api",
                "stream_simple": backend.stream_simple,
                "models": [{"id": "acme-1", "name": "Acme One", "context_window": 8000}],
            })
    """)
    )
    try:
        run(ip, f"%pi extension load {path}")
        result, _captured = run(ip, "%%pi --model acme:acme-1\nhi")
        assert result.error_in_exec is None
        done = ip.user_ns["_pi"]
        assert (done.text, done.model) == ("served by acme", "acme:acme-1")
        assert done.messages[-1].api == "acme-backend"  # the registered stream function answered
    finally:
        state_for(ip).extensions.reset()
        backend.unregister()
    result, _ = run(ip, "%%pi --model acme:acme-1\nhi")
    assert "acme" in str(result.error_in_exec)  # unloaded: the provider is gone too


def test_the_projects_extensions_wait_for_trust(
    ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Untrusted until ``%pi trust`` saves the decision in Pi's trust store (a temporary agent
    dir); the next use then loads the project's files, and what was loaded stays."""
    project = tmp_path / "project"
    folder = project / ".pi" / "extensions"
    folder.mkdir(parents=True)
    (folder / "local.py").write_text(
        "def setup(pi):\n    pi.register_command('local', lambda a, c: print('ran'))\n"
    )
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(project)  # no notebook file: the folder is the working directory
    host = state_for(ip).extensions
    host.reset()
    try:
        _, captured = run(ip, "%pi extension list")
        assert captured.stdout.splitlines() == [
            "no extensions loaded",
            f"skipped: {folder / 'local.py'} (the project {project.resolve()} is not trusted)",
        ]
        result, _ = run(ip, "%pi local")
        assert "unknown %pi subcommand 'local'" in str(result.error_in_exec)
        (project / "mine.py").write_text("def setup(pi):\n    pi.on('input', lambda e: None)\n")
        run(ip, "%pi extension load mine.py")
        _, captured = run(ip, "%pi trust")
        assert "is trusted" in captured.stdout
        _, captured = run(ip, "%pi local")
        assert captured.stdout == "ran\n"
        _, captured = run(ip, "%pi extension list")
        assert [line.split(" (")[0] for line in captured.stdout.splitlines()] == [
            str(project / "mine.py"),  # loaded before the trust: still there
            str(folder / "local.py"),
        ]
    finally:
        host.reset()


def test_an_extension_command_wins_over_a_template_of_the_same_name(
    ip: Any, tmp_path: Path, faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pi runs an extension's ``/name`` before it expands templates: a ``%%pi /review`` cell
    runs the command, sends nothing, and the template applies again once the command is gone."""
    agent = tmp_path / "agent"
    (agent / "prompts").mkdir(parents=True)
    (agent / "prompts" / "review.md").write_text("Review $1 carefully.\n")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cmd.py").write_text(
        "def setup(pi):\n    pi.register_command('review', lambda args, ctx: print('command got', args))\n"
    )
    host = state_for(ip).extensions
    host.reset()
    sent: list[str] = []

    def answer(context: Any, *_: Any) -> Any:
        sent.append(context.messages[-1].content[0].text)
        return faux_assistant_message("ok")

    faux.set_responses([answer])
    try:
        run(ip, "%pi extension load cmd.py")
        _, captured = run(ip, f"%%pi {MODEL}\n/review model.py")
        assert "command got model.py" in captured.stdout
        assert sent == []  # the command took it: no model call
    finally:
        host.reset()
    state_for(ip).conversations.session("default")  # a fresh session sees the folder again
    run(ip, f"%%pi {MODEL}\n/review model.py")
    assert sent == ["Review model.py carefully.\n"]


TOOLS = '''
from pi_notebook.agent import tool

@tool
def loud(text: str) -> str:
    """Say it loudly."""
    return text.upper()

@tool(requires_approval=True)
def wipe(path: str) -> str:
    """Wipe a path."""
    return "wiped " + path

def setup(pi):
    pi.register_tool(loud)
    pi.register_tool(wipe)
'''


def test_an_extensions_tool_runs_under_every_policy_unless_it_requires_approval(
    ip: Any, faux: FauxRegistration, tmp_path: Path
) -> None:
    """What docs/extensions.md says: an ungated extension tool runs even under ``--approve
    deny``; one made with ``requires_approval=True`` follows the run's policy."""
    path = tmp_path / "tools_ext.py"
    path.write_text(textwrap.dedent(TOOLS))
    try:
        run(ip, f"%pi extension load {path}")
        calls = [
            faux_tool_call("loud", {"text": "hi"}, id="c1"),
            faux_tool_call("wipe", {"path": "/x"}, id="c2"),
        ]
        faux.set_responses([faux_assistant_message(calls, stop_reason="toolUse"), "ok"])
        result, _ = run(ip, f"%%pi {MODEL} --approve deny\nboth")
        assert result.error_in_exec is None
        results = [
            (m.tool_name, m.is_error, m.content[0].text)
            for m in ip.user_ns["_pi"].messages
            if m.role == "toolResult"
        ]
        assert results[0] == ("loud", False, "HI")
        assert results[1][:2] == ("wipe", True)
        assert "approval policy is 'deny'" in results[1][2]
    finally:
        state_for(ip).extensions.reset()
