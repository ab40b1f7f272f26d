"""Pi's own ``settings.json`` in the notebook, on a real ``InteractiveShell`` with the faux
provider and a temporary ``PI_CODING_AGENT_DIR``: its default model, thinking level,
compaction and retry for new conversations unless a ``c.PiMagics`` trait says otherwise,
``%pi model ... --save``, ``--new`` keeping the model, and a broken file that breaks nothing."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401

from pi_notebook.ai.faux import FauxRegistration, register_faux_provider
from pi_notebook.notebook.state import state_for
from pi_notebook.session import CompactionSettings

TRAITS = ("model", "thinking", "compact", "compact_reserve_tokens", "compact_keep_recent_tokens",
          "retries", "retry_base_delay")


@pytest.fixture
def agent_dir(ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private agent dir; the traits Pi's file can stand in for are left alone (not in the
    config, at their defaults), as in a fresh kernel."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path))
    magics = ip.magics_manager.registry["PiMagics"]
    for section in magics.section_names():
        if section in magics.config:
            for trait in TRAITS:
                magics.config[section].pop(trait, None)
    for trait in TRAITS:
        setattr(magics, trait, magics.trait_defaults(trait))
    yield tmp_path
    magics.retries = 0


def settings(agent_dir: Path, **values: Any) -> Path:
    path = agent_dir / "settings.json"
    path.write_text(json.dumps(values, indent=2), encoding="utf-8")
    return path


def cell(ip: Any, line: str, body: str = "hello") -> tuple[Any, Any]:
    return run(ip, f"%%pi {line}\n{body}")


def pi_line(ip: Any, text: str) -> str:
    result, captured = run(ip, f"%pi {text}")
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return str(captured.stdout)


def plain(captured: Any) -> str:
    return str(outputs(captured)[-1]["text/plain"])


def test_a_fresh_conversation_uses_pis_default_model(
    ip: Any, faux: FauxRegistration, agent_dir: Path
) -> None:
    result, _ = cell(ip, "")
    assert isinstance(result.error_in_exec, UsageError)
    assert "%pi model provider:id --save" in str(result.error_in_exec)
    settings(agent_dir, defaultProvider="faux", defaultModel="faux-1", theme="dark")
    faux.set_responses(["from Pi's default"])
    result, _ = cell(ip, "--new")
    assert result.error_in_exec is None, result.error_in_exec
    assert ip.user_ns["_pi"].model == "faux:faux-1"
    assert ip.user_ns["_pi"].text == "from Pi's default"
    assert "model faux:faux-1 (from Pi's settings.json)" in pi_line(ip, "status")


def test_the_trait_and_the_variable_come_before_pis_default(
    ip: Any, agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register = register_faux_provider(models=[{"id": "faux-1"}, {"id": "faux-2"}])
    try:
        settings(agent_dir, defaultProvider="faux", defaultModel="faux-2")
        monkeypatch.setenv("PI_NOTEBOOK_MODEL", "faux:faux-1")
        assert state_for(ip).conversations.session("a").state.model.id == "faux-1"
        monkeypatch.delenv("PI_NOTEBOOK_MODEL")
        assert state_for(ip).conversations.session("b").state.model.id == "faux-2"
    finally:
        register.unregister()


def test_pis_thinking_level_is_clamped_and_a_set_trait_wins(ip: Any, agent_dir: Path) -> None:
    register = register_faux_provider(models=[{"id": "plain"}, {"id": "thinker", "reasoning": True}])
    try:
        settings(agent_dir, defaultProvider="faux", defaultModel="thinker", defaultThinkingLevel="high")
        assert state_for(ip).conversations.session("a").state.thinking_level == "high"
        settings(agent_dir, defaultProvider="faux", defaultModel="plain", defaultThinkingLevel="high")
        # Pi clamps its saved level to the model: no "--thinking high is ignored" for a level
        # the user never asked for in this notebook
        assert state_for(ip).conversations.session("b").state.thinking_level == "off"
        settings(agent_dir, defaultProvider="faux", defaultModel="thinker", defaultThinkingLevel="high")
        ip.run_line_magic("config", "PiMagics.thinking = 'off'")  # at its default, but set
        assert state_for(ip).conversations.session("c").state.thinking_level == "off"
    finally:
        register.unregister()


def test_compaction_and_retry_come_from_pi_unless_set(ip: Any, agent_dir: Path) -> None:
    settings(
        agent_dir,
        compaction={"enabled": False, "reserveTokens": 4096, "keepRecentTokens": 5000},
        retry={"maxRetries": 7, "baseDelayMs": 250},
        defaultThinkingLevel="low",
    )
    found = state_for(ip).sessions.settings()
    compaction = found.compaction
    assert compaction == CompactionSettings(enabled=False, reserve_tokens=4096, keep_recent_tokens=5000)
    assert (found.retry.max_retries, found.retry.base_delay_ms) == (7, 250)
    assert found.default_thinking_level == "low"
    assert "fails a model call after" in pi_line(ip, "status")
    magics = ip.magics_manager.registry["PiMagics"]
    magics.compact_reserve_tokens, magics.retries = 9000, 1
    found = state_for(ip).sessions.settings()
    assert (found.compaction.enabled, found.compaction.reserve_tokens) == (False, 9000)
    assert (found.retry.max_retries, found.retry.base_delay_ms) == (1, 250)
    settings(agent_dir, retry={"enabled": False})
    magics.retries = magics.trait_defaults("retries")
    assert state_for(ip).sessions.settings().retry.enabled is False


def test_save_round_trip_keeps_the_other_keys(ip: Any, faux: FauxRegistration, agent_dir: Path) -> None:
    path = settings(agent_dir, theme="dark", compaction={"enabled": True}, defaultProvider="openai")
    printed = pi_line(ip, "model faux:faux-1 --save")
    assert printed.splitlines()[0] == "faux:faux-1"
    assert f"saved as the default model in {path}" in printed
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved == {"theme": "dark", "compaction": {"enabled": True}, "defaultProvider": "faux",
                     "defaultModel": "faux-1"}
    assert path.read_text(encoding="utf-8") == json.dumps(saved, indent=2)
    faux.set_responses(["saved default"])
    result, _ = cell(ip, "--name elsewhere")  # a conversation that never had --model
    assert result.error_in_exec is None, result.error_in_exec
    assert ip.user_ns["_pi"].model == "faux:faux-1"


def test_save_says_when_the_trait_still_comes_first(ip: Any, faux: FauxRegistration, agent_dir: Path) -> None:
    ip.magics_manager.registry["PiMagics"].model = "faux:faux-1"
    printed = pi_line(ip, "model --save")
    assert "c.PiMagics.model (faux:faux-1) still comes first in this notebook" in printed
    assert json.loads((agent_dir / "settings.json").read_text())["defaultModel"] == "faux-1"


def test_save_without_a_model_or_over_a_broken_file_is_one_line(
    ip: Any, faux: FauxRegistration, agent_dir: Path
) -> None:
    with pytest.raises(UsageError, match=r"^model --save needs a model: %pi model provider:id --save$"):
        ip.run_line_magic("pi", "model --save")
    (agent_dir / "settings.json").write_text("{oops")
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("pi", "model faux:faux-1 --save")
    assert "is not valid JSON; fix or delete it, then save again" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert (agent_dir / "settings.json").read_text() == "{oops"


def test_new_keeps_the_model_and_thinking_level(ip: Any, agent_dir: Path) -> None:
    register = register_faux_provider(models=[{"id": "thinker", "reasoning": True}])
    try:
        register.set_responses(["one", "two"])
        result, _ = cell(ip, "--model faux:thinker --thinking high")
        assert result.error_in_exec is None, result.error_in_exec
        result, _ = cell(ip, "--new", "fresh start")
        assert result.error_in_exec is None, result.error_in_exec
        agent = state_for(ip).conversations.session()
        assert (agent.state.model.id, agent.state.thinking_level) == ("thinker", "high")
        assert [m.role for m in agent.state.messages] == ["user", "assistant"]  # fresh, though
    finally:
        register.unregister()


def test_a_malformed_file_is_one_notice_and_breaks_nothing(
    ip: Any, faux: FauxRegistration, agent_dir: Path
) -> None:
    path = agent_dir / "settings.json"
    path.write_text('{"defaultProvider": "faux", "defaultModel": ')
    faux.set_responses(["still fine", "again"])
    result, captured = cell(ip, "--model faux:faux-1")
    assert result.error_in_exec is None, result.error_in_exec
    shown = plain(captured)
    notice = (
        f"{path} is not valid JSON (Expecting value at line 1 column 45); it is ignored, fix it or delete it"
    )
    assert notice in shown.splitlines()
    assert ip.user_ns["_pi"].text == "still fine"
    _, captured = cell(ip, "")  # said once, the conversation goes on
    assert notice not in plain(captured)
    assert notice in pi_line(ip, "status")


def test_an_unknown_default_model_in_pis_file_says_where_it_came_from(ip: Any, agent_dir: Path) -> None:
    path = settings(agent_dir, defaultProvider="nosuch", defaultModel="model-x")
    assert "no model set" in pi_line(ip, "model")  # %pi still works
    result, _ = cell(ip, "")
    message = str(result.error_in_exec)
    assert isinstance(result.error_in_exec, UsageError)
    assert "\n" not in message
    assert message.startswith(f"Pi's default model nosuch:model-x ({path}) is unknown: ")
    assert "pass --model provider:id, or run %pi model provider:id --save" in message
