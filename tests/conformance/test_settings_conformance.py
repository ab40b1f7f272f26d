"""Pi's ``settings.json`` as the real Pi 0.83.0 reads and writes it (``settings_runner.mjs``,
Pi's own ``SettingsManager``) against ``pi_notebook/runtime/settings_file.py``: the same values
read from the same file, and a saved default model written byte for byte as Pi writes it."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.pi_node import require_node22, run_node

from pi_notebook.runtime.settings_file import read_pi_settings, save_default_model

ORIGINAL = (
    '{"theme":"dark","defaultThinkingLevel":"low","retry":{"maxRetries":1,"baseDelayMs":250},'
    '"compaction":{"enabled":false,"keepRecentTokens":9000},"note":"é ✓","n":[1,2.5,{}],"e":{}}'
)


def test_pi_and_we_read_the_same_values_and_write_the_same_bytes(tmp_path: Path) -> None:
    node = require_node22()
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for folder in (ours, theirs):
        folder.mkdir()
        (folder / "settings.json").write_text(ORIGINAL, encoding="utf-8")
    save = {"provider": "openai", "model": "gpt-4o"}
    payload = {"cwd": str(tmp_path), "agentDir": str(theirs), "save": save}
    pi = run_node("settings_runner.mjs", payload, node=node)

    found = read_pi_settings(str(ours)).session_settings()
    assert pi["compaction"] == {
        "enabled": found.compaction.enabled,
        "reserveTokens": found.compaction.reserve_tokens,
        "keepRecentTokens": found.compaction.keep_recent_tokens,
    }
    assert pi["retry"] == {
        "enabled": found.retry.enabled,
        "maxRetries": found.retry.max_retries,
        "baseDelayMs": found.retry.base_delay_ms,
    }
    assert pi["defaultThinkingLevel"] == found.default_thinking_level == "low"
    assert pi["errors"] == []

    save_default_model("openai", "gpt-4o", str(ours))
    written = (ours / "settings.json").read_bytes()
    assert written == (theirs / "settings.json").read_bytes()
    assert json.loads(written)["defaultModel"] == "gpt-4o"

    # and Pi reads what we wrote
    again = run_node("settings_runner.mjs", {"cwd": str(tmp_path), "agentDir": str(ours)}, node=node)
    assert (again["defaultProvider"], again["defaultModel"]) == ("openai", "gpt-4o")
