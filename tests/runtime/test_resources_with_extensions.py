"""Resources and extensions on one ``AgentSession``, in Pi's order: an extension's command and
``input`` handlers see the prompt as typed, then ``/template`` expands, and
``before_agent_start`` sees (and may replace) the run's system prompt with the resources'
blocks in it, for that run only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_notebook import AgentSession
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_text
from pi_notebook.ai.types import Context
from pi_notebook.runtime.extensions import ExtensionAPI, ExtensionRunner
from pi_notebook.runtime.resources import ResourceLoader
from pi_notebook.session import SessionManager

pytestmark = pytest.mark.asyncio


def _session(faux: FauxRegistration, tmp_path: Path, runner: ExtensionRunner) -> AgentSession:
    home, agent, cwd = tmp_path / "home", tmp_path / "home" / ".pi" / "agent", tmp_path / "project"
    (agent / "prompts").mkdir(parents=True)
    cwd.mkdir()
    (agent / "prompts" / "review.md").write_text("Review $1 carefully.\n")
    (cwd / "AGENTS.md").write_text("Use db.query for data.\n")
    loader = ResourceLoader(str(cwd), agent_dir=str(agent), home=str(home))
    return AgentSession.create(
        cwd=str(cwd),
        model=faux.get_model(),
        system_prompt="Base.",
        session_manager=SessionManager.in_memory(str(cwd)),
        resources=loader,
        extensions=runner,
    )


def _contexts(faux: FauxRegistration) -> list[Context]:
    seen: list[Context] = []

    def answer(context: Context, *_: Any) -> Any:
        seen.append(context)
        return faux_assistant_message([faux_text("ok")])

    faux.set_responses([answer] * 3)
    return seen


async def test_input_sees_the_typed_text_and_the_template_expands_after(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    typed: list[str] = []

    def setup(pi: ExtensionAPI) -> None:
        pi.on("input", lambda event: typed.append(event.text))

    runner = ExtensionRunner()
    await runner.load(setup, "watch")
    contexts = _contexts(faux)
    session = _session(faux, tmp_path, runner)
    await session.prompt("/review model.py")
    assert typed == ["/review model.py"]
    sent = contexts[0].messages[0].content[0].text  # type: ignore[union-attr]
    assert sent == "Review model.py carefully.\n"


async def test_before_agent_start_sees_the_project_context_and_replaces_it_for_the_run(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    given: list[str] = []

    def setup(pi: ExtensionAPI) -> None:
        def before(event: Any) -> Any:
            given.append(event.system_prompt)
            return {"system_prompt": event.system_prompt + "\nAlways answer in French."}

        pi.on("before_agent_start", before)

    runner = ExtensionRunner()
    await runner.load(setup, "french")
    contexts = _contexts(faux)
    session = _session(faux, tmp_path, runner)
    await session.prompt("hi")
    assert "<project_context>" in given[0]
    assert "Use db.query for data." in given[0]
    assert contexts[0].system_prompt == given[0] + "\nAlways answer in French."
    assert session.agent.state.system_prompt == "Base."  # the run's prompt, not the agent's
    await session.prompt("again")
    assert given[1] == given[0]  # the next run starts from the resources' prompt again
