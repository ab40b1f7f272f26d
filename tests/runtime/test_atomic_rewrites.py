"""Every file the package rewrites (Pi's ``trust.json`` and ``settings.json``, a session file
being migrated) goes through a temporary file in the same folder, fsynced and renamed under
the lock: a write that fails at any byte (an injected writer: a full disk, a Ctrl-C) leaves
the old file exactly as it was and no temporary file behind."""

from __future__ import annotations

import errno
import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from tmpfs import fill, tmpfs_fixture  # noqa: F401

from pi_notebook.runtime.resources import trust
from pi_notebook.runtime.settings_file import SettingsWriteError, save_default_model
from pi_notebook.session import SessionManager, storage


def failing_writer(after: int, error: BaseException) -> Callable[[int, bytes | memoryview], int]:
    left = [after]

    def write(fd: int, data: bytes | memoryview) -> int:
        if left[0] <= 0:
            raise error
        written = os.write(fd, bytes(data[: left[0]]))
        left[0] -= written
        return written

    return write


ERRORS = [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()]


@pytest.mark.parametrize("error", ERRORS, ids=["enospc", "interrupt"])
def test_a_failed_trust_write_keeps_every_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    decisions = {str(tmp_path / f"project{n}"): n % 2 == 0 for n in range(5)}
    store = agent / "trust.json"
    store.write_text(json.dumps(decisions, indent=2) + "\n")
    before = store.read_bytes()
    for offset in (0, 1, 10, len(before) // 2, len(before) - 1, len(before) + 40):
        monkeypatch.setattr(storage, "os_write", failing_writer(offset, error))
        expected = KeyboardInterrupt if isinstance(error, KeyboardInterrupt) else trust.TrustStoreError
        with pytest.raises(expected) as caught:
            trust.save_trust([(str(tmp_path / "new"), True)], str(agent))
        if expected is trust.TrustStoreError:
            assert "No space left on device" in str(caught.value)
            assert "\n" not in str(caught.value)
        assert store.read_bytes() == before, offset
        assert sorted(p.name for p in agent.iterdir()) == ["trust.json"], offset  # no temp, no lock left
    monkeypatch.setattr(storage, "os_write", os.write)
    trust.save_trust([(str(tmp_path / "new"), True)], str(agent))
    assert len(json.loads(store.read_text())) == 6


@pytest.mark.parametrize("error", ERRORS, ids=["enospc", "interrupt"])
def test_a_failed_settings_write_keeps_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"defaultProvider": "faux", "defaultModel": "a", "theme": "dark"}))
    os.chmod(settings, 0o640)
    before = settings.read_bytes()
    monkeypatch.setattr(storage, "os_write", failing_writer(7, error))
    expected = KeyboardInterrupt if isinstance(error, KeyboardInterrupt) else SettingsWriteError
    with pytest.raises(expected):
        save_default_model("openai", "gpt-4o-mini", str(tmp_path))
    assert settings.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]
    monkeypatch.setattr(storage, "os_write", os.write)
    save_default_model("openai", "gpt-4o-mini", str(tmp_path))
    assert json.loads(settings.read_text())["theme"] == "dark"
    assert settings.stat().st_mode & 0o777 == 0o640  # the file keeps its mode


def test_a_failed_migration_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A v1 file is rewritten as v3 when opened; a disk that refuses leaves the v1 file and the
    session loads in memory all the same."""
    path = tmp_path / "old.jsonl"
    rows = [
        {"type": "session", "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
        {"type": "message", "message": {"role": "user", "content": "hi"}, "timestamp": "2025-01-01"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = path.read_bytes()
    monkeypatch.setattr(storage, "os_write", failing_writer(20, OSError(errno.ENOSPC, "No space left")))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manager = SessionManager.open(str(path))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl"]
    assert len(manager.get_entries()) == 1
    assert manager.write_failure is not None
    assert any("No space left" in str(w.message) for w in caught)


def test_trust_json_on_a_full_disk_keeps_every_decision(tmp_path: Path, tmpfs: Callable[[str], Path]) -> None:
    """A real full file system (a 64 KiB tmpfs): rewriting in place would truncate the store."""
    agent = tmpfs("size=64k")
    store = agent / "trust.json"
    store.write_text(json.dumps({str(tmp_path / f"p{n}"): True for n in range(20)}, indent=2) + "\n")
    before = store.read_bytes()
    fill(agent)
    more = [(str(tmp_path / f"new{n:03}" / ("x" * 100)), False) for n in range(200)]  # 20 KB more
    with pytest.raises(trust.TrustStoreError, match="No space left on device"):
        trust.save_trust(more, str(agent))
    assert store.read_bytes() == before
