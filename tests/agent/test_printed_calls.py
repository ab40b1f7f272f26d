"""``printed_calls``: tool calls read from a model's text (JSON, ``<tool_call>`` tags, fenced
Python), only of known tools with arguments their schemas accept; ``printed_turns``: a run's
stream function that makes them the turn's calls (tools mode) or runs fenced code (code
mode); ``resolve_tool_mode``; a models file's ``toolMode``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_notebook.agent import Agent, AgentRunOptions
from pi_notebook.agent.printed_calls import PrintedCall, printed_calls, python_blocks
from pi_notebook.agent.printed_turns import code_context, printed_turns, recovered_mark
from pi_notebook.agent.tool_mode import resolve_tool_mode
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_text, faux_tool_call
from pi_notebook.ai.models import USER_MODELS_ENV, get_model, reload_user_models
from pi_notebook.ai.providers.openai_completions_request import is_local_model
from pi_notebook.ai.types import (
    AssistantMessage,
    Context,
    Model,
    TextContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

RUN_CODE = Tool(
    name="run_code",
    parameters={"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
)
READ_CELL = Tool(
    name="read_cell",
    parameters={"type": "object", "properties": {"index": {"type": "integer"}}, "required": ["index"]},
)
STATUS = Tool(name="status", parameters={"type": "object", "properties": {}})
TOOLS = [RUN_CODE, READ_CELL, STATUS]


def calls(
    text: str, tools: list[Tool] = TOOLS, python_tool: str | None = "run_code"
) -> list[tuple[Any, ...]]:
    return [(c.name, c.arguments, c.form) for c in printed_calls(text, tools, python_tool=python_tool)]


# --- the forms ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "run_code", "arguments": {"code": "x = 1"}}',
        'Sure, I will run it.\n{"name": "run_code", "arguments": {"code": "x = 1"}}\nThen I answer.',
        '```json\n{"name": "run_code", "parameters": {"code": "x = 1"}}\n```',
        '{"tool": "run_code", "args": {"code": "x = 1"}}',
        '{"function": "run_code", "input": {"code": "x = 1"}}',
        '{"type": "function", "function": {"name": "run_code", "arguments": "{\\"code\\": \\"x = 1\\"}"}}',
        '{"tool_calls": [{"function": {"name": "run_code", "arguments": {"code": "x = 1"}}}]}',
    ],
)
def test_a_json_call_in_its_usual_shapes(text: str) -> None:
    assert calls(text) == [("run_code", {"code": "x = 1"}, "json")]


def test_tagged_calls_closed_or_not_and_several_in_order() -> None:
    text = (
        "<tool_call>\n"
        '{"name": "read_cell", "arguments": {"index": 2}}\n'
        "</tool_call>\n"
        '<tool_call>{"name": "run_code", "arguments": {"code": "print({1: {2: 3}})"}}'
    )
    assert calls(text) == [
        ("read_cell", {"index": 2}, "tagged"),
        ("run_code", {"code": "print({1: {2: 3}})"}, "tagged"),
    ]


def test_a_tagged_call_may_leave_out_empty_arguments_a_bare_one_may_not() -> None:
    assert calls('<tool_call>{"name": "status"}</tool_call>') == [("status", {}, "tagged")]
    assert calls('{"name": "status"}') == []  # a JSON object with a "name" is not a call by itself


def test_arguments_are_converted_as_the_loop_would_and_refused_when_the_schema_says_no() -> None:
    assert calls('{"name": "read_cell", "arguments": {"index": "3"}}') == [
        ("read_cell", {"index": 3}, "json")
    ]
    assert calls('{"name": "read_cell", "arguments": {"index": "three"}}') == []
    assert calls('{"name": "read_cell", "arguments": {}}') == []  # a required argument is missing
    assert calls('{"name": "read_cell", "arguments": [1]}') == []


def test_unknown_tools_are_never_calls() -> None:
    assert calls('{"name": "rm_rf", "arguments": {"path": "/"}}') == []
    assert calls('<tool_call>{"name": "shell", "arguments": {"cmd": "ls"}}</tool_call>') == []
    assert calls('{"name": "run_code", "arguments": {"code": "1"}}', tools=[READ_CELL]) == []


def test_fenced_python_is_a_run_code_call_only_without_other_calls_and_with_run_code() -> None:
    text = "First:\n```python\nimport math\nprint(math.pi)\n```\nthen\n```py\nx = 2"
    assert calls(text) == [
        ("run_code", {"code": "import math\nprint(math.pi)\n"}, "fenced"),
        ("run_code", {"code": "x = 2\n"}, "fenced"),  # the model stopped before the closing fence
    ]
    both = text + '\n{"name": "read_cell", "arguments": {"index": 1}}'
    assert calls(both) == [("read_cell", {"index": 1}, "json")]  # the call was meant
    assert calls(text, tools=[READ_CELL]) == []
    assert calls(text, python_tool=None) == []
    assert calls("```javascript\nlet x = 1\n```\n```python\n\n```") == []  # other languages, empty blocks


def test_fenced_python_counts_only_when_the_answer_ends_with_it() -> None:
    assert calls("Run this:\n```python\nx = 1\n```\n\n") == [("run_code", {"code": "x = 1\n"}, "fenced")]
    explained = "You could write:\n```python\nx = 1\n```\nThis sets x to one."
    assert calls(explained) == []  # code among prose is part of an answer


def test_junk_partial_json_and_prose_hold_no_call() -> None:
    for text in [
        "",
        "The answer is 42.",
        '{"name": "run_code", "arguments": {"code": "x = 1"',  # cut off
        "{{{{{{{{ [[[[ }}}",
        '{"name": "run_code", "arguments": {"code": "x = 1"}',  # one brace short
        "Use {name} and [1, 2] in the template {x: 1}.",
        '["run_code", {"code": "x"}]',
    ]:
        assert calls(text) == [], text


def test_positions_and_source_point_at_the_call() -> None:
    text = 'Run: {"name": "run_code", "arguments": {"code": "1"}} ok'
    [call] = printed_calls(text, TOOLS)
    assert text[call.start : call.end] == call.source == '{"name": "run_code", "arguments": {"code": "1"}}'


def test_python_blocks_keep_the_code_as_written() -> None:
    text = "```python\nif x:\n    y = {'a': 1}\n```"
    assert python_blocks(text) == [(0, len(text), "if x:\n    y = {'a': 1}\n")]


# --- properties ---------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(before=st.text(max_size=60), after=st.text(max_size=60), code=st.text(max_size=40), extra=json_values)
def test_a_call_amid_any_text_is_found_with_its_exact_arguments(
    before: str, after: str, code: str, extra: Any
) -> None:
    call = json.dumps({"name": "run_code", "arguments": {"code": code}, "note": extra})
    found = [c for c in printed_calls(f"{before} {call} {after}", TOOLS) if c.source == call]
    assert [(c.name, c.arguments) for c in found] == [("run_code", {"code": code})]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_gives_only_valid_calls_of_known_tools_and_never_raises(text: str) -> None:
    for call in printed_calls(text, TOOLS):
        assert isinstance(call, PrintedCall)
        assert call.name in {"run_code", "read_cell", "status"}
        if call.name == "run_code":
            assert isinstance(call.arguments["code"], str)


def test_a_long_run_of_braces_is_bounded() -> None:
    text = '{"a": "' + "{" * 100_000
    assert printed_calls(text, TOOLS) == []
    deep = "[" * 50_000 + "]" * 50_000
    assert printed_calls(deep, TOOLS) == []


# --- resolve_tool_mode, toolMode in a models file ----------------------------------------------


def test_resolve_tool_mode_order() -> None:
    code_model = Model(id="m", api="openai-completions", provider="p", tool_mode="code")
    plain = Model(id="m", api="openai-completions", provider="p")
    assert resolve_tool_mode("tools", code_model, "code") == "tools"  # the user's choice first
    assert resolve_tool_mode("auto", code_model, "tools") == "code"  # then the models file
    assert resolve_tool_mode(None, plain, "code") == "code"  # then what the server said
    assert resolve_tool_mode("auto", plain) == "tools"
    assert resolve_tool_mode("auto", None, "unknown") == "tools"


def test_tool_mode_is_read_from_the_models_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "models.json"
    path.write_text(
        json.dumps(
            {
                "providers": {
                    "homelab": {
                        "baseUrl": "http://127.0.0.1:9/v1",
                        "api": "openai-completions",
                        "models": [{"id": "tiny", "toolMode": "code"}, {"id": "big"}],
                    }
                }
            }
        )
    )
    monkeypatch.setenv(USER_MODELS_ENV, str(path))
    reload_user_models()
    try:
        assert get_model("homelab", "tiny").tool_mode == "code"
        assert get_model("homelab", "big").tool_mode is None
        assert get_model("homelab", "tiny").model_dump()["toolMode"] == "code"
    finally:
        monkeypatch.delenv(USER_MODELS_ENV)
        reload_user_models()


# --- the stream function ------------------------------------------------------------------------


def code_tool() -> Any:
    from pi_notebook.agent import tool

    ran: list[str] = []

    @tool
    def run_code(code: str) -> str:
        """Run Python."""
        ran.append(code)
        return f"ran {len(ran)}"

    return run_code, ran


def test_tools_mode_makes_an_accepted_printed_call_the_turns_call(faux: FauxRegistration) -> None:
    run_code, ran = code_tool()
    printed = 'Calling: {"name": "run_code", "arguments": {"code": "1 + 1"}}'
    faux.set_responses([printed, "It ran."])
    agent = Agent(initial_state={"model": faux.get_model(), "tools": [run_code]})
    seen: list[list[PrintedCall]] = []

    def accept(calls: list[PrintedCall]) -> bool:
        seen.append(calls)
        return True

    run = AgentRunOptions(wrap_stream=lambda own: printed_turns(own, mode="tools", accept=accept))
    asyncio.run(agent.prompt("go", run=run))
    assert ran == ["1 + 1"]
    turn = agent.state.messages[1]
    assert isinstance(turn, AssistantMessage)
    assert turn.stop_reason == "toolUse"
    assert turn.content[0] == TextContent(text=printed)
    call = turn.content[1]
    assert isinstance(call, ToolCall)
    assert recovered_mark(call) == "json"
    assert call.model_dump()["recovered"] == "json"
    assert agent.state.messages[2].tool_call_id == call.id
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert len(seen) == 1


def test_tools_mode_leaves_a_declined_turn_and_real_calls_alone(faux: FauxRegistration) -> None:
    run_code, ran = code_tool()
    faux.set_responses(
        [
            '{"name": "run_code", "arguments": {"code": "no"}}',
        ]
    )
    agent = Agent(initial_state={"model": faux.get_model(), "tools": [run_code]})
    run = AgentRunOptions(wrap_stream=lambda own: printed_turns(own, mode="tools", accept=lambda _: False))
    asyncio.run(agent.prompt("go", run=run))
    assert ran == []
    assert agent.state.messages[-1].stop_reason == "stop"
    # a turn with a real call is never read for more
    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_text('{"name": "run_code", "arguments": {"code": "text"}}'),
                    faux_tool_call("run_code", {"code": "api"}),
                ],
                stop_reason="toolUse",
            ),
            "done",
        ]
    )
    run = AgentRunOptions(wrap_stream=lambda own: printed_turns(own, mode="tools", accept=lambda _: True))
    asyncio.run(agent.prompt("again", run=run))
    assert ran == ["api"]


def test_a_python_block_ending_an_answer_is_a_call_only_from_a_local_model(faux: FauxRegistration) -> None:
    """A hosted model that ends its answer with code is showing it (a fix, an example); a model
    on the user's machine that does so meant to run it."""
    run_code, ran = code_tool()
    answer = "The cell, fixed:\n\n```python\nx = 1\n```"
    for base_url, expected in (("https://api.example.com/v1", []), ("http://127.0.0.1:8080/v1", ["x = 1\n"])):
        ran.clear()
        faux.set_responses([answer, "It ran."])
        model = faux.get_model().model_copy(update={"base_url": base_url})
        agent = Agent(initial_state={"model": model, "tools": [run_code]})
        run = AgentRunOptions(wrap_stream=lambda own: printed_turns(own, mode="tools", accept=lambda _: True))
        asyncio.run(agent.prompt("fix it", run=run))
        assert ran == expected, base_url


