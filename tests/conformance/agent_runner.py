"""Plays the agent conformance scenarios on ``pi_notebook``: the Python twin of
``agent_runner.mjs``, which plays them on the real Pi.

Each scenario (``scenarios/agent.json``) runs on a fresh ``Agent`` streaming from the faux
provider. The result has Pi's camelCase JSON form: every agent event as it was at the moment
of emission, the outcome of each step, the context of every provider request and the final
agent state. Tool behaviours, hooks, actions and listeners are implemented here exactly as in
the node runner, by the same names.

``python agent_runner.py < scenarios.json`` prints the results like the node runner does.

A scenario (all keys but ``name``, ``description`` and ``responses`` optional):

* ``responses``: the faux queue; each ``{content, stopReason, errorMessage?}`` with Pi's blocks
  (a tool call without ``id`` gets a random one), or ``{throw: text}`` for a factory that throws.
  ``tokenSize`` and ``tokensPerSecond`` configure the faux provider; the file's ``defaults`` pace
  every chunk on a timer so both event loops drain the consumer between chunks (unpaced, Pi's
  producer runs ahead of its consumer by microtasks and its partials show later text).
* ``tools``: ``{name, behaviour, parameters?, executionMode?, error?, delayMs?, prepare?}`` with
  behaviours ``echo`` (JSON of the arguments), ``throw``, ``delay``, ``update`` (one progress
  update), ``wait_abort`` (an update, then wait for the abort), ``terminate``, ``bare`` (no
  details), ``image``; ``prepare: {rename: {old: new}}`` is a ``prepareArguments``.
* ``options``: ``toolExecution``, ``steeringMode``, ``followUpMode``, ``sessionId``;
  ``systemPrompt``; ``initialMessages``; ``convertToLlm: "notes"`` (the custom ``note`` role
  becomes a user message) or ``"throw"``; ``transformContext: {lastMessages: n}``.
* ``hooks``: ``beforeToolCall`` / ``afterToolCall`` rules per tool: ``block`` + ``reason``,
  ``rewrite`` (arguments changed in place), ``abort``, ``throw``; ``content``, ``details``,
  ``isError``, ``terminate`` overrides.
* ``actions``: ``{at: {type, role?, event?, nth}, do: abort|steer|followUp|reset|prompt, text?}``
  run inside the recording listener at the nth matching event; ``listeners``: ``{throwAt,
  message}`` a second listener that throws there.
* ``steps``: ``{prompt: text | message}``, ``{continue: true}``, ``{steer: text}``,
  ``{followUp: text}``, run in order; a step that raises records its error message.
* ``late: true`` also serialises the kept event objects after the run (object sharing).
* ``deviation``: the deliberate fixes the scenario hits (see ``agent_deviations``).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pi_notebook.agent import (
    AfterToolCallContext,
    AfterToolCallResult,
    Agent,
    AgentEvent,
    AgentTool,
    AgentToolResult,
    BeforeToolCallContext,
    BeforeToolCallResult,
)
from pi_notebook.ai import (
    AbortSignal,
    AssistantMessage,
    ImageContent,
    TextContent,
    UserMessage,
    stream_simple,
)
from pi_notebook.ai.faux import register_faux_provider
from pi_notebook.ai.types import Context, Model, PiModel, now_ms

DEFAULT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}


class NoteMessage(PiModel):
    """The scenarios' custom message role: seen by the model only through ``convert_to_llm``."""

    role: Literal["note"] = "note"
    text: str
    timestamp: int


def plain(value: Any) -> Any:
    """Pi's JSON form of a model, event or plain value (``JSON.parse(JSON.stringify(x))``)."""
    if hasattr(value, "model_dump"):
        value = value.model_dump()
    elif hasattr(value, "to_dict"):
        value = value.to_dict()
    return json.loads(json.dumps(value, default=plain, ensure_ascii=False))


