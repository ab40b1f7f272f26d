"""``AgentSession.navigate_tree`` and ``fork``: where the leaf goes, what text comes back,
summaries and labels, and the agent's context afterwards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_notebook import AgentSession
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_text
from pi_notebook.session import MessageEntry, SessionError, SessionManager


async def two_turns(faux: FauxRegistration, tmp_path: Path) -> AgentSession:
    faux.set_responses(
        [faux_assistant_message([faux_text("one")]), faux_assistant_message([faux_text("two")])]
    )
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    session = AgentSession.create(cwd=str(tmp_path), model=faux.get_model(), session_manager=manager)
    await session.prompt("first")
    await session.prompt("second")
    return session


def rows_of(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def user_entries(session: AgentSession) -> list[MessageEntry]:
    return [
        e
        for e in session.session_manager.get_branch()
        if isinstance(e, MessageEntry) and e.message.role == "user"
    ]


async def test_navigating_to_a_user_message_hands_its_text_back(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    session = await two_turns(faux, tmp_path)
    second = user_entries(session)[1]
    result = await session.navigate_tree(second.id, label="retry here")
    assert result.editor_text == "second"
    leaf = session.session_manager.get_leaf_entry()
    assert leaf is not None
    assert (leaf.type, leaf.parent_id) == ("label", second.parent_id)  # the label is the new leaf
    assert [m.role for m in session.messages] == ["user", "assistant"]
    assert session.session_manager.get_label(second.id) == "retry here"


async def test_navigating_with_a_summary_keeps_the_abandoned_work(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    session = await two_turns(faux, tmp_path)
    faux.set_responses([faux_assistant_message([faux_text("they asked a second question")])])
    first_answer = session.session_manager.get_branch()[-3]
    result = await session.navigate_tree(first_answer.id, summarize=True)
    assert result.summary_entry is not None
    assert "they asked a second question" in result.summary_entry.summary
    assert [m.role for m in session.messages] == ["user", "assistant", "branchSummary"]


async def test_navigating_while_streaming_or_to_nowhere_is_refused(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    session = await two_turns(faux, tmp_path)
    with pytest.raises(SessionError, match="Entry nope not found"):
        await session.navigate_tree("nope")


async def test_fork_writes_a_new_file_with_the_path_before_the_message(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    session = await two_turns(faux, tmp_path)
    old_file = session.session_file
    result = session.fork(user_entries(session)[1].id)
    assert result.selected_text == "second"
    assert result.session_file is not None
    assert result.session_file != old_file
    header = rows_of(result.session_file)[0]
    assert header["parentSession"] == old_file
    assert [m.role for m in session.messages] == ["user", "assistant"]
    faux.set_responses([faux_assistant_message([faux_text("forked")])])
    await session.prompt("another second")
    rows = rows_of(result.session_file)
    assert rows[-1]["message"]["content"][0]["text"] == "forked"  # recorded into the fork
    with pytest.raises(SessionError, match="Invalid entry ID for forking"):
        session.fork(session.session_manager.get_branch()[-1].id)  # an assistant message
