"""``pi_notebook.runtime.resources`` on bad files and folders (each one diagnostic, the rest
loads), the trust store in Pi's layout, the skill-file tool's limits, re-reading on change, and
an ``AgentSession`` whose model reads a skill. Every tree lives in a temporary ``HOME`` and
agent dir; nothing touches ``~/.pi``. Pi's own behaviour on good files is compared in
``tests/conformance/test_resources_conformance.py``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_tool_call
from pi_notebook.runtime import AgentSession
from pi_notebook.runtime.resources import ResourceLoader, Resources, is_trusted, project_trust, save_trust
from pi_notebook.runtime.resources.files import MAX_FILE_BYTES, parse_frontmatter
from pi_notebook.runtime.resources.skill_tool import read_skill_file
from pi_notebook.session import SessionManager


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def skill(root: Path, name: str, description: str = "Does a thing.") -> Path:
    return write(
        root / name / "SKILL.md", f"---\nname: {name}\ndescription: {description}\n---\nBody of {name}.\n"
    )


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    home, agent, cwd = tmp_path / "home", tmp_path / "home" / ".pi" / "agent", tmp_path / "project"
    for folder in (agent, cwd):
        folder.mkdir(parents=True)
    skill(agent / "skills", "good")
    write(agent / "prompts" / "ok.md", "Fine: $1\n")
    return {"home": home, "agent": agent, "cwd": cwd}


def load(tree: dict[str, Path]) -> Resources:
    return ResourceLoader(str(tree["cwd"]), agent_dir=str(tree["agent"]), home=str(tree["home"])).load()


def only_problem(found: Resources, path: Path) -> str:
    problems = found.diagnostics
    assert [d.path for d in problems] == [str(path)], [d.line() for d in problems]
    return str(problems[0].message)


def test_malformed_frontmatter_is_one_diagnostic_and_the_rest_loads(tree: dict[str, Path]) -> None:
    bad = write(
        tree["agent"] / "skills" / "bad" / "SKILL.md", "---\nname: [oops\ndescription: x\n---\nbody\n"
    )
    found = load(tree)
    assert "malformed frontmatter" in only_problem(found, bad)
    assert [s.name for s in found.skills] == ["good"]
    assert [t.name for t in found.templates] == ["ok"]


def test_a_huge_context_file_is_skipped_with_one_diagnostic(tree: dict[str, Path]) -> None:
    huge = write(tree["cwd"] / "AGENTS.md", "x" * (MAX_FILE_BYTES + 1))
    write(tree["agent"] / "AGENTS.md", "Global rules.\n")
    found = load(tree)
    assert "over the" in only_problem(found, huge)
    assert [f.path for f in found.context_files] == [str(tree["agent"] / "AGENTS.md")]


def test_binary_skill_and_template_files_are_one_diagnostic_each(tree: dict[str, Path]) -> None:
    blob = write(tree["agent"] / "skills" / "blob" / "SKILL.md", b"---\x00\x01\x02 binary")
    found = load(tree)
    assert "binary" in only_problem(found, blob)
    write(tree["agent"] / "skills" / "blob" / "SKILL.md", "---\ndescription: now text\n---\n")
    template = write(tree["agent"] / "prompts" / "bin.md", b"\x89PNG\r\n\x1a\n\x00\x00")
    found = load(tree)
    assert "binary" in only_problem(found, template)
    assert [t.name for t in found.templates] == ["ok"]
    assert [s.name for s in found.skills] == ["blob", "good"]


def test_a_symlink_loop_is_one_diagnostic_and_the_walk_ends(tree: dict[str, Path]) -> None:
    skills = tree["agent"] / "skills"
    (skills / "nest").mkdir()
    (skills / "nest" / "loop").symlink_to(skills)
    found = load(tree)
    assert "symlink loop" in only_problem(found, skills / "nest" / "loop")
    assert [s.name for s in found.skills] == ["good"]


_UNREADABLE = """
import json, sys
from pi_notebook.runtime.resources import ResourceLoader
found = ResourceLoader(sys.argv[1], agent_dir=sys.argv[2], home=sys.argv[3]).load()
problems = [[d.path, d.message] for d in found.diagnostics]
print(json.dumps({"skills": [s.name for s in found.skills], "problems": problems}))
"""


def test_an_unreadable_folder_is_one_diagnostic_and_the_rest_loads(tree: dict[str, Path]) -> None:
    """Root reads any folder, so as root the loader runs in a child without the capabilities
    that let root ignore permissions (``setpriv``)."""
    locked = tree["agent"] / "skills" / "locked"
    skill(locked, "inner")
    locked.chmod(0o000)
    args = [sys.executable, "-c", _UNREADABLE, str(tree["cwd"]), str(tree["agent"]), str(tree["home"])]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: no folder is unreadable to root")
        args = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", *args]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    try:
        proc = subprocess.run(args, capture_output=True, text=True, env=env, check=False, timeout=60)
    finally:
        locked.chmod(0o755)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["skills"] == ["good"]
    assert [p for p, _ in result["problems"]] == [str(locked)]
    assert "cannot read this folder" in result["problems"][0][1]


# --- trust -----------------------------------------------------------------------------------------


def test_trust_is_stored_as_pi_stores_it_and_an_ancestor_decision_counts(tree: dict[str, Path]) -> None:
    cwd, agent = tree["cwd"], str(tree["agent"])
    assert is_trusted(str(cwd), agent)  # nothing that needs trust
    skill(cwd / ".pi" / "skills", "mine")
    trust = project_trust(str(cwd), agent, str(tree["home"]))
    assert (trust.needs_trust, trust.decision, trust.undecided, trust.trusted) == (True, None, True, False)
    path = save_trust([(str(cwd.parent), True), (str(cwd), None)], agent)
    assert Path(path).read_text() == json.dumps({str(cwd.parent.resolve()): True}, indent=2) + "\n"
    assert is_trusted(str(cwd), agent)
    save_trust([(str(cwd), False)], agent)
    assert not is_trusted(str(cwd), agent)  # the nearer decision wins
    assert list(json.loads(Path(path).read_text())) == sorted([str(cwd.parent.resolve()), str(cwd.resolve())])


def test_a_broken_trust_store_means_untrusted_with_a_diagnostic(tree: dict[str, Path]) -> None:
    skill(tree["cwd"] / ".pi" / "skills", "mine")
    write(tree["agent"] / "trust.json", "{not json")
    found = load(tree)
    assert not found.trusted
    assert "Failed to read trust store" in only_problem(found, tree["agent"] / "trust.json")
    assert [s.name for s in found.skills] == ["good"]


# --- the skill-file tool, re-reading ----------------------------------------------------------------


def test_the_skill_tool_reads_skill_folders_only(tree: dict[str, Path]) -> None:
    roots = [str(tree["agent"] / "skills" / "good")]
    write(tree["agent"] / "skills" / "good" / "ref.md", "line1\nline2\nline3\n")
    assert read_skill_file(roots[0] + "/ref.md", roots, str(tree["cwd"]), offset=2, limit=1).startswith(
        "line2"
    )
    secret = write(tree["cwd"] / "secret.txt", "nope")
    with pytest.raises(PermissionError, match="outside the skill folders"):
        read_skill_file(str(secret), roots, str(tree["cwd"]))
    (tree["agent"] / "skills" / "good" / "escape").symlink_to(secret)
    with pytest.raises(PermissionError, match="outside the skill folders"):
        read_skill_file(roots[0] + "/escape", roots, str(tree["cwd"]))
    with pytest.raises(PermissionError):
        read_skill_file(roots[0] + "/../../prompts/ok.md", roots, str(tree["cwd"]))


def test_the_skill_tool_refuses_a_fifo_without_blocking(tree: dict[str, Path]) -> None:
    """A FIFO in a skill folder would block ``open()`` until a writer came (an interrupt could not
    end the read); it is refused at once, as is any file that is not a regular one."""
    folder = tree["agent"] / "skills" / "good"
    roots = [str(folder)]
    os.mkfifo(folder / "pipe.md")
    outcome: list[BaseException | str] = []

    def read() -> None:
        try:
            outcome.append(read_skill_file(str(folder / "pipe.md"), roots, str(tree["cwd"])))
        except BaseException as exc:
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=5)
    if reader.is_alive():  # unblock the reader so the thread ends, then fail
        with open(folder / "pipe.md", "wb"):
            pass
        pytest.fail("reading a FIFO in a skill folder blocked")
    [error] = outcome
    assert isinstance(error, OSError)
    assert "not a regular file" in str(error)


def test_current_rereads_only_when_a_file_changed(tree: dict[str, Path]) -> None:
    loader = ResourceLoader(str(tree["cwd"]), agent_dir=str(tree["agent"]), home=str(tree["home"]))
    first = loader.current()
    assert loader.current() is first
    write(tree["cwd"] / "AGENTS.md", "New rules.\n")
    second = loader.current()
    assert second is not first
    assert [f.content for f in second.context_files] == ["New rules.\n"]
    skill(tree["agent"] / "skills", "later")
    assert [s.name for s in loader.current().skills] == ["good", "later"]
    loader.context_files = False
    assert loader.load().context_files == ()


def test_a_missing_folder_or_file_that_appears_later_is_seen(tree: dict[str, Path]) -> None:
    """A warm check skips missing paths under unchanged folders; creating one changes its
    folder, so it is still seen: a project ``.pi/prompts`` (two levels missing) and the agent
    dir's trust file."""
    loader = ResourceLoader(
        str(tree["cwd"]), agent_dir=str(tree["agent"]), home=str(tree["home"]), trusted=True
    )
    first = loader.current()
    assert loader.current() is first
    write(tree["cwd"] / ".pi" / "prompts" / "mine.md", "Mine: $1\n")
    second = loader.current()
    assert second is not first
    assert sorted(t.name for t in second.templates) == ["mine", "ok"]
    assert loader.current() is second
    write(tree["agent"] / "trust.json", "{}\n")
    assert loader.current() is not second


