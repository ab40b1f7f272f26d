"""Context reconstruction: the path to the leaf, settings, one and several compactions."""

from __future__ import annotations

from typing import Any

from session_scenarios import apply_ops, assistant, bash, compactions, text, user

from pi_notebook.ai.types import UserMessage
from pi_notebook.session import (
    SessionManager,
    build_session_context,
    convert_to_llm,
)
from pi_notebook.session.messages import COMPACTION_SUMMARY_PREFIX


def roles(messages: list[Any]) -> list[str]:
    return [m.role for m in messages]


def first_text(message: Any) -> str:
    content = message.content
    return content if isinstance(content, str) else content[0].text


def test_settings_come_from_the_last_change_on_the_path() -> None:
    m = SessionManager.in_memory("/p")
    assert m.build_session_context().thinking_level == "off"
    assert m.build_session_context().model is None
    m.append_thinking_level_change("low")
    m.append_model_change("openai", "gpt-4o")
    a = m.append_message(user("q"))
    m.append_message(assistant(text("r")))  # anthropic / claude-sonnet-4-5
    ctx = m.build_session_context()
    assert ctx.thinking_level == "low"
    assert ctx.model is not None
    assert ctx.model.to_dict() == {
        "provider": "anthropic",
        "modelId": "claude-sonnet-4-5",
    }
    m.branch(a)
    assert m.build_session_context().model.model_id == "gpt-4o"  # type: ignore[union-attr]


def test_one_compaction_keeps_from_first_kept_entry() -> None:
    m = SessionManager.in_memory("/p")
    ids = [
        m.append_message(user(f"u{i}")) if i % 2 == 0 else m.append_message(assistant(text(f"a{i}")))
        for i in range(6)
    ]
    m.append_compaction("S1", ids[2], 500)
    m.append_message(user("after"))
    ctx = m.build_session_context()
    assert roles(ctx.messages) == ["compactionSummary", "user", "assistant", "user", "assistant", "user"]
    assert ctx.messages[0].summary == "S1"
    assert ctx.messages[0].tokens_before == 500
    assert [first_text(x) for x in ctx.messages[1:]] == ["u2", "a3", "u4", "a5", "after"]


def test_several_compactions_use_only_the_latest() -> None:
    m = SessionManager.in_memory("/p")
    ids = apply_ops(m, compactions())
    ctx = m.build_session_context()
    assert ctx.messages[0].role == "compactionSummary"
    assert ctx.messages[0].summary == "Second summary."
    assert "First summary." not in [getattr(x, "summary", None) for x in ctx.messages]
    kept = [first_text(x) for x in ctx.messages[1:]]
    assert kept == ["question 5", "answer 5", "question 6", "answer 6", "after both", "done"]
    assert ctx.thinking_level == "high"
    # at the first compaction's point of view, its summary and kept entries apply
    m.branch(ids[10])
    first = m.build_session_context()
    assert first.messages[0].summary == "First summary."
    assert first_text(first.messages[1]).startswith("question 2")


def test_compaction_with_unknown_first_kept_keeps_only_what_follows() -> None:
    m = SessionManager.in_memory("/p")
    m.append_message(user("old"))
    m.append_compaction("S", "no-such-id", 1)
    m.append_message(user("new"))
    assert [getattr(x, "summary", None) or first_text(x) for x in m.build_session_context().messages] == [
        "S",
        "new",
    ]


def test_leaf_none_and_default_leaf() -> None:
    m = SessionManager.in_memory("/p")
    m.append_message(user("a"))
    m.append_message(user("b"))
    entries = m.get_entries()
    assert build_session_context(entries, None).messages == []
    assert [first_text(x) for x in build_session_context(entries).messages] == ["a", "b"]
    assert [first_text(x) for x in build_session_context(entries, "unknown").messages] == ["a", "b"]
    assert [first_text(x) for x in build_session_context(entries, entries[0].id).messages] == ["a"]


def test_entry_types_become_context_messages_and_llm_messages() -> None:
    m = SessionManager.in_memory("/p")
    m.append_custom_entry("state", {"x": 1})  # not in context
    m.append_custom_message_entry("note", "remember", True, {"d": 1})
    m.append_message(bash("make", "ok", exit_code=2))
    m.append_message({**bash("secret", "x"), "excludeFromContext": True})
    m.append_message(user("q"))
    a = m.get_leaf_id()
    assert a is not None
    m.branch_with_summary(a, "explored")
    m.append_compaction("sum", a, 10)
    messages = m.build_session_context().messages
    assert roles(messages) == ["compactionSummary", "user", "branchSummary"]
    m2 = SessionManager.in_memory("/p")
    m2.append_custom_message_entry("note", "remember", True)
    m2.append_message(bash("make", "ok", exit_code=2))
    m2.append_message({**bash("secret", "x"), "excludeFromContext": True})
    m2.append_message(user("q"))
    llm = convert_to_llm(m2.build_session_context().messages)
    assert all(isinstance(x, UserMessage) for x in llm)
    assert [x.content[0].text for x in llm] == [  # type: ignore[union-attr]
        "remember",
        "Ran `make`\n```\nok\n```\n\nCommand exited with code 2",
        "q",
    ]
    summary = convert_to_llm(messages)[0]
    assert summary.content[0].text == COMPACTION_SUMMARY_PREFIX + "sum\n</summary>"  # type: ignore[union-attr]
    branch = convert_to_llm(messages)[2]
    assert branch.content[0].text.endswith("<summary>\nexplored</summary>")  # type: ignore[union-attr]


def test_a_session_message_becomes_the_same_user_message_until_it_changes() -> None:
    """The provider's wire cache knows a converted message by identity: the user message made
    for a summary or a custom message is reused while the source is unchanged, and made again
    when it was changed in place."""
    from pi_notebook.ai.types import TextContent
    from pi_notebook.session.entries import CompactionSummaryMessage, CustomMessage

    summary = CompactionSummaryMessage(summary="before", tokens_before=10, timestamp=1)
    custom = CustomMessage(custom_type="note", content=[TextContent(text="a")], display=True, timestamp=2)
    first = convert_to_llm([summary, custom])
    again = convert_to_llm([summary, custom])
    assert first[0] is again[0]
    assert first[1] is again[1]
    summary.summary = "after"
    custom.content.append(TextContent(text="b"))
    changed = convert_to_llm([summary, custom])
    assert changed[0] is not first[0]
    assert "after" in changed[0].content[0].text  # type: ignore[union-attr]
    assert [b.text for b in changed[1].content] == ["a", "b"]  # type: ignore[union-attr]


def test_the_latest_compaction_is_the_one_on_the_current_branch() -> None:
    """``latest_compaction`` finds what a walk back over ``get_branch`` finds, also after the
    leaf moves to another branch and after more entries (it remembers what it walked)."""
    from pi_notebook.session import SessionManager
    from pi_notebook.session.entries import CompactionEntry

    def walked(manager: SessionManager) -> Any:
        return next((e for e in reversed(manager.get_branch()) if isinstance(e, CompactionEntry)), None)

    manager = SessionManager.in_memory()
    first = manager.append_message(UserMessage(content="one"))
    assert manager.latest_compaction() is None
    manager.append_message(UserMessage(content="two"))
    compaction_id = manager.append_compaction("summary", first, 100)
    manager.append_message(UserMessage(content="three"))
    found = manager.latest_compaction()
    assert found is not None
    assert found.id == compaction_id
    assert found is walked(manager)
    manager.branch(first)
    manager.append_message(UserMessage(content="elsewhere"))
    assert manager.latest_compaction() is None
    assert walked(manager) is None
