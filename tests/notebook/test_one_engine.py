"""A conversation is its ``AgentSession``: Python code, ``%pi`` commands and ``%%pi`` cells act on
the same session, so a prompt from Python retries and records as a cell does, a model change is
recorded once and heard once by extensions, and a steering message expands ``/template`` as Pi
expands it. A real ``InteractiveShell``, an OpenAI-compatible loopback server, the faux provider."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, run  # noqa: F401
from loopback import LoopbackServer, json_reply, serving, sse
from session_helpers import files, rows, sdir_fixture  # noqa: F401

import pi_notebook
from pi_notebook.ai import message_text
from pi_notebook.ai.faux import FauxRegistration
from pi_notebook.ai.local_probe import clear_probe_cache
from pi_notebook.ai.models import unregister_models
from pi_notebook.notebook.state import state_for
from pi_notebook.runtime import AgentSession

BUSY = {"error": {"message": "Service Unavailable: the model is loading", "type": "server_error"}}


def chat_reply(text: str) -> list[bytes]:
    head = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "tiny"}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    return [sse(c) for c in chunks] + [b"data: [DONE]\n\n"]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    with serving(LoopbackServer()) as srv:
        monkeypatch.setenv("LLAMA_CPP_BASE_URL", srv.url)
        clear_probe_cache()
        try:
            yield srv
        finally:
            clear_probe_cache()
            unregister_models("llama.cpp")


def ok(result: Any) -> None:
    assert result.error_in_exec is None, result.error_in_exec


def test_current_is_the_session_and_agent_only_names_say_where_they_are(ip: Any) -> None:
    session = pi_notebook.current()
    assert isinstance(session, AgentSession)
    assert session is state_for(ip).conversations.session("default")
    assert session.state is session.agent.state
    with pytest.raises(AttributeError, match=r"session\.agent\.before_tool_call"):
        session.before_tool_call = lambda ctx, signal: None  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match=r"session\.agent\.has_queued_messages"):
        session.has_queued_messages()  # type: ignore[attr-defined]


def test_a_python_prompt_after_a_503_is_retried_answered_and_recorded(
    ip: Any, server: LoopbackServer, sdir: Path
) -> None:
    magics = ip.magics_manager.registry["PiMagics"]
    magics.retries, magics.retry_base_delay = 3, 0.01
    server.queue(json_reply(503, BUSY))
    server.queue_sse(chat_reply("All good."))
    ok(run(ip, "%pi model llama.cpp:tiny")[0])
    result, _ = run(ip, "import pi_notebook\nawait pi_notebook.current().prompt('hello?')")
    ok(result)
    session = pi_notebook.current()
    assert [m.role for m in session.messages] == ["user", "assistant"]  # the failure left the transcript
    assert message_text(session.messages[-1]) == "All good."
    assert len([r for r in server.requests if r.path.endswith("/chat/completions")]) == 2
    [path] = files(sdir)
    recorded = rows(path)
    kinds = [(r["type"], r.get("customType") or r.get("message", {}).get("role")) for r in recorded[1:]]
    assert ("custom", "pi-notebook") in kinds  # the notebook's tag, though no cell ran
    messages = [r["message"] for r in recorded if r["type"] == "message"]
    # Pi records the failed attempt, then the answer of the retry
    assert [(m["role"], m.get("stopReason")) for m in messages] == [
        ("user", None), ("assistant", "error"), ("assistant", "stop")
    ]
    assert messages[-1]["content"][0]["text"] == "All good."


EXTENSION = """
def setup(pi):
    def heard(event, ctx):
        with open({path!r}, "a") as out:
            out.write(event.model.provider + ":" + event.model.id + "\\n")
    pi.on("model_select", heard)