@pytest.mark.asyncio
async def test_the_model_reads_a_skill_through_the_session(
    faux: FauxRegistration, tree: dict[str, Path]
) -> None:
    path = str(tree["agent"] / "skills" / "good" / "SKILL.md")
    seen: list[str] = []

    def after_tool(context: object, *rest: object) -> str:
        seen.append(context.messages[-1].content[0].text)  # type: ignore[attr-defined]
        return "done"

    faux.set_responses([faux_assistant_message([faux_tool_call("read", {"path": path})]), after_tool])
    loader = ResourceLoader(str(tree["cwd"]), agent_dir=str(tree["agent"]), home=str(tree["home"]))
    session = AgentSession.create(
        cwd=str(tree["cwd"]),
        model=faux.get_model(),
        system_prompt="Base.",
        session_manager=SessionManager.in_memory(str(tree["cwd"])),
        resources=loader,
    )
    await session.prompt("use the good skill")
    assert seen == ["---\nname: good\ndescription: Does a thing.\n---\nBody of good.\n"]
    assert session.agent.state.system_prompt == "Base."  # the blocks are the run's, not the agent's


@pytest.mark.asyncio
async def test_a_run_without_skills_gets_no_read_tool_and_no_skill_list(
    faux: FauxRegistration, tree: dict[str, Path]
) -> None:
    """``prompt(..., skills=False)`` (the notebook's ``--tools none``): the run's own tools only,
    and no ``<available_skills>`` the model could not open."""
    seen: list[tuple[list[str], str]] = []

    def reply(context: Any, *rest: object) -> Any:
        seen.append(([t.name for t in context.tools or ()], context.system_prompt))
        return faux_assistant_message("ok")

    faux.set_responses([reply, reply])
    loader = ResourceLoader(str(tree["cwd"]), agent_dir=str(tree["agent"]), home=str(tree["home"]))
    session = AgentSession.create(
        cwd=str(tree["cwd"]),
        model=faux.get_model(),
        system_prompt="Base.",
        session_manager=SessionManager.in_memory(str(tree["cwd"])),
        resources=loader,
    )
    await session.prompt("with skills")
    await session.prompt("without", skills=False)
    (tools_with, prompt_with), (tools_without, prompt_without) = seen
    assert tools_with == ["read"]
    assert "<available_skills>" in prompt_with
    assert tools_without == []
    assert "<available_skills>" not in prompt_without
    assert prompt_without.startswith("Base.")


