"""The Pi kernel against plain ipykernel, side by side: start time and the cost of a trivial cell.

```
.venv/bin/python -m bench.bench_kernel              # 7 starts and 7 x 300 cells per kernel
.venv/bin/python -m bench.bench_kernel --reps 3 --cells 100
```

Both kernelspecs go into a temporary prefix (``pi`` through ``python -m pi_notebook.kernel
install --prefix``, ``plain`` running ``ipykernel_launcher``) and start from this interpreter
through jupyter_client on unix sockets, with isolated Jupyter and IPython dirs. Repetitions
alternate plain, pi, plain, pi... so that the machine's load hits both alike.

* **start**: wall time from ``start_kernel()`` until the kernel answers ``kernel_info`` (what a
  frontend waits for before the first cell), in a fresh kernel each repetition.
* **cell**: a trivial cell, ``pass`` in the plain kernel and ``%%python`` + ``pass`` in the Pi
  kernel (the routing rule, the transformer chain and the extension's hooks are the whole
  difference): wall time from sending ``execute_request`` to the ``idle`` status after it,
  median over ``--cells`` cells after 30 untimed ones; and the kernel process's CPU per cell
  (``/proc/<pid>/stat``, utime + stime over all the timed cells).

The report gives medians, the ratio pi / plain of the medians, the median of the paired ratios,
and the issue's goals: start <= 1.2x, a trivial cell <= 1.1x + 1 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

REPO = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


def install(prefix: Path) -> Path:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(
        [sys.executable, "-m", "pi_notebook.kernel", "install", "--prefix", str(prefix)],
        check=True, capture_output=True, env=env,
    )  # fmt: skip
    kernels = prefix / "share" / "jupyter" / "kernels"
    (kernels / "plain").mkdir(parents=True, exist_ok=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "plain", "language": "python"}  # fmt: skip
    (kernels / "plain" / "kernel.json").write_text(json.dumps(spec))
    return kernels


def env_for(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_NOTEBOOK_", "JPY_"))}
    env.update({"IPYTHONDIR": str(root / "ipython"), "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
                "JUPYTER_CONFIG_DIR": str(root / "config"), "PYTHONPATH": str(REPO),
                "PI_CODING_AGENT_DIR": str(root / "agent")})  # fmt: skip
    return env


def start(kernels: Path, name: str, root: Path) -> tuple[KernelManager, object, float]:
    km = KernelManager(kernel_name=name, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]))
    km.transport, km.ip = "ipc", str(root / f"ipc-{name}")
    km.connection_file = str(root / f"{name}.json")
    began = time.perf_counter()
    km.start_kernel(env=env_for(root), cwd=str(root))
    kc = km.blocking_client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    return km, kc, time.perf_counter() - began


def run(kc: object, code: str) -> float:
    began = time.perf_counter()
    msg_id = kc.execute(code)  # type: ignore[attr-defined]
    while True:
        msg = kc.get_iopub_msg(timeout=30)  # type: ignore[attr-defined]
        if (
            msg["parent_header"].get("msg_id") == msg_id
            and msg["msg_type"] == "status"
            and msg["content"]["execution_state"] == "idle"
        ):
            break
    elapsed = time.perf_counter() - began
    kc.get_shell_msg(timeout=30)  # type: ignore[attr-defined]
    return elapsed


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def measure(kernels: Path, name: str, root: Path, cells: int) -> tuple[float, float, float]:
    """(start s, median cell wall s, kernel CPU s per cell) of one fresh kernel."""
    km, kc, started = start(kernels, name, root)
    code = "%%python\npass" if name == "pi" else "pass"
    try:
        for _ in range(30):
            run(kc, code)
        pid = km.provisioner.process.pid  # type: ignore[union-attr]
        cpu_before = cpu_seconds(pid)
        walls = [run(kc, code) for _ in range(cells)]
        cpu = (cpu_seconds(pid) - cpu_before) / cells
    finally:
        kc.stop_channels()  # type: ignore[attr-defined]
        km.shutdown_kernel(now=True)
    return started, statistics.median(walls), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--cells", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-kernel-") as tmp:
        root = Path(tmp)
        kernels = install(root / "prefix")
        results: dict[str, list[tuple[float, float, float]]] = {"plain": [], "pi": []}
        for rep in range(args.reps):
            for name in ("plain", "pi"):
                results[name].append(measure(kernels, name, root, args.cells))
            print(f"rep {rep + 1}/{args.reps} done", file=sys.stderr)
    report(results)


def report(results: dict[str, list[tuple[float, float, float]]]) -> None:
    rows = (("start, wall (ms)", 0), ("trivial cell, wall (ms)", 1), ("trivial cell, kernel CPU (ms)", 2))
    print(f"{'measure':<30} {'plain':>8} {'pi':>8} {'pi/plain':>9} {'paired':>7}")
    for label, i in rows:
        plain = [r[i] * 1000 for r in results["plain"]]
        pi = [r[i] * 1000 for r in results["pi"]]
        paired = statistics.median(p / q for p, q in zip(pi, plain, strict=True) if q)
        mp, mq = statistics.median(pi), statistics.median(plain)
        print(f"{label:<30} {mq:>8.2f} {mp:>8.2f} {mp / mq:>9.2f} {paired:>7.2f}")
    start_ratio = statistics.median(r[0] for r in results["pi"]) / statistics.median(
        r[0] for r in results["plain"]
    )
    cell_pi = statistics.median(r[1] for r in results["pi"]) * 1000
    cell_plain = statistics.median(r[1] for r in results["plain"]) * 1000
    print(f"goal start <= 1.2x: {start_ratio:.2f}x {'met' if start_ratio <= 1.2 else 'not met'}")
    limit = 1.1 * cell_plain + 1
    verdict = "met" if cell_pi <= limit else "not met"
    print(f"goal cell <= 1.1x + 1 ms = {limit:.2f} ms: {cell_pi:.2f} ms {verdict}")


if __name__ == "__main__":
    main()
