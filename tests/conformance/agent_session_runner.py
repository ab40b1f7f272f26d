"""Plays the AgentSession conformance scenarios on ``pi_notebook``: the Python twin of
``agent_session_runner.mjs``, which plays them on the real Pi's ``AgentSession``.

Each scenario (``scenarios/agent_session.json``) runs on a fresh ``AgentSession`` around an
``Agent`` streaming from the faux provider, with a ``SessionManager`` writing to a temporary
folder. The result has Pi's camelCase JSON form: every session event as it was at the moment
of emission (``to_dict()``), the outcome of each step and of each action, the context of every
provider request (the summarization requests of a compaction included), the session's final
state, its entries in memory and the entries of its file (``None`` while no file exists).

Pi's ``AgentSession`` sets the agent's system prompt itself, from its resource loader: with a
custom prompt it is ``<prompt>\\nCurrent working directory: <cwd>``. Ours takes the agent's
system prompt as given, so the runner gives it that same text (``pi_system_prompt``); the
requests show the prompt both sides sent.

``python agent_session_runner.py < scenarios.json`` prints the results like the node runner.

A scenario (all keys but ``name``, ``description`` and ``responses`` optional):

* ``responses``: the faux queue, as in ``agent_runner`` (``{content, stopReason,
  errorMessage?}``); a compaction's summary requests take their answers from it too.
  ``models``: the faux provider's models (``[{id, contextWindow?, reasoning?}]``, default one
  ``faux-1``); ``tokenSize``, ``tokensPerSecond``: its pacing.
* ``tools``: names of ``echo`` tools (``agent_runner``'s: the arguments as JSON);
  ``systemPrompt``: the custom prompt; ``settings``: Pi's ``retry`` (``enabled``,
  ``maxRetries``, ``baseDelayMs``) and ``compaction`` (``enabled``, ``reserveTokens``,
  ``keepRecentTokens``) sections.
* ``actions``: ``{at: {type, role?, event?, nth}, do, ...}`` run from the recording listener at
  the nth matching event: ``prompt`` (``text``, ``streamingBehavior`` ``"steer"`` or
  ``"followUp"``, or none), ``steer``, ``followUp`` (``text``), ``abort`` (at once, or ``afterMs`` later).
  A failing action records its error message in ``actionErrors``.
* ``steps``, run in order: ``{prompt}``, ``{setModel: id}``, ``{setThinkingLevel}``,
  ``{setSessionName}``, ``{compact: instructions | null}``, ``{waitForIdle: true}``,
  ``{navigate: {userTurn | entry: "leafParent", summarize?, label?}}`` (``navigate_tree``).
* ``deviation``: the deliberate differences the scenario hits (``agent_session_deviations``).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from conformance.agent_runner import make_response, make_tool, plain

from pi_notebook import AgentSession
from pi_notebook.agent import Agent
from pi_notebook.ai import stream_simple
from pi_notebook.ai.faux import register_faux_provider
from pi_notebook.ai.types import Context, Model
from pi_notebook.runtime import AgentSessionSettings, RetrySettings
from pi_notebook.session import CompactionSettings, SessionManager, convert_to_llm, entry_to_dict

CWD = "/work/project"
SCENARIO_TIMEOUT = 15.0
STREAMING_BEHAVIOUR = {"steer": "steer", "followUp": "follow_up"}


def pi_system_prompt(custom: str) -> str:
    """The system prompt Pi's AgentSession builds from a custom prompt and no context files."""
    return f"{custom}\nCurrent working directory: {CWD}"


def make_settings(data: dict[str, Any]) -> AgentSessionSettings:
    retry = data.get("retry", {})
    compaction = data.get("compaction", {})
    return AgentSessionSettings(
        retry=RetrySettings(
            enabled=retry.get("enabled", True),
            max_retries=retry.get("maxRetries", 3),
            base_delay_ms=retry.get("baseDelayMs", 2000),
        ),
        compaction=CompactionSettings(
            enabled=compaction.get("enabled", True),
            reserve_tokens=compaction.get("reserveTokens", 16384),
            keep_recent_tokens=compaction.get("keepRecentTokens", 20000),
        ),
    )


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


def read_entries(path: str | None) -> list[dict[str, Any]] | None:
    """The entries of a session file (its header left out), ``None`` when there is no file."""
    if path is None or not Path(path).exists():
        return None
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [entry for entry in map(json.loads, lines) if entry.get("type") != "session"]


