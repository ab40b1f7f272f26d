"""Extensions on a real ``AgentSession`` (faux provider, loopback server): every supported
event, results combined as Pi's runner combines them, commands, tools, providers, async and
raising handlers. Discovery (entry points, project trust) is in ``test_extension_loading.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from loopback import LoopbackServer
from openai_fixtures import text_reply

from pi_notebook import AgentSession
from pi_notebook.agent import tool
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_text, faux_tool_call
from pi_notebook.ai.models import get_model, unregister_models
from pi_notebook.ai.types import Context, TextContent
from pi_notebook.runtime import AgentSessionSettings, RetrySettings
from pi_notebook.runtime.extensions import (
    ExtensionAPI,
    ExtensionRunner,
    InputResult,
    SessionBeforeCompactResult,
    ToolCallResult,
    ToolResultResult,
)
from pi_notebook.session import CompactionSettings, SessionManager

FAST = AgentSessionSettings(retry=RetrySettings(base_delay_ms=1))


def make(faux: FauxRegistration, tmp_path: Path, runner: ExtensionRunner, **kw: Any) -> AgentSession:
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    return AgentSession.create(
        cwd=str(tmp_path),
        model=faux.get_model(),
        session_manager=manager,
        settings=FAST,
        extensions=runner,
        **kw,
    )


async def loaded(*setups: Any) -> ExtensionRunner:
    runner = ExtensionRunner()
    for index, setup in enumerate(setups):
        await runner.load(setup, f"ext{index}")
    return runner


def seen_by_model(faux: FauxRegistration) -> list[Context]:
    """Every context the faux model is asked with (a factory answering "ok")."""
    contexts: list[Context] = []

    def answer(context: Context, *_: Any) -> Any:
        contexts.append(context)
        return faux_assistant_message([faux_text("ok")])

    faux.set_responses([answer] * 5)
    return contexts


@tool
def shout(text: str) -> str:
    """Say it loudly.

    Args:
        text: what to say
    """
    return text.upper()


def calls_shout(faux: FauxRegistration, then: str = "done") -> None:
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("shout", {"text": "hi"}, id="c1")], stop_reason="toolUse"),
            faux_assistant_message([faux_text(then)]),
        ]
    )


def file_text(session: AgentSession) -> str:
    return Path(session.session_file or "").read_text()


def tool_results(session: AgentSession) -> list[Any]:
    return [m for m in session.messages if m.role == "toolResult"]


def _noting(heard: list[str], name: str) -> Any:
    return lambda event: heard.append(name)


async def test_the_lifecycle_events_reach_handlers_in_pis_order(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    heard: list[str] = []

    def setup(pi: ExtensionAPI) -> None:
        for name in (
            "session_start",
            "input",
            "before_agent_start",
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end",
            "context",
        ):
            pi.on(name, _noting(heard, name))

    faux.set_responses([faux_assistant_message([faux_text("hi")])])
    session = make(faux, tmp_path, await loaded(setup))
    await session.prompt("hello")
    assert heard == [
        "session_start",
        "input",
        "before_agent_start",
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",  # the user's message
        "context",
        "message_start",
        "message_end",  # the answer
        "turn_end",
        "agent_end",
    ]
    heard.clear()
    faux.set_responses([faux_assistant_message([faux_text("again")])])
    await session.prompt("more")
    assert heard[0] == "input"  # session_start once per session


async def test_tool_call_blocks_and_the_first_block_wins(faux: FauxRegistration, tmp_path: Path) -> None:
    later: list[str] = []

    def blocker(pi: ExtensionAPI) -> None:
        pi.on("tool_call", lambda e: ToolCallResult(block=True, reason=f"no {e.tool_name} today"))

    def after(pi: ExtensionAPI) -> None:
        pi.on("tool_call", lambda e: later.append(e.tool_name))

    calls_shout(faux)
    session = make(faux, tmp_path, await loaded(blocker, after), tools=[shout])
    await session.prompt("shout")
    [result] = tool_results(session)
    assert result.is_error
    assert result.content[0].text == "no shout today"
    assert later == []  # a block stops the chain, as in Pi


async def test_tool_call_may_change_the_arguments_in_place(faux: FauxRegistration, tmp_path: Path) -> None:
    def setup(pi: ExtensionAPI) -> None:
        pi.on("tool_call", lambda e: setattr(e.input, "text", "changed"))

    calls_shout(faux)
    session = make(faux, tmp_path, await loaded(setup), tools=[shout])
    await session.prompt("shout")
    assert tool_results(session)[0].content[0].text == "CHANGED"


async def test_tool_result_overrides_chain(faux: FauxRegistration, tmp_path: Path) -> None:
    seen: list[Any] = []

    def first(pi: ExtensionAPI) -> None:
        replaced = ToolResultResult(content=[TextContent(text="replaced")], details={"n": 1})
        pi.on("tool_result", lambda e: replaced)

    def second(pi: ExtensionAPI) -> None:
        def look(event: Any) -> dict[str, Any]:
            seen.append((event.content[0].text, event.details))
            return {"is_error": True}

        pi.on("tool_result", look)

    calls_shout(faux)
    session = make(faux, tmp_path, await loaded(first, second), tools=[shout])
    await session.prompt("shout")
    [result] = tool_results(session)
    assert seen == [("replaced", {"n": 1})]  # the second handler sees the first one's result
    assert (result.content[0].text, result.details, result.is_error) == ("replaced", {"n": 1}, True)


async def test_input_transforms_chain_and_handled_stops(faux: FauxRegistration, tmp_path: Path) -> None:
    def upper(pi: ExtensionAPI) -> None:
        pi.on("input", lambda e: InputResult("transform", e.text.upper()))

    def swallow(pi: ExtensionAPI) -> None:
        pi.on("input", lambda e: {"action": "handled"} if e.text == "SKIP" else None)

    contexts = seen_by_model(faux)
    session = make(faux, tmp_path, await loaded(upper, swallow))
    await session.prompt("hello")
    assert contexts[0].messages[0].content[0].text == "HELLO"
    await session.prompt("skip")
    assert len(contexts) == 1
    assert len(session.messages) == 2


async def test_before_agent_start_adds_messages_and_chains_the_system_prompt(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    def one(pi: ExtensionAPI) -> None:
        pi.on(
            "before_agent_start",
            lambda e: {
                "system_prompt": e.system_prompt + " +one",
                "message": {"custom_type": "note", "content": "remember X"},
            },
        )

    def two(pi: ExtensionAPI) -> None:
        pi.on("before_agent_start", lambda e: {"system_prompt": e.system_prompt + " +two"})

    contexts = seen_by_model(faux)
    session = make(faux, tmp_path, await loaded(one, two), system_prompt="base")
    await session.prompt("hi")
    assert contexts[0].system_prompt == "base +one +two"
    assert [m.role for m in session.messages] == ["user", "custom", "assistant"]
    assert "remember X" in json.dumps([m.model_dump() for m in contexts[0].messages])
    rows = [json.loads(x) for x in file_text(session).splitlines()]
    assert [r["customType"] for r in rows if r["type"] == "custom_message"] == ["note"]


async def test_context_replaces_the_messages_of_the_request_only(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    def setup(pi: ExtensionAPI) -> None:
        def drop_all_but_last(event: Any) -> dict[str, Any]:
            event.messages[-1].content[0].text = "rewritten"  # a copy: the transcript keeps its text
            return {"messages": event.messages[-1:]}

        pi.on("context", drop_all_but_last)

    contexts = seen_by_model(faux)
    session = make(faux, tmp_path, await loaded(setup))
    await session.prompt("first")
    await session.prompt("second")
    assert [m.content[0].text for m in contexts[1].messages] == ["rewritten"]
    assert session.messages[2].content[0].text == "second"


async def test_message_end_replaces_the_message_before_it_is_recorded(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    def setup(pi: ExtensionAPI) -> None:
        def redact(event: Any) -> Any:
            if event.message.role == "assistant":
                redacted = [TextContent(text="[redacted]")]
                return {"message": event.message.model_copy(update={"content": redacted})}
            if event.message.role == "user":
                return {"message": faux_assistant_message([faux_text("wrong role")])}
            return None

        pi.on("message_end", redact)

    runner = await loaded(setup)
    faux.set_responses([faux_assistant_message([faux_text("secret")])])
    session = make(faux, tmp_path, runner)
    await session.prompt("hi")
    assert session.messages[-1].content[0].text == "[redacted]"
    assert "secret" not in file_text(session)
    assert session.messages[0].role == "user"  # a replacement with another role is refused...
    assert runner.errors[-1].line() == (
        "Extension ext0 failed in message_end: message_end handlers must return a message with the same role"
    )


async def test_async_handlers_are_awaited(faux: FauxRegistration, tmp_path: Path) -> None:
    async def setup(pi: ExtensionAPI) -> None:  # an async setup too
        async def block(event: Any) -> ToolCallResult:
            import asyncio

            await asyncio.sleep(0.01)
            return ToolCallResult(block=True, reason="async says no")

        pi.on("tool_call", block)

    calls_shout(faux)
    session = make(faux, tmp_path, await loaded(setup), tools=[shout])
    await session.prompt("shout")
    assert tool_results(session)[0].content[0].text == "async says no"


async def test_a_raising_handler_is_one_line_and_the_run_goes_on(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    def setup(pi: ExtensionAPI) -> None:
        pi.on("message_end", lambda e: 1 / 0)
        pi.on("agent_end", lambda e, ctx: (_ for _ in ()).throw(RuntimeError("boom\nsecond line")))

    runner = await loaded(setup)
    lines: list[str] = []
    runner.on_error(lambda error: lines.append(error.line()))
    faux.set_responses([faux_assistant_message([faux_text("fine")])])
    session = make(faux, tmp_path, runner)
    await session.prompt("hi")
    assert session.messages[-1].content[0].text == "fine"
    assert lines[0] == "Extension ext0 failed in message_end: ZeroDivisionError: division by zero"
    assert lines[-1] == "Extension ext0 failed in agent_end: RuntimeError: boom"


async def test_a_raising_tool_call_handler_blocks_the_call(faux: FauxRegistration, tmp_path: Path) -> None:
    def setup(pi: ExtensionAPI) -> None:
        pi.on("tool_call", lambda e: {}["missing"])

    calls_shout(faux)
    session = make(faux, tmp_path, await loaded(setup), tools=[shout])
    await session.prompt("shout")
    [result] = tool_results(session)
    assert result.is_error
    assert result.content[0].text.startswith("Extension ext0 failed in tool_call: KeyError: 'missing'")


async def test_a_raising_setup_is_reported_and_not_loaded() -> None:
    def setup(pi: ExtensionAPI) -> None:
        pi.on("input", lambda e: None)
        raise ValueError("bad config")

    runner = ExtensionRunner()
    assert await runner.load(setup, "broken") is None
    assert runner.extensions == []
    assert not runner.has_handlers("input")
    assert runner.errors[0].line() == "Extension broken failed in setup: ValueError: bad config"


async def test_a_command_runs_for_slash_name_and_is_not_sent(faux: FauxRegistration, tmp_path: Path) -> None:
    got: list[tuple[str, Any]] = []

    def setup(pi: ExtensionAPI) -> None:
        pi.register_command("stats", lambda args, ctx: got.append((args, ctx.cwd)), description="counts")

    contexts = seen_by_model(faux)
    runner = await loaded(setup)
    session = make(faux, tmp_path, runner)
    await session.prompt("/stats --all now")
    assert got == [("--all now", str(tmp_path))]
    assert contexts == []
    assert list(runner.commands()) == ["stats"]


async def test_commands_of_the_same_name_are_numbered_as_in_pi() -> None:
    runner = await loaded(*[lambda pi: pi.register_command("go", lambda a, c: None)] * 2)
    assert list(runner.commands()) == ["go:1", "go:2"]


async def test_a_registered_tool_joins_the_run(faux: FauxRegistration, tmp_path: Path) -> None:
    calls_shout(faux)
    session = make(faux, tmp_path, await loaded(lambda pi: pi.register_tool(shout)))
    await session.prompt("shout")
    assert tool_results(session)[0].content[0].text == "HI"
    assert session.agent.state.tools == []  # the agent itself is not changed


async def test_send_message_and_append_entry(faux: FauxRegistration, tmp_path: Path) -> None:
    apis: list[ExtensionAPI] = []
    runner = await loaded(apis.append)
    appended: list[Any] = []
    faux.set_responses([faux_assistant_message([faux_text("ok")])] * 2)
    session = make(faux, tmp_path, runner)
    session.subscribe(lambda e: appended.append(e.entry.custom_type), {"entry_appended"})
    await session.prompt("hi")
    apis[0].send_message({"custom_type": "note", "content": "from the extension"})
    apis[0].append_entry("state", {"count": 1})
    await runner.settle()
    assert session.messages[-1].role == "custom"
    assert appended == ["state"]
    apis[0].send_message({"custom_type": "ask", "content": "answer this"}, trigger_turn=True)
    await runner.settle()
    assert [m.role for m in session.messages[-2:]] == ["custom", "assistant"]


async def test_model_select_and_session_shutdown(faux: FauxRegistration, tmp_path: Path) -> None:
    heard: list[Any] = []

    def setup(pi: ExtensionAPI) -> None:
        pi.on("model_select", lambda e: heard.append((e.model.id, e.previous_model.id, e.source)))
        pi.on("session_shutdown", lambda e: heard.append(e.reason))

    other = faux.get_model().model_copy(update={"id": "other"})
    runner = await loaded(setup)
    session = make(faux, tmp_path, runner)
    session.set_model(other)
    await runner.settle()
    session.set_model(other)  # the same model again: no event
    await runner.settle()
    faux.set_responses([faux_assistant_message([faux_text("ok")])] * 2)
    await session.prompt("hi")  # the first prompt: the model it starts with is no change
    session.agent.state.model = faux.get_model()  # changed without set_model (the notebook's --model)
    await session.prompt("again")
    await session.shutdown()
    assert heard == [("other", faux.get_model().id, "set"), (faux.get_model().id, "other", "set"), "quit"]


async def test_session_before_compact_cancels_or_provides_the_summary(
    faux: FauxRegistration, tmp_path: Path
) -> None:
    answers: list[Any] = [SessionBeforeCompactResult(cancel=True)]
    reasons: list[str] = []

    def setup(pi: ExtensionAPI) -> None:
        def decide(event: Any) -> Any:
            reasons.append(event.reason)
            answer = answers.pop(0)
            if answer == "mine":
                return {"compaction": _summary(event.preparation)}
            return answer

        pi.on("session_before_compact", decide)

    faux.set_responses([faux_assistant_message([faux_text("x" * 400)])] * 4)
    settings = CompactionSettings(keep_recent_tokens=10)
    session = make(faux, tmp_path, await loaded(setup))
    session.settings = AgentSessionSettings(retry=FAST.retry, compaction=settings)
    for text in ("one", "two", "three"):
        await session.prompt(text)
    with pytest.raises(Exception, match=r"^Compaction cancelled$"):
        await session.compact()
    answers.append("mine")
    result = await session.compact()
    assert result.summary == "the extension's summary"
    assert reasons == ["manual", "manual"]
    rows = [json.loads(x) for x in file_text(session).splitlines()]
    assert [r.get("fromHook") for r in rows if r["type"] == "compaction"] == [True]


def _summary(preparation: Any) -> Any:
    from pi_notebook.session import CompactionResult

    return CompactionResult(
        summary="the extension's summary",
        first_kept_entry_id=preparation.first_kept_entry_id,
        tokens_before=preparation.tokens_before,
        details={},
    )


async def test_a_registered_provider_serves_a_run(
    loopback: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def setup(pi: ExtensionAPI) -> None:
        pi.register_provider(
            "acme",
            {
                "base_url": f"{loopback.url}/v1",
                "api": "openai-completions",
                "api_key": "$ACME_KEY",
                "headers": {"x-team": "data"},
                "models": [{"id": "acme-1", "name": "Acme One", "context_window": 8000, "max_tokens": 512}],
            },
        )

    runner = await loaded(setup)
    try:
        model = get_model("acme", "acme-1")
        loopback.queue_sse(text_reply("hel", "lo"))
        manager = SessionManager.in_memory(str(tmp_path))
        session = AgentSession.create(
            cwd=str(tmp_path), model=model, session_manager=manager, extensions=runner
        )
        monkeypatch.setenv("ACME_KEY", "sk-acme-test")
        await session.prompt("hi")
        assert session.messages[-1].content[0].text == "hello"
        [request] = loopback.requests
        assert request.path == "/v1/chat/completions"
        assert request.json["model"] == "acme-1"
        assert request.headers["authorization"] == "Bearer sk-acme-test"
        assert request.headers["x-team"] == "data"
    finally:
        unregister_models("acme")


async def test_a_literal_api_key_is_refused() -> None:
    runner = await loaded(lambda pi: pi.register_provider("leaky", {"api_key": "sk-123", "models": []}))
    assert runner.extensions == []
    assert "api_key must name an environment variable" in runner.errors[0].line()
    assert "sk-123" not in runner.errors[0].line()


async def test_a_handler_added_after_setup_is_heard(faux: FauxRegistration, tmp_path: Path) -> None:
    heard: list[str] = []

    def setup(pi: ExtensionAPI) -> None:
        pi.register_command("watch", lambda args, ctx: pi.on("agent_end", lambda e: heard.append(args)))

    runner = await loaded(setup)
    assert not runner.has_handlers("agent_end")
    faux.set_responses([faux_assistant_message([faux_text("ok")])])
    session = make(faux, tmp_path, runner)
    await session.prompt("/watch runs")
    assert runner.has_handlers("agent_end")
    await session.prompt("hi")
    assert heard == ["runs"]
