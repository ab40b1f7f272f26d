"""Pi's ``packages/agent/test/e2e.test.ts`` (10 tests): ``Agent`` + the faux provider
through the real entry point ``stream_simple``."""

from __future__ import annotations

import ast
import asyncio
import operator
from collections.abc import Iterator
from typing import Any

import pytest
from agent_helpers import message_text

from pi_notebook.agent import Agent, AgentEvent, AgentTool, AgentToolResult
from pi_notebook.ai.abort import AbortSignal
from pi_notebook.ai.entry import stream_simple
from pi_notebook.ai.faux import (
    FauxRegistration,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    register_faux_provider,
)
from pi_notebook.ai.types import (
    AssistantMessage,
    Model,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

_OPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.USub: operator.neg,
}


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.operand))
    raise ValueError(f"unsupported expression: {ast.dump(node)}")


async def _calculate(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult:
    expression = params["expression"]
    return AgentToolResult(
        content=[TextContent(text=f"{expression} = {_evaluate(ast.parse(expression, mode='eval'))}")]
    )


CALCULATE_TOOL = AgentTool(
    name="calculate",
    label="Calculator",
    description="Evaluate mathematical expressions",
    parameters={
        "type": "object",
        "properties": {
            "expression": {"type": "string", "description": "The mathematical expression to evaluate"}
        },
        "required": ["expression"],
    },
    execute=_calculate,
)


@pytest.fixture
def registrations() -> Iterator[list[FauxRegistration]]:
    created: list[FauxRegistration] = []
    yield created
    while created:
        created.pop().unregister()


@pytest.fixture
def make_faux(registrations: list[FauxRegistration]) -> Any:
    def make(**options: Any) -> FauxRegistration:
        registration = register_faux_provider(**options)
        registrations.append(registration)
        return registration

    return make


def make_agent(model: Model, system_prompt: str = "You are a helpful assistant.", **state: Any) -> Agent:
    initial = {"system_prompt": system_prompt, "model": model, "thinking_level": "off", "tools": [], **state}
    return Agent(stream_fn=stream_simple, initial_state=initial)


async def test_handles_a_basic_text_prompt(make_faux: Any) -> None:
    faux = make_faux()
    faux.set_responses([faux_assistant_message("4")])
    agent = make_agent(faux.get_model(), "You are a helpful assistant. Keep your responses concise.")
    await agent.prompt("What is 2+2? Answer with just the number.")
    assert agent.state.is_streaming is False
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]
    assert "4" in message_text(agent.state.messages[1])


async def test_executes_tools_and_tracks_pending_tool_calls(make_faux: Any) -> None:
    faux = make_faux()
    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_text("Let me calculate that."),
                    faux_tool_call("calculate", {"expression": "123 * 456"}, id="calc-1"),
                ],
                stop_reason="toolUse",
            ),
            faux_assistant_message("The result is 56088."),
        ]
    )
    agent = make_agent(faux.get_model(), "Always use the calculator tool for math.", tools=[CALCULATE_TOOL])
    snapshots: list[tuple[str, list[str]]] = []

    def listener(event: AgentEvent, signal: AbortSignal) -> None:
        if event.type in ("tool_execution_start", "tool_execution_end"):
            snapshots.append((event.type, sorted(agent.state.pending_tool_calls)))

    agent.subscribe(listener)
    await agent.prompt("Calculate 123 * 456 using the calculator tool.")
    messages = agent.state.messages
    assert agent.state.is_streaming is False
    assert len(messages) >= 4
    tool_result = next(m for m in messages if m.role == "toolResult")
    assert "123 * 456 = 56088" in message_text(tool_result)
    assert messages[-1].role == "assistant"
    assert "56088" in message_text(messages[-1])
    assert len(agent.state.pending_tool_calls) == 0
    assert snapshots == [("tool_execution_start", ["calc-1"]), ("tool_execution_end", [])]


async def test_handles_abort_during_streaming(make_faux: Any) -> None:
    faux = make_faux(tokens_per_second=20, token_size={"min": 2, "max": 2})
    faux.set_responses(
        [
            faux_assistant_message(
                "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
            )
        ]
    )
    agent = make_agent(faux.get_model())
    prompt = asyncio.ensure_future(agent.prompt("Count slowly from 1 to 20."))
    asyncio.get_running_loop().call_later(0.03, agent.abort)
    await prompt
    assert agent.state.is_streaming is False
    assert len(agent.state.messages) >= 2
    last = agent.state.messages[-1]
    assert last.role == "assistant"
    assert last.stop_reason == "aborted"
    assert last.error_message
    assert agent.state.error_message == last.error_message


