"""Pi's resources as the real Pi 0.83.0 loads them (``resources_runner.mjs``: Pi's own
``DefaultResourceLoader``, ``buildSystemPrompt``, ``_expandSkillCommand``, ``expandPromptTemplate``
and trust rules) against ``pi_notebook.runtime.resources`` seen through an ``AgentSession``: for
each folder tree the model receives the same system prompt (``<project_context>`` and
``<available_skills>`` byte for byte) and the same expanded ``/template`` and ``/skill:`` prompts.

The trees cover the agent dir's and ``~/.agents`` files, project ``.pi`` and ``.agents`` files,
ancestors up to a git root (and one above it, which must not count), a nested git worktree that
shadows its main checkout's ``AGENTS.md``, a broken skill (no description, a bad name, malformed
YAML), a hidden skill, name collisions of skills and templates, and trusted, distrusted and
undecided folders. ``HOME`` and the agent dir are temporary folders: nothing touches ``~/.pi``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conformance.pi_node import require_node22, run_node

from pi_notebook.ai.faux import FauxRegistration
from pi_notebook.runtime import AgentSession
from pi_notebook.runtime.resources import ResourceLoader, project_trust, save_trust
from pi_notebook.session import SessionManager

BASE = "You are a notebook assistant."
INPUTS = [
    "/review src/app.py",
    "/review",
    "/args one 'two words' three four",
    "/args",
    "/skill:plot make a chart of sales",
    "/skill:plot",
    "/skill:hidden-one  with args  ",
    "/skill:local",
    "/skill:unknown x",
    "/fix the bug",
    "/nope at all",
    "plain text, not a command",
    "/",
]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def skill(
    folder: Path, name: str | None, description: str | None, body: str = "Do it.", extra: str = ""
) -> None:
    lines = ["---"]
    if name is not None:
        lines.append(f"name: {name}")
    if description is not None:
        lines.append(f"description: {description}")
    lines.append(extra) if extra else None
    lines.append("---")
    write(folder / "SKILL.md", "\n".join(lines) + f"\n\n{body}\n")


def build_tree(root: Path) -> dict[str, Path]:
    home, agent = root / "home", root / "home" / ".pi" / "agent"
    above, repo = root / "work", root / "work" / "repo"
    cwd = repo / "analysis" / "q3"
    write(agent / "AGENTS.md", "# Global\nAlways be brief.\n")
    skill(
        agent / "skills" / "plot",
        "plot",
        '"How we plot: matplotlib, our colours & <style>."',
        "Use `plt`.\nSee ./style.md",
    )
    write(agent / "skills" / "plot" / "style.md", "Blue is #1f77b4.\n")
    skill(agent / "skills" / "local", "local", "The user's own 'local' skill (loses to the project's).")
    write(
        agent / "prompts" / "review.md",
        "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $1 carefully.\n",
    )
    write(
        agent / "prompts" / "args.md",
        "All: $@ | first: ${1:-none} | rest: ${@:2} | one: ${@:2:1} | $ARGUMENTS | $9.\n",
    )
    write(agent / "prompts" / "fix.md", "Global fix: $@\n")
    skill(home / ".agents" / "skills" / "query", "query", "How to query sales.")
    skill(
        home / ".agents" / "skills" / "hidden-one",
        "hidden-one",
        "Only on request.",
        "Hidden body.",
        "disable-model-invocation: true",
    )
    (repo / ".git").mkdir(parents=True)
    write(repo / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(above / "AGENTS.md", "Above the repo.\n")
    skill(above / ".agents" / "skills" / "outside", "outside", "Above the git root: never found.")
    write(repo / "AGENTS.md", "Repo rules: use db.query.\n")
    skill(repo / ".agents" / "skills" / "warehouse", "warehouse", "The data warehouse.")
    write(cwd / "CLAUDE.md", "Q3 notes.\n")
    write(cwd / "AGENTS.MD", "not this one: AGENTS.md variants are tried first, CLAUDE.md after\n")
    skill(cwd / ".pi" / "skills" / "local", "local", "The project's local skill.", "Project body.")
    skill(cwd / ".pi" / "skills" / "broken", None, None, "No description.")
    skill(cwd / ".pi" / "skills" / "Bad_Name", "Bad_Name", "Loads with a warning.")
    write(cwd / ".pi" / "skills" / "yaml" / "SKILL.md", "---\nname: [unclosed\ndescription: x\n---\nbody\n")
    write(cwd / ".pi" / "prompts" / "fix.md", "---\ndescription: Fix it\n---\nProject fix: $ARGUMENTS\n")
    return {"home": home, "agent": agent, "cwd": cwd, "repo": repo}


def build_worktree(root: Path) -> dict[str, Path]:
    home, agent = root / "home", root / "home" / ".pi" / "agent"
    main = root / "main"
    (main / ".git" / "worktrees" / "wt").mkdir(parents=True)
    write(main / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(main / ".git" / "worktrees" / "wt" / "HEAD", "ref: refs/heads/wt\n")
    write(main / ".git" / "worktrees" / "wt" / "commondir", "../..\n")
    write(main / "AGENTS.md", "Shared rules (tracked).\n")
    wt = main / "wt"
    write(wt / ".git", f"gitdir: {main / '.git' / 'worktrees' / 'wt'}\n")
    write(wt / "AGENTS.md", "Shared rules (tracked).\n")
    agent.mkdir(parents=True)
    return {"home": home, "agent": agent, "cwd": wt}


def trust(agent: Path, entries: dict[str, bool]) -> None:
    write(agent / "trust.json", json.dumps(entries, indent=2) + "\n")


def scenarios(tmp_path: Path) -> list[dict[str, Any]]:
    made: list[dict[str, Any]] = []
    for label, decision in (("trusted", True), ("distrusted", False), ("undecided", None)):
        tree = build_tree(tmp_path / label)
        if decision is not None:
            # written by us, read by Pi; an ancestor's decision counts
            save_trust([(str(tree["repo"]), decision)], str(tree["agent"]))
        made.append({"label": label, **tree})
    off = build_tree(tmp_path / "no-context")
    trust(off["agent"], {str(off["cwd"].resolve()): True})
    made.append({"label": "no-context", "noContextFiles": True, **off})
    made.append({"label": "worktree", **build_worktree(tmp_path / "worktree")})
    return made


async def ours(faux: FauxRegistration, scenario: dict[str, Any]) -> dict[str, Any]:
    loader = ResourceLoader(
        str(scenario["cwd"]),
        agent_dir=str(scenario["agent"]),
        home=str(scenario["home"]),
        context_files=not scenario.get("noContextFiles", False),
    )
    seen: list[tuple[str, str]] = []

    def answer(context: Any, *rest: Any) -> str:
        last = context.messages[-1]
        seen.append((context.system_prompt, "".join(b.text for b in last.content if b.type == "text")))
        return "ok"

    faux.set_responses([answer] * len(INPUTS))
    session = AgentSession.create(
        cwd=str(scenario["cwd"]),
        model=faux.get_model(),
        system_prompt=BASE,
        session_manager=SessionManager.in_memory(str(scenario["cwd"])),
        resources=loader,
    )
    for text in INPUTS:
        await session.prompt(text)
    found = loader.current()
    return {
        "prompts": {system for system, _ in seen},
        "expanded": [text for _, text in seen],
        "resources": found,
    }


@pytest.mark.asyncio
async def test_the_model_gets_the_prompt_and_expansions_pi_makes(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    node = require_node22()
    made = scenarios(tmp_path)
    payload = [
        {
            "cwd": str(s["cwd"]),
            "agentDir": str(s["agent"]),
            "home": str(s["home"]),
            "base": BASE,
            "inputs": INPUTS,
            "noContextFiles": s.get("noContextFiles", False),
        }
        for s in made
    ]
    updates = [(str(tmp_path / "b"), True), (str(tmp_path / "a"), False), (str(tmp_path / "é"), True)]
    for name in ("a", "b", "é"):
        (tmp_path / name).mkdir()
    ours_dir, pis_dir = tmp_path / "ours-agent", tmp_path / "pis-agent"
    save_trust(updates, str(ours_dir))
    save_trust([(str(tmp_path / "b"), None)], str(ours_dir))
    writes = [
        {"agentDir": str(pis_dir), "updates": [{"path": p, "decision": d} for p, d in updates]},
        {"agentDir": str(pis_dir), "updates": [{"path": str(tmp_path / "b"), "decision": None}]},
    ]
    theirs = run_node("resources_runner.mjs", {"scenarios": payload, "trustWrites": writes}, node=node)
    assert (ours_dir / "trust.json").read_bytes() == (pis_dir / "trust.json").read_bytes()
    for scenario, pi in zip(made, theirs, strict=True):
        label = scenario["label"]
        mine = await ours(faux, scenario)
        assert mine["prompts"] == {pi["systemPrompt"]}, label
        assert mine["expanded"] == pi["expanded"], label
        found = mine["resources"]
        assert found.trusted == pi["trusted"], label
        trust_now = project_trust(str(scenario["cwd"]), str(scenario["agent"]), str(scenario["home"]))
        assert (trust_now.needs_trust, trust_now.decision) == (pi["needsTrust"], pi["decision"]), label
        skills = [
            {"name": s.name, "path": s.file_path, "hidden": s.disable_model_invocation} for s in found.skills
        ]
        assert skills == pi["skills"], label
        templates = [
            {"name": t.name, "description": t.description, "hint": t.argument_hint} for t in found.templates
        ]
        assert templates == pi["templates"], label
        diagnostics = [{"type": d.type, "path": d.path, "winner": d.winner} for d in found.diagnostics]
        assert diagnostics == pi["skillDiagnostics"] + pi["templateDiagnostics"], label


def test_the_trees_exercise_what_they_claim(tmp_path: Path) -> None:
    """The comparison above would pass on empty trees too: check the trees hold what it is about."""
    tree = build_tree(tmp_path)
    trust(tree["agent"], {str(tree["repo"].resolve()): True})
    found = ResourceLoader(str(tree["cwd"]), agent_dir=str(tree["agent"]), home=str(tree["home"])).load()
    names = [s.name for s in found.skills]
    assert names == ["Bad_Name", "local", "warehouse", "plot", "hidden-one", "query"]
    assert "outside" not in names
    prompt = found.system_prompt(BASE)
    assert "<project_context>" in prompt
    assert "<available_skills>" in prompt
    assert "Above the repo." in prompt
    assert "Q3 notes." not in prompt
    assert "hidden-one" not in prompt
    kinds = sorted(d.type for d in found.diagnostics)
    assert kinds.count("collision") == 2
    assert "warning" in kinds
    untrusted = ResourceLoader(
        str(tree["cwd"]), agent_dir=str(tree["agent"]), home=str(tree["home"]), trusted=False
    )
    assert [s.name for s in untrusted.load().skills] == ["local", "plot", "hidden-one", "query"]
