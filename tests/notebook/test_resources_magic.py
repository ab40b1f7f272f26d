"""Pi's resources in ``%%pi`` and ``%pi`` on a real ``InteractiveShell`` with the faux provider:
the notebook's folder's ``AGENTS.md`` in the system prompt (and off), ``/template`` and
``/skill:`` expansion, trust (undecided is untrusted where nobody can click, unless
``c.PiMagics.trust_headless``), ``%pi trust`` / ``--revoke`` / ``--parent``, ``%pi resources``,
``%pi reload``, re-reading a changed file between cells, and a project ``.pi/settings.json``
read only when trusted. ``HOME`` and Pi's agent dir are temporary folders."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, run  # noqa: F401

from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message
from pi_notebook.notebook.state import state_for

MODEL = "--model faux:faux-1"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A notebook in ``tmp_path/project`` with an AGENTS.md, a project skill and template, a
    user skill and template, in a temporary HOME and agent dir."""
    home, agent, folder = tmp_path / "home", tmp_path / "agent", tmp_path / "project"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    ip.user_ns["__session__"] = str(folder / "analysis.ipynb")
    write(folder / "analysis.ipynb", "{}")
    write(folder / "AGENTS.md", "Our data lives in the warehouse; use db.query.\n")
    write(
        folder / ".pi" / "skills" / "sales" / "SKILL.md",
        "---\ndescription: How to query sales\n---\nUse db.query.\n",
    )
    write(folder / ".pi" / "prompts" / "review.md", "---\ndescription: Review\n---\nReview $1 please.\n")
    write(agent / "skills" / "plot" / "SKILL.md", "---\ndescription: How we plot\n---\nUse plt.\n")
    write(
        agent / "skills" / "secret" / "SKILL.md",
        "---\ndescription: x\ndisable-model-invocation: true\n---\nS.\n",
    )
    write(agent / "prompts" / "hello.md", "Hello $@!\n")
    yield {"home": home, "agent": agent, "folder": folder}
    ip.user_ns.pop("__session__", None)
    magics = ip.magics_manager.registry["PiMagics"]
    magics.context_files, magics.trust_headless = True, False


class Seen:
    def __init__(self, faux: FauxRegistration, count: int = 4) -> None:
        self.calls: list[tuple[str, str]] = []
        faux.set_responses([self.reply] * count)

    def reply(self, context: Any, *rest: Any) -> Any:
        last = context.messages[-1]
        self.calls.append((context.system_prompt, "".join(getattr(b, "text", "") for b in last.content)))
        return faux_assistant_message("ok")


def pi(ip: Any, body: str, line: str = MODEL) -> Any:
    result, captured = run(ip, f"%%pi {line}\n{body}")
    assert result.error_in_exec is None, result.error_in_exec
    return captured


def line(ip: Any, text: str) -> str:
    result, captured = run(ip, f"%pi {text}")
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return str(captured.stdout)


def test_untrusted_folder_gets_context_files_and_user_resources_only(
    ip: Any, faux: FauxRegistration, project: dict[str, Path]
) -> None:
    seen = Seen(faux)
    captured = pi(ip, "/review model.py")
    system, sent = seen.calls[0]
    assert "<project_context>" in system
    assert "use db.query" in system
    assert "<name>plot</name>" in system
    assert "sales" not in system
    assert "secret" not in system
    assert sent == "/review model.py"  # the project's template is not loaded: sent as typed
    assert "Project resources not loaded" in str(captured.outputs[0].data["text/plain"])
    pi(ip, "/hello a b")
    assert seen.calls[1][1] == "Hello a b!\n"  # without frontmatter Pi keeps the body as it is


