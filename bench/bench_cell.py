"""A warm ``%%pi`` cell against another tree of this repository, side by side in one run: CPU per
cell and the calls that cross from one ``pi_notebook`` module to another before the agent's
prompt starts.

```
.venv/bin/python -m bench.bench_cell --base /tmp/pi-base     # a `git worktree add` of bd0eb01
.venv/bin/python -m bench.bench_cell --base /tmp/pi-base --cells 60 --rounds 5
.venv/bin/python -m bench.bench_cell --base /tmp/pi-base --also /tmp/pi-main --rounds 11   # three trees
```

Each tree runs in its own child process (``PYTHONPATH`` = that tree), alternating base, this,
base, this... per round, so the machine's load hits both alike. A child makes a plain
``InteractiveShell``, ``%load_ext pi_notebook``, registers the faux provider and runs
``%%pi --model faux:faux-1 --text`` cells whose model makes one ``list_variables`` call, then
answers (the same scripted responses in both trees). After ``--warm`` untimed cells:

* **crossings**: one cell under ``sys.setprofile`` / ``threading.setprofile``: the calls whose
  caller and callee are functions of two different ``pi_notebook`` modules, counted from the
  cell's start until ``Agent.prompt`` is called (everything the cell does before the model is
  asked). Deterministic for a tree.
* **cpu**: ``time.process_time()`` per cell (all threads of the child), median over ``--cells``
  cells without the profiler.

The report gives both per tree, the ratios (this / base, and this / each ``--also`` tree: the
median of the paired rounds, each tree in its own child, in the same round), and the issue's
goals: at most 150 crossings, CPU <= 1.0x the base tree's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CELL = "%%pi --model faux:faux-1 --text\nWhat is in the kernel?"
BASE_TOOLS = "list_variables,inspect_variable,read_cells,read_notebook,run_code,insert_cell,set_variable"
"""The notebook tools bd0eb01 offered by default (later trees offer four more: every request
carries their schemas, which the faux provider serializes for its usage estimate)."""


def _script(faux: Any, pf: Any) -> None:
    call = pf.faux_tool_call("list_variables", {}, id="v1")
    faux.set_responses([pf.faux_assistant_message([call], stop_reason="toolUse"), "Nothing much."])


def _crossings(shell: Any, faux: Any, pf: Any) -> int:
    count = 0
    state = {"on": False, "done": False}

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event != "call" or state["done"]:
            return
        module = frame.f_globals.get("__name__", "")
        code = frame.f_code
        if not state["on"]:
            if module.startswith("pi_notebook.notebook") and code.co_name in ("run_pi", "run_pi_sync"):
                state["on"] = True
            return
        if module == "pi_notebook.agent.agent" and code.co_name == "prompt":
            state["done"] = True
            return
        caller = frame.f_back
        if caller is None or not module.startswith("pi_notebook"):
            return
        origin = caller.f_globals.get("__name__", "")
        if origin.startswith("pi_notebook") and origin != module:
            count += 1

    _script(faux, pf)
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        shell.run_cell(CELL)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return count


def child(cells: int, warm: int) -> None:
    """Runs in the child process: prints one JSON line."""
    global CELL
    if os.environ.get("BENCH_CELL_TOOLS"):  # --same-tools: the same tools offered in both trees
        CELL = CELL.replace("--text", f"--text --tools {os.environ['BENCH_CELL_TOOLS']}")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    import pi_notebook.ai.faux as pf

    shell: Any = InteractiveShell.instance()
    with capture_output():
        shell.run_cell("%load_ext pi_notebook")
    faux = pf.register_faux_provider()
    shell.user_ns["numbers"] = list(range(10))
    times = []
    with capture_output():
        for _ in range(warm):
            _script(faux, pf)
            shell.run_cell(CELL)
        crossings = _crossings(shell, faux, pf)
        for _ in range(cells):
            _script(faux, pf)
            start = time.process_time()
            result = shell.run_cell(CELL)
            times.append(time.process_time() - start)
            if result.error_in_exec is not None:
                raise result.error_in_exec
    answer = shell.user_ns["_pi"].text
    where = os.path.dirname(pf.__file__)
    cpu_ms = statistics.median(times) * 1000
    print(json.dumps({"tree": where, "crossings": crossings, "cpu_ms": cpu_ms, "answer": answer}))


def measure(tree: Path, cells: int, warm: int, tools: str = "") -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_NOTEBOOK_", "JPY_", "BENCH_"))}
    if tools:
        env["BENCH_CELL_TOOLS"] = tools
    env.update({"PYTHONPATH": str(tree), "PI_NOTEBOOK_RECORD": "0", "MPLBACKEND": "Agg"})
    command = [sys.executable, __file__, "--child", str(cells), str(warm)]  # sys.path[0]: bench/
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=600, cwd=str(tree), check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: {done.stderr[-2000:]}")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if row["answer"] != "Nothing much.":
        raise RuntimeError(f"{tree}: the cell answered {row['answer']!r}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, type=Path, help="a checkout of the tree to compare with")
    parser.add_argument(
        "--also", action="append", type=Path, default=[], metavar="TREE",
        help="another checkout measured in the same rounds (e.g. main before a branch); repeatable",
    )
    parser.add_argument("--cells", type=int, default=40)
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--same-tools",
        action="store_true",
        help=f"offer only the tools bd0eb01 had ({BASE_TOOLS}) in both trees: the same requests",
    )
    args = parser.parse_args()
    trees = {"base": args.base, **{f"also{i + 1}": tree for i, tree in enumerate(args.also)}, "this": REPO}
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            rows[name].append(measure(tree, args.cells, args.warm, BASE_TOOLS if args.same_tools else ""))
    cpu = {name: statistics.median(r["cpu_ms"] for r in found) for name, found in rows.items()}
    crossings = {name: found[0]["crossings"] for name, found in rows.items()}
    print(f"{'tree':<6} {'crossings':>10} {'cpu ms/cell':>12}  path")
    for name, tree in trees.items():
        print(f"{name:<6} {crossings[name]:>10} {cpu[name]:>12.2f}  {tree}")
    ratio = 0.0
    for name in trees:
        if name == "this":
            continue
        ratios = [t["cpu_ms"] / b["cpu_ms"] for b, t in zip(rows[name], rows["this"], strict=True)]
        median = statistics.median(ratios)
        ratio = median if name == "base" else ratio
        listed = ", ".join(f"{r:.2f}" for r in ratios)
        print(f"cpu this/{name}: {median:.2f}x (median of {args.rounds} paired rounds: {listed}; "
              f"range {min(ratios):.2f}-{max(ratios):.2f})")  # fmt: skip
    print(f"goals: crossings <= 150: {'yes' if crossings['this'] <= 150 else 'no'}; "
          f"cpu <= 1.0x base: {'yes' if ratio <= 1.0 else 'no'}")  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
