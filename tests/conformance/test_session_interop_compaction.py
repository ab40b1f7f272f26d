"""Compaction and branch summaries against the real Pi 0.83.0, request by request.

Both sides get the same session path and settings, with a fake stream function standing in
for the model, and must agree on the preparation (cut point, messages, file lists, token
estimate), the prompt text, system prompt and ``maxTokens`` of each summary request, and the
result; also on updating a previous compaction summary, on token estimates and cut points,
and on the branch-summary request.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pi_node import run_node
from session_scenarios import apply_ops, assistant, text, tool_call, tool_result, user
from test_session_interop import (
    CWD,
    _pi,  # noqa: F401 (the module fixture that requires node and Pi's npm packages)
    same_json,
)

from pi_notebook.ai.event_stream import AssistantMessageEventStream
from pi_notebook.ai.events import DoneEvent
from pi_notebook.ai.types import AssistantMessage, Model, TextContent, Usage
from pi_notebook.session import (
    CompactionSettings,
    SessionManager,
    SummaryRequest,
    compact,
    entry_to_dict,
    estimate_context_tokens,
    estimate_tokens,
    find_cut_point,
    generate_branch_summary,
    parse_entry,
    prepare_compaction,
)
from pi_notebook.session.entries import parse_message

pytestmark = pytest.mark.usefixtures("_pi")

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
