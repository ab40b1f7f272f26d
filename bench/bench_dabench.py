"""Small local models on a public data-analysis benchmark with closed-form answers, through the
headless ``%%pi`` path: did the model's code run, did it answer in the format asked, was the
answer right, how long did it take.

```
.venv/bin/python -m bench.bench_dabench --data /work/llm/dabench \\
    --condition 'before|/work/main|http://127.0.0.1:18081|' \\
    --condition 'after|.|http://127.0.0.1:18082|--tool-mode auto' \\
    --out /tmp/dabench.jsonl [--tasks 683,710] [--task-timeout 150]
```

**The benchmark**: InfiAgent-DABench (Hu et al., 2024), the dev set of
github.com/InfiAgent/InfiAgent at commit ``d02d18a64da23f9dcc8f5a529f6203e0010c2072``:
``examples/DA-Agent/data/da-dev-questions.jsonl``, ``da-dev-labels.jsonl`` and
``da-dev-tables/``. Nothing of it is in this repository; copy those three into one folder and
pass it as ``--data``, e.g.::

    git clone https://github.com/InfiAgent/InfiAgent && cd InfiAgent && git checkout d02d18a
    mkdir -p /work/llm/dabench && cp -r examples/DA-Agent/data/da-dev-* /work/llm/dabench/

**The tasks** (``TASKS``): the 15 dev questions of level "easy" with one answer whose CSV is at
most 33 KB, in file-size order: 683, 710, 715, 234, 490, 492, 586, 349, 351, 472, 474, 73, 114,
243, 320. Easy and single-answer so that a 0.5B model has a chance at all and the answer is one
value; small files so that the run's time is the model's, not pandas'.

**A condition** is ``NAME|TREE|SERVER|FLAGS``: the source tree whose ``pi_notebook`` the kernel
imports (``PYTHONPATH``; ``/work/main`` for the behaviour before a change, ``.`` for this
tree), the llama-server it talks to (``LLAMA_CPP_BASE_URL``; one server per condition, so each
keeps its own prompt cache) and extra ``%%pi`` flags. Each condition gets its own real kernel
(jupyter_client, ``ipykernel``), headless (``PI_NOTEBOOK_HEADLESS=1``) with an empty
``PI_CODING_AGENT_DIR``, working in the tables folder. Tasks are interleaved: task 1 in every
condition, then task 2, ... so that other processes' load hits every condition alike.

**A task** is one cell, in a fresh conversation::

    %%pi --model llama.cpp:local --new --approve auto --temperature 0 --max-turns 5 \\
         --timeout 90 --code-timeout 30 FLAGS
    Question: ... Constraints: ... The data is in NAME (current directory). Write Python code
    that loads it with pandas and prints the answer. After the code has run, give the answer in
    this format: ...

``--approve auto`` allows ``run_code`` (the benchmark's stand-in for clicking Approve). A task
round (a task in every condition) starts only within ``--wall-budget`` seconds of the
first, so the whole run stays bounded (fewer tasks rather than an unfinished run). A task
that is still running after ``--task-timeout`` seconds is interrupted (the kernel's interrupt,
as a user would); one that does not end 20 s after that restarts its kernel and counts as
hung.

**Recorded per task** (a JSON line each): ``ran`` (the model's code ran: a ``run_code``
result in the run, ``code_runs`` of them; ``code_ok``: those that succeeded, ``_pi.code``),
``format`` (the final answer holds every ``@name[value]`` the
label has), ``correct`` (every value matches the label: numbers equal at the label's
precision, text equal ignoring case and spaces), seconds, the 1-minute load average before
and after, the stop reason, the run's error and the answer's text.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager

REPO = Path(__file__).resolve().parent.parent
TASKS = (683, 710, 715, 234, 490, 492, 586, 349, 351, 472, 474, 73, 114, 243, 320)
FLAGS = (
    "--model llama.cpp:local --new --approve auto --temperature 0 --max-turns 5 --timeout 90 "
    "--code-timeout 30"
)
ANSWER = re.compile(r"@(\w+)\[(.*?)\]")
RESULT = (
    "__import__('json').dumps(None if _pi is None else dict(text=_pi.text, code=len(_pi.code), "
    "runs=sum(getattr(m, 'role', '') == 'toolResult' and m.tool_name == 'run_code' "
    "for m in _pi.messages), "
    "stop=_pi.stop_reason, error=_pi.error_message, turns=_pi.turns))"
)
"""What ``_pi`` says of the run: its answer, the ``run_code`` calls that ran (``runs``: every
result, errors included; ``code``: the ones that succeeded), how it ended."""


@dataclass
class Condition:
    name: str
    tree: Path
    server: str
    flags: str
    km: KernelManager | None = None
    kc: Any = None


def parse_condition(text: str) -> Condition:
    name, tree, server, flags = text.split("|", 3)
    return Condition(name, Path(tree).resolve(), server.rstrip("/"), flags.strip())


def prompt_for(task: dict[str, Any]) -> str:
    """The same prompt in every condition: the task's question and constraints, that the answer
    comes from running code on the file, and the answer format (asked for after the code: put
    first, it made the 0.5B model answer at once, without code, in a pilot of 3 tasks)."""
    return (
        f"Question: {task['question']}\nConstraints: {task['constraints']}\n"
        f"The data is in {task['file_name']} (current directory). Write Python code that loads it "
        "with pandas and prints the answer. After the code has run, give the answer in this "
        f"format: {task['format']}"
    )


def start(condition: Condition, tables: Path, root: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_NOTEBOOK_", "JPY_"))}
    agent = root / f"agent-{condition.name}"
    agent.mkdir(exist_ok=True)
    env.update(PYTHONPATH=str(condition.tree), LLAMA_CPP_BASE_URL=f"{condition.server}/v1",
               PI_NOTEBOOK_HEADLESS="1", PI_CODING_AGENT_DIR=str(agent),
               IPYTHONDIR=str(root / "ipython"), JUPYTER_RUNTIME_DIR=str(root / "runtime"))  # fmt: skip
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=env, cwd=str(tables))
    kc = km.blocking_client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    condition.km, condition.kc = km, kc
    reply = execute(kc, "%load_ext pi_notebook\nimport pi_notebook; print(pi_notebook.__file__)", 120)
    if reply is None or reply["content"]["status"] != "ok":
        raise RuntimeError(f"the {condition.name} kernel could not load pi_notebook: {reply}")


def stop(condition: Condition) -> None:
    if condition.kc is not None:
        condition.kc.stop_channels()
    if condition.km is not None:
        condition.km.shutdown_kernel(now=True)
    condition.km = condition.kc = None


def execute(kc: Any, code: str, timeout: float, expressions: dict[str, str] | None = None) -> Any:
    """The execute reply of ``code``, or ``None`` when it did not come in ``timeout`` seconds."""
    # stop_on_error off: a cell that fails (a headless run raises) must not abort the next request
    msg_id = kc.execute(code, user_expressions=expressions or {}, stop_on_error=False)
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            reply = kc.get_shell_msg(timeout=min(left, 5))
        except Exception:  # queue.Empty: keep waiting until the deadline
            continue
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply
    return None


def score(text: str, label: list[list[str]]) -> tuple[bool, bool]:
    """(format, correct): every labelled ``@name[value]`` is in ``text``; every value matches."""
    found = {name.lower(): value for name, value in ANSWER.findall(text or "")}
    has_all = all(name.lower() in found for name, _ in label)
    return has_all, has_all and all(_same(found[name.lower()], value) for name, value in label)


def _same(given: str, expected: str) -> bool:
    try:
        wanted = float(expected)
        decimals = len(expected.split(".")[1]) if "." in expected else 0
        return round(float(given.strip().rstrip("%")), decimals) == round(wanted, decimals)
    except ValueError:
        return " ".join(given.lower().split()) == " ".join(expected.lower().split())


def run_task(
    condition: Condition, task: dict[str, Any], timeout: float, tables: Path, root: Path
) -> dict[str, Any]:
    kc = condition.kc
    execute(kc, "_pi = None", 30)
    cell = f"%%pi {FLAGS} {condition.flags}\n{prompt_for(task)}"
    load_before = os.getloadavg()[0]
    began = time.monotonic()
    reply = execute(kc, cell, timeout)
    hung = interrupted = False
    if reply is None:
        interrupted = True
        assert condition.km is not None
        condition.km.interrupt_kernel()
        reply = execute(kc, "pass", 20)  # the interrupted cell's reply comes first, then this
        if reply is None:
            hung = True
    seconds = time.monotonic() - began
    result: Any = None
    if hung:
        stop(condition)
        start(condition, tables, root)
    else:
        answer = execute(kc, "pass", 30, {"r": RESULT})
        data = (answer["content"].get("user_expressions") or {}).get("r", {}) if answer else {}
        if data.get("status") == "ok":
            result = json.loads(ast.literal_eval(data["data"]["text/plain"]))
    result = result or {}
    fmt, correct = score(result.get("text", ""), task["label"])
    return {
        "condition": condition.name, "id": task["id"], "ran": result.get("runs", 0) > 0,
        "code_runs": result.get("runs", 0), "code_ok": result.get("code", 0), "format": fmt,
        "correct": correct,
        "seconds": round(seconds, 1), "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2), "interrupted": interrupted, "hung": hung,
        "turns": result.get("turns"), "stop": result.get("stop"), "error": result.get("error"),
        "text": (result.get("text") or "")[:400],
    }  # fmt: skip


def load_tasks(data: Path, ids: list[int]) -> list[dict[str, Any]]:
    questions = {q["id"]: q for q in map(json.loads, (data / "da-dev-questions.jsonl").open())}
    answers = map(json.loads, (data / "da-dev-labels.jsonl").open())
    labels = {q["id"]: q["common_answers"] for q in answers}
    return [{**questions[i], "label": labels[i]} for i in ids]


def summary(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| condition | tasks | code ran | code ran without error | answer format | correct | median s "
        "| mean s | load 1m | hung |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in dict.fromkeys(r["condition"] for r in rows):
        mine = [r for r in rows if r["condition"] == name]
        secs = sorted(r["seconds"] for r in mine)
        loads = [r["load_before"] for r in mine] + [r["load_after"] for r in mine]
        lines.append(
            f"| {name} | {len(mine)} | {sum(r['ran'] for r in mine)} | "
            f"{sum(r['code_ok'] > 0 for r in mine)} | "
            f"{sum(r['format'] for r in mine)} | "
            f"{sum(r['correct'] for r in mine)} | {secs[len(secs) // 2]:.0f} | {sum(secs) / len(secs):.0f} | "
            f"{min(loads):.1f}-{max(loads):.1f} | {sum(r['hung'] for r in mine)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--condition", action="append", required=True, type=parse_condition)
    parser.add_argument("--tasks", default=",".join(map(str, TASKS)))
    parser.add_argument("--task-timeout", type=float, default=150)
    parser.add_argument("--out", type=Path, default=Path("dabench-results.jsonl"))
    parser.add_argument("--wall-budget", type=float, default=1500, help="no task starts after this many s")
    args = parser.parse_args()
    tasks = load_tasks(args.data, [int(i) for i in args.tasks.split(",")])
    tables = (args.data / "da-dev-tables").resolve()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-dabench-") as tmp:
        root = Path(tmp)
        try:
            for condition in args.condition:
                start(condition, tables, root)
            began = time.monotonic()
            with args.out.open("a") as out:
                for task in tasks:
                    if time.monotonic() - began > args.wall_budget:
                        print(f"wall budget reached: stopped before task {task['id']}", file=sys.stderr)
                        break
                    for condition in args.condition:
                        row = run_task(condition, task, args.task_timeout, tables, root)
                        rows.append(row)
                        out.write(json.dumps(row) + "\n")
                        out.flush()
                        print(json.dumps({k: v for k, v in row.items() if k != "text"}), file=sys.stderr)
        finally:
            for condition in args.condition:
                stop(condition)
    print(summary(rows))


if __name__ == "__main__":
    main()
