"""Compaction and branch summaries end to end with the faux provider (through
``pi_notebook.ai``'s registry, as a real model would be reached), plus the pure pieces."""

from __future__ import annotations

from typing import Any

import pytest
from session_scenarios import assistant, text, tool_call, tool_result, user

from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_text
from pi_notebook.ai.types import Context, Usage
from pi_notebook.session import (
    CompactionError,
    CompactionSettings,
    SessionManager,
    SummaryRequest,
    branch_with_generated_summary,
    calculate_context_tokens,
    compact_session,
    estimate_tokens,
    find_cut_point,
    prepare_compaction,
    serialize_conversation,
    should_compact,
)
from pi_notebook.session.entries import parse_message
from pi_notebook.session.summary_text import SUMMARIZATION_SYSTEM_PROMPT


def conversation(m: SessionManager, turns: int, size: int = 400) -> list[str]:
    ids = []
    for i in range(turns):
        ids.append(m.append_message(user(f"task {i} " + "u" * size, ts=10 * i)))
        call = tool_call(f"c{i}", "read", {"path": f"file{i}.py"})
        ids.append(m.append_message(assistant(text("reading"), call, ts=10 * i + 1, stop="toolUse")))
        ids.append(m.append_message(tool_result(f"c{i}", "read", "r" * size, ts=10 * i + 2)))
        ids.append(m.append_message(assistant(text(f"answer {i} " + "a" * size), ts=10 * i + 3)))
    return ids


def test_should_compact_and_context_tokens() -> None:
    settings = CompactionSettings(reserve_tokens=1000)
    assert should_compact(9001, 10000, settings)
    assert not should_compact(9000, 10000, settings)
    assert not should_compact(10**6, 10000, CompactionSettings(enabled=False))
    assert (
        calculate_context_tokens(Usage(total_tokens=0, input=3, output=4, cache_read=5, cache_write=6)) == 18
    )
    assert calculate_context_tokens(Usage(total_tokens=7, input=3)) == 7


