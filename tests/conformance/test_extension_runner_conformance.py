"""Handler results combined as Pi combines them: the same declared extensions (handlers that
return, throw, change the event or look at it) run through Pi 0.83.0's own ``ExtensionRunner``
(``extension_runner.mjs``) and through pi_notebook's, for every event whose results combine:
``tool_call`` (blocking), ``tool_result`` (overrides), ``input``, ``context``,
``before_agent_start``, ``message_end`` and ``session_before_compact``. Compared: the result,
the errors reported (extension, event, message), and what each handler saw.

One difference is by design (docs/design.md, row 36): a ``tool_call`` handler that throws makes
Pi's ``emitToolCall`` throw (the loop turns that into the tool's error), while pi_notebook's
returns a block with the error's line as the reason and reports the error; both end the call
with the handler's message, which is what is compared for it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from pi_node import require_node22, run_node

from pi_notebook.runtime.extensions import ExtensionRunner, InputEvent, ToolCallEvent, ToolResultEvent


def ret(value: Any, see: list[str] | None = None) -> dict[str, Any]:
    return {"returns": value, "see": see}


TEXT = [{"type": "text", "text": "original"}]
TOOL_RESULT = {
    "toolName": "t",
    "toolCallId": "c1",
    "input": {},
    "content": TEXT,
    "details": None,
    "isError": False,
}

SCENARIOS: dict[str, dict[str, Any]] = {
    "tool_call_first_block_wins": {
        "event": "tool_call",
        "input": {"toolName": "bash", "toolCallId": "c1", "input": {"cmd": "ls"}},
        "extensions": [
            [ret({"block": False})],
            [ret({"block": True, "reason": "no"}), ret({"block": True})],
            [ret(None)],
        ],
    },
    "tool_call_reason_without_block": {
        "event": "tool_call",
        "input": {"toolName": "bash", "toolCallId": "c1", "input": {}},
        "extensions": [[ret({"reason": "just saying"})], [ret(None, ["toolName"])]],
    },
    "tool_call_changes_input_in_place": {
        "event": "tool_call",
        "input": {"toolName": "bash", "toolCallId": "c1", "input": {"cmd": "rm -rf /"}},
        "extensions": [
            [{"returns": None, "set": {"field": "input", "value": {"cmd": "ls"}}}],
            [ret(None, ["input"])],
        ],
    },
    "tool_call_throw_blocks": {
        "event": "tool_call",
        "input": {"toolName": "bash", "toolCallId": "c1", "input": {}},
        "extensions": [[{"throws": "policy server down", "returns": None}], [ret(None, ["toolName"])]],
    },
    "tool_result_fields_chain": {
        "event": "tool_result",
        "input": TOOL_RESULT,
        "extensions": [
            [ret({"content": [{"type": "text", "text": "first"}], "details": {"a": 1}})],
            [{"throws": "boom", "returns": None}],
            [ret({"isError": True}, ["content", "details", "isError"])],
            [ret(None, ["content", "details", "isError"])],
        ],
    },
    "tool_result_untouched": {
        "event": "tool_result",
        "input": TOOL_RESULT,
        "extensions": [[ret(None)], [ret({})]],
    },
    "input_transforms_chain": {
        "event": "input",
        "input": {"text": "hello"},
        "extensions": [
            [ret({"action": "transform", "text": "HELLO"}), ret(None, ["text"])],
            [ret({"action": "continue"}, ["text"]), ret({"action": "transform", "text": "HELLO!"})],
        ],
    },
    "input_handled_stops": {
        "event": "input",
        "input": {"text": "/stats"},
        "extensions": [
            [ret({"action": "transform", "text": "x"})],
            [ret({"action": "handled"})],
            [ret(None, ["text"])],
        ],
    },
    "input_continue": {
        "event": "input",
        "input": {"text": "same"},
        "extensions": [[{"throws": "bad", "returns": None}], [ret({"action": "continue"})]],
    },
    "context_chain": {
        "event": "context",
        "input": {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]},
        "extensions": [
            [ret({"messages": [{"role": "user", "content": "b"}]})],
            [ret(None, ["messages"]), {"throws": "oops", "returns": None}],
            [ret({"messages": [{"role": "user", "content": "c"}]}, ["messages"])],
        ],
    },
    "before_agent_start_collects_and_chains": {
        "event": "before_agent_start",
        "input": {"prompt": "hi", "systemPrompt": "base"},
        "extensions": [
            [ret({"systemPrompt": "base +1", "message": {"customType": "a", "content": "one"}})],
            [ret({"message": {"customType": "b", "content": "two"}}, ["systemPrompt"])],
            [ret({"systemPrompt": "base +1 +3"}, ["systemPrompt", "prompt"])],
        ],
    },
    "before_agent_start_nothing": {
        "event": "before_agent_start",
        "input": {"prompt": "hi", "systemPrompt": "base"},
        "extensions": [[ret(None)], [ret({})]],
    },
    "message_end_replacement_keeps_role": {
        "event": "message_end",
        "input": {"message": {"role": "assistant", "content": [{"type": "text", "text": "secret"}]}},
        "extensions": [
            [ret({"message": {"role": "user", "content": "wrong"}})],
            [ret({"message": {"role": "assistant", "content": [{"type": "text", "text": "[redacted]"}]}})],
            [ret(None, ["message"])],
        ],
    },
    "session_before_compact_last_wins_cancel_stops": {
        "event": "session_before_compact",
        "input": {"reason": "manual", "willRetry": False},
        "extensions": [
            [ret({"compaction": {"summary": "mine"}})],
            [ret(None), ret({"cancel": True})],
            [ret({"compaction": {"summary": "never"}}, ["reason"])],
        ],
    },
    "session_before_compact_last_result": {
        "event": "session_before_compact",
        "input": {"reason": "threshold", "willRetry": False},
        "extensions": [
            [ret({"compaction": {"summary": "first"}})],
            [ret({"compaction": {"summary": "second"}})],
        ],
    },
}


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def keys(value: Any, rename: Any) -> Any:
    if isinstance(value, dict):
        return {rename(k): keys(v, rename) for k, v in value.items()}
    if isinstance(value, list):
        return [keys(v, rename) for v in value]
    return value


def plain(value: Any) -> Any:
    """A result or an event value as Pi's JSON."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {camel(k): plain(v) for k, v in value.items()}
    return {camel(k): plain(v) for k, v in vars(value).items() if k != "type"}


