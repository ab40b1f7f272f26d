"""The deliberate differences from Pi, each as a function that turns Pi's (normalised) result of
a scenario into exactly the result pi_notebook must produce.

A scenario declares the differences it hits (``"deviation": [...]`` in scenarios/agent.json);
the test applies them in order to Pi's result and compares the outcome with ours exactly. Each
function first checks that Pi's trace really has the shape it rewrites and fails otherwise, so
a scenario that stops hitting its deviation fails instead of passing vacuously.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

ABORTED = "Request was aborted"
OPERATION_ABORTED = "Operation aborted"

Result = dict[str, Any]


class ShapeError(AssertionError):
    """Pi's trace does not have the shape a declared deviation rewrites."""


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ShapeError(message)


def _run_start(events: list[dict[str, Any]], index: int) -> int:
    return max(i for i in range(index + 1) if events[i]["type"] == "agent_start")


def _ended_messages(events: list[dict[str, Any]]) -> list[Any]:
    return [e["message"] for e in events if e["type"] == "message_end"]


# --- deviation 2 of docs/design.md: no extra aborted turn after an abort ------------------------------------


def abort_between_turns(pi: Result, scenario: dict[str, Any]) -> Result:
    """Pi asks the provider for another turn after an abort and records the aborted, empty
    answer; we end the run at the turn boundary. Gone: that turn's events, its request, its
    message (from ``agent_end`` and the transcript); the faux response it took stays queued.
    ``state.errorMessage`` stays ``"Request was aborted"`` either way."""
    out = copy.deepcopy(pi)
    events = out["events"]
    tail = [e["type"] for e in events[-5:]]
    _check(
        tail == ["turn_start", "message_start", "message_end", "turn_end", "agent_end"],
        f"expected Pi's trace to end with an extra aborted turn, got {tail}",
    )
    aborted = events[-3]["message"]
    _check(
        aborted["role"] == "assistant"
        and aborted["stopReason"] == "aborted"
        and aborted["content"] == []
        and aborted.get("errorMessage") == ABORTED,
        f"the extra turn's message is not an empty aborted answer: {aborted}",
    )
    del events[-5:-1]
    _check(events[-1]["messages"][-1] == aborted, "agent_end does not end with the aborted answer")
    events[-1]["messages"].pop()
    _check(out["state"]["messages"][-1] == aborted, "the transcript does not end with the aborted answer")
    out["state"]["messages"].pop()
    out["requests"].pop()
    out["pendingResponses"] += 1
    return out


# --- deviation 3 of docs/design.md: aborted results for tool calls an abort skipped -------------------------


def _sequential(scenario: dict[str, Any], calls: list[dict[str, Any]]) -> bool:
    if scenario.get("options", {}).get("toolExecution") == "sequential":
        return True
    modes = {t["name"]: t.get("executionMode") for t in scenario.get("tools", [])}
    return any(modes.get(call["name"]) == "sequential" for call in calls)


def _aborted_result_events(call: dict[str, Any]) -> tuple[list[Any], list[Any], dict[str, Any]]:
    result = {"content": [{"type": "text", "text": OPERATION_ABORTED}], "details": {}}
    message = {
        "role": "toolResult",
        "toolCallId": call["id"],
        "toolName": call["name"],
        "content": result["content"],
        "details": {},
        "isError": True,
        "timestamp": 0,
    }
    execution = [
        {
            "type": "tool_execution_start",
            "toolCallId": call["id"],
            "toolName": call["name"],
            "args": call["arguments"],
        },
        {
            "type": "tool_execution_end",
            "toolCallId": call["id"],
            "toolName": call["name"],
            "result": result,
            "isError": True,
        },
    ]
    messages = [{"type": "message_start", "message": message}, {"type": "message_end", "message": message}]
    return execution, messages, message


def _preflight_stop(events: list[dict[str, Any]], message: dict[str, Any], end: int) -> int:
    """Where a parallel batch's preflight stopped: after the last started call, and after its
    end too when the abort failed that call at once."""
    batch_start = max(
        i for i in range(end) if events[i]["type"] == "message_end" and events[i]["message"] == message
    )
    started = [i for i in range(batch_start, end) if events[i]["type"] == "tool_execution_start"]
    _check(bool(started), "no tool execution started before the abort")
    cut = started[-1] + 1
    following = events[cut]
    if (
        following["type"] == "tool_execution_end"
        and following["toolCallId"] == events[started[-1]]["toolCallId"]
        and following["result"]["content"] == [{"type": "text", "text": OPERATION_ABORTED}]
    ):
        cut += 1
    return cut