async def test_emits_lifecycle_updates_while_streaming(make_faux: Any) -> None:
    faux = make_faux(token_size={"min": 1, "max": 1})
    faux.set_responses([faux_assistant_message("1 2 3 4 5")])
    agent = make_agent(faux.get_model())
    events: list[str] = []
    agent.subscribe(lambda event, signal: events.append(event.type))
    await agent.prompt("Count from 1 to 5.")
    for kind in (
        "agent_start",
        "turn_start",
        "message_start",
        "message_update",
        "message_end",
        "turn_end",
        "agent_end",
    ):
        assert kind in events
    assert events.index("agent_start") < events.index("message_start")
    assert events.index("message_start") < events.index("message_end")
    last_agent_end = len(events) - 1 - events[::-1].index("agent_end")
    assert events.index("message_end") < last_agent_end
    assert agent.state.is_streaming is False
    assert len(agent.state.messages) == 2


async def test_maintains_context_across_multiple_turns(make_faux: Any) -> None:
    faux = make_faux()

    def answer(context: Any, options: Any, state: Any, model: Any) -> AssistantMessage:
        knows = any(m.role == "user" and "Alice" in message_text(m) for m in context.messages)
        return faux_assistant_message("Your name is Alice." if knows else "I do not know your name.")

    faux.set_responses([faux_assistant_message("Nice to meet you, Alice."), answer])
    agent = make_agent(faux.get_model())
    await agent.prompt("My name is Alice.")
    assert len(agent.state.messages) == 2
    await agent.prompt("What is my name?")
    assert len(agent.state.messages) == 4
    assert "alice" in message_text(agent.state.messages[3]).lower()


async def test_preserves_thinking_content_blocks(make_faux: Any) -> None:
    faux = make_faux(models=[{"id": "faux-reasoning", "reasoning": True}])
    faux.set_responses([faux_assistant_message([faux_thinking("step by step"), faux_text("4")])])
    agent = make_agent(faux.get_model(), thinking_level="low")
    await agent.prompt("What is 2+2?")
    message = agent.state.messages[1]
    assert message.role == "assistant"
    assert [block.model_dump() for block in message.content] == [
        {"type": "thinking", "thinking": "step by step"},
        {"type": "text", "text": "4"},
    ]


# --- Agent.continue_() with the faux provider -------------------------------------------------


async def test_continue_throws_when_no_messages_in_context(make_faux: Any) -> None:
    agent = make_agent(make_faux().get_model(), "Test")
    with pytest.raises(RuntimeError, match=r"^No messages to continue from$"):
        await agent.continue_()


async def test_continue_throws_when_last_message_is_assistant(make_faux: Any) -> None:
    model = make_faux().get_model()
    agent = make_agent(model, "Test")
    agent.state.messages = [
        AssistantMessage(
            content=[TextContent(text="Hello")],
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=Usage(),
            stop_reason="stop",
        )
    ]
    with pytest.raises(RuntimeError, match=r"^Cannot continue from message role: assistant$"):
        await agent.continue_()


async def test_continue_from_user_message(make_faux: Any) -> None:
    faux = make_faux()
    faux.set_responses([faux_assistant_message("HELLO WORLD")])
    agent = make_agent(faux.get_model(), "You are a helpful assistant. Follow instructions exactly.")
    agent.state.messages = [UserMessage(content=[TextContent(text="Say exactly: HELLO WORLD")])]
    await agent.continue_()
    assert agent.state.is_streaming is False
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]
    assert "HELLO WORLD" in message_text(agent.state.messages[1]).upper()


async def test_continue_from_tool_result(make_faux: Any) -> None:
    faux = make_faux()
    model = faux.get_model()
    faux.set_responses([faux_assistant_message("The answer is 8.")])
    agent = make_agent(
        model, "After getting a calculation result, state the answer clearly.", tools=[CALCULATE_TOOL]
    )
    agent.state.messages = [
        UserMessage(content=[TextContent(text="What is 5 + 3?")]),
        AssistantMessage(
            content=[
                TextContent(text="Let me calculate that."),
                ToolCall(id="calc-1", name="calculate", arguments={"expression": "5 + 3"}),
            ],
            api=model.api,
            provider=model.provider,
            model=model.id,
            usage=Usage(),
            stop_reason="toolUse",
        ),
        ToolResultMessage(
            tool_call_id="calc-1", tool_name="calculate", content=[TextContent(text="5 + 3 = 8")]
        ),
    ]
    await agent.continue_()
    assert agent.state.is_streaming is False
    assert len(agent.state.messages) >= 4
    assert agent.state.messages[-1].role == "assistant"
    assert "8" in message_text(agent.state.messages[-1])