def test_estimates_count_utf16_units_and_images() -> None:
    assert estimate_tokens(parse_message(user("abcde"))) == 2
    assert estimate_tokens(parse_message(user("😀😀"))) == 1  # 4 UTF-16 units
    image = {
        "role": "user",
        "content": [{"type": "image", "data": "x", "mimeType": "image/png"}],
        "timestamp": 0,
    }
    assert estimate_tokens(parse_message(image)) == 1200
    call = assistant(tool_call("i", "read", {"path": "a", "n": 1.0}))
    assert estimate_tokens(parse_message(call)) == -(-(4 + len('{"path":"a","n":1}')) // 4)


def test_cut_point_never_separates_a_tool_result_from_its_call() -> None:
    m = SessionManager.in_memory("/p")
    conversation(m, 6)
    path = m.get_branch()
    for keep in range(1, 3000, 37):
        cut = find_cut_point(path, 0, len(path), keep)
        first_kept = path[cut.first_kept_entry_index]
        assert first_kept.message.role != "toolResult"  # type: ignore[union-attr]
        if cut.is_split_turn:
            assert path[cut.turn_start_index].message.role == "user"  # type: ignore[union-attr]


def test_serialized_conversation_format() -> None:
    messages = [
        parse_message(user("hi")),
        parse_message(
            assistant(
                {"type": "thinking", "thinking": "hmm"}, text("ok"), tool_call("1", "f", {"a": 1, "b": "x"})
            )
        ),
        parse_message(tool_result("1", "f", "y" * 2005)),
    ]
    assert serialize_conversation(messages) == (
        "[User]: hi\n\n[Assistant thinking]: hmm\n\n[Assistant]: ok\n\n"
        '[Assistant tool calls]: f(a=1, b="x")\n\n'
        "[Tool result]: " + "y" * 2000 + "\n\n[... 5 more characters truncated]"
    )


async def test_compact_session_with_the_faux_model(faux: FauxRegistration) -> None:
    seen: list[Context] = []

    def reply(context: Context, *_: Any) -> Any:
        seen.append(context)
        return faux_assistant_message([faux_text("## Goal\nShip it.")])

    faux.set_responses([reply, reply])
    m = SessionManager.in_memory("/p")
    ids = conversation(m, 6)
    m.append_message(user("latest question"))
    settings = CompactionSettings(keep_recent_tokens=400)
    entry = await compact_session(m, SummaryRequest(model=faux.get_model()), settings)
    assert entry.summary.startswith("## Goal\nShip it.")
    assert "<read-files>\nfile0.py" in entry.summary
    assert entry.details["modifiedFiles"] == []
    assert entry.details["readFiles"] == [f"file{i}.py" for i in range(len(entry.details["readFiles"]))]
    assert entry.details["readFiles"]
    assert entry.from_hook is False
    assert entry.usage is not None
    assert entry.first_kept_entry_id in ids
    assert seen[0].system_prompt == SUMMARIZATION_SYSTEM_PROMPT
    prompt = seen[0].messages[0].content[0].text  # type: ignore[union-attr]
    assert prompt.startswith("<conversation>\n[User]: task 0")
    context = m.build_session_context().messages
    assert context[0].role == "compactionSummary"
    assert context[-1].content[0].text == "latest question"
    with pytest.raises(CompactionError, match="Already compacted"):
        await compact_session(m, SummaryRequest(model=faux.get_model()), settings)


async def test_compaction_errors_are_reported(faux: FauxRegistration) -> None:
    faux.set_responses([faux_assistant_message([], stop_reason="error", error_message="model exploded")])
    m = SessionManager.in_memory("/p")
    conversation(m, 4)
    with pytest.raises(CompactionError, match="Summarization failed: model exploded"):
        await compact_session(
            m, SummaryRequest(model=faux.get_model()), CompactionSettings(keep_recent_tokens=100)
        )
    small = SessionManager.in_memory("/p")
    small.append_message(user("hi"))
    with pytest.raises(CompactionError, match="Nothing to compact"):
        await compact_session(small, SummaryRequest(model=faux.get_model()))
    assert prepare_compaction(small.get_branch()) is None


async def test_second_compaction_updates_the_first_summary(faux: FauxRegistration) -> None:
    faux.set_responses(["first", "second"])
    m = SessionManager.in_memory("/p")
    conversation(m, 4)
    settings = CompactionSettings(keep_recent_tokens=300)
    await compact_session(m, SummaryRequest(model=faux.get_model()), settings)
    conversation(m, 4)
    prep = prepare_compaction(m.get_branch(), settings)
    assert prep is not None
    assert prep.previous_summary is not None
    assert prep.previous_summary.startswith("first")
    entry = await compact_session(m, SummaryRequest(model=faux.get_model()), settings)
    assert entry.summary.startswith("second")
    summaries = [x for x in m.build_session_context().messages if x.role == "compactionSummary"]
    assert [s.summary.split("\n")[0] for s in summaries] == ["second"]


async def test_branch_with_generated_summary_moves_and_summarizes(faux: FauxRegistration) -> None:
    faux.set_responses(["Explored plan A.", "Second trip."])
    m = SessionManager.in_memory("/p")
    first = m.append_message(user("start"))
    answer = m.append_message(assistant(text("ok")))
    m.append_message(user("plan A"))
    m.append_message(assistant(text("A done")))
    summary_id = await branch_with_generated_summary(m, answer, SummaryRequest(model=faux.get_model()))
    entry = m.get_entry(summary_id or "")
    assert entry is not None
    assert entry.parent_id == answer
    assert entry.summary == (  # type: ignore[union-attr]
        "The user explored a different conversation branch before returning here.\n"
        "Summary of that exploration:\n\nExplored plan A."
    )
    # choosing a user message moves to its parent (here: before the root) so it can be resent
    root_summary = await branch_with_generated_summary(m, first, SummaryRequest(model=faux.get_model()))
    entry = m.get_entry(root_summary or "")
    assert entry is not None
    assert entry.parent_id is None
    assert entry.from_id == "root"
    assert m.get_leaf_id() == root_summary
    # with nothing abandoned there is nothing to summarize: only the leaf moves
    assert (
        await branch_with_generated_summary(m, root_summary or "", SummaryRequest(model=faux.get_model()))
        is None
    )
    assert m.get_leaf_id() == root_summary