def aborted_tool_results(pi: Result, scenario: dict[str, Any]) -> Result:
    """Pi leaves the tool calls an abort kept from running without results (a transcript no
    provider accepts); we give each one start/end events and an ``Operation aborted`` error
    result. Sequential batches add them after the last result; parallel ones add the
    executions where the preflight stopped and the result messages after the others."""
    out = copy.deepcopy(pi)
    events = out["events"]
    turn_ends = [
        i
        for i, e in enumerate(events)
        if e["type"] == "turn_end"
        and len(e["toolResults"]) < sum(b["type"] == "toolCall" for b in e["message"]["content"])
    ]
    _check(len(turn_ends) == 1, f"expected one tool batch cut short by the abort, found {len(turn_ends)}")
    end = turn_ends[0]
    turn_end = events[end]
    calls = [b for b in turn_end["message"]["content"] if b["type"] == "toolCall"]
    done = {r["toolCallId"] for r in turn_end["toolResults"]}
    _check(bool(done), "this rewrite covers batches where at least one call has a result")
    missing = [c for c in calls if c["id"] not in done]
    _check(
        calls[len(calls) - len(missing) :] == missing, "the calls without results are not the batch's tail"
    )
    built = [_aborted_result_events(c) for c in missing]
    executions = [e for ex, _, _ in built for e in ex]
    result_events = [e for _, msgs, _ in built for e in msgs]
    results = [m for _, _, m in built]
    events[end:end] = result_events  # the result messages come last, before turn_end
    cut = end if _sequential(scenario, calls) else _preflight_stop(events, turn_end["message"], end)
    events[cut:cut] = executions
    turn_end["toolResults"] += results
    for messages in (
        events[-1]["messages"] if events[-1]["type"] == "agent_end" else None,
        out["state"]["messages"],
    ):
        if messages is None:
            continue
        last = max(i for i, m in enumerate(messages) if m.get("toolCallId") in done)
        messages[last + 1 : last + 1] = results
    return out


# --- deviation 1 of docs/design.md (as the Agent applies it): a crash closes what is open -------------------


def crash_ending(pi: Result, scenario: dict[str, Any]) -> Result:
    """When a listener throws, Pi closes the run with message_start/message_end of an empty
    failure message, turn_end and agent_end, whatever was open. We close what is open instead:
    ``tool_execution_end`` (error) for running tools, no second ``message_start`` when a message
    is open (its end is the failure message), ``turn_start`` when no turn is open; and every
    call of the last completed assistant message still without a result gets one before the
    failure message (see :func:`_unanswered_results`). After ``agent_end`` nothing at all (the
    failure only sets ``state.errorMessage``)."""
    out = copy.deepcopy(pi)
    events = out["events"]
    if len(events) >= 5 and events[-5]["type"] == "agent_end":
        return _crash_after_agent_end(out)
    _check(
        [e["type"] for e in events[-4:]] == ["message_start", "message_end", "turn_end", "agent_end"],
        "expected Pi's trace to end with the failure message",
    )
    failure_at = len(events) - 4
    failure = events[failure_at]["message"]
    _check(
        failure["content"] == [{"type": "text", "text": ""}]
        and failure["stopReason"] in ("error", "aborted"),
        f"not a failure message: {failure}",
    )
    message_open = turn_open = False
    tools: dict[str, str] = {}
    for event in events[_run_start(events, failure_at) : failure_at]:
        kind = event["type"]
        if kind in ("message_start", "message_end"):
            message_open = kind == "message_start"
        elif kind in ("turn_start", "turn_end"):
            turn_open = kind == "turn_start"
        elif kind == "tool_execution_start":
            tools[event["toolCallId"]] = event["toolName"]
        elif kind == "tool_execution_end":
            tools.pop(event["toolCallId"], None)
    _check(message_open or bool(tools) or not turn_open, "nothing was open: Pi's failure ending is ours")
    closing: list[dict[str, Any]] = [] if turn_open else [{"type": "turn_start"}]
    text = failure["errorMessage"]
    closing += [
        {
            "type": "tool_execution_end",
            "toolCallId": cid,
            "toolName": name,
            "result": {"content": [{"type": "text", "text": text}], "details": {}},
            "isError": True,
        }
        for cid, name in tools.items()
    ]
    results: list[dict[str, Any]] = []
    if not message_open:
        results = _unanswered_results(events[_run_start(events, failure_at) : failure_at], closing, text)
        closing.append(events[failure_at])
    events[failure_at : failure_at + 1] = closing
    messages = out["state"]["messages"]
    _check(messages[-1] == failure, "Pi's transcript does not end with the failure message")
    messages[-1:-1] = results
    return out


