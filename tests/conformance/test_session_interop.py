"""Session files cross over between pi_notebook and the real Pi 0.83.0, both ways.

For every scenario (every entry type, branches, a reset to a second root, branch summaries,
two compactions) both implementations write a file from the same operations. Then:

* Pi's ``SessionManager.open`` loads our file and gets our entries, leaf, tree, labels, name
  and ``buildSessionContext`` result;
* we load Pi's file and get Pi's;
* the two writers produce entries with the same field names and values (ids and timestamps
  aside), so a file does not betray which implementation wrote it.

Compaction and branch summaries are compared request by request: the same preparation
(cut point, messages, file lists, token estimate) and the same prompt text, system prompt and
``maxTokens``, with a fake stream function standing in for the model on both sides.
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
from session_scenarios import SCENARIOS, apply_ops, assistant, text, tool_call, tool_result, user

from pi_notebook.ai.event_stream import AssistantMessageEventStream
from pi_notebook.ai.events import DoneEvent
from pi_notebook.ai.types import AssistantMessage, Model, TextContent, Usage
from pi_notebook.session import (
    CompactionSettings,
    SessionFormatWarning,
    SessionManager,
    SummaryRequest,
    collect_entries_for_branch_summary,
    compact,
    default_session_dir,
    entry_to_dict,
    estimate_context_tokens,
    estimate_tokens,
    find_cut_point,
    generate_branch_summary,
    list_sessions,
    parse_entry,
    prepare_compaction,
)
from pi_notebook.session.entries import parse_message

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


# --- compaction and branch summaries, request by request -------------------------------------


def faux_model(**extra: Any) -> Model:
    return Model.model_validate(
        {
            "id": "faux-1",
            "api": "faux",
            "provider": "faux",
            "contextWindow": 50000,
            "maxTokens": 4000,
            **extra,
        }
    )


class Capture:
    """A stream function recording each request and answering with the next canned text."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.calls: list[dict[str, Any]] = []

    def __call__(self, model: Model, context: Any, options: Any) -> AssistantMessageEventStream:
        self.calls.append(
            {
                "context": context.model_dump(),
                "maxTokens": options.max_tokens,
                "reasoning": options.reasoning,
                "cacheRetention": options.cache_retention,
            }
        )
        reply = AssistantMessage(
            content=[TextContent(text=self.texts[min(len(self.calls), len(self.texts)) - 1])],
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=Usage(input=10, output=5, total_tokens=15),
        )
        stream = AssistantMessageEventStream()
        stream.push(DoneEvent(reason="stop", message=reply))
        return stream


def long_session() -> list[dict[str, Any]]:
    """A path with tool calls, images, unicode, a bash run and a custom message."""
    ops: list[list[Any]] = [["model", "anthropic", "claude-sonnet-4-5"]]
    for i in range(6):
        ops.append(["message", user(f"step {i}: " + "ß😀" * 150, ts=10 * i)])
        call = tool_call(f"c{i}", "edit" if i % 2 else "read", {"path": f"f{i}.py", "n": 1.0, "t": "é"})
        ops.append(
            [
                "message",
                assistant(text("work " * 50), call, ts=10 * i + 1, total=2000 + 500 * i, stop="toolUse"),
            ]
        )
        ops.append(["message", tool_result(f"c{i}", "read", "z" * 2500, ts=10 * i + 2)])
        ops.append(
            ["message", assistant(text(f"done {i} " + "w" * 300), ts=10 * i + 3, total=2600 + 500 * i)]
        )
    ops.insert(5, ["custom_message", "note", "a custom note " * 20, True])
    m = SessionManager.in_memory(CWD)
    apply_ops(m, ops)
    return [entry_to_dict(e) for e in m.get_entries()]