def test_queued_messages_are_expanded_once(faux: FauxRegistration, tree: dict[str, Path]) -> None:
    write(tree["agent"] / "prompts" / "again.md", "/ok nested\n")  # an expansion that looks like a command
    loader = ResourceLoader(str(tree["cwd"]), agent_dir=str(tree["agent"]), home=str(tree["home"]))
    session = AgentSession.create(
        cwd=str(tree["cwd"]),
        model=faux.get_model(),
        session_manager=SessionManager.in_memory(str(tree["cwd"])),
        resources=loader,
    )
    session.queue("/ok first", "steer")
    session.queue("/again", "follow_up")
    assert session.get_steering_messages() == ["Fine: first\n"]
    assert session.get_follow_up_messages() == ["/ok nested\n"]  # Pi expands a message once


def test_frontmatter_reads_plain_scalars_as_yaml_1_2_does() -> None:
    """Pi's ``yaml`` package: ``yes``/``on`` and dates stay strings, only ``true``/``false``
    are booleans (PyYAML's default schema would make the first three something else)."""
    found, body = parse_frontmatter("---\r\na: yes\nb: 2024-01-01\nc: true\nd: on\ne: 0x1f\n---\n\n  Body\n")
    assert found == {"a": "yes", "b": "2024-01-01", "c": True, "d": "on", "e": 31}
    assert body == "Body"
    assert parse_frontmatter("no frontmatter\n") == ({}, "no frontmatter\n")
    assert parse_frontmatter("---\nunclosed: x\n") == ({}, "---\nunclosed: x\n")
