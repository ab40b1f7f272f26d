"""Session files cross over between pi_notebook and the real Pi 0.83.0, both ways.

For every scenario (every entry type, branches, a reset to a second root, branch summaries,
two compactions) both implementations write a file from the same operations. Then:

* Pi's ``SessionManager.open`` loads our file and gets our entries, leaf, tree, labels, name
  and ``buildSessionContext`` result;
* we load Pi's file and get Pi's;
* the two writers produce entries with the same field names and values (ids and timestamps
  aside), so a file does not betray which implementation wrote it.

Listing, forking, branched sessions, the default session directory and the entries collected
for a branch summary agree as well, and old (version 1), damaged, newer-version and
agent-recorded files load alike on both sides. ``CWD``, ``same_json`` and the ``_pi`` fixture
are shared with ``test_session_interop_compaction``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pi_node import require_pi, run_node
from session_scenarios import SCENARIOS, apply_ops, assistant, text, user

from pi_notebook.session import (
    SessionFormatWarning,
    SessionManager,
    collect_entries_for_branch_summary,
    default_session_dir,
    entry_to_dict,
    list_sessions,
)

pytestmark = pytest.mark.usefixtures("_pi")

CWD = "/work/project"


@pytest.fixture(scope="module")
def _pi() -> None:
    require_pi()


def snapshot(m: SessionManager) -> dict[str, Any]:
    tree: list[dict[str, Any]] = []

    def walk(nodes: list[Any]) -> None:
        for node in nodes:
            children = [c.entry.id for c in node.children]
            tree.append({"id": node.entry.id, "children": children, "label": node.label})
            walk(node.children)

    walk(m.get_tree())
    entries = m.get_entries()
    return {
        "header": m.get_header().model_dump(),
        "entries": [entry_to_dict(e) for e in entries],
        "leafId": m.get_leaf_id(),
        "context": m.build_session_context().to_dict(),
        "tree": tree,
        "name": m.get_session_name(),
        "labels": {e.id: m.get_label(e.id) for e in entries if m.get_label(e.id) is not None},
    }


def same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values (``0`` and ``0.0`` alike, key order ignored)."""
    return json.loads(json.dumps(a)) == json.loads(json.dumps(b))