def our_compaction(
    entries: list[dict[str, Any]], settings: dict[str, Any], texts: list[str], **kw: Any
) -> dict[str, Any]:
    path = [parse_entry(e) for e in entries]
    prep = prepare_compaction(path, CompactionSettings(**settings))
    if prep is None:
        return {"preparation": None}
    capture = Capture(texts)
    request = SummaryRequest(
        model=kw.pop("model"), stream_fn=capture, thinking_level=kw.pop("thinking_level", None)
    )
    result = asyncio.run(compact(prep, request, kw.pop("custom_instructions", None)))
    return {
        "preparation": {
            "firstKeptEntryId": prep.first_kept_entry_id,
            "messagesToSummarize": [m.model_dump() for m in prep.messages_to_summarize],
            "turnPrefixMessages": [m.model_dump() for m in prep.turn_prefix_messages],
            "isSplitTurn": prep.is_split_turn,
            "tokensBefore": prep.tokens_before,
            "previousSummary": prep.previous_summary,
            "fileOps": {k: sorted(getattr(prep.file_ops, k)) for k in ("read", "written", "edited")},
        },
        "calls": capture.calls,
        "result": {
            "summary": result.summary,
            "firstKeptEntryId": result.first_kept_entry_id,
            "tokensBefore": result.tokens_before,
            "details": result.details,
        },
    }


COMPACTION_CASES = [
    ("keep-some", {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 3000}, {}),
    (
        "split-turn",
        {"enabled": True, "reserveTokens": 8000, "keepRecentTokens": 1300},
        {"customInstructions": "focus on files"},
    ),
    ("whole-turns", {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 1700}, {}),
    ("keep-all", {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 10**6}, {}),
    (
        "reasoning",
        {"enabled": True, "reserveTokens": 1000, "keepRecentTokens": 500},
        {"thinkingLevel": "high", "reasoning": True},
    ),
]


@pytest.mark.parametrize(
    ("label", "settings", "options"), COMPACTION_CASES, ids=[c[0] for c in COMPACTION_CASES]
)
def test_compaction_matches_pi_request_by_request(
    label: str, settings: dict[str, Any], options: dict[str, Any]
) -> None:
    entries = long_session()
    model_extra = {"reasoning": True} if options.get("reasoning") else {}
    model = faux_model(**model_extra)
    texts = ["## Goal\nSummary one.", "## Original Request\nPrefix."]
    action = {
        "kind": "compaction",
        "entries": entries,
        "settings": settings,
        "model": model.model_dump(),
        "texts": texts,
        "customInstructions": options.get("customInstructions"),
        "thinkingLevel": options.get("thinkingLevel"),
    }
    (pi,) = run_node("session_interop.mjs", {"actions": [action]})
    py_settings = {
        "enabled": True,
        "reserve_tokens": settings["reserveTokens"],
        "keep_recent_tokens": settings["keepRecentTokens"],
    }
    ours = our_compaction(
        entries,
        py_settings,
        texts,
        model=model,
        custom_instructions=options.get("customInstructions"),
        thinking_level=options.get("thinkingLevel"),
    )
    if pi["preparation"] is None:
        assert label == "keep-all"
        assert ours["preparation"] is None
        return
    assert pi["preparation"]["isSplitTurn"] == (label != "whole-turns")
    assert ours["preparation"] is not None, "Pi compacts here, we do not"
    pi_prep = {k: pi["preparation"].get(k) for k in ours["preparation"]}
    assert same_json(ours["preparation"], pi_prep)
    assert len(ours["calls"]) == len(pi["calls"])
    for our_call, pi_call in zip(ours["calls"], pi["calls"], strict=True):
        assert our_call["context"]["systemPrompt"] == pi_call["context"]["systemPrompt"]
        our_prompt = our_call["context"]["messages"][0]["content"][0]["text"]
        assert our_prompt == pi_call["context"]["messages"][0]["content"][0]["text"]
        assert (our_call["maxTokens"], our_call["reasoning"], our_call["cacheRetention"]) == (
            pi_call["maxTokens"],
            pi_call["reasoning"],
            pi_call["cacheRetention"],
        )
    for key in ("summary", "firstKeptEntryId", "tokensBefore", "details"):
        assert same_json(ours["result"][key], pi["result"][key]), key


def entry(kind: str, entry_id: str, parent: str | None, **fields: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-07-30T10:00:00.000Z",
        **fields,
    }