def handler(spec: dict[str, Any], seen: list[Any]) -> Any:
    async def handle(event: Any) -> Any:
        names = spec.get("see")
        seen.append(None if names is None else [plain(getattr(event, snake(n))) for n in names])
        if spec.get("set"):
            getattr(event, snake(spec["set"]["field"])).update(spec["set"]["value"])
        if spec.get("throws"):
            raise RuntimeError(spec["throws"])
        return keys(spec["returns"], snake)

    return handle


def event_of(kind: str, given: dict[str, Any]) -> Any:
    data = keys(given, snake)
    if kind == "tool_call":
        return ToolCallEvent(data["tool_name"], data["tool_call_id"], data["input"])
    if kind == "tool_result":
        return ToolResultEvent(**data)
    raise AssertionError(kind)


class _Event:
    def __init__(self, kind: str, data: dict[str, Any]) -> None:
        self.type = kind
        vars(self).update(data)


async def ours(scenario: dict[str, Any]) -> dict[str, Any]:
    runner, seen = ExtensionRunner(), []
    kind, given = scenario["event"], scenario["input"]
    for index, handlers in enumerate(scenario["extensions"]):

        def setup(pi: Any, handlers: list[dict[str, Any]] = handlers) -> None:
            for spec in handlers:
                pi.on(kind, handler(spec, seen))

        await runner.load(setup, f"ext{index}")
    data = keys(given, snake)
    event: Any = None
    if kind in ("tool_call", "tool_result"):
        event = event_of(kind, given)
        method = runner.emit_tool_call if kind == "tool_call" else runner.emit_tool_result
        result: Any = await method(event)
    elif kind == "input":
        result = await runner.emit_input(InputEvent(data["text"]))
    elif kind == "context":
        result = await runner.emit_context(data["messages"])
    elif kind == "before_agent_start":
        messages, system_prompt = await runner.emit_before_agent_start(
            data["prompt"], None, data["system_prompt"]
        )
        result = (
            None
            if not messages and system_prompt is None
            else {"messages": messages or None, "system_prompt": system_prompt}
        )
    elif kind == "message_end":
        result = await runner.emit_message_end(data["message"])
    else:
        result = await runner.emit(_Event(kind, data))
    # our lines name the exception's type ("RuntimeError: boom"); Pi's errors carry the message
    errors = [[e.extension, e.event, re.sub(r"^RuntimeError: ", "", e.error)] for e in runner.errors]
    out = {"result": plain(result), "errors": errors, "seen": seen}
    if kind == "tool_call":
        out["input"] = plain(event)
    return out


def pis(scenario: dict[str, Any], found: dict[str, Any]) -> dict[str, Any]:
    """Pi's output in the shape ``ours`` gives (see the module docstring for the throw)."""
    result, errors = found["result"], [list(e) for e in found["errors"]]
    kind = scenario["event"]
    if kind == "tool_call":
        if found["threw"] is not None:
            errors.append(["ext0", "tool_call", found["threw"]])
            result = {"block": True, "reason": f"throw: {found['threw']}"}
        elif result is not None:
            result = {"block": bool(result.get("block")), "reason": result.get("reason")}
    if kind == "tool_result" and result is not None:
        result.pop("usage", None)
    if kind == "input":
        result = {"action": result["action"], "text": result.get("text", ""), "images": result.get("images")}
    out = {"result": result, "errors": errors, "seen": found["seen"]}
    if kind == "tool_call":
        out["input"] = {k: v for k, v in found["input"].items() if k != "type"}
    return out


def normalized_ours(name: str, found: dict[str, Any]) -> dict[str, Any]:
    result = found["result"]
    if SCENARIOS[name]["event"] == "tool_call" and found["errors"]:
        line = result["reason"]
        message = found["errors"][0][2]
        assert line == f"Extension ext0 failed in tool_call: RuntimeError: {message} (the call was blocked)"
        found = {**found, "result": {"block": True, "reason": f"throw: {message}"}}
    return found


async def test_results_combine_as_pis_runner_combines_them() -> None:
    node = require_node22()
    theirs = run_node("extension_runner.mjs", SCENARIOS, node=node)
    for name, scenario in SCENARIOS.items():
        expected = pis(scenario, theirs[name])
        got = normalized_ours(name, await ours(scenario))
        assert got == expected, name
