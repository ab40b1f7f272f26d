"""What a one-line prompt to a local model costs, before and after the compact prompt, counted
by the model's own tokenizer and timed by a real llama-server.

```
.venv/bin/python -m bench.bench_local_prompt --server http://127.0.0.1:18081 [--reps 3]
```

Needs a running llama.cpp ``llama-server`` (see docs/providers.md, "A real local server") on
127.0.0.1. Nothing else leaves the machine.

1. The request bodies are the notebook's own: ``%%pi --model llama.cpp:local --approve auto``
   + ``Hello`` runs in an in-process IPython shell against a capture server on 127.0.0.1 that
   answers ``/props`` as llama-server does (``n_ctx`` 4096) and records the chat request.
   ``full`` is the request as it was before (``fit.is_small`` answers no, so nothing is
   trimmed, exactly the code path of a model with a large window); ``compact`` is what a local
   model gets now. The run is headless (``PI_NOTEBOOK_HEADLESS=1``), as a batch job's, with an
   empty ``PI_CODING_AGENT_DIR`` (no user skills or settings).
2. Each body goes to the real server: ``/apply-template`` (its messages and tools through the
   model's chat template, as the server would prompt the model) and ``/tokenize`` count the
   prompt's tokens exactly; a ``max_tokens: 1`` chat request with ``cache_prompt: false``
   gives the server's own ``prompt_ms`` (prompt processing, the wait before the first word).
   Repetitions alternate full, compact, full, ... so other processes' load hits both alike.

Reported: tokens (exact), prompt milliseconds (median), the ratio compact / full of each, and
the load average while it ran.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx

REPO = Path(__file__).resolve().parent.parent
CHUNK = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "local"}
REPLY = b"".join(
    b"data: " + json.dumps(c).encode() + b"\n\n"
    for c in (
        {**CHUNK, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}}]},
        {**CHUNK, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )
) + b"data: [DONE]\n\n"


class Capture(BaseHTTPRequestHandler):
    """``/props`` as llama-server answers it (the fields read), a chat reply, each body kept."""

    bodies: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        props = {"default_generation_settings": {"n_ctx": 4096},
                 "chat_template_caps": {"supports_tools": True, "supports_tool_calls": True}}  # fmt: skip
        self._send(200, json.dumps(props).encode(), "application/json")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        self.bodies.append(json.loads(self.rfile.read(length)))
        self._send(200, REPLY, "text/event-stream")


def capture_bodies() -> dict[str, dict[str, Any]]:
    """The notebook's chat request for ``Hello``, in full and compact."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from pi_notebook.ai.local_probe import clear_probe_cache
    from pi_notebook.notebook import conversations
    from pi_notebook.notebook import load as extension
    from pi_notebook.notebook.run import fit

    server = ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/v1"
    os.environ.update(LLAMA_CPP_BASE_URL=url, PI_NOTEBOOK_HEADLESS="1")
    os.environ["PI_CODING_AGENT_DIR"] = tempfile.mkdtemp(prefix="pi-bench-")  # no user skills or settings
    shell: Any = InteractiveShell.instance()
    shell.autoawait = True
    extension.load_ipython_extension(shell)
    small = fit.is_small
    found: dict[str, dict[str, Any]] = {}
    try:
        for name, rule in (("full", lambda model: False), ("compact", small)):
            fit.is_small = rule  # the code path of a large window
            conversations.clear()
            clear_probe_cache()
            with capture_output():
                shell.run_cell("%%pi --model llama.cpp:local --approve auto --new\nHello")
            found[name] = Capture.bodies[-1]
    finally:
        fit.is_small = small
        server.shutdown()
    return found


def measure(client: httpx.Client, server: str, body: dict[str, Any]) -> tuple[int, float]:
    """Exact prompt tokens through the server's template and tokenizer; its prompt time."""
    shown = {"messages": body["messages"], **({"tools": body["tools"]} if "tools" in body else {})}
    prompt = client.post(f"{server}/apply-template", json=shown).json()["prompt"]
    tokens = len(client.post(f"{server}/tokenize", json={"content": prompt}).json()["tokens"])
    request = {**shown, "model": "local", "max_tokens": 1, "cache_prompt": False, "temperature": 0}
    timings = client.post(f"{server}/v1/chat/completions", json=request).json()["timings"]
    return tokens, float(timings["prompt_ms"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", default="http://127.0.0.1:8080")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    bodies = capture_bodies()
    results: dict[str, list[tuple[int, float]]] = {"full": [], "compact": []}
    loads = [os.getloadavg()[0]]
    with httpx.Client(timeout=300) as client:
        for _ in range(args.reps):
            for name, body in bodies.items():
                results[name].append(measure(client, args.server, body))
                loads.append(os.getloadavg()[0])
    print(f"{'prompt':8} {'tools':>5} {'tokens':>7} {'prompt ms (median)':>19}  runs")
    summary = {}
    for name, rows in results.items():
        tools = len(bodies[name].get("tools", []))
        tokens, ms = rows[0][0], statistics.median(r[1] for r in rows)
        summary[name] = (tokens, ms)
        runs = ", ".join(f"{r[1]:.0f}" for r in rows)
        print(f"{name:8} {tools:>5} {tokens:>7} {ms:>19.0f}  {runs}")
    (ft, fms), (ct, cms) = summary["full"], summary["compact"]
    print(f"compact / full: tokens {ct / ft:.2f}, prompt time {cms / fms:.2f}")
    print(f"load average (1 min) during the run: {min(loads):.2f}-{max(loads):.2f}")
    names = [t["function"]["name"] for t in bodies["compact"].get("tools", [])]
    print("tools sent, compact:", ", ".join(names))


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