def test_the_offline_faux_model_is_not_a_local_server(faux: FauxRegistration) -> None:
    """Port 0 names no server: the faux model's ``http://localhost:0`` is not read as a local
    server (no ```python block read as a call, no tool mode in its footer)."""
    model = faux.get_model()
    assert model.base_url == "http://localhost:0"
    assert not is_local_model(model)
    assert is_local_model(model.model_copy(update={"base_url": "http://127.0.0.1:8080/v1"}))
    assert is_local_model(model.model_copy(update={"provider": "ollama", "base_url": ""}))
    assert not is_local_model(model.model_copy(update={"base_url": "https://api.example.com/v1"}))


def test_recovered_ids_are_unique_in_the_transcript(faux: FauxRegistration) -> None:
    run_code, _ = code_tool()
    block = "```python\nx = 1\n```"
    faux.set_responses([block, block, "done"])
    agent = Agent(initial_state={"model": faux.get_model(), "tools": [run_code]})
    run = AgentRunOptions(
        wrap_stream=lambda own: printed_turns(own, mode="code", system_prompt=lambda s: "S")
    )
    asyncio.run(agent.prompt("go", run=run))
    ids = [
        b.id
        for m in agent.state.messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, ToolCall)
    ]
    assert len(ids) == 2
    assert len(set(ids)) == 2