def test_trust_then_templates_and_skills_expand_and_revoke_undoes_it(
    ip: Any, faux: FauxRegistration, project: dict[str, Path]
) -> None:
    out = line(ip, "trust")
    assert "is trusted" in out
    store = json.loads((project["agent"] / "trust.json").read_text())
    assert store == {str(project["folder"].resolve()): True}
    seen = Seen(faux)
    pi(ip, "/review model.py")
    pi(ip, "/skill:sales last quarter")
    assert seen.calls[0][1] == "Review model.py please."
    assert seen.calls[1][1].startswith('<skill name="sales" location="')
    assert "last quarter" in seen.calls[1][1]
    assert "<name>sales</name>" in seen.calls[0][0]
    line(ip, "trust --revoke")
    assert json.loads((project["agent"] / "trust.json").read_text()) == {
        str(project["folder"].resolve()): False
    }
    pi(ip, "/review again")
    assert seen.calls[2][1] == "/review again"


def test_trust_parent_and_bad_arguments(ip: Any, project: dict[str, Path]) -> None:
    assert "is trusted" in line(ip, "trust --parent")
    store = json.loads((project["agent"] / "trust.json").read_text())
    assert store == {str(project["folder"].parent.resolve()): True}
    with pytest.raises(UsageError, match="usage: %pi trust"):
        line(ip, "trust --yes")


def test_headless_trust_trait_and_context_files_switch(
    ip: Any, faux: FauxRegistration, project: dict[str, Path]
) -> None:
    magics = ip.magics_manager.registry["PiMagics"]
    magics.trust_headless, magics.context_files = True, False
    seen = Seen(faux)
    pi(ip, "/review x")
    system, sent = seen.calls[0]
    assert sent == "Review x please."
    assert "<project_context>" not in system
    assert "<name>sales</name>" in system
    assert not (project["agent"] / "trust.json").exists()  # a run's default is not a decision


def test_resources_lists_what_loads_hidden_and_skipped(ip: Any, project: dict[str, Path]) -> None:
    write(project["agent"] / "skills" / "broken" / "SKILL.md", "---\nname: x\n---\nno description\n")
    out = line(ip, "resources")
    assert f"Resources of {project['folder']}: not decided yet" in out
    assert str(project["folder"] / "AGENTS.md") in out
    assert "secret (user)" in out
    assert "hidden from the model" in out
    assert "/hello (user)" in out
    assert ".pi/skills: not loaded: this folder is not trusted" in out
    assert "broken/SKILL.md: description is required" in out
    line(ip, "trust")
    out = line(ip, "resources")
    assert "sales (project)" in out
    assert "/review (project)" in out
    assert "Skipped" not in out
    with pytest.raises(UsageError):
        line(ip, "resources now")


def test_a_changed_file_is_read_again_before_the_next_cell(
    ip: Any, faux: FauxRegistration, project: dict[str, Path]
) -> None:
    seen = Seen(faux)
    pi(ip, "first")
    write(project["folder"] / "AGENTS.md", "Changed: use the lake.\n")
    pi(ip, "second")
    assert "use db.query" in seen.calls[0][0]
    assert "Changed: use the lake." in seen.calls[1][0]
    out = line(ip, "reload")
    assert f"reloaded {project['folder']}: 1 context files, 2 skills, 1 templates" in out


def test_project_settings_apply_only_when_trusted(ip: Any, project: dict[str, Path]) -> None:
    write(project["folder"] / ".pi" / "settings.json", json.dumps({"defaultThinkingLevel": "high"}))
    write(project["agent"] / "settings.json", json.dumps({"defaultThinkingLevel": "low"}))
    state = state_for(ip)
    assert state.defaults().thinking == "low"
    line(ip, "trust")
    assert state.defaults().thinking == "high"


def test_status_counts_a_trusted_projects_retry_settings(ip: Any, project: dict[str, Path]) -> None:
    """``%pi status`` works out the timeout bound from the settings a cell gets: a trusted
    project's ``retry`` keys included (it used to read Pi's global file only)."""
    write(project["folder"] / ".pi" / "settings.json", json.dumps({"retry": {"maxRetries": 1}}))
    magics = ip.magics_manager.registry["PiMagics"]
    magics.retries = magics.trait_defaults("retries")  # the fixture's 0 would win over the file
    ip.config.PiMagics.pop("retries", None)
    line(ip, "trust")
    status = line(ip, "status")
    assert "(2 attempts and the retry waits)" in status, status