def without_ids(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in entry.items()
        if k not in ("id", "parentId", "timestamp", "targetId", "firstKeptEntryId", "fromId")
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each scenario written by Pi and by us, and each file loaded by the other side."""
    root = tmp_path_factory.mktemp("interop")
    ours: dict[str, SessionManager] = {}
    for name, make in SCENARIOS.items():
        m = SessionManager.create(CWD, str(root / "py" / name))
        apply_ops(m, make())
        ours[name] = m
    actions: list[dict[str, Any]] = [
        {"kind": "write", "dir": str(root / "pi" / name), "cwd": CWD, "ops": make()}
        for name, make in SCENARIOS.items()
    ]
    actions += [{"kind": "load", "path": m.session_file} for m in ours.values()]
    results = run_node("session_interop.mjs", {"actions": actions})
    n = len(SCENARIOS)
    return {
        "ours": ours,
        "pi_wrote": dict(zip(SCENARIOS, results[:n], strict=True)),
        "pi_loaded_ours": dict(zip(SCENARIOS, results[n:], strict=True)),
        "root": root,
    }


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_pi_loads_our_file_and_rebuilds_our_context(written: dict[str, Any], name: str) -> None:
    ours = snapshot(written["ours"][name])
    pi = written["pi_loaded_ours"][name]
    assert same_json(pi["header"], ours["header"])
    assert same_json(pi["entries"], ours["entries"])
    assert pi["leafId"] == ours["leafId"]
    assert same_json(pi["context"], ours["context"])
    assert pi["tree"] == ours["tree"]
    assert pi["name"] == ours["name"]
    assert pi["labels"] == ours["labels"]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_we_load_pis_file_and_rebuild_its_context(written: dict[str, Any], name: str) -> None:
    pi = written["pi_wrote"][name]
    loaded = SessionManager.open(pi["path"])
    assert loaded.problems == []
    ours = snapshot(loaded)
    assert same_json(ours["entries"], pi["entries"])
    assert ours["leafId"] == pi["leafId"]
    assert same_json(ours["context"], pi["context"])
    assert ours["tree"] == pi["tree"]
    assert ours["name"] == pi["name"]
    assert ours["labels"] == pi["labels"]
    # the raw lines of Pi's file re-serialize to the same JSON objects
    lines = Path(pi["path"]).read_text("utf-8").splitlines()
    for line, entry in zip(lines[1:], loaded.get_entries(), strict=True):
        assert json.loads(line) == json.loads(json.dumps(entry_to_dict(entry)))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_both_writers_produce_the_same_fields(written: dict[str, Any], name: str) -> None:
    pi_entries = written["pi_wrote"][name]["entries"]
    our_entries = [entry_to_dict(e) for e in written["ours"][name].get_entries()]
    assert len(pi_entries) == len(our_entries)
    for pi_entry, our_entry in zip(pi_entries, our_entries, strict=True):
        assert list(our_entry)[:4] == ["type", "id", "parentId", "timestamp"]
        assert set(pi_entry) == set(our_entry), pi_entry["type"]
        assert same_json(without_ids(pi_entry), without_ids(our_entry))
    pi_header = written["pi_wrote"][name]["header"]
    assert set(pi_header) == set(written["ours"][name].get_header().model_dump())


def test_listing_fork_branched_and_default_dir(written: dict[str, Any], tmp_path: Path) -> None:
    ours: dict[str, SessionManager] = written["ours"]
    linear = ours["linear"].session_file
    branches = ours["branches"]
    b_leaf = next(e.id for e in branches.get_entries() if e.type == "label")
    actions = [
        {"kind": "list", "cwd": CWD, "dir": str(Path(linear).parent)},
        {"kind": "fork", "source": linear, "cwd": str(tmp_path / "other"), "dir": str(tmp_path / "forks")},
        {"kind": "branched", "path": branches.session_file, "leafId": b_leaf},
        {"kind": "default_dir", "cwd": "/home/me/my:proj", "agentDir": str(tmp_path / "agent")},
        {
            "kind": "collect",
            "path": branches.session_file,
            "oldLeafId": branches.get_entries()[3].id,
            "targetId": b_leaf,
        },
    ]
    listed, forked, branched, default_dir, collected = run_node("session_interop.mjs", {"actions": actions})

    info = list_sessions(CWD, str(Path(linear).parent))[0]
    (pi_info,) = listed
    assert (info.id, info.name, info.first_message, info.message_count) == (
        pi_info["id"],
        pi_info["name"],
        pi_info["firstMessage"],
        pi_info["messageCount"],
    )
    assert info.all_messages_text == pi_info["allMessagesText"]
    assert info.modified.isoformat().replace("+00:00", "Z")[:23] == pi_info["modified"][:23]

    fork = SessionManager.open(forked["path"])
    assert fork.get_header().parent_session == linear
    assert same_json(snapshot(fork)["context"], forked["context"])

    ours_branched = SessionManager.open(branches.session_file)
    ours_branched.create_branched_session(b_leaf)
    assert same_json(
        [without_ids(e) for e in snapshot(ours_branched)["entries"]],
        [without_ids(e) for e in branched["entries"]],
    )
    assert same_json(snapshot(ours_branched)["context"], branched["context"])
    pi_branched = SessionManager.open(branched["path"])
    assert same_json(snapshot(pi_branched)["context"], branched["context"])

    assert default_session_dir("/home/me/my:proj", str(tmp_path / "agent"), create=False) == default_dir
    entries, ancestor = collect_entries_for_branch_summary(branches, branches.get_entries()[3].id, b_leaf)
    assert ([e.id for e in entries], ancestor) == (collected["ids"], collected["commonAncestorId"])


# --- old, damaged, foreign and agent-recorded files ------------------------------------------


def _write_lines(path: Path, rows: list[Any], tail: str = "") -> str:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows) + tail, "utf-8"
    )
    return str(path)


def _v1_rows() -> list[Any]:
    stamp = "2025-01-01T00:00:0{}.000Z"
    hook = {"role": "hookMessage", "customType": "h", "content": "hook text", "display": True, "timestamp": 5}
    return [
        {"type": "session", "id": "old-v1", "timestamp": stamp.format(0), "cwd": CWD},
        {"type": "message", "timestamp": stamp.format(1), "message": user("u0")},
        {"type": "message", "timestamp": stamp.format(2), "message": assistant(text("a0"))},
        {"type": "message", "timestamp": stamp.format(3), "message": user("u1", ts=3)},
        {
            "type": "compaction",
            "timestamp": stamp.format(4),
            "summary": "S",
            "firstKeptEntryIndex": 3,
            "tokensBefore": 9,
        },
        {"type": "message", "timestamp": stamp.format(5), "message": hook},
        {"type": "model_change", "timestamp": stamp.format(6), "provider": "openai", "modelId": "gpt-4o"},
    ]


def _damaged_rows() -> list[Any]:
    header = {
        "type": "session",
        "version": 4,
        "id": "newer",
        "timestamp": "2026-07-30T10:00:00.000Z",
        "cwd": CWD,
    }
    stamp = "2026-07-30T10:00:01.000Z"
    return [
        header,
        {"type": "message", "id": "a1", "parentId": None, "timestamp": stamp, "message": user("hi")},
        "{broken json",
        {"type": "leaf", "id": "l1", "parentId": "a1", "timestamp": stamp, "targetId": "a1"},
        {
            "type": "message",
            "id": "a2",
            "parentId": "l1",
            "timestamp": stamp,
            "message": assistant(text("yo")),
        },
        {
            "type": "message",
            "id": "a3",
            "parentId": "a2",
            "timestamp": stamp,
            "message": {"role": "futureRole", "content": "x", "timestamp": 9},
        },
    ]


async def _recorded_agent_session(directory: Path) -> SessionManager:
    from pi_notebook.agent import Agent, tool
    from pi_notebook.ai import stream_simple
    from pi_notebook.ai.faux import faux_assistant_message, faux_tool_call, register_faux_provider
    from pi_notebook.session import SessionRecorder

    @tool
    def add(a: int, b: int) -> str:
        """Add two integers."""
        return str(a + b)

    faux = register_faux_provider(token_size={"min": 1, "max": 1})
    try:
        faux.set_responses(
            [
                faux_assistant_message(
                    [faux_tool_call("add", {"a": 1, "b": 2}, id="t1")], stop_reason="toolUse"
                ),
                "3",
            ]
        )
        agent = Agent(stream_fn=stream_simple, initial_state={"model": faux.get_model(), "tools": [add]})
        m = SessionManager.create(CWD, str(directory))
        SessionRecorder(m).attach(agent)
        await agent.prompt("1 + 2?")
        return m
    finally:
        faux.unregister()


def test_old_damaged_newer_and_recorded_files_load_alike(tmp_path: Path) -> None:
    ours_v1 = _write_lines(tmp_path / "v1-ours.jsonl", _v1_rows())
    pi_v1 = _write_lines(tmp_path / "v1-pi.jsonl", _v1_rows())
    damaged = _write_lines(tmp_path / "damaged.jsonl", _damaged_rows(), tail='{"type":"message","id":"a4"')
    recorded = asyncio.run(_recorded_agent_session(tmp_path / "rec"))
    actions = [{"kind": "load", "path": p} for p in (pi_v1, damaged, recorded.session_file)]
    pi_v1_loaded, pi_damaged, pi_recorded = run_node("session_interop.mjs", {"actions": actions})

    with pytest.warns(SessionFormatWarning, match="version 4 is newer"):
        ours_damaged = snapshot(SessionManager.open(damaged))
    for key in ("entries", "leafId", "context", "tree"):
        assert same_json(ours_damaged[key], pi_damaged[key]), key

    ours = snapshot(SessionManager.open(ours_v1))
    assert same_json(ours["context"], pi_v1_loaded["context"])  # migration gave the same tree
    assert [without_ids(e) for e in ours["entries"]] == [without_ids(e) for e in pi_v1_loaded["entries"]]
    assert [e["parentId"] is None for e in ours["entries"]] == [
        e["parentId"] is None for e in pi_v1_loaded["entries"]
    ]
    assert json.loads(Path(ours_v1).read_text().splitlines()[0])["version"] == 3

    assert same_json(snapshot(recorded)["context"], pi_recorded["context"])
    assert same_json(snapshot(recorded)["entries"], pi_recorded["entries"])