def js_json(value: Any) -> str:
    """``JSON.stringify``: compact separators, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def user_message(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=now_ms())


def echo_result(args: Any, details: Any = None, terminate: bool | None = None) -> AgentToolResult:
    return AgentToolResult(
        content=[TextContent(text=js_json(args))],
        details={"args": args} if details is None else details,
        terminate=terminate,
    )


IMAGE = ImageContent(data="iVBORw0KGgo=", mime_type="image/png")


async def _run_behaviour(
    spec: dict[str, Any], args: Any, signal: AbortSignal | None, on_update: Any
) -> AgentToolResult:
    """The tool behaviours, as ``agent_runner.mjs`` implements them."""
    behaviour = spec["behaviour"]
    if behaviour == "echo":
        return echo_result(args)
    if behaviour == "throw":
        raise RuntimeError(spec.get("error", "tool failed"))
    if behaviour == "delay":
        await asyncio.sleep(spec.get("delayMs", 10) / 1000)
        return echo_result(args)
    if behaviour == "update":
        on_update(AgentToolResult(content=[TextContent(text="working")], details={"step": 1}))
        return echo_result(args)
    if behaviour == "wait_abort":
        on_update(AgentToolResult(content=[TextContent(text="waiting")], details={}))
        assert signal is not None
        if not signal.aborted:
            await signal.wait()
        return echo_result(args, details={"aborted": True})
    if behaviour == "terminate":
        return echo_result(args, terminate=True)
    if behaviour == "bare":
        return AgentToolResult(content=[TextContent(text=js_json(args))])
    if behaviour == "image":
        return AgentToolResult(content=[TextContent(text="a chart"), IMAGE], details={})
    raise ValueError(f"unknown tool behaviour {behaviour}")


def make_tool(spec: dict[str, Any]) -> AgentTool:
    async def execute(
        tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: Any = None
    ) -> AgentToolResult:
        return await _run_behaviour(spec, args, signal, on_update)

    return AgentTool(
        name=spec["name"],
        label=spec["name"],
        description=spec.get("description", f"The {spec['name']} tool"),
        parameters=spec.get("parameters", DEFAULT_PARAMETERS),
        execute=execute,
        execution_mode=spec.get("executionMode"),
        prepare_arguments=make_prepare(spec["prepare"]) if "prepare" in spec else None,
    )


def make_prepare(prepare: dict[str, Any]) -> Callable[[Any], Any]:
    """Renames legacy argument names; returns the same object when there is nothing to rename."""
    renames: dict[str, str] = prepare["rename"]

    def prepare_arguments(args: Any) -> Any:
        present = [(old, new) for old, new in renames.items() if old in args]
        if not present:
            return args
        prepared = dict(args)
        for old, new in present:
            prepared[new] = prepared.pop(old)
        return prepared

    return prepare_arguments


def make_response(spec: dict[str, Any]) -> Any:
    if "throw" in spec:
        message = spec["throw"]

        def factory(*_: Any) -> AssistantMessage:
            raise RuntimeError(message)

        return factory
    content = json.loads(json.dumps(spec.get("content", [])))
    for block in content:
        if block["type"] == "toolCall" and "id" not in block:  # as Pi's fauxToolCall
            block["id"] = f"tool:{now_ms()}:{secrets.token_hex(5)}"
    return AssistantMessage.model_validate(
        {
            "content": content,
            "api": "faux",
            "provider": "faux",
            "model": "faux-1",
            "stopReason": spec.get("stopReason", "stop"),
            "errorMessage": spec.get("errorMessage"),
            "timestamp": now_ms(),
        }
    )


def make_message(data: dict[str, Any]) -> Any:
    if data.get("role") == "note":
        return NoteMessage.model_validate(data)
    if data.get("role") == "assistant":
        return AssistantMessage.model_validate(data)
    return UserMessage.model_validate(data)


def convert_notes(messages: list[Any]) -> list[Any]:
    out: list[Any] = []
    for message in messages:
        if isinstance(message, NoteMessage):
            out.append(user_message(f"Note: {message.text}"))
        elif getattr(message, "role", None) in ("user", "assistant", "toolResult"):
            out.append(message)
    return out


def convert_throws(messages: list[Any]) -> list[Any]:
    raise RuntimeError("convertToLlm failed")


def make_transform(spec: dict[str, Any] | None) -> Any:
    if spec is None:
        return None
    keep: int = spec["lastMessages"]

    async def transform(messages: list[Any], signal: AbortSignal | None) -> list[Any]:
        return messages[-keep:]

    return transform


def make_hooks(hooks: dict[str, Any] | None, get_agent: Callable[[], Agent]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    hooks = hooks or {}
    before_rules = hooks.get("beforeToolCall")
    after_rules = hooks.get("afterToolCall")
    if before_rules is not None:

        async def before(ctx: BeforeToolCallContext, signal: AbortSignal | None) -> Any:
            for rule in before_rules:
                if rule["tool"] != ctx.tool_call.name:
                    continue
                if rule.get("abort"):
                    get_agent().abort()
                if "throw" in rule:
                    raise RuntimeError(rule["throw"])
                if "rewrite" in rule:
                    ctx.args.update(rule["rewrite"])
                if rule.get("block"):
                    return BeforeToolCallResult(block=True, reason=rule.get("reason"))
            return None

        options["before_tool_call"] = before
    if after_rules is not None:

        async def after(ctx: AfterToolCallContext, signal: AbortSignal | None) -> Any:
            for rule in after_rules:
                if rule["tool"] != ctx.tool_call.name:
                    continue
                if "throw" in rule:
                    raise RuntimeError(rule["throw"])
                content = rule.get("content")
                return AfterToolCallResult(
                    content=None if content is None else [TextContent(text=content)],
                    details=rule.get("details"),
                    is_error=rule.get("isError"),
                    terminate=rule.get("terminate"),
                )
            return None

        options["after_tool_call"] = after
    return options


def make_matcher(at: dict[str, Any]) -> Callable[[dict[str, Any]], bool]:
    """The nth event of ``at["type"]`` (and message role, or assistant event type)."""
    seen = [0]

    def matches(event: dict[str, Any]) -> bool:
        if event["type"] != at["type"]:
            return False
        if "role" in at and (event.get("message") or {}).get("role") != at["role"]:
            return False
        if "event" in at and (event.get("assistantMessageEvent") or {}).get("type") != at["event"]:
            return False
        seen[0] += 1
        return seen[0] == int(at.get("nth", 1))

    return matches


def without_none(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value is not None}


class ScenarioRun:
    """One scenario on one ``Agent``: recording listener, actions, throwing listeners."""

    def __init__(self, scenario: dict[str, Any]) -> None:
        self.scenario = scenario
        self.faux = register_faux_provider(
            api="faux",
            provider="faux",
            token_size=scenario.get("tokenSize", {"min": 2, "max": 2}),
            tokens_per_second=scenario.get("tokensPerSecond"),
        )
        self.faux.set_responses([make_response(r) for r in scenario.get("responses", [])])
        self.requests: list[Any] = []
        self.events: list[Any] = []
        self.kept: list[Any] = []  # the event objects themselves, serialised after the run
        self.action_errors: list[str] = []
        options = scenario.get("options", {})
        self.agent = Agent(
            stream_fn=self.stream_fn,
            initial_state={
                "model": self.faux.get_model(),
                "system_prompt": scenario.get("systemPrompt", ""),
                "tools": [make_tool(t) for t in scenario.get("tools", [])],
                "messages": [make_message(m) for m in scenario.get("initialMessages", [])],
            },
            tool_execution=options.get("toolExecution", "parallel"),
            steering_mode=options.get("steeringMode", "one-at-a-time"),
            follow_up_mode=options.get("followUpMode", "one-at-a-time"),
            session_id=options.get("sessionId"),
            convert_to_llm={"notes": convert_notes, "throw": convert_throws}.get(
                scenario.get("convertToLlm", "")
            ),
            transform_context=make_transform(scenario.get("transformContext")),
            **make_hooks(scenario.get("hooks"), lambda: self.agent),
        )
        self.actions = [(a, make_matcher(a["at"])) for a in scenario.get("actions", [])]
        self.agent.subscribe(self.record)
        for spec in scenario.get("listeners", []):
            self.agent.subscribe(self.thrower(spec))

    def stream_fn(self, model: Model, context: Context, options: Any) -> Any:
        self.requests.append(
            plain(
                {
                    "systemPrompt": context.system_prompt,
                    "messages": context.messages,
                    "tools": [t.name for t in context.tools or []],
                }
            )
        )
        return stream_simple(model, context, options)

    def record(self, event: AgentEvent, signal: AbortSignal) -> Awaitable[None] | None:
        data = plain(event)
        self.events.append(data)
        if self.scenario.get("late"):
            self.kept.append(event)
        pending: list[Awaitable[None]] = []
        for action, matches in self.actions:
            if not matches(data):
                continue
            kind = action["do"]
            if kind == "abort":
                self.agent.abort()
            elif kind == "steer":
                self.agent.steer(user_message(action["text"]))
            elif kind == "followUp":
                self.agent.follow_up(user_message(action["text"]))
            elif kind == "reset":
                self.agent.reset()
            elif kind == "prompt":
                pending.append(self.prompt_again(action["text"]))
        return self._all(pending) if pending else None

    @staticmethod
    async def _all(pending: list[Awaitable[None]]) -> None:
        for awaitable in pending:
            await awaitable

    async def prompt_again(self, text: str) -> None:
        try:
            await self.agent.prompt(text)
        except RuntimeError as exc:
            self.action_errors.append(str(exc))

    @staticmethod
    def thrower(spec: dict[str, Any]) -> Callable[[AgentEvent, AbortSignal], None]:
        matches = make_matcher(spec["throwAt"])

        def listener(event: AgentEvent, signal: AbortSignal) -> None:
            if matches(plain(event)):
                raise RuntimeError(spec["message"])

        return listener

    async def step(self, step: dict[str, Any]) -> dict[str, Any]:
        agent = self.agent
        try:
            if "prompt" in step:
                prompt = step["prompt"]
                await agent.prompt(prompt if isinstance(prompt, str) else make_message(prompt))
            elif step.get("continue"):
                await agent.continue_()
            elif "steer" in step:
                agent.steer(user_message(step["steer"]))
            elif "followUp" in step:
                agent.follow_up(user_message(step["followUp"]))
        except RuntimeError as exc:
            return {"error": str(exc)}
        return {"ok": True}

    async def run(self) -> dict[str, Any]:
        try:
            steps = [await self.step(step) for step in self.scenario.get("steps", [])]
            await self.agent.wait_for_idle()
        finally:
            self.faux.unregister()
        state = self.agent.state
        late = {"lateEvents": plain(self.kept)} if self.scenario.get("late") else {}
        return {
            "events": self.events,
            **late,
            "steps": steps,
            "actionErrors": self.action_errors,
            "requests": self.requests,
            "pendingResponses": self.faux.get_pending_response_count(),
            "state": plain(
                without_none(
                    {
                        "messages": state.messages,
                        "errorMessage": state.error_message,
                        "isStreaming": state.is_streaming,
                        "streamingMessage": state.streaming_message,
                        "pendingToolCalls": sorted(state.pending_tool_calls),
                        "hasQueuedMessages": self.agent.has_queued_messages(),
                    }
                )
            ),
        }


SCENARIO_TIMEOUT = 10.0


async def run_scenario(scenario: dict[str, Any]) -> dict[str, Any]:
    """One scenario's result, or ``{"runnerError": ...}`` when it crashed or hung."""
    try:
        return await asyncio.wait_for(ScenarioRun(scenario).run(), SCENARIO_TIMEOUT)
    except Exception as exc:  # one broken scenario must not hide the results of the others
        return {"runnerError": f"{type(exc).__name__}: {exc}"}


def run_scenarios(scenarios: list[dict[str, Any]]) -> dict[str, Any]:
    """Play every scenario in a fresh event loop; results keyed by scenario name."""
    return {scenario["name"]: asyncio.run(run_scenario(scenario)) for scenario in scenarios}


if __name__ == "__main__":
    print(json.dumps(run_scenarios(json.load(sys.stdin)), ensure_ascii=False))
