"""The ``@tool`` decorator: schema and descriptions from the signature and docstring, sync
functions in worker threads, injected parameters, return shapes, validation errors."""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from pi_notebook.agent import Agent, AgentEvent, AgentTool, AgentToolResult, tool
from pi_notebook.ai.abort import AbortSignal
from pi_notebook.ai.entry import stream_simple
from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_tool_call
from pi_notebook.ai.types import AssistantMessage, Context, ImageContent, TextContent


def schema(t: AgentTool) -> dict[str, Any]:
    return t.to_tool().parameters


# --- schema and descriptions ------------------------------------------------------------------


def test_google_docstring_gives_description_and_parameter_descriptions() -> None:
    @tool
    def get_weather(city: str, unit: Literal["c", "f"] = "c", days: int = 1) -> str:
        """Get the weather forecast
        for a city.

        The forecast comes from a fake service.

        Args:
            city: The city name, e.g. Paris.
            unit (str): Temperature unit:
                c for Celsius, f for Fahrenheit.
            days: How many days.

        Returns:
            A short text.
        """
        return f"{city}:{unit}:{days}"

    assert isinstance(get_weather, AgentTool)
    assert get_weather.name == "get_weather"
    assert get_weather.label == "get_weather"
    assert get_weather.description == "Get the weather forecast for a city."
    assert schema(get_weather) == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city name, e.g. Paris."},
            "unit": {
                "enum": ["c", "f"],
                "type": "string",
                "default": "c",
                "description": "Temperature unit: c for Celsius, f for Fahrenheit.",
            },
            "days": {"type": "integer", "default": 1, "description": "How many days."},
        },
        "required": ["city"],
    }


def test_numpy_and_sphinx_docstrings_and_annotated_descriptions() -> None:
    @tool
    def area(width: float, height: Annotated[float, Field(description="From Annotated")] = 1.0) -> float:
        """Area of a rectangle.

        Parameters
        ----------
        width : float
            The width
            in metres.
        height : float
            Ignored: the Annotated description wins.

        Returns
        -------
        float
        """
        return width * height

    @tool
    def scale(factor: int) -> int:
        """Scale things.

        :param factor: How much to scale.
        :returns: the factor
        """
        return factor

    props = schema(area)["properties"]
    assert props["width"]["description"] == "The width in metres."
    assert props["height"]["description"] == "From Annotated"
    assert area.description == "Area of a rectangle."
    assert schema(scale)["properties"]["factor"] == {"type": "integer", "description": "How much to scale."}


def test_options_override_name_label_description_and_mode() -> None:
    @tool(name="lookup", label="Look up", description="Find a thing.", execution_mode="sequential")
    def find(key: str) -> str:
        """Not used."""
        return key

    assert (find.name, find.label, find.description, find.execution_mode) == (
        "lookup",
        "Look up",
        "Find a thing.",
        "sequential",
    )


def test_injected_parameters_stay_out_of_the_schema_and_the_tool_stays_callable() -> None:
    @tool
    def add(
        a: int,
        b: int = 2,
        *,
        signal: AbortSignal | None = None,
        on_update: Any = None,
        tool_call_id: str = "",
    ) -> int:
        """Add two numbers."""
        return a + b

    assert set(schema(add)["properties"]) == {"a", "b"}
    assert add(1, 2) == 3
    assert add.__wrapped__(a=4) == 6  # type: ignore[attr-defined]
    assert add.__doc__ == "Add two numbers."


def test_star_args_are_rejected() -> None:
    with pytest.raises(TypeError, match=r"\*args/\*\*kwargs"):

        @tool
        def bad(*values: int) -> int:
            return sum(values)


async def test_async_function_stays_awaitable_when_called_directly() -> None:
    @tool
    async def double(x: int) -> int:
        """Double it."""
        return 2 * x

    assert await double(4) == 8


# --- execution through the agent --------------------------------------------------------------------


async def run_tool(
    faux: FauxRegistration, made: AgentTool, arguments: dict[str, Any]
) -> tuple[Agent, list[AgentEvent]]:
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call(made.name, arguments, id="call-1")], stop_reason="toolUse"
            ),
            faux_assistant_message("done"),
        ]
    )
    agent = Agent(stream_fn=stream_simple, initial_state={"model": faux.get_model(), "tools": [made]})
    events: list[AgentEvent] = []
    agent.subscribe(lambda event, signal: events.append(event))
    await agent.prompt("go")
    return agent, events


def tool_result(agent: Agent) -> Any:
    return next(m for m in agent.state.messages if m.role == "toolResult")


async def test_sync_function_runs_in_a_worker_thread(faux: FauxRegistration) -> None:
    seen: dict[str, Any] = {}

    @tool
    def where(label: str) -> str:
        """Report the thread."""
        seen["thread"] = threading.current_thread()
        return f"{label} ran"

    loop_thread = threading.current_thread()
    agent, _ = await run_tool(faux, where, {"label": "x"})
    assert seen["thread"] is not loop_thread
    assert seen["thread"].name.startswith("pi-tool")
    assert tool_result(agent).content == [TextContent(text="x ran")]


async def test_async_function_runs_on_the_loop(faux: FauxRegistration) -> None:
    seen: dict[str, Any] = {}

    @tool
    async def where() -> str:
        """Report the thread."""
        seen["thread"] = threading.current_thread()
        await asyncio.sleep(0)
        return "ok"

    await run_tool(faux, where, {})
    assert seen["thread"] is threading.current_thread()


