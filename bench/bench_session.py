"""The session layer's costs against floors measured in the same run (not a test).

(a) Append: wall time per entry of ``SessionManager.append_message`` (an assistant message of
    about 1 KB: text, a tool call, usage) on a session already on disk, against the floor of
    writing the same JSON with ``f.write(json.dumps(...) + "\\n"); f.flush(); os.fsync(...)`` on
    a file kept open. Both fsync every line, so the ratio shows what the model dump, the
    redaction-ready dict and the open/append/close per line add. The CPU part (fsync excluded)
    is reported separately, since fsync time depends on the disk.
(b) Load: ``SessionManager.open`` + ``build_session_context`` of a 10,000-message session (a
    linear chain of user / assistant / tool result messages), against the floor of reading
    the file and ``json.loads`` on every line.

Repetitions are interleaved so load from other processes hits both sides alike; medians are
reported. Run from the repository root: ``python -m bench.bench_session`` (``--help``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pi_notebook.ai.types import AssistantMessage
from pi_notebook.session import SessionManager, entry_to_dict


def _assistant(i: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "text", "text": f"Step {i}: " + "the quick brown fox jumps over the lazy dog " * 16},
            {"type": "toolCall", "id": f"call_{i}", "name": "read", "arguments": {"path": f"src/m{i}.py"}},
        ],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {
            "input": 1200 + i,
            "output": 80,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 1280 + i,
            "cost": {"input": 0.0036, "output": 0.0012, "cacheRead": 0, "cacheWrite": 0, "total": 0.0048},
        },
        "stopReason": "toolUse",
        "timestamp": 1_785_405_600_000 + i,
    }


def _user(i: int) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": f"question {i} " + "x" * 200}],
        "timestamp": i,
    }


def _tool_result(i: int) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": f"call_{i}",
        "toolName": "read",
        "content": [{"type": "text", "text": "line\n" * 60}],
        "isError": False,
        "timestamp": i,
    }


def _fresh_session(directory: str) -> SessionManager:
    m = SessionManager.create("/bench", directory)
    m.append_message(_user(0))
    m.append_message(_assistant(0))  # the file exists from here on
    return m


def bench_append(directory: str, n: int) -> dict[str, float]:
    messages = [AssistantMessage.model_validate(_assistant(i)) for i in range(n)]
    m = _fresh_session(directory)
    wall, cpu = time.perf_counter(), time.process_time()
    for message in messages:
        m.append_message(message)
    ours = (time.perf_counter() - wall) / n, (time.process_time() - cpu) / n

    entries = [entry_to_dict(e) for e in m.get_entries()[-n:]]
    floor_path = os.path.join(directory, "floor.jsonl")
    with open(floor_path, "w", encoding="utf-8") as f:
        wall, cpu = time.perf_counter(), time.process_time()
        for entry in entries:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())
        floor = (time.perf_counter() - wall) / n, (time.process_time() - cpu) / n
    os.remove(floor_path)
    return {"ours_wall": ours[0], "ours_cpu": ours[1], "floor_wall": floor[0], "floor_cpu": floor[1]}


def build_big_session(directory: str, messages: int) -> str:
    m = SessionManager.create("/bench", directory)
    for i in range(messages // 3 + 1):
        for message in (_user(i), _assistant(i), _tool_result(i)):
            if len(m.get_entries()) < messages:
                m.append_message(message)
    assert m.session_file is not None
    return m.session_file


def bench_load(path: str) -> dict[str, float]:
    start, cpu = time.perf_counter(), time.process_time()
    m = SessionManager.open(path)
    context = m.build_session_context()
    ours, ours_cpu = time.perf_counter() - start, time.process_time() - cpu
    assert len(context.messages) == len(m.get_entries())
    start, cpu = time.perf_counter(), time.process_time()
    with open(path, "rb") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    floor, floor_cpu = time.perf_counter() - start, time.process_time() - cpu
    assert len(rows) == len(m.get_entries()) + 1
    return {"ours_wall": ours, "floor_wall": floor, "ours_cpu": ours_cpu, "floor_cpu": floor_cpu}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--appends", type=int, default=500, help="entries per append measurement")
    parser.add_argument("--messages", type=int, default=10_000, help="messages in the load measurement")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as directory:
        appends = [bench_append(tempfile.mkdtemp(dir=directory), args.appends) for _ in range(args.reps)]
        path = build_big_session(directory, args.messages)
        size = Path(path).stat().st_size
        bench_load(path)  # warm-up: first pydantic validation builds the validators
        loads = [bench_load(path) for _ in range(args.reps)]

    def med(rows: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in rows)

    print(f"(a) append, {args.appends} entries x {args.reps} reps, fsync on every line")
    for kind in ("wall", "cpu"):
        ours, floor = med(appends, f"ours_{kind}"), med(appends, f"floor_{kind}")
        print(
            f"    {kind:4}: ours {ours * 1e6:8.1f} us/entry   floor {floor * 1e6:8.1f} us/entry   "
            f"ratio {ours / floor:5.2f}x"
        )
    print(f"(b) load + context of {args.messages} messages ({size / 1e6:.1f} MB), floor: json.loads per line")
    for kind in ("wall", "cpu"):
        ours, floor = med(loads, f"ours_{kind}"), med(loads, f"floor_{kind}")
        print(
            f"    {kind:4}: ours {ours * 1e3:8.1f} ms         floor {floor * 1e3:8.1f} ms         "
            f"ratio {ours / floor:5.2f}x"
        )


if __name__ == "__main__":
    main()
