"""Recording a real ``Agent`` run (faux model) into a session, resuming it, replaying it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pi_notebook.agent import Agent, AgentEvent, tool
from pi_notebook.ai import stream_simple
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_text, faux_tool_call
from pi_notebook.ai.models import get_model
from pi_notebook.ai.types import Context
from pi_notebook.session import CustomMessage, SessionManager, SessionRecorder, replay, resume


@tool
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


def make_agent(faux: FauxRegistration, **state: Any) -> Agent:
    return Agent(stream_fn=stream_simple, initial_state={"model": faux.get_model(), "tools": [add], **state})


async def test_recorder_persists_what_pi_persists(faux: FauxRegistration, tmp_path: Path) -> None:
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("add", {"a": 2, "b": 40}, id="t1")], stop_reason="toolUse"
            ),
            "It is 42.",
        ]
    )
    agent = make_agent(faux, thinking_level="low")
    m = SessionManager.create("/proj", str(tmp_path))
    unsubscribe = SessionRecorder(m).attach(agent)
    await agent.prompt("What is 2 + 40?")
    unsubscribe()
    types = [(e.type, getattr(getattr(e, "message", None), "role", None)) for e in m.get_entries()]
    assert types == [
        ("model_change", None),
        ("thinking_level_change", None),
        ("message", "user"),
        ("message", "assistant"),
        ("message", "toolResult"),
        ("message", "assistant"),
    ]
    reopened = SessionManager.open(m.session_file or "")
    ctx = reopened.build_session_context()
    assert [x.model_dump() for x in ctx.messages] == [x.model_dump() for x in agent.state.messages]
    assert ctx.thinking_level == "low"
    assert ctx.model is not None
    assert ctx.model.provider == faux.provider


async def test_record_settings_writes_only_changes(faux: FauxRegistration) -> None:
    m = SessionManager.in_memory("/p")
    recorder = SessionRecorder(m)
    model = faux.get_model()
    assert len(recorder.record_settings(model, "off")) == 2  # a new session records both
    assert recorder.record_settings(model, "off") == []
    assert len(recorder.record_settings(None, "high")) == 1
    other = get_model("openai", "gpt-4o")
    assert len(recorder.record_settings(other)) == 1
    assert m.build_session_context().model.model_id == "gpt-4o"  # type: ignore[union-attr]


async def test_custom_messages_become_custom_message_entries() -> None:
    m = SessionManager.in_memory("/p")
    recorder = SessionRecorder(m)
    assert recorder.record_message(CustomMessage(custom_type="note", content="hi", display=False)) is not None
    assert recorder.record_message({"role": "bashExecution"}) is None
    (entry,) = m.get_entries()
    assert entry.type == "custom_message"
    assert entry.custom_type == "note"


async def test_resume_continues_a_compacted_conversation(faux: FauxRegistration, tmp_path: Path) -> None:
    faux.set_responses(["first answer"])
    agent = make_agent(faux)
    m = SessionManager.create("/proj", str(tmp_path))
    SessionRecorder(m).attach(agent)
    await agent.prompt("first question")
    m.append_compaction("Summary: an opening exchange.", m.get_leaf_id() or "", 100)

    seen: list[Context] = []

    def reply(context: Context, *_: Any) -> Any:
        seen.append(context)
        return faux_assistant_message([faux_text("second answer")])

    faux.set_responses([reply])
    fresh = Agent(stream_fn=stream_simple)
    ctx = resume(fresh, SessionManager.open(m.session_file or ""), lambda p, i: faux.get_model(i))
    assert fresh.state.model.id == faux.get_model().id
    assert [x.role for x in ctx.messages] == ["compactionSummary", "assistant"]
    await fresh.prompt("second question")
    sent = [msg.content[0].text if isinstance(msg.content, list) else msg.content for msg in seen[0].messages]  # type: ignore[union-attr]
    assert sent[0].startswith("The conversation history before this point was compacted")
    assert "first answer" in str(seen[0].messages[1].model_dump())
    assert sent[-1] == "second question"
    assert "first question" not in str([x.model_dump() for x in seen[0].messages])  # summarized away


async def test_replay_emits_message_events_in_order(faux: FauxRegistration) -> None:
    m = SessionManager.in_memory("/p")
    m.append_message({"role": "user", "content": "hi", "timestamp": 1})
    m.append_custom_message_entry("note", "n", True)
    events: list[AgentEvent] = []

    async def sink(event: AgentEvent) -> None:
        events.append(event)

    assert await replay(m, sink) == 2
    assert [(e.type, e.message.role) for e in events] == [  # type: ignore[union-attr]
        ("message_start", "user"),
        ("message_end", "user"),
        ("message_start", "custom"),
        ("message_end", "custom"),
    ]
