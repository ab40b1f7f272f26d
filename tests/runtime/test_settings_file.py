"""Pi's global ``settings.json`` read into values and its default model written back, on real
files in a temporary agent dir (``pi_notebook/runtime/settings_file.py``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pi_notebook.runtime import AgentSessionSettings
from pi_notebook.runtime.settings_file import (
    SettingsWriteError,
    read_pi_settings,
    save_default_model,
    settings_path,
)
from pi_notebook.session import CompactionSettings

FULL = {
    "defaultProvider": "anthropic",
    "defaultModel": "claude-sonnet-4-5",
    "defaultThinkingLevel": "high",
    "compaction": {"enabled": False, "reserveTokens": 4096, "keepRecentTokens": 8000},
    "retry": {"enabled": True, "maxRetries": 5, "baseDelayMs": 500},
    "theme": "dark",
}


def write(agent_dir: Path, text: str) -> Path:
    path = agent_dir / "settings.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_keys_pi_uses_become_values(tmp_path: Path) -> None:
    write(tmp_path, json.dumps(FULL, indent=2))
    found = read_pi_settings(str(tmp_path))
    assert found.problems == ()
    assert found.model_spec == "anthropic:claude-sonnet-4-5"
    settings = found.session_settings()
    assert settings.compaction == CompactionSettings(
        enabled=False, reserve_tokens=4096, keep_recent_tokens=8000
    )
    retry = settings.retry
    assert (retry.enabled, retry.max_retries, retry.base_delay_ms) == (True, 5, 500)
    assert settings.default_thinking_level == "high"


def test_a_provider_without_a_model_names_no_default_model(tmp_path: Path) -> None:
    write(tmp_path, '{"defaultProvider": "openai", "compaction": {"reserveTokens": 1000}}')
    found = read_pi_settings(str(tmp_path))
    assert found.model_spec is None  # Pi uses the pair only when both are set
    assert found.compaction_settings() == CompactionSettings(reserve_tokens=1000)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"defaultModel": "x",', "is not valid JSON"),
        ('{"retry": {"maxRetries": NaN}}', "is not valid JSON"),
        ("[1, 2]", "must hold a JSON object, not an array"),
        ("\udcff", "is not valid JSON"),
    ],
)
def test_a_malformed_file_is_one_line_and_pi_defaults(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    found = read_pi_settings(str(tmp_path))
    [problem] = found.problems
    assert expected in problem
    assert str(path) in problem
    assert "\n" not in problem
    assert found.model_spec is None
    assert found.session_settings() == AgentSessionSettings()


def test_wrong_types_are_reported_and_the_good_keys_kept(tmp_path: Path) -> None:
    write(
        tmp_path,
        json.dumps({
            "defaultProvider": "openai",
            "defaultModel": 4,
            "defaultThinkingLevel": "extreme",
            "compaction": {"enabled": "yes", "reserveTokens": 2048, "keepRecentTokens": -1},
            "retry": [1],
        }),
    )
    found = read_pi_settings(str(tmp_path))
    assert len(found.problems) == 5, found.problems
    assert all("\n" not in p and "ignored" in p for p in found.problems)
    assert any("defaultModel must be a non-empty string, not 4" in p for p in found.problems)
    assert any("compaction.keepRecentTokens must be a whole number" in p for p in found.problems)
    assert found.default_provider == "openai"
    assert found.model_spec is None
    assert found.compaction_settings() == CompactionSettings(reserve_tokens=2048)
    assert found.session_settings().retry == AgentSessionSettings().retry


def test_a_missing_file_is_said_and_not_a_problem_for_the_values(tmp_path: Path) -> None:
    found = read_pi_settings(str(tmp_path / "nowhere"))
    assert found.missing
    assert not found.exists
    path = tmp_path / "nowhere" / "settings.json"
    assert found.problems == (f"no Pi settings file at {path}; Pi's defaults apply",)
    assert found.session_settings() == AgentSessionSettings()


def test_an_edited_file_is_read_again(tmp_path: Path) -> None:
    path = write(tmp_path, '{"defaultProvider": "a", "defaultModel": "b"}')
    assert read_pi_settings(str(tmp_path)).model_spec == "a:b"
    path.write_text('{"defaultProvider": "a", "defaultModel": "cc"}', encoding="utf-8")
    os.utime(path, ns=(1, 1))  # a new stamp even within the file system's time resolution
    assert read_pi_settings(str(tmp_path)).model_spec == "a:cc"


def test_saving_keeps_every_other_key_in_pis_layout(tmp_path: Path) -> None:
    original = {"theme": "dark", "defaultModel": "old", "packages": ["a", "b"], "retry": {"maxRetries": 1},
                "note": "é ✓"}
    write(tmp_path, json.dumps(original))
    path = save_default_model("openai", "gpt-4o-mini", str(tmp_path))
    text = Path(path).read_text(encoding="utf-8")
    expected = {**original, "defaultModel": "gpt-4o-mini", "defaultProvider": "openai"}
    assert json.loads(text) == expected
    assert list(json.loads(text)) == ["theme", "defaultModel", "packages", "retry", "note", "defaultProvider"]
    # JSON.stringify(settings, null, 2): two spaces, non-ASCII as is, no newline at the end
    assert text == json.dumps(expected, indent=2, ensure_ascii=False)
    assert '\n  "packages": [\n    "a",\n    "b"\n  ],' in text
    assert not text.endswith("\n")
    assert not os.path.exists(path + ".lock")
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]  # no temporary file left
    assert read_pi_settings(str(tmp_path)).model_spec == "openai:gpt-4o-mini"


def test_saving_creates_the_agent_dir(tmp_path: Path) -> None:
    agent_dir = tmp_path / "new" / "agent"
    path = save_default_model("ollama", "llama3.2:3b", str(agent_dir))
    assert path == settings_path(str(agent_dir))
    assert json.loads(Path(path).read_text()) == {"defaultProvider": "ollama", "defaultModel": "llama3.2:3b"}


def test_saving_over_a_malformed_file_refuses_and_keeps_it(tmp_path: Path) -> None:
    path = write(tmp_path, '{"theme": "dark",')
    with pytest.raises(SettingsWriteError) as caught:
        save_default_model("openai", "gpt-4o-mini", str(tmp_path))
    assert "is not valid JSON; fix or delete it" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert path.read_text() == '{"theme": "dark",'


def test_saving_waits_for_pis_lock_and_takes_over_a_stale_one(tmp_path: Path) -> None:
    write(tmp_path, "{}")
    lock = tmp_path / "settings.json.lock"
    lock.mkdir()  # a Pi process holds it
    with pytest.raises(SettingsWriteError) as caught:
        save_default_model("openai", "gpt-4o-mini", str(tmp_path))
    assert "held by another Pi process" in str(caught.value)
    assert lock.is_dir()  # not ours to remove
    os.utime(lock, (0, 0))  # its holder died long ago
    save_default_model("openai", "gpt-4o-mini", str(tmp_path))
    assert not lock.exists()
    assert read_pi_settings(str(tmp_path)).model_spec == "openai:gpt-4o-mini"


def test_a_symlinked_settings_file_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "pi-settings.json"
    real.parent.mkdir()
    real.write_text('{"theme": "light"}')
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "settings.json").symlink_to(real)
    save_default_model("openai", "gpt-4o", str(agent_dir))
    assert (agent_dir / "settings.json").is_symlink()
    assert json.loads(real.read_text())["defaultModel"] == "gpt-4o"
