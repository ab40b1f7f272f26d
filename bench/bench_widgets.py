"""What the ``%%pi`` live view sends to the frontend while an answer streams.

Runs ``%%pi`` in a real ipykernel driven through jupyter_client (the test driver in
``tests/notebook/kernel_driver.py``), with the faux provider streaming a Markdown answer of N
tokens (4 characters each) at a fixed rate, and counts the widget messages on IOPub: how many
(``comm_open`` + ``comm_msg``), how many per second while the answer streams, and their bytes,
against the length of the final text. Bytes are counted twice: ``wire`` is the JSON of the
whole message (header, parent header, metadata, content) as the kernel sends it, ``state`` only
the widget state the message carries.

The floor is the same cell with ``--text`` (no widgets) in the same kernel: the kernel CPU per
token of the live view is reported against it (``/proc/<pid>/task/*/schedstat``, so Linux only).
``--compare DIR`` runs a second kernel on another tree (a worktree of the code before a
change), its runs alternated with this tree's, so that both are measured under the same load.

    python -m bench.bench_widgets                        # 300, 1,000 and 3,000 tokens at 100/s
    python -m bench.bench_widgets --tokens 3000 --rate 400
    python -m bench.bench_widgets --tokens 3000 --reps 5     # 5 alternated live/floor pairs
    python -m bench.bench_widgets --tokens 3000 --profile live   # then a cProfile in the kernel
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "notebook"))

from kernel_driver import Kernel, Watch

WIDGET_MSGS = frozenset({"comm_open", "comm_msg", "comm_close"})
WORDS = [
    "the",
    "model",
    "writes",
    "plain",
    "prose",
    "here",
    "with",
    "some",
    "words",
    "of",
    "four",
    "or",
    "five",
    "letters",
    "each",
    "time",
]


def answer(tokens: int) -> str:
    """A Markdown answer of ``tokens`` 4-character faux tokens: paragraphs of ~70 tokens, a
    bullet list and a fenced code block every few paragraphs, a price with a dollar sign."""
    parts: list[str] = []
    size, i = 0, 0
    target = tokens * 4
    while size < target:
        kind = i % 5
        if kind == 3:
            block = "\n".join(f"- item {j}: {' '.join(WORDS[j : j + 6])}" for j in range(5))
        elif kind == 4:
            block = "```python\n" + "\n".join(f"x{j} = compute({j}, 'value')" for j in range(6)) + "\n```"
        else:
            words = [WORDS[(i * 7 + j) % len(WORDS)] for j in range(50)]
            words[10] = "**bold**"
            words[20] = "$5"
            block = " ".join(words) + "."
        parts.append(block)
        size += len(block) + 2
        i += 1
    return "\n\n".join(parts)[:target].rstrip() + "\n"


def kernel_cpu(kernel: Kernel) -> float:
    """CPU seconds of the kernel process, all its threads, at nanosecond resolution
    (``/proc/<pid>/task/*/schedstat``; ``/proc/<pid>/stat`` counts in 10 ms ticks, coarse
    for a run of a few hundred milliseconds)."""
    pid = kernel.km.provisioner.process.pid  # type: ignore[union-attr]
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
    return total / 1e9


class Counter:
    """Widget messages of one cell, with wire and state bytes."""

    def __init__(self) -> None:
        self.msgs: list[tuple[float, str, int, int]] = []
        self.text_msgs = 0

    def __call__(self, watch: Watch, msg: dict[str, Any]) -> None:
        if msg["msg_type"] not in WIDGET_MSGS:
            return
        wire = sum(
            len(json.dumps(msg[k], default=str)) for k in ("header", "parent_header", "metadata", "content")
        )
        data = msg["content"].get("data", {})
        state = len(json.dumps(data.get("state", {})))
        self.msgs.append((watch.now(), msg["msg_type"], wire, state))
        if data.get("state", {}).get("outputs"):
            self.text_msgs += 1  # the streamed Markdown moved (a tail update, a seal, a new tail)


def run_cell(kernel: Kernel, text: str, live: bool) -> tuple[Counter, float, float]:
    kernel.fresh()
    kernel.run(f"faux.set_responses([{text!r}])")
    flags = "--tools none" + ("" if live else " --text")
    counter = Counter()
    cpu0, wall0 = kernel_cpu(kernel), time.monotonic()
    cell = kernel.execute(f"%%pi --model faux:faux-1 {flags}\nanswer")
    Watch(kernel).until_replies([cell], counter, timeout=600)
    return counter, kernel_cpu(kernel) - cpu0, time.monotonic() - wall0


PROFILE_ON = "import cProfile as _cp; _bench_prof = _cp.Profile(); _bench_prof.enable()"
PROFILE_OFF = """\
_bench_prof.disable()
import io as _io, pstats as _ps
_out = _io.StringIO()
_st = _ps.Stats(_bench_prof, stream=_out)
_st.sort_stats("tottime").print_stats({top})
_st.sort_stats("cumulative").print_stats({top})
print(_out.getvalue())
del _bench_prof
"""


def profile_cell(kernel: Kernel, text: str, live: bool, top: int) -> str:
    """cProfile of the kernel's main thread (the event loop: agent, view, widget messages)
    while one cell runs; the IOPub thread's own work is not in it."""
    kernel.run(PROFILE_ON)
    run_cell(kernel, text, live)
    return str(kernel.run(PROFILE_OFF.format(top=top), timeout=120)["stdout"])


def rate(counter: Counter) -> float:
    """Widget messages per second over the middle of the stream (first and last 10 % cut off:
    opening the view and freezing it are bursts, not the steady rate)."""
    times = [t for t, kind, _, _ in counter.msgs if kind == "comm_msg"]
    if len(times) < 10:
        return 0.0
    a, b = times[0], times[-1]
    lo, hi = a + (b - a) * 0.1, b - (b - a) * 0.1
    inside = [t for t in times if lo <= t <= hi]
    return len(inside) / (hi - lo) if hi > lo else 0.0


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def measure(kernels: dict[str, Kernel], n: int, reps: int, no_floor: bool) -> dict[str, dict[str, Any]]:
    """``reps`` live runs of an ``n``-token answer in every kernel, each next to a floor run
    in the same kernel; the order is rotated every repetition so that load from other
    processes hits every run alike."""
    text = answer(n)
    runs = [(name, is_live) for name in kernels for is_live in (True, False) if is_live or not no_floor]
    rows = {name: {"n": n, "size": len(text.encode()), "live": [], "floor": []} for name in kernels}
    for rep in range(reps):
        shift = rep % len(runs)
        for name, is_live in runs[shift:] + runs[:shift]:
            counter, cpu, wall = run_cell(kernels[name], text, live=is_live)
            if is_live:
                rows[name]["live"].append((counter, cpu, wall))
            else:
                rows[name]["floor"].append(cpu)
    for row in rows.values():
        row["ratios"] = [c / f for (_, c, _), f in zip(row["live"], row["floor"], strict=False) if f]
    return rows


def report(name: str, row: dict[str, Any], fixed: int) -> str:
    size, live = row["size"], row["live"]
    counter = live[-1][0]
    wires = [sum(m[2] for m in c.msgs) for c, _, _ in live]
    wire, state = _median(wires), sum(m[3] for m in counter.msgs)
    cpu = _median([c for _, c, _ in live]) * 1000
    floor = _median(row["floor"]) * 1000 if row["floor"] else 0.0
    ratios = row["ratios"]
    ratio = f"{_median(ratios):5.2f} ({_spread(ratios)})" if ratios else "    -"
    return (
        f"{name:6s}  {row['n']:6d}  {size:6d}  {len(counter.msgs):5d}  {counter.text_msgs:5d}"
        f"  {_median([rate(c) for c, _, _ in live]):6.1f}  {wire:9.0f}  {wire / size:9.1f}"
        f"  {(wire - fixed) / size:13.1f}  {state / size:10.1f}  {cpu:7.1f}  {floor:7.1f}  {ratio}"
    )


def marginal(small: dict[str, Any], large: dict[str, Any]) -> str:
    """The live view's and the floor's CPU per token between two answer lengths (medians), which
    cancels what a run costs whatever its length (building the view, the frozen HTML)."""
    tokens = large["n"] - small["n"]
    live = (_median([c for _, c, _ in large["live"]]) - _median([c for _, c, _ in small["live"]])) / tokens
    floor = (_median(large["floor"]) - _median(small["floor"])) / tokens
    ratio = f"{live / floor:.2f}" if floor > 0 else "-"
    return f"live {live * 1e6:.1f} us, floor {floor * 1e6:.1f} us, live/floor {ratio}"


def start_kernel(root: Path, pythonpath: str | None, rate: float) -> tuple[Kernel, int]:
    """A kernel importing ``pi_notebook`` from ``pythonpath`` (default: the inherited path),
    warmed up; returns it with the wire bytes of the view of a one-word answer."""
    saved = os.environ.get("PYTHONPATH")
    if pythonpath is not None:
        os.environ["PYTHONPATH"] = pythonpath
    try:
        kernel = Kernel(root)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    kernel.run(f"faux._core.tokens_per_second = {rate}")
    run_cell(kernel, answer(50), live=True)  # warm-up: imports, first widgets
    run_cell(kernel, answer(50), live=False)
    base = run_cell(kernel, "ok\n", live=True)[0]  # the view itself: the fixed cost of a run
    return kernel, sum(m[2] for m in base.msgs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[300, 1000, 3000])
    parser.add_argument("--rate", type=float, default=100.0, help="faux tokens per second (0: no pacing)")
    parser.add_argument("--reps", type=int, default=1, help="live/floor pairs per answer length")
    parser.add_argument("--no-floor", action="store_true", help="skip the --text runs")
    parser.add_argument(
        "--compare",
        metavar="DIR",
        help="also run a kernel importing pi_notebook from DIR (e.g. a git worktree of the tree "
        "before a change), alternated with this tree's run by run",
    )
    parser.add_argument(
        "--profile",
        choices=["live", "text", "both"],
        help="then print a cProfile of the kernel running one cell of the largest answer",
    )
    parser.add_argument("--top", type=int, default=30, help="rows of each profile table")
    args = parser.parse_args()
    profiles: list[tuple[str, str]] = []
    paths: dict[str, str | None] = {"this": None}
    if args.compare:
        paths["other"] = str(Path(args.compare).resolve())
    kernels: dict[str, Kernel] = {}
    fixed: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="pi-bench-widgets-") as tmp:
        try:
            for name, path in paths.items():
                (Path(tmp) / name).mkdir()
                kernels[name], fixed[name] = start_kernel(Path(tmp) / name, path, args.rate)
            rows = [measure(kernels, n, args.reps, args.no_floor) for n in args.tokens]
            if args.profile:
                kinds = ["live", "text"] if args.profile == "both" else [args.profile]
                big = answer(max(args.tokens))
                profiles = [(k, profile_cell(kernels["this"], big, k == "live", args.top)) for k in kinds]
        finally:
            for kernel in kernels.values():
                kernel.close()
    print(f"faux answer at {args.rate:g} tokens/s (4 characters each); widget messages on IOPub")
    print(f"{args.reps} live/floor pair(s) per length and tree, alternated; medians, CPU/floor min-max")
    for name, path in paths.items():
        where = path or os.environ.get("PYTHONPATH", "")
        print(f"{name}: {where}; the view of a 1-word answer: {fixed[name]} B on the wire")
    print("tree    tokens  text B   msgs  text   msgs/s  wire B     wire/text  (-fixed)/text", end="")
    print("  state/text  CPU ms   floor    CPU/floor")
    for by_tree in rows:
        for name, row in by_tree.items():
            print(report(name, row, fixed[name]))
    if len(rows) > 1 and not args.no_floor:
        small, large = rows[0], rows[-1]
        for name in paths:
            span = f"{small[name]['n']} -> {large[name]['n']} tokens"
            print(f"{name}: marginal CPU per token, {span}: {marginal(small[name], large[name])}")
    for kind, text in profiles:
        print(f"\n=== cProfile of the kernel, {kind} cell of {max(args.tokens)} tokens ===\n{text}")


if __name__ == "__main__":
    main()
