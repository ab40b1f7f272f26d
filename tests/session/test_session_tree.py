"""Tree, leaf and branch semantics of ``SessionManager``."""

from __future__ import annotations

from pathlib import Path

import pytest
from session_scenarios import apply_ops, assistant, branches, text, user

from pi_notebook.session import LabelEntry, SessionError, SessionManager, entry_to_dict


def texts(m: SessionManager) -> list[str]:
    out = []
    for message in m.build_session_context().messages:
        content = getattr(message, "content", None)
        if isinstance(content, list) and content:
            out.append(content[0].text)
        else:
            out.append(message.role)
    return out


def test_append_chains_entries_and_moves_the_leaf() -> None:
    m = SessionManager.in_memory("/p")
    assert m.get_leaf_id() is None
    a = m.append_message(user("a"))
    b = m.append_message(assistant(text("b")))
    entry_a, entry_b = m.get_entries()
    assert (entry_a.parent_id, entry_b.parent_id) == (None, a)
    assert m.get_leaf_id() == b
    assert m.get_leaf_entry() is entry_b
    assert [e.id for e in m.get_branch()] == [a, b]
    assert [e.id for e in m.get_children(a)] == [b]


def test_branch_starts_a_sibling_and_never_rewrites_history() -> None:
    m = SessionManager.in_memory("/p")
    a = m.append_message(user("a"))
    b = m.append_message(assistant(text("b")))
    m.append_message(user("c"))
    before = [entry_to_dict(e) for e in m.get_entries()]
    m.branch(b)
    assert m.get_leaf_id() == b
    d = m.append_message(user("d"))
    assert [entry_to_dict(e) for e in m.get_entries()][:3] == before
    assert m.get_entry(d).parent_id == b  # type: ignore[union-attr]
    assert texts(m) == ["a", "b", "d"]
    assert len(m.get_children(b)) == 2
    with pytest.raises(SessionError, match="Entry nope not found"):
        m.branch("nope")
    m.branch(a)
    assert texts(m) == ["a"]


def test_reset_leaf_makes_the_next_entry_a_new_root() -> None:
    m = SessionManager.in_memory("/p")
    m.append_message(user("a"))
    m.reset_leaf()
    assert m.build_session_context().messages == []
    root2 = m.append_message(user("again"))
    assert m.get_entry(root2).parent_id is None  # type: ignore[union-attr]
    assert [n.entry.id for n in m.get_tree()][1] == root2


def test_branch_with_summary_is_a_child_of_the_branch_point() -> None:
    m = SessionManager.in_memory("/p")
    a = m.append_message(user("a"))
    m.append_message(assistant(text("b")))
    s = m.branch_with_summary(a, "gist", {"readFiles": [], "modifiedFiles": []})
    entry = m.get_entry(s)
    assert entry is not None
    assert entry.parent_id == a
    assert entry.from_id == a
    assert texts(m) == ["a", "branchSummary"]
    root = m.branch_with_summary(None, "from root")
    assert m.get_entry(root).from_id == "root"  # type: ignore[union-attr]
    assert m.get_entry(root).parent_id is None  # type: ignore[union-attr]
    with pytest.raises(SessionError):
        m.branch_with_summary("missing", "x")
    # an empty summary adds nothing to the context
    m.branch_with_summary(a, "")
    assert texts(m) == ["a"]


def test_the_leaf_after_reopening_is_the_last_line(tmp_path: Path) -> None:
    m = SessionManager.create("/p", str(tmp_path))
    a = m.append_message(user("a"))
    m.append_message(assistant(text("b")))
    last = m.append_message(user("c"))
    m.branch(a)  # not persisted: a reopened file lands on its last line
    reopened = SessionManager.open(m.session_file or "")
    assert reopened.get_leaf_id() == last


def test_tree_roots_orphans_and_children_order() -> None:
    m = SessionManager.in_memory("/p")
    ids = apply_ops(m, branches())
    roots = m.get_tree()
    # the reset started a second root, the summary "from the root" a third
    assert [r.entry.id for r in roots] == [ids[0], ids[12], ids[14]]
    first_root, second_root, _ = roots
    node_b = first_root.children[0]
    assert [c.entry.id for c in node_b.children] == [ids[2], ids[5], ids[7]]  # by timestamp
    assert second_root.children[0].entry.id == ids[13]
    labelled = [n for n in _walk(roots) if n.label]
    assert [(n.entry.id, n.label) for n in labelled] == [(ids[6], "B")]