def test_update_summary_after_a_previous_compaction() -> None:
    path = long_session()
    details = {"readFiles": ["old.py"], "modifiedFiles": ["m.py"]}
    path.append(
        entry(
            "compaction",
            "c0000001",
            path[-1]["id"],
            summary="Earlier summary.",
            firstKeptEntryId=path[8]["id"],
            tokensBefore=777,
            details=details,
            fromHook=False,
        )
    )
    path.append(entry("message", "m0000001", "c0000001", message=user("one more " * 400, ts=999)))
    path.append(
        entry("message", "m0000002", "m0000001", message=assistant(text("ok " * 300), ts=1000, total=9000))
    )
    model = faux_model()
    settings = {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 800}
    action = {
        "kind": "compaction",
        "entries": path,
        "settings": settings,
        "model": model.model_dump(),
        "texts": ["Updated."],
    }
    (pi,) = run_node("session_interop.mjs", {"actions": [action]})
    ours = our_compaction(
        path, {"reserve_tokens": 16384, "keep_recent_tokens": 800}, ["Updated."], model=model
    )
    assert pi["preparation"]["previousSummary"] == "Earlier summary."
    assert same_json(ours["preparation"], {k: pi["preparation"].get(k) for k in ours["preparation"]})
    our_prompt = ours["calls"][0]["context"]["messages"][0]["content"][0]["text"]
    assert "<previous-summary>\nEarlier summary.\n</previous-summary>" in our_prompt
    assert our_prompt == pi["calls"][0]["context"]["messages"][0]["content"][0]["text"]
    assert ours["result"]["summary"] == pi["result"]["summary"]
    assert "old.py" in ours["result"]["summary"]


def test_token_estimates_and_cut_points_match_pi() -> None:
    entries = long_session()
    messages = [e["message"] for e in entries if e["type"] == "message"]
    actions: list[dict[str, Any]] = [{"kind": "estimate", "messages": messages}]
    cases = [(0, len(entries), keep) for keep in (1, 500, 1500, 4000, 10**6)] + [(3, 12, 700)]
    actions += [{"kind": "cut", "entries": entries, "start": s, "end": e, "keep": k} for s, e, k in cases]
    estimate, *cuts = run_node("session_interop.mjs", {"actions": actions})
    typed = [parse_message(m) for m in messages]
    assert [estimate_tokens(m) for m in typed] == estimate["tokens"]
    ours = estimate_context_tokens(typed)
    assert (ours.tokens, ours.usage_tokens, ours.trailing_tokens, ours.last_usage_index) == (
        estimate["context"]["tokens"],
        estimate["context"]["usageTokens"],
        estimate["context"]["trailingTokens"],
        estimate["context"]["lastUsageIndex"],
    )
    path = [parse_entry(e) for e in entries]
    for (start, end, keep), pi_cut in zip(cases, cuts, strict=True):
        cut = find_cut_point(path, start, end, keep)
        assert (cut.first_kept_entry_index, cut.turn_start_index, cut.is_split_turn) == (
            pi_cut["firstKeptEntryIndex"],
            pi_cut["turnStartIndex"],
            pi_cut["isSplitTurn"],
        ), (start, end, keep)


def test_branch_summary_request_matches_pi() -> None:
    entries = long_session()
    details = {"readFiles": ["x.py"], "modifiedFiles": []}
    entries.append(
        entry(
            "branch_summary",
            "b0000001",
            entries[-1]["id"],
            fromId="root",
            summary="older branch",
            details=details,
        )
    )
    model = faux_model(contextWindow=20000)
    actions = [
        {
            "kind": "branch_summary",
            "entries": entries,
            "model": model.model_dump(),
            "texts": ["Branch gist."],
            "customInstructions": ci,
            "reserveTokens": 16384,
        }
        for ci in (None, "mention tests")
    ]
    results = run_node("session_interop.mjs", {"actions": actions})
    for action, pi in zip(actions, results, strict=True):
        capture = Capture(["Branch gist."])
        request = SummaryRequest(model=model, stream_fn=capture)
        result = asyncio.run(
            generate_branch_summary(
                [parse_entry(e) for e in entries], request, 16384, action["customInstructions"]
            )
        )
        assert (
            capture.calls[0]["context"]["messages"][0]["content"][0]["text"]
            == pi["calls"][0]["context"]["messages"][0]["content"][0]["text"]
        )
        assert capture.calls[0]["maxTokens"] == pi["calls"][0]["maxTokens"] == 2048
        assert result.summary == pi["result"]["summary"]
        assert (result.read_files, result.modified_files) == (
            pi["result"]["readFiles"],
            pi["result"]["modifiedFiles"],
        )


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
