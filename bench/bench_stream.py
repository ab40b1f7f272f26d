"""CPU per streamed token: ``pi_notebook.ai.stream`` against the raw httpx + json floor.

One run starts ``bench.server`` in its own process, then measures every (client, N, repetition)
in a fresh subprocess: after one warm-up request (imports done, connection open), the child
streams N tokens and reports ``time.process_time()`` spent on it. Clients:

* ``floor``: ``httpx.AsyncClient.stream`` + ``aiter_raw`` + split lines + ``json.loads`` of each
  ``data:`` line, collecting the content deltas (perf-anchors' floor);
* ``floor_jiter``: the same with ``jiter.from_json`` (the parser the provider uses), to tell
  parsing apart from the rest of the provider's cost;
* ``pi``: ``pi_notebook.ai.stream`` on an ``openai-completions`` model, iterating every event
  and collecting the ``text_delta`` deltas.

The figure of merit is the *marginal* CPU per token, (median at the large N - median at the
small N) / (large N - small N), which cancels the fixed per-request cost, and the ratio pi/floor.
Each child also makes 50 one-token requests on its warm connection: their CPU per request is the
fixed cost of a request (request building, headers, task start, the terminal events).

Run: ``python -m bench.bench_stream`` (``--help`` for options, ``--profile pi`` for a cProfile
of one child).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from typing import Any

CLIENTS = ("floor", "floor_jiter", "pi")
REQUESTS = 50  # one-token requests per child, for the per-request cost


# --- children -----------------------------------------------------------------------------------


async def _floor(url: str, n: int, loads: Any = json.loads) -> int:
    import httpx

    client = _floor_client(httpx)
    payload = {
        "model": "gpt-4.1-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    parts: list[str] = []
    async with client.stream("POST", f"{url}/n/{n}/chat/completions", json=payload) as response:
        buf = b""
        async for raw in response.aiter_raw():
            buf += raw
            lines = buf.split(b"\n")
            buf = lines.pop()
            for line in lines:
                if not line.startswith(b"data: "):
                    continue
                data = line[6:]
                if data == b"[DONE]":
                    continue
                chunk = loads(data)
                choices = chunk["choices"]
                if choices:
                    content = choices[0]["delta"].get("content")
                    if content:
                        parts.append(content)
    return len("".join(parts))


async def _floor_jiter(url: str, n: int) -> int:
    import jiter

    return await _floor(url, n, jiter.from_json)


_client: Any = None


def _floor_client(httpx: Any) -> Any:
    global _client
    if _client is None:
        _client = httpx.AsyncClient(timeout=httpx.Timeout(connect=30.0, read=600.0, write=60.0, pool=30.0))
    return _client


async def _pi(url: str, n: int) -> int:
    from pi_notebook.ai.entry import stream
    from pi_notebook.ai.models import openai_compatible_model
    from pi_notebook.ai.types import Context, UserMessage

    model = openai_compatible_model("gpt-4.1-mini", f"{url}/n/{n}", provider="local", register=False)
    context = Context(messages=[UserMessage(content="hi")])
    parts: list[str] = []
    final = None
    async for event in stream(model, context):
        if event.type == "text_delta":
            parts.append(event.delta)
        elif event.type == "done":
            final = event.message
        elif event.type == "error":
            raise RuntimeError(event.error.error_message)
    text = "".join(parts)
    if final is None or final.content[0].model_dump().get("text") != text:
        raise RuntimeError("the final message does not hold the streamed text")
    return len(text)


async def _child(client: str, n: int, port: int, profile: bool) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}"
    run = {"floor": _floor, "floor_jiter": _floor_jiter, "pi": _pi}[client]
    await run(url, 10)  # warm-up: imports, client, keep-alive connection
    expected = len("".join(f" w{i % 997}" for i in range(n)))
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    chars = await run(url, n)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    if profiler is not None:
        import pstats

        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    if chars != expected:
        raise SystemExit(f"{client}: received {chars} characters, expected {expected}")
    # the cost of a request itself: many one-token requests on the warm connection
    cpu0 = time.process_time()
    for _ in range(REQUESTS):
        await run(url, 1)
    per_request = (time.process_time() - cpu0) / REQUESTS
    return {"client": client, "n": n, "cpu": cpu, "wall": wall, "request": per_request}


# --- driver ---------------------------------------------------------------------------------------


def _start_server() -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.server", "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.terminate()
        raise SystemExit(f"bench.server did not start: {line!r}")
    return proc, int(line.split()[1])


def _run_child(client: str, n: int, port: int, profile: bool = False) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.bench_stream", "--child", client, "--n", str(n), "--port", str(port)]
    if profile:
        cmd.append("--profile-child")
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _report(results: list[dict[str, Any]], small: int, large: int) -> None:
    def runs(client: str, n: int) -> list[dict[str, Any]]:
        return [r for r in results if r["client"] == client and r["n"] == n]

    def median_cpu(client: str, n: int) -> float:
        return float(statistics.median(r["cpu"] for r in runs(client, n)))

    marginal = {c: (median_cpu(c, large) - median_cpu(c, small)) / (large - small) for c in CLIENTS}
    # runs are interleaved, so the i-th floor and pi runs saw about the same foreign load
    paired = statistics.median(
        p["cpu"] / f["cpu"] for f, p in zip(runs("floor", large), runs("pi", large), strict=True)
    )
    reps = len(runs("pi", large))
    print(f"\nCPU per token in µs (median of {reps} runs per cell, each run in a fresh process)")
    print(
        f"{'client':<12} {f'@{small}':>8} {f'@{large}':>8} {'marginal':>9} {'ms/request':>11} "
        f"{'best wall tok/s':>16}"
    )
    for client in CLIENTS:
        request = statistics.median(r["request"] for r in results if r["client"] == client)
        wall = min(r["wall"] for r in runs(client, large))
        print(
            f"{client:<12} {median_cpu(client, small) / small * 1e6:>8.2f} "
            f"{median_cpu(client, large) / large * 1e6:>8.2f} {marginal[client] * 1e6:>9.2f} "
            f"{request * 1e3:>11.3f} {large / wall:>16,.0f}"
        )
    print(f"\npi / floor, marginal CPU per token:             {marginal['pi'] / marginal['floor']:.2f}")
    print(f"pi / floor at {large} tokens, median of paired runs: {paired:.2f}")
    print(f"pi / floor_jiter, marginal CPU per token:       {marginal['pi'] / marginal['floor_jiter']:.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="CPU per streamed token: pi_notebook vs the httpx+json floor"
    )
    parser.add_argument("--tokens", type=int, nargs=2, default=[2000, 20000], metavar=("SMALL", "LARGE"))
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--profile", choices=CLIENTS, help="cProfile one child at the large N and exit")
    parser.add_argument("--child", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--profile-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(asyncio.run(_child(args.child, args.n, args.port, args.profile_child))))
        return
    server, port = _start_server()
    try:
        small, large = args.tokens
        if args.profile:
            _run_child(args.profile, large, port, profile=True)
            return
        results: list[dict[str, Any]] = []
        for rep in range(args.reps):
            # interleaved so that load from other processes hits every client alike
            for n in (small, large):
                for client in CLIENTS:
                    results.append(_run_child(client, n, port))
            print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr)
        _report(results, small, large)
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