class ScenarioRun:
    """One scenario on one ``AgentSession``: recording listener, actions, steps."""

    def __init__(self, scenario: dict[str, Any], folder: str) -> None:
        self.scenario = scenario
        self.faux = register_faux_provider(
            api="faux",
            provider="faux",
            models=scenario.get("models"),
            token_size=scenario.get("tokenSize", {"min": 2, "max": 2}),
            tokens_per_second=scenario.get("tokensPerSecond"),
        )
        self.faux.set_responses([make_response(r) for r in scenario.get("responses", [])])
        self.requests: list[Any] = []
        self.events: list[Any] = []
        self.action_errors: list[str] = []
        self.tasks: list[asyncio.Future[Any]] = []
        agent = Agent(
            stream_fn=self.stream_fn,
            convert_to_llm=convert_to_llm,
            initial_state={
                "model": self.faux.get_model(),
                "system_prompt": pi_system_prompt(scenario.get("systemPrompt", "")),
                "thinking_level": "off",
                "tools": [make_tool({"name": n, "behaviour": "echo"}) for n in scenario.get("tools", [])],
            },
        )
        self.session = AgentSession(
            agent,
            SessionManager.create(CWD, folder),
            settings=make_settings(scenario.get("settings", {})),
            cwd=CWD,
        )
        self.actions = [(a, make_matcher(a["at"])) for a in scenario.get("actions", [])]
        self.session.subscribe(self.record)

    def stream_fn(self, model: Model, context: Context, options: Any) -> Any:
        self.requests.append(
            plain({"model": model.id, "systemPrompt": context.system_prompt, "messages": context.messages})
        )
        return stream_simple(model, context, options)

    def record(self, event: Any) -> None:
        data = plain(event)
        self.events.append(data)
        for action, matches in self.actions:
            if matches(data):
                self.act(action)

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        async def guarded() -> None:
            try:
                await coro
            except Exception as exc:  # the action's outcome is part of the result
                self.action_errors.append(str(exc))

        self.tasks.append(asyncio.ensure_future(guarded()))

    def act(self, action: dict[str, Any]) -> None:
        session = self.session
        kind = action["do"]
        if kind == "prompt":
            behaviour = STREAMING_BEHAVIOUR.get(action.get("streamingBehavior", ""))
            self._spawn(session.prompt(action["text"], streaming_behavior=behaviour))  # type: ignore[arg-type]
        elif kind == "steer":
            self._spawn(session.steer(action["text"]))
        elif kind == "followUp":
            self._spawn(session.follow_up(action["text"]))
        elif kind == "abort" and "afterMs" not in action:
            self._spawn(session.abort())
        elif kind == "abort":
            loop = asyncio.get_running_loop()
            loop.call_later(action["afterMs"] / 1000, lambda: self._spawn(session.abort()))
        else:
            raise ValueError(f"unknown action {kind}")

    def model(self, model_id: str) -> Model:
        model = self.faux.get_model(model_id)
        if model is None:
            raise ValueError(f"no faux model {model_id}")
        return model

    async def navigate(self, spec: dict[str, Any]) -> dict[str, Any]:
        """``navigate`` as the node runner does it (targets named by position, ids differ)."""
        manager = self.session.session_manager
        users = [e for e in manager.get_branch() if e.type == "message" and e.message.role == "user"]
        leaf = manager.get_leaf_entry()
        target = users[spec["userTurn"]].id if "userTurn" in spec else (leaf.parent_id if leaf else None)
        assert target is not None
        result = await self.session.navigate_tree(
            target, summarize=spec.get("summarize", False), label=spec.get("label")
        )
        summary = result.summary_entry.summary if result.summary_entry is not None else None
        return {
            "ok": True,
            "editorText": result.editor_text,
            "cancelled": result.cancelled,
            "summary": summary,
        }

    async def step(self, step: dict[str, Any]) -> dict[str, Any]:
        session = self.session
        try:
            if "prompt" in step:
                await session.prompt(step["prompt"])
            elif "setModel" in step:
                session.set_model(self.model(step["setModel"]))
            elif "setThinkingLevel" in step:
                session.set_thinking_level(step["setThinkingLevel"])
            elif "setSessionName" in step:
                session.set_session_name(step["setSessionName"])
            elif "compact" in step:
                await session.compact(step["compact"])
            elif step.get("waitForIdle"):
                await session.wait_for_idle()
            elif "navigate" in step:
                return await self.navigate(step["navigate"])
            else:
                raise ValueError(f"unknown step {step}")
        except Exception as exc:  # a step's error is part of the result, as in the node runner
            return {"error": str(exc)}
        return {"ok": True}

    async def run(self) -> dict[str, Any]:
        try:
            steps = [await self.step(step) for step in self.scenario.get("steps", [])]
            await self.session.wait_for_idle()
            while not all(task.done() for task in self.tasks):
                await asyncio.gather(*self.tasks)
                await self.session.wait_for_idle()
        finally:
            self.faux.unregister()
        return self.result(steps)

    def result(self, steps: list[dict[str, Any]]) -> dict[str, Any]:
        session = self.session
        model = session.model
        return {
            "events": self.events,
            "steps": steps,
            "actionErrors": self.action_errors,
            "requests": self.requests,
            "pendingResponses": self.faux.get_pending_response_count(),
            "state": plain(
                {
                    "messages": session.messages,
                    "model": None if model is None else model.id,
                    "thinkingLevel": session.thinking_level,
                    "isStreaming": session.is_streaming,
                    "sessionName": session.session_name,
                }
            ),
            "entries": [entry_to_dict(e) for e in session.session_manager.get_entries()],
            "fileEntries": read_entries(session.session_file),
        }


async def run_scenario(scenario: dict[str, Any]) -> dict[str, Any]:
    """One scenario's result, or ``{"runnerError": ...}`` when it crashed or hung."""
    folder = tempfile.mkdtemp(prefix="pi-agent-session-")
    try:
        return await asyncio.wait_for(ScenarioRun(scenario, folder).run(), SCENARIO_TIMEOUT)
    except Exception as exc:  # one broken scenario must not hide the results of the others
        return {"runnerError": f"{type(exc).__name__}: {exc}"}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run_scenarios(scenarios: list[dict[str, Any]]) -> dict[str, Any]:
    """Play every scenario in a fresh event loop; results keyed by scenario name."""
    return {scenario["name"]: asyncio.run(run_scenario(scenario)) for scenario in scenarios}


if __name__ == "__main__":
    print(json.dumps(run_scenarios(json.load(sys.stdin)), ensure_ascii=False))