"""


@pytest.fixture
def heard(ip: Any, tmp_path: Path) -> Iterator[Path]:
    log = tmp_path / "heard.txt"
    log.write_text("")
    module = tmp_path / "listen.py"
    module.write_text(textwrap.dedent(EXTENSION.format(path=str(log))))
    ok(run(ip, f"%pi extension load {module}")[0])
    try:
        yield log
    finally:
        state_for(ip).extensions.reset()


def test_pi_model_records_one_model_change_and_extensions_hear_it_once(
    ip: Any, faux: FauxRegistration, sdir: Path, heard: Path
) -> None:
    ok(run(ip, "%pi model faux:faux-1")[0])
    ok(run(ip, "%pi model faux:faux-1")[0])  # the same model again: no change
    faux.set_responses(["one", "two"])
    ok(run(ip, "%%pi\nfirst")[0])
    ok(run(ip, "%%pi --model faux:faux-1\nsecond")[0])
    [path] = files(sdir)
    changes = [r for r in rows(path) if r["type"] == "model_change"]
    assert [(c["provider"], c["modelId"]) for c in changes] == [("faux", "faux-1")]
    assert heard.read_text().splitlines() == ["faux:faux-1"]


def test_pi_steer_expands_a_template_as_pi_does(
    ip: Any, faux: FauxRegistration, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_dir = tmp_path / "agent"
    (agent_dir / "prompts").mkdir(parents=True)
    (agent_dir / "prompts" / "focus.md").write_text("Focus on $1 and nothing else.\n")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setitem(ip.user_ns, "__session__", str(tmp_path / "project" / "steer.ipynb"))
    state_for(ip).conversations.clear()  # a new folder: its resources are read afresh
    ok(run(ip, "%pi model faux:faux-1")[0])
    ok(run(ip, "%pi steer /focus revenue")[0])
    session = pi_notebook.current()
    assert [m.strip() for m in session.get_steering_messages()] == ["Focus on revenue and nothing else."]
    seen: list[Any] = []
    faux.set_responses([lambda context, *_: seen.append(context) or "ok"])  # type: ignore[func-returns-value]
    ok(run(ip, "%%pi\ngo")[0])
    texts = [json.dumps(m.content, default=str) for m in seen[0].messages if m.role == "user"]
    assert any("Focus on revenue and nothing else." in t for t in texts)


def test_a_warm_cell_reads_pis_settings_and_the_notebook_path_once(ip: Any, faux: FauxRegistration) -> None:
    """The cell's surroundings are worked out once (``run/context.py``) and passed down: counted
    by the calls into the two functions that look them up, in every thread of one warm cell."""
    import threading

    from pi_notebook.notebook.tools.cells import notebook_path
    from pi_notebook.runtime.settings_file import read_pi_settings

    counted = {notebook_path.__code__: 0, read_pi_settings.__code__: 0}

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in counted:
            counted[frame.f_code] += 1

    faux.set_responses(["warm"])
    ok(run(ip, "%%pi --model faux:faux-1\nfirst")[0])
    faux.set_responses(["again"])
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        result, _ = run(ip, "%%pi\nsecond")
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    ok(result)
    assert ip.user_ns["_pi"].text == "again"
    assert (counted[notebook_path.__code__], counted[read_pi_settings.__code__]) == (1, 1)


def test_a_python_prompt_honours_the_conversation_budget(ip: Any, faux: FauxRegistration) -> None:
    """``c.PiMagics.max_conversation_tokens`` holds for ``await current().prompt(...)`` as for a
    cell: the run stops at the budget and says why."""
    magics = ip.magics_manager.registry["PiMagics"]
    faux.set_responses(["one answer", "never"])
    try:
        magics.max_conversation_tokens = 1
        ok(run(ip, "%pi model faux:faux-1")[0])
        ok(run(ip, "import pi_notebook\nawait pi_notebook.current().prompt('hello')")[0])
        session = pi_notebook.current()
        assert session.budget_reason is not None
        assert session.budget_reason.startswith("stopped: the conversation reached its budget of 1 token")
    finally:
        magics.max_conversation_tokens = 0
    assert pi_notebook.current().budget is None  # the trait's change reaches the session at once
