"""Every reader of the files this package reads survives any byte sequence and any nesting, with
one line per bad file: session files (load, header, listing, the notebook tag, the most recent
one, ``SessionManager.open``), Pi's ``settings.json``, Pi's ``trust.json`` and the
``PI_NOTEBOOK_MODELS`` file (where a bad file must not hide the other models, ``faux``
included). Invalid UTF-8 (a line torn inside "é") and JSON nested far past Python's recursion
limit are the cases that raised before.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pi_notebook.ai.models as catalogue
from pi_notebook.ai.faux import register_faux_provider
from pi_notebook.runtime.resources import trust
from pi_notebook.runtime.settings_file import read_pi_settings
from pi_notebook.session import SessionManager, list_sessions, load_session_file
from pi_notebook.session.listing import find_most_recent_session, read_session_info
from pi_notebook.session.storage import read_header

HEADER = b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}'
USER = (
    b'{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
    b'"message":{"role":"user","content":"caf\xc3\xa9","timestamp":1}}'
)
DEEP = 100_000
NASTY = [
    b"caf\xc3",  # torn inside "é"
    b"\xff\xfe\x00garbage",
    b"[" * DEEP + b"]" * DEEP,
    b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    b'{"type":"custom","id":"c1","parentId":"a1","timestamp":"x","customType":"pi-notebook","data":'
    + b"[" * DEEP
    + b"]" * DEEP
    + b"}",
    b'{"type":"message","id":"m9","parentId":"a1","timestamp":"x","message":{"role":"user","content":'
    + b'{"x":' * 5000
    + b"1"
    + b"}" * 5000
    + b"}}",
]
SETTINGS = settings(
    max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "60")),  # more: a longer search by hand
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
IDS = ["torn-e", "binary", "deep-list", "deep-object", "deep-tag", "deep-5000"]
lines = st.one_of(st.binary(max_size=200), st.sampled_from(NASTY), st.just(USER))


def session_readers(path: Path) -> None:
    """Every session reader on ``path``: none may raise."""
    load_session_file(str(path))
    read_header(str(path))
    read_session_info(str(path))
    find_most_recent_session(str(path.parent))
    list_sessions("/p", str(path.parent))
    refused: Exception | None = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            manager = SessionManager.open(str(path))
        except Exception as exc:  # only the one-line "not a pi session" refusal is allowed
            refused = exc
        else:  # what a resume does with it
            manager.build_session_context()
            manager.get_tree()
            manager.problem_line()
    if refused is not None:
        assert type(refused).__name__ == "SessionError", refused
        assert "\n" not in str(refused)


@pytest.mark.parametrize("nasty", NASTY, ids=IDS)
def test_session_readers_take_each_nasty_line(tmp_path: Path, nasty: bytes) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([HEADER, USER, nasty, USER.replace(b"a1", b"a2").replace(b"null", b'"a1"')]))
    session_readers(path)
    loaded = load_session_file(str(path))
    assert [e.id for e in loaded.entries][:1] == ["a1"]
    assert "a2" in [e.id for e in loaded.entries]
    info = read_session_info(str(path))
    assert info is not None
    assert info.message_count >= 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        manager = SessionManager.open(str(path))
    line = manager.problem_line()
    if nasty is not NASTY[-1]:  # 5000 levels parse: a kept entry with an odd content
        assert line is not None
        assert "\n" not in line


@pytest.mark.parametrize("nasty", NASTY, ids=IDS)
def test_the_notebook_tag_reader_takes_each_nasty_line(tmp_path: Path, nasty: bytes) -> None:
    from pi_notebook.notebook.sessions.files import read_tag  # what %pi sessions reads

    path = tmp_path / "s.jsonl"
    tag = b'{"type":"custom","id":"t1","parentId":"a1","timestamp":"x","customType":"pi-notebook",'
    tag += b'"data":{"n":1}}'
    path.write_bytes(b"\n".join([HEADER, nasty, USER, tag]))
    assert read_tag(str(path)) == {"n": 1}


@SETTINGS
@given(body=st.lists(lines, max_size=6), header_first=st.booleans())
def test_session_readers_survive_any_bytes(tmp_path: Path, body: list[bytes], header_first: bool) -> None:
    path = tmp_path / "h" / "s.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"\n".join(([HEADER] if header_first else []) + body))
    session_readers(path)


@SETTINGS
@given(data=st.one_of(st.binary(max_size=300), st.sampled_from(NASTY)))
def test_settings_file_survives_any_bytes(tmp_path: Path, data: bytes) -> None:
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    (agent / "settings.json").write_bytes(data)
    os.utime(agent / "settings.json", ns=(len(data), len(data) + hash(data) % 10**9))  # no stale cache
    found = read_pi_settings(str(agent))
    if data.strip() and not data.strip().startswith(b"{}"):
        assert all("\n" not in p for p in found.problems)


@pytest.mark.parametrize("nasty", NASTY[:4], ids=["torn-e", "binary", "deep-list", "deep-object"])
def test_a_bad_settings_file_is_one_line(tmp_path: Path, nasty: bytes) -> None:
    (tmp_path / "settings.json").write_bytes(nasty)
    found = read_pi_settings(str(tmp_path))
    [problem] = found.problems
    assert "settings.json" in problem
    assert "\n" not in problem


@pytest.mark.parametrize("nasty", NASTY[:4], ids=["torn-e", "binary", "deep-list", "deep-object"])
def test_a_bad_trust_store_is_one_line(tmp_path: Path, nasty: bytes) -> None:
    project = tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    (project / ".pi" / "settings.json").write_text("{}")
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "trust.json").write_bytes(nasty)
    found = trust.project_trust(str(project), str(agent), home=str(tmp_path / "home"))
    assert found.problem is not None
    assert "trust.json" in found.problem
    assert "\n" not in found.problem


@SETTINGS
@given(data=st.one_of(st.binary(max_size=300), st.sampled_from(NASTY)))
def test_trust_store_survives_any_bytes(tmp_path: Path, data: bytes) -> None:
    project = tmp_path / "project"
    (project / ".pi").mkdir(parents=True, exist_ok=True)
    (project / ".pi" / "settings.json").write_text("{}")
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    (agent / "trust.json").write_bytes(data)
    trust.project_trust(str(project), str(agent), home=str(tmp_path / "home"))


@pytest.mark.parametrize("nasty", NASTY[:4], ids=["torn-e", "binary", "deep-list", "deep-object"])
def test_a_bad_models_file_blocks_no_other_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nasty: bytes
) -> None:
    path = tmp_path / "models.json"
    path.write_bytes(nasty)
    monkeypatch.setenv(catalogue.USER_MODELS_ENV, str(path))
    catalogue.reload_user_models()
    faux = register_faux_provider()
    try:
        assert catalogue.get_model("faux", faux.models[0].id).provider == "faux"
        assert catalogue.get_model("openai", "gpt-4o-mini").id == "gpt-4o-mini"
        problem = catalogue.user_models_problem()
        assert problem is not None
        assert "PI_NOTEBOOK_MODELS" in problem
        assert "\n" not in problem
    finally:
        faux.unregister()
        catalogue.reload_user_models()


@SETTINGS
@given(data=st.one_of(st.binary(max_size=300), st.sampled_from(NASTY)))
def test_models_file_survives_any_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    path = tmp_path / "models.json"
    path.write_bytes(data)
    monkeypatch.setenv(catalogue.USER_MODELS_ENV, str(path))
    catalogue.reload_user_models()
    try:
        catalogue.get_models()
        catalogue.user_models_problem()
    finally:
        catalogue.reload_user_models()


def test_a_models_file_keeps_its_good_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "models.json"
    good = {"id": "good", "provider": "mine", "api": "openai-completions"}
    deep = "[" * 500 + "]" * 500  # parses, but is no model
    bad = '{"id": "bad", "provider": "mine", "api": ' + deep + "}"
    path.write_text('{"models": [' + json.dumps(good) + ", " + bad + "]}")
    monkeypatch.setenv(catalogue.USER_MODELS_ENV, str(path))
    catalogue.reload_user_models()
    try:
        assert [m.id for m in catalogue.get_models("mine")] == ["good"]
        assert "model #1 (mine:bad)" in (catalogue.user_models_problem() or "")
    finally:
        catalogue.reload_user_models()


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
entry_keys = st.sampled_from(["type", "id", "parentId", "timestamp", "message", "name", "customType", "data"])
message_keys = st.sampled_from(["role", "content", "timestamp", "text", "type"])


@SETTINGS
@given(
    header=st.dictionaries(st.sampled_from(["timestamp", "cwd", "parentSession", "version"]), json_values),
    rows=st.lists(
        st.tuples(
            st.dictionaries(entry_keys, json_values, max_size=5),
            st.dictionaries(message_keys, json_values, max_size=4),
            st.sampled_from(["message", "session_info", "custom", "label", None]),
            st.sampled_from(["user", "assistant", None]),
        ),
        max_size=5,
    ),
)
def test_session_readers_survive_any_json_values(
    tmp_path: Path, header: dict[str, Any], rows: list[tuple[dict[str, Any], dict[str, Any], Any, Any]]
) -> None:
    """Valid JSON with hostile values where the readers expect strings, times and lists."""
    lines = [json.dumps({**header, "type": "session", "id": "s"})]
    for entry, message, kind, role in rows:
        if kind is not None:
            entry["type"] = kind
        if role is not None:
            message["role"] = role
        entry["message"] = message
        lines.append(json.dumps(entry))
    path = tmp_path / "j" / "s.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("\n".join(lines))
    session_readers(path)