def _unanswered_results(run: list[dict[str, Any]], closing: list[dict[str, Any]], text: str) -> list[Any]:
    """The result messages our failure ending adds (to ``closing``) for the calls of the last
    completed assistant message that have none: the result a call's execution ended with, else
    the failure's error (a call whose execution never started gets its start/end first)."""
    unanswered: dict[str, dict[str, Any]] = {}
    for event in run:
        kind, message = event["type"], event.get("message") or {}
        if kind == "message_end" and message.get("role") == "assistant":
            calls = [] if message["stopReason"] in ("error", "aborted") else message["content"]
            unanswered = {b["id"]: {"call": b, "end": None} for b in calls if b["type"] == "toolCall"}
        elif kind == "message_end" and message.get("role") == "toolResult":
            unanswered.pop(message["toolCallId"], None)
        elif kind in ("tool_execution_start", "tool_execution_end") and event["toolCallId"] in unanswered:
            unanswered[event["toolCallId"]]["end"] = event if kind == "tool_execution_end" else "started"
    ended = {e["toolCallId"] for e in closing if e["type"] == "tool_execution_end"}
    error = {"content": [{"type": "text", "text": text}], "details": {}}
    results = []
    for call_id, entry in unanswered.items():
        call, end = entry["call"], entry["end"]
        if end is None:
            execution, _, _ = _aborted_result_events(call)
            execution[1]["result"] = error
            closing += execution
        done = isinstance(end, dict) and call_id not in ended
        result = end["result"] if done else error
        message = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": call["name"],
            "content": result["content"],
            **({"details": result["details"]} if "details" in result else {}),
            "isError": end["isError"] if done else True,
            "timestamp": 0,
        }
        closing += [
            {"type": "message_start", "message": message},
            {"type": "message_end", "message": message},
        ]
        results.append(message)
    return results


def _crash_after_agent_end(out: Result) -> Result:
    events = out["events"]
    _check(
        [e["type"] for e in events[-4:]] == ["message_start", "message_end", "turn_end", "agent_end"],
        "expected Pi's failure turn after agent_end",
    )
    failure = events[-4]["message"]
    _check(out["state"]["messages"][-1] == failure, "Pi's transcript does not end with the failure message")
    _check(
        out["state"].get("errorMessage") == failure["errorMessage"], "Pi's errorMessage is not the failure's"
    )
    del events[-4:]
    out["state"]["messages"].pop()
    return out


# --- deviation 5 of docs/design.md: reset() aborts the active run -------------------------------------------


def _reset_index(events: list[dict[str, Any]], scenario: dict[str, Any]) -> int:
    (action,) = [a for a in scenario.get("actions", []) if a["do"] == "reset"]
    at, seen = action["at"], 0
    for index, event in enumerate(events):
        if event["type"] != at["type"]:
            continue
        if "role" in at and (event.get("message") or {}).get("role") != at["role"]:
            continue
        if "event" in at and (event.get("assistantMessageEvent") or {}).get("type") != at["event"]:
            continue
        seen += 1
        if seen == at.get("nth", 1):
            return index
    raise ShapeError("the reset action's event is not in Pi's trace")


def reset_aborts(pi: Result, scenario: dict[str, Any]) -> Result:
    """Pi's ``reset()`` clears the transcript but lets the run go on, so the rest of the run
    lands in the "cleared" transcript. Ours aborts the run: the streaming answer ends as
    aborted at the next chunk (content as at the reset), the run closes with turn_end and
    agent_end, and the transcript stays empty."""
    out = copy.deepcopy(pi)
    events = out["events"]
    r = _reset_index(events, scenario)
    _check(events[r]["type"] == "message_update", "this rewrite covers a reset while an answer streams")
    run_end = next(i for i in range(r, len(events)) if events[i]["type"] == "agent_end")
    _check(run_end == len(events) - 1, "this rewrite covers a reset in the last run")
    after = _ended_messages(events[r + 1 :])
    _check(out["state"]["messages"] == after, "Pi's transcript is not the messages ended after the reset")
    aborted = dict(events[r]["message"], stopReason="aborted", errorMessage=ABORTED)
    run_messages = [*_ended_messages(events[_run_start(events, r) : r + 1]), aborted]
    events[r + 1 :] = [
        {"type": "message_end", "message": aborted},
        {"type": "turn_end", "message": aborted, "toolResults": []},
        {"type": "agent_end", "messages": run_messages},
    ]
    out["state"]["messages"] = []
    return out


PYTHON_NAMES = {"followUp()": "follow_up()", "continue()": "continue_()"}


def python_method_names(pi: Result, scenario: dict[str, Any]) -> Result:
    """Pi's error texts name its TypeScript methods (``followUp()``); ours name the methods a
    Python user calls (``follow_up()``), otherwise word for word."""
    text = json.dumps(pi)
    _check(any(name in text for name in PYTHON_NAMES), "Pi's result names no TypeScript method")
    for ts_name, py_name in PYTHON_NAMES.items():
        text = text.replace(ts_name, py_name)
    return dict(json.loads(text))


DEVIATIONS: dict[str, Callable[[Result, dict[str, Any]], Result]] = {
    "python-method-names": python_method_names,
    "abort-between-turns": abort_between_turns,
    "aborted-tool-results": aborted_tool_results,
    "crash-ending": crash_ending,
    "reset-aborts": reset_aborts,
}
