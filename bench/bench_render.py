"""How long the renderers take on hostile Markdown, against ordinary Markdown of the same length.

For each input of ``tests/notebook/hostile.py`` (``LARGE``: a 200 KB line, 5,000 nested quotes
or list items, 10,000 brackets, nested emphasis, 5,000 links and images; and the answer made of
every active payload), the CPU time of

* ``render_markdown`` (the static HTML a saved notebook keeps) and
* ``frontend_markdown`` (the Markdown the live view sends to JupyterLab),

next to the floor: the same renderer on the project's own docs (``docs/*.md``, ordinary
Markdown with headings, lists, tables and code), cut or repeated to the same length. The ratio
hostile / floor says what an attacker gains; the absolute figure says what a user waits.

    python -m bench.bench_render              # median of 5 runs per cell
    python -m bench.bench_render --reps 9
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "notebook"))

from hostile import LARGE, answer  # noqa: E402

from pi_notebook.notebook.view.render import frontend_markdown, render_markdown  # noqa: E402


def ordinary(length: int) -> str:
    """The docs, repeated and cut to ``length`` characters."""
    docs = "\n\n".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")))
    return (docs * (length // len(docs) + 1))[:length]


def cpu_ms(fn: Callable[[str], str], text: str, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.process_time()
        fn(text)
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    inputs = {**LARGE, "active payloads": answer("http://127.0.0.1:9")}
    columns = f"{'static ms':>9} {'floor':>7} {'ratio':>6}  {'live ms':>9} {'floor':>7} {'ratio':>6}"
    print(f"{'input':18} {'chars':>8}  {columns}")
    for name, text in inputs.items():
        floor_text = ordinary(len(text))
        row = [f"{name:18} {len(text):8,}"]
        for fn in (render_markdown, frontend_markdown):
            hostile, floor = cpu_ms(fn, text, args.reps), cpu_ms(fn, floor_text, args.reps)
            row.append(f"{hostile:9.1f} {floor:7.1f} {hostile / max(floor, 0.01):6.2f}")
        print("  ".join(row))


if __name__ == "__main__":
    main()
