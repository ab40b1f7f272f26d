"""What the ``%%pi`` live view sends to the frontend while an answer streams.

Runs ``%%pi`` in a real ipykernel driven through jupyter_client (the test driver in
``tests/notebook/kernel_driver.py``), with the faux provider streaming a Markdown answer of N
tokens (4 characters each) at a fixed rate, and counts the widget messages on IOPub: how many
(``comm_open`` + ``comm_msg``), how many per second while the answer streams, and their bytes,
against the length of the final text. Bytes are counted twice: ``wire`` is the JSON of the
whole message (header, parent header, metadata, content) as the kernel sends it, ``state`` only
the widget state the message carries.

The floor is the same cell with ``--text`` (no widgets) in the same kernel: the kernel CPU per
token of the live view is reported against it (``/proc/<pid>/stat``, so Linux only).

    python -m bench.bench_widgets                        # 300, 1,000 and 3,000 tokens at 100/s
    python -m bench.bench_widgets --tokens 3000 --rate 400
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
    pid = kernel.km.provisioner.process.pid  # type: ignore[union-attr]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Counter:
    """Widget messages of one cell, with wire and state bytes."""

    def __init__(self) -> None:
        self.msgs: list[tuple[float, str, int, int]] = []

    def __call__(self, watch: Watch, msg: dict[str, Any]) -> None:
        if msg["msg_type"] not in WIDGET_MSGS:
            return
        wire = sum(
            len(json.dumps(msg[k], default=str)) for k in ("header", "parent_header", "metadata", "content")
        )
        data = msg["content"].get("data", {})
        state = len(json.dumps(data.get("state", {})))
        self.msgs.append((watch.now(), msg["msg_type"], wire, state))


def run_cell(kernel: Kernel, text: str, live: bool) -> tuple[Counter, float, float]:
    kernel.fresh()
    kernel.run(f"faux.set_responses([{text!r}])")
    flags = "--tools none" + ("" if live else " --text")
    counter = Counter()
    cpu0, wall0 = kernel_cpu(kernel), time.monotonic()
    cell = kernel.execute(f"%%pi --model faux:faux-1 {flags}\nanswer")
    Watch(kernel).until_replies([cell], counter, timeout=600)
    return counter, kernel_cpu(kernel) - cpu0, time.monotonic() - wall0


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[300, 1000, 3000])
    parser.add_argument("--rate", type=float, default=100.0, help="faux tokens per second")
    parser.add_argument("--no-floor", action="store_true", help="skip the --text runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pi-bench-widgets-") as tmp:
        kernel = Kernel(Path(tmp))
        try:
            kernel.run(f"faux._core.tokens_per_second = {args.rate}")
            run_cell(kernel, answer(50), live=True)  # warm-up: imports, first widgets
            base = run_cell(kernel, "ok\n", live=True)[0]  # the view itself: the fixed cost of a run
            fixed = sum(m[2] for m in base.msgs)
            rows = []
            for n in args.tokens:
                text = answer(n)
                counter, cpu, wall = run_cell(kernel, text, live=True)
                floor_cpu = 0.0 if args.no_floor else run_cell(kernel, text, live=False)[1]
                rows.append((n, len(text.encode()), counter, cpu, floor_cpu, wall))
        finally:
            kernel.close()
    print(f"faux answer at {args.rate:g} tokens/s (4 characters each); widget messages on IOPub")
    print(
        f"fixed cost of a run (the view of a 1-word answer): {len(base.msgs)} messages, {fixed} B on the wire"
    )
    print("tokens  text B   msgs  msgs/s  wire B     wire/text  (-fixed)/text", end="")
    print("  state B    state/text  CPU ms  /floor")
    for n, size, counter, cpu, floor_cpu, _wall in rows:
        wire = sum(m[2] for m in counter.msgs)
        state = sum(m[3] for m in counter.msgs)
        ratio = f"{cpu / floor_cpu:6.2f}" if floor_cpu else "     -"
        print(
            f"{n:6d}  {size:6d}  {len(counter.msgs):5d}  {rate(counter):6.1f}  {wire:9d}  {wire / size:9.1f}"
            f"  {(wire - fixed) / size:13.1f}  {state:9d}  {state / size:10.1f}  {cpu * 1000:6.0f}  {ratio}"
        )


if __name__ == "__main__":
    main()