async def test_sync_tools_of_one_batch_run_in_parallel_threads(faux: FauxRegistration) -> None:
    barrier = threading.Barrier(8, timeout=10)  # breaks unless all 8 are inside at once

    @tool
    def meet(n: int) -> str:
        """Wait for the others."""
        barrier.wait()
        return str(n)

    calls = [faux_tool_call("meet", {"n": i}, id=f"c{i}") for i in range(8)]
    faux.set_responses([faux_assistant_message(calls, stop_reason="toolUse"), faux_assistant_message("done")])
    agent = Agent(stream_fn=stream_simple, initial_state={"model": faux.get_model(), "tools": [meet]})
    await agent.prompt("go")
    results = [m for m in agent.state.messages if m.role == "toolResult"]
    assert [(r.is_error, r.content[0].text) for r in results] == [(False, str(i)) for i in range(8)]


async def test_injected_parameters_receive_the_call_id_signal_and_update_callback(
    faux: FauxRegistration,
) -> None:
    seen: dict[str, Any] = {}

    @tool
    def progress(steps: int, tool_call_id: str, signal: AbortSignal, on_update: Any) -> str:
        """Report progress."""
        seen.update(tool_call_id=tool_call_id, signal=signal)
        for i in range(steps):
            on_update(f"step {i}")  # a plain string, from a worker thread
        return "finished"

    _, events = await run_tool(faux, progress, {"steps": 2})
    assert seen["tool_call_id"] == "call-1"
    assert isinstance(seen["signal"], AbortSignal)
    updates = [e.partial_result.content for e in events if e.type == "tool_execution_update"]
    assert updates == [[TextContent(text="step 0")], [TextContent(text="step 1")]]
    kinds = [e.type for e in events if e.type.startswith("tool_execution")]
    assert kinds == [
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_update",
        "tool_execution_end",
    ]


class Point(BaseModel):
    x: int
    y: int


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", [TextContent(text="plain")]),
        (TextContent(text="block"), [TextContent(text="block")]),
        (
            [TextContent(text="a"), ImageContent(data="AAAA", mime_type="image/png")],
            [TextContent(text="a"), ImageContent(data="AAAA", mime_type="image/png")],
        ),
        ({"a": [1, "é"]}, [TextContent(text='{"a": [1, "é"]}')]),
        (Point(x=1, y=2), [TextContent(text='{"x":1,"y":2}')]),
        (None, [TextContent(text="null")]),
        ({1, 2}, [TextContent(text="{1, 2}")]),
    ],
)
async def test_return_values_become_content(faux: FauxRegistration, value: Any, expected: list[Any]) -> None:
    @tool
    def give() -> Any:
        """Return something."""
        return value

    agent, _ = await run_tool(faux, give, {})
    result = tool_result(agent)
    assert result.is_error is False
    assert result.content == expected


async def test_agent_tool_result_is_kept_as_is(faux: FauxRegistration) -> None:
    @tool
    async def finish() -> AgentToolResult:
        """Finish."""
        return AgentToolResult(content=[TextContent(text="bye")], details={"k": 1}, terminate=True)

    agent, _ = await run_tool(faux, finish, {})
    assert tool_result(agent).details == {"k": 1}
    assert faux.state.call_count == 1  # terminate=True: no follow-up request


async def test_pydantic_parameters_reach_the_function_as_models(faux: FauxRegistration) -> None:
    @tool
    def plot(point: Point, label: str = "p") -> str:
        """Plot a point."""
        assert isinstance(point, Point)
        return f"{label}@{point.x},{point.y}"

    agent, _ = await run_tool(faux, plot, {"point": {"x": "3", "y": 4}})
    assert tool_result(agent).content == [TextContent(text="p@3,4")]


async def test_validation_errors_reach_the_model_as_error_results(faux: FauxRegistration) -> None:
    executed: list[Any] = []

    @tool
    def count(n: int) -> str:
        """Count."""
        executed.append(n)
        return "counted"

    seen: dict[str, Any] = {}

    def second_turn(context: Context, *rest: Any) -> AssistantMessage:
        seen["result"] = context.messages[-1]
        return faux_assistant_message("sorry")

    faux.set_responses(
        [
            faux_assistant_message(
                [faux_tool_call("count", {"n": "many"}, id="call-1")], stop_reason="toolUse"
            ),
            second_turn,
        ]
    )
    agent = Agent(stream_fn=stream_simple, initial_state={"model": faux.get_model(), "tools": [count]})
    await agent.prompt("go")
    assert executed == []
    sent = seen["result"]
    assert sent.role == "toolResult"
    assert sent.is_error is True
    assert sent.content[0].text.startswith('Validation failed for tool "count":')


async def test_exceptions_from_the_function_become_error_results(faux: FauxRegistration) -> None:
    @tool
    def fail(reason: str) -> str:
        """Always fails."""
        raise ValueError(reason)

    agent, events = await run_tool(faux, fail, {"reason": "no luck"})
    result = tool_result(agent)
    assert result.is_error is True
    assert result.content == [TextContent(text="no luck")]
    assert getattr(next(e for e in events if e.type == "tool_execution_end"), "is_error") is True