def test_code_context_shows_calls_and_results_as_text() -> None:
    api_call = ToolCall(id="a", name="read_cell", arguments={"index": 1})
    code_call = ToolCall.model_validate(
        {"id": "b", "name": "run_code", "arguments": {"code": "x"}, "recovered": "code"}
    )
    context = Context(
        system_prompt="own",
        tools=[RUN_CODE],
        messages=[
            UserMessage(content="q"),
            AssistantMessage(content=[api_call], stop_reason="toolUse"),
            ToolResultMessage(tool_call_id="a", tool_name="read_cell", content=[TextContent(text="cell 1")]),
            AssistantMessage(
                content=[TextContent(text="```python\nx\n```"), code_call], stop_reason="toolUse"
            ),
            ToolResultMessage(tool_call_id="b", tool_name="run_code", content=[], is_error=True),
        ],
    )
    sent = code_context(context, lambda own: f"code + {own}")
    assert sent.system_prompt == "code + own"
    assert sent.tools is None
    assert [m.role for m in sent.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert (
        sent.messages[1].content[0].text == '```json\n{"name": "read_cell", "arguments": {"index": 1}}\n```'
    )
    assert sent.messages[2].content == "Output of read_cell:\n```\ncell 1\n```"
    assert sent.messages[3].content == [TextContent(text="```python\nx\n```")]
    assert sent.messages[4].content == "Error:\n```\n(no output)\n```"
