"""Entry models: every type round-trips through a file with Pi's field names and shapes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from session_scenarios import SCENARIOS, apply_ops

from pi_notebook.ai.types import AssistantMessage, UserMessage
from pi_notebook.session import (
    BashExecutionMessage,
    CustomMessage,
    OtherMessage,
    SessionManager,
    UnknownEntry,
    entry_to_dict,
    parse_entry,
)
from pi_notebook.session.entries import iso_now, iso_to_ms, ms_to_iso, new_entry_id, uuidv7


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_entry_round_trips_through_the_file(tmp_path: Path, name: str) -> None:
    m = SessionManager.create("/proj", str(tmp_path))
    apply_ops(m, SCENARIOS[name]())
    written = [entry_to_dict(e) for e in m.get_entries()]
    lines = Path(m.session_file or "").read_text("utf-8").splitlines()
    assert len(lines) == 1 + len(written)
    assert json.loads(lines[0]) == m.get_header().model_dump()
    assert [json.loads(line) for line in lines[1:]] == json.loads(json.dumps(written))
    reopened = SessionManager.open(m.session_file or "")
    assert [entry_to_dict(e) for e in reopened.get_entries()] == written
    assert reopened.problems == []


def test_every_entry_type_is_covered_by_the_scenarios() -> None:
    types = set()
    for make in SCENARIOS.values():
        m = SessionManager.in_memory("/proj")
        apply_ops(m, make())
        types |= {e.type for e in m.get_entries()}
    assert types == {
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }


def test_lines_use_pis_layout() -> None:
    m = SessionManager.in_memory("/proj")
    root = m.append_model_change("anthropic", "claude")
    m.append_label_change(root, None)
    first, label = (entry_to_dict(e) for e in m.get_entries())
    assert list(first) == ["type", "id", "parentId", "timestamp", "provider", "modelId"]
    assert first["parentId"] is None  # kept as null, not left out
    assert "label" not in label  # an undefined label is left out, as JSON.stringify does
    assert re.fullmatch(r"[0-9a-f]{8}", first["id"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", first["timestamp"])


def test_header_fields() -> None:
    m = SessionManager.in_memory("/proj", session_id="my-id.1")
    header = m.get_header().model_dump()
    assert header == {
        "type": "session",
        "version": 3,
        "id": "my-id.1",
        "timestamp": header["timestamp"],
        "cwd": "/proj",
    }
    with pytest.raises(Exception, match="Session id must be non-empty"):
        SessionManager.in_memory("/proj", session_id="-bad")


def test_message_roles_parse_to_their_models() -> None:
    def entry(message: dict[str, Any]) -> Any:
        return parse_entry(
            {
                "type": "message",
                "id": "a",
                "parentId": None,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": message,
            }
        ).message

    assert isinstance(entry({"role": "user", "content": "hi", "timestamp": 1}), UserMessage)
    assert isinstance(entry({"role": "assistant", "content": [], "timestamp": 1}), AssistantMessage)
    bash = entry(
        {
            "role": "bashExecution",
            "command": "ls",
            "output": "",
            "exitCode": None,
            "cancelled": False,
            "truncated": False,
            "timestamp": 1,
        }
    )
    assert isinstance(bash, BashExecutionMessage)
    custom = entry({"role": "custom", "customType": "x", "content": "c", "display": True, "timestamp": 1})
    assert isinstance(custom, CustomMessage)
    other = entry({"role": "extensionThing", "payload": {"a": 1}, "timestamp": 5})
    assert isinstance(other, OtherMessage)
    assert other.model_dump() == {"role": "extensionThing", "payload": {"a": 1}, "timestamp": 5}
    # a null content (old or hand-edited files) reads as an empty list, as in Pi
    assert entry({"role": "user", "content": None, "timestamp": 1}).content == []


def test_unknown_types_are_kept_verbatim() -> None:
    raw = {"type": "leaf", "id": "abcd0001", "parentId": "x", "timestamp": "t", "targetId": "y", "extra": [1]}
    entry = parse_entry(raw)
    assert isinstance(entry, UnknownEntry)
    assert (entry.type, entry.id, entry.parent_id) == ("leaf", "abcd0001", "x")
    assert entry_to_dict(entry) == raw


def test_extra_fields_of_known_types_survive() -> None:
    raw = {
        "type": "model_change",
        "id": "a",
        "parentId": None,
        "timestamp": "t",
        "provider": "p",
        "modelId": "m",
        "newField": {"x": 1},
    }
    assert entry_to_dict(parse_entry(raw)) == raw


def test_timestamps_and_ids() -> None:
    assert ms_to_iso(1785405600123) == "2026-07-30T10:00:00.123Z"
    assert iso_to_ms("2026-07-30T10:00:00.123Z") == 1785405600123
    assert iso_to_ms("not a date") == 0
    assert abs(iso_to_ms(iso_now()) - iso_to_ms(ms_to_iso(iso_to_ms(iso_now())))) < 1000
    taken = {"aaaaaaaa"}
    assert re.fullmatch(r"[0-9a-f]{8}", new_entry_id(taken))
    first, second = uuidv7(), uuidv7()
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", first)
    assert first[:8] <= second[:8]  # time-ordered