def _walk(nodes: list) -> list:  # type: ignore[type-arg]
    out = []
    for node in nodes:
        out.append(node)
        out += _walk(node.children)
    return out


def test_labels_set_clear_and_need_a_known_target() -> None:
    m = SessionManager.in_memory("/p")
    a = m.append_message(user("a"))
    m.append_label_change(a, "start")
    assert m.get_label(a) == "start"
    m.append_label_change(a, "")
    assert m.get_label(a) is None
    with pytest.raises(SessionError, match="Entry zzz not found"):
        m.append_label_change("zzz", "x")


def test_session_name_is_sanitized_and_the_latest_wins() -> None:
    m = SessionManager.in_memory("/p")
    assert m.get_session_name() is None
    m.append_session_info("  My\r\n\nsession\nname ")
    assert m.get_session_name() == "My session name"
    m.append_session_info("   ")
    assert m.get_session_name() is None


def test_append_message_refuses_summary_roles() -> None:
    m = SessionManager.in_memory("/p")
    with pytest.raises(SessionError, match="append_compaction"):
        m.append_message({"role": "compactionSummary", "summary": "s", "tokensBefore": 1, "timestamp": 0})


def test_create_branched_session_keeps_one_path_and_its_labels(tmp_path: Path) -> None:
    m = SessionManager.create("/p", str(tmp_path))
    ids = apply_ops(m, branches())
    old_file = m.session_file
    new_file = m.create_branched_session(ids[9])
    assert new_file
    assert new_file != old_file
    assert m.get_header().parent_session == old_file
    entries = m.get_entries()
    assert [e.id for e in entries if not isinstance(e, LabelEntry)] == [ids[i] for i in (0, 1, 7, 8, 9)]
    assert [e.parent_id for e in entries][:5] == [None, ids[0], ids[1], ids[7], ids[8]]
    reopened = SessionManager.open(new_file)
    assert [entry_to_dict(e) for e in reopened.get_entries()] == [entry_to_dict(e) for e in entries]
    with pytest.raises(SessionError):
        m.create_branched_session("missing")


def test_create_branched_session_re_chains_around_labels_and_keeps_them() -> None:
    m = SessionManager.in_memory("/p")
    a = m.append_message(user("a"))
    m.append_label_change(a, "first")
    b = m.append_message(assistant(text("b")))  # a child of the label entry
    assert m.create_branched_session(b) is None  # in memory: no file
    entries = m.get_entries()
    assert [(e.type, e.parent_id) for e in entries] == [("message", None), ("message", a), ("label", b)]
    assert m.get_label(a) == "first"
    assert m.get_header().parent_session is None


def test_latest_compaction_follows_appends_branches_and_resets() -> None:
    """``latest_compaction`` answers as a walk of ``get_branch`` would, though it remembers its
    answers per entry."""
    from pi_notebook.session.entries import CompactionEntry

    def walked(m: SessionManager) -> object:
        found = [e for e in m.get_branch() if isinstance(e, CompactionEntry)]
        return found[-1] if found else None

    m = SessionManager.in_memory()
    assert m.latest_compaction() is None
    a = m.append_message(user("a"))
    m.append_message(assistant(text("b")))
    assert m.latest_compaction() is None
    first = m.append_compaction("S1", a, 10)
    assert m.latest_compaction() is m.get_entry(first) is walked(m)
    m.append_message(user("c"))
    second = m.append_compaction("S2", a, 20)
    m.append_message(assistant(text("d")))
    assert m.latest_compaction() is m.get_entry(second) is walked(m)
    m.branch(first)  # back before the second compaction
    assert m.latest_compaction() is m.get_entry(first) is walked(m)
    m.append_message(user("e"))
    assert m.latest_compaction() is m.get_entry(first) is walked(m)
    m.reset_leaf()
    assert m.latest_compaction() is None
    m.append_message(user("f"))
    assert m.latest_compaction() is None is walked(m)
