"""What Pi's resources cost before each ``%%pi`` cell, against floors measured in the same run
(not a test).

A project folder five levels deep in a git checkout, an ``AGENTS.md`` in three of them, 20 skills
(each a ``SKILL.md`` with frontmatter) and 10 templates, in a temporary ``HOME`` and agent dir.

(a) Unchanged: ``ResourceLoader.current()`` when no file changed (what every cell pays),
    against the floor of one ``os.stat`` of each path the last load looked at.
(b) Reload: ``ResourceLoader.load()`` (walk, read, parse the frontmatter, validate), against the
    floor of reading the same files' bytes with ``open().read()``.

Repetitions are interleaved; medians are reported. ``python -m bench.bench_resources --reps N``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pi_notebook.runtime.resources.loader import ResourceLoader


def build(root: Path) -> tuple[Path, Path, Path]:
    home, agent = root / "home", root / "home" / ".pi" / "agent"
    repo = root / "repo"
    cwd = repo / "a" / "b" / "c" / "d" / "e"
    cwd.mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    for folder in (repo, repo / "a" / "b", cwd):
        (folder / "AGENTS.md").write_text("Rules. " * 200 + "\n")
    for i in range(20):
        base = (cwd / ".pi" / "skills") if i % 2 else (agent / "skills")
        skill = base / f"skill-{i}"
        skill.mkdir(parents=True)
        front = f"---\nname: skill-{i}\ndescription: Skill number {i}.\n---\n"
        (skill / "SKILL.md").write_text(front + "Do. " * 300)
    (agent / "prompts").mkdir(parents=True)
    for i in range(10):
        (agent / "prompts" / f"t{i}.md").write_text(f"---\ndescription: T{i}\n---\nDo $1 with $@.\n")
    return cwd, agent, home


def timed(fn: Callable[[], object], inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - start) / inner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pi-bench-resources-") as tmp:
        cwd, agent, home = build(Path(tmp))
        loader = ResourceLoader(str(cwd), agent_dir=str(agent), home=str(home), trusted=True)
        found = loader.load()
        watched = list(found.watched)
        files = [p for p in watched if os.path.isfile(p)]

        def stat_floor() -> None:
            for path in watched:
                with contextlib.suppress(OSError):  # a watched path may be missing (no trust.json)
                    os.stat(path)

        def read_floor() -> None:
            for path in files:
                with open(path, "rb") as handle:
                    handle.read()

        rows: dict[str, list[float]] = {"unchanged": [], "stat floor": [], "reload": [], "read floor": []}
        for _ in range(args.reps):
            rows["unchanged"].append(timed(loader.current, 200))
            rows["stat floor"].append(timed(stat_floor, 200))
            rows["reload"].append(timed(loader.load, 20))
            rows["read floor"].append(timed(read_floor, 20))
        med = {name: statistics.median(values) for name, values in rows.items()}
        print(f"{len(watched)} paths watched, {len(files)} files read, {len(found.skills)} skills")
        for name, floor in (("unchanged", "stat floor"), ("reload", "read floor")):
            ratio = med[name] / med[floor]
            ours, base = med[name] * 1e6, med[floor] * 1e6
            print(f"{name:>9}: {ours:9.0f} µs   {floor}: {base:7.0f} µs   {ratio:5.2f}x")


if __name__ == "__main__":
    main()
