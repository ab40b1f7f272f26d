"""Session scenarios shared by the unit tests and the interoperability tests with the real Pi.

A scenario is a list of operations (``["message", {...}]``, ``["branch", {"ref": 3}]``...);
``{"ref": n}`` stands for the id returned by operation ``n``. :func:`apply_ops` runs them on
our :class:`SessionManager`; ``session_interop.mjs`` runs the same list on Pi's.
"""

from __future__ import annotations

from typing import Any

from pi_notebook.session import SessionManager

_T0 = 1_785_405_600_000


def usage(total: int = 150) -> dict[str, Any]:
    return {
        "input": total - 50,
        "output": 50,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": total,
        "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003},
    }


def user(text: str, ts: int = 0) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": _T0 + ts}


def assistant(*blocks: dict[str, Any], ts: int = 1, total: int = 150, stop: str = "stop") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": list(blocks),
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": usage(total),
        "stopReason": stop,
        "timestamp": _T0 + ts,
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def tool_result(call_id: str, name: str, output: str, ts: int = 2) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": output}],
        "details": {"lines": 3},
        "isError": False,
        "timestamp": _T0 + ts,
    }


def bash(command: str, output: str, exit_code: int | None = 1) -> dict[str, Any]:
    return {
        "role": "bashExecution",
        "command": command,
        "output": output,
        "exitCode": exit_code,
        "cancelled": False,
        "truncated": False,
        "timestamp": _T0 + 5,
    }


def linear() -> list[list[Any]]:
    """Every entry type on one branch."""
    return [
        ["model", "anthropic", "claude-sonnet-4-5"],
        ["thinking", "medium"],
        ["message", user("Read the config, please.")],
        [
            "message",
            assistant(
                {"type": "thinking", "thinking": "Need the file.", "thinkingSignature": "sig"},
                text("Reading it."),
                tool_call("call_1", "read", {"path": "src/config.py", "limit": 20}),
                stop="toolUse",
            ),
        ],
        ["message", tool_result("call_1", "read", "DEBUG = True\nPORT = 8000 ✓ 😀")],
        ["message", assistant(text("It sets DEBUG and PORT."), ts=3)],
        ["custom", "my-extension", {"count": 2, "nested": [1, "x"]}],
        ["custom_message", "reminder", "Remember the tests.", True, {"source": "hook"}],
        ["custom_message", "image-note", [text("see image")], False],
        ["label", {"ref": 2}, "start"],
        ["name", "  Config\nreview \r\n session  "],
        ["message", bash("ls /nope", "ls: cannot access '/nope'")],
        ["message", user("Thanks", ts=6)],
        ["message", assistant(text("You're welcome."), ts=7)],
        ["label", {"ref": 2}, None],
        ["label", {"ref": 5}, "answer"],
    ]


def branches() -> list[list[Any]]:
    """Two branches from one entry, a branch summary, and a second root after reset."""
    return [
        ["message", user("Plan A or B?")],
        ["message", assistant(text("Let's try A."))],
        ["message", user("Go with A.", ts=2)],
        ["message", assistant(text("A failed."), ts=3)],
        ["branch", {"ref": 1}],
        ["message", user("Try B instead.", ts=4)],
        ["message", assistant(text("B works."), ts=5)],
        [
            "branch_summary",
            {"ref": 1},
            "Tried A; it failed.",
            {"readFiles": ["a.py"], "modifiedFiles": []},
            False,
        ],
        ["message", user("Summarized; continue.", ts=6)],
        ["message", assistant(text("Continuing."), ts=7)],
        ["label", {"ref": 6}, "B"],
        ["reset"],
        ["message", user("A new root.", ts=8)],
        ["message", assistant(text("Fresh start."), ts=9)],
        ["branch_summary", None, "From the root.", None, True],
        ["model", "openai", "gpt-4o"],
    ]


def compactions() -> list[list[Any]]:
    """Two compactions on one path; the second keeps from an entry after the first."""
    ops: list[list[Any]] = [["model", "anthropic", "claude-sonnet-4-5"]]
    for i in range(4):
        ops.append(["message", user(f"question {i} " + "x" * 40, ts=10 * i)])
        ops.append(["message", assistant(text(f"answer {i} " + "y" * 40), ts=10 * i + 1)])
    ops.append(
        [
            "compaction",
            "First summary.",
            {"ref": 5},
            1234,
            {"readFiles": ["r.py"], "modifiedFiles": []},
            False,
        ]
    )
    for i in range(4, 7):
        ops.append(["message", user(f"question {i}", ts=10 * i)])
        ops.append(["message", assistant(text(f"answer {i}"), ts=10 * i + 1)])
    ops.append(["compaction", "Second summary.", {"ref": 12}, 999, None, True, usage(42)])
    ops.append(["thinking", "high"])
    ops.append(["message", user("after both", ts=100)])
    ops.append(["message", assistant(text("done"), ts=101)])
    return ops


SCENARIOS = {"linear": linear, "branches": branches, "compactions": compactions}


def _resolve(value: Any, ids: list[str | None]) -> Any:
    if isinstance(value, dict) and set(value) == {"ref"}:
        return ids[value["ref"]]
    return value


def apply_ops(manager: SessionManager, ops: list[list[Any]]) -> list[str | None]:
    """Run ``ops`` on ``manager``; returns the id each operation returned."""
    ids: list[str | None] = []
    for kind, *raw in ops:
        a = [_resolve(v, ids) for v in raw]
        ids.append(_apply_one(manager, kind, a))
    return ids


def _apply_one(m: SessionManager, kind: str, a: list[Any]) -> str | None:
    if kind == "message":
        return m.append_message(a[0])
    if kind == "model":
        return m.append_model_change(a[0], a[1])
    if kind == "thinking":
        return m.append_thinking_level_change(a[0])
    if kind == "compaction":
        rest = a[3:] + [None] * (6 - len(a))
        return m.append_compaction(a[0], a[1], a[2], rest[0], from_hook=rest[1], usage=rest[2])
    if kind == "branch_summary":
        rest = a[2:] + [None] * (5 - len(a))
        return m.branch_with_summary(a[0], a[1], rest[0], from_hook=rest[1], usage=rest[2])
    if kind == "custom":
        return m.append_custom_entry(a[0], a[1] if len(a) > 1 else None)
    if kind == "custom_message":
        return m.append_custom_message_entry(a[0], a[1], a[2], a[3] if len(a) > 3 else None)
    if kind == "label":
        return m.append_label_change(a[0], a[1])
    if kind == "name":
        return m.append_session_info(a[0])
    if kind == "branch":
        m.branch(a[0])
        return None
    if kind == "reset":
        m.reset_leaf()
        return None
    raise ValueError(f"unknown op {kind}")
