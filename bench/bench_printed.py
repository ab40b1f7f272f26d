"""What reading an answer for printed tool calls costs, measured side by side in one run (not a test).

Every ``%%pi`` run in tools mode streams through ``printed_turns`` (``pi_notebook/agent/
printed_turns.py``), which rewrites the final message of a turn whose text holds a call. This
bench streams N tokens of plain text from ``bench.server`` (loopback HTTP, OpenAI chat
completions) through:

* ``floor``: raw httpx + ``json.loads`` of every event (``bench.bench_stream``'s floor);
* ``agent``: an ``Agent`` with the provider's stream function, a listener collecting deltas;
* ``agent_printed``: the same run with ``AgentRunOptions(wrap_stream=printed_turns(...))``,
  tools mode, so the final text (N words, no call in it) is scanned for calls at the end.

Figures: marginal CPU per token ``(median at large N - median at small N) / (large - small)``
and its ratio to the floor's, each client in a fresh subprocess after a warm-up, repetitions
interleaved. The wrapper passes the events through (no cost per token); what it adds is one
scan of the final text, which is linear in its length.

Run from the repository root: ``python -m bench.bench_printed`` (``--help`` for options).
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

from bench.bench_stream import _floor, _start_server

CLIENTS = ("floor", "agent", "agent_printed")


async def _agent(url: str, n: int, printed: bool = False) -> int:
    from pi_notebook.agent import Agent, AgentRunOptions
    from pi_notebook.agent.printed_turns import printed_turns
    from pi_notebook.ai.entry import stream_simple
    from pi_notebook.ai.models import openai_compatible_model
    from pi_notebook.ai.types import Tool

    model = openai_compatible_model("gpt-4.1-mini", f"{url}/n/{n}", provider="local", register=False)
    agent = Agent(stream_fn=stream_simple, initial_state={"model": model})
    parts: list[str] = []

    def listener(event: Any, signal: Any) -> None:
        if event.type == "message_update" and event.assistant_message_event.type == "text_delta":
            parts.append(event.assistant_message_event.delta)

    agent.subscribe(listener)
    run = None
    if printed:
        schema = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}
        tools = [Tool(name="run_code", parameters=schema)]

        def wrap(own: Any) -> Any:
            inner = printed_turns(own, mode="tools", accept=lambda calls: True)

            def stream(m: Any, context: Any, options: Any) -> Any:  # the schemas of a %%pi run
                return inner(m, context.model_copy(update={"tools": tools}), options)

            return stream

        run = AgentRunOptions(wrap_stream=wrap)
    await agent.prompt("hi", run=run)
    final = agent.state.messages[-1]
    text = "".join(parts)
    if final.stop_reason != "stop" or final.content[0].text != text:
        raise RuntimeError(f"unexpected final message: {final.stop_reason} {final.error_message}")
    return len(text)


async def _child(client: str, n: int, port: int) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}"
    runners: dict[str, Any] = {
        "floor": _floor,
        "agent": _agent,
        "agent_printed": lambda u, k: _agent(u, k, printed=True),
    }
    run = runners[client]
    await run(url, 10)  # warm-up: imports, client, keep-alive connection
    wall0, cpu0 = time.perf_counter(), time.process_time()
    chars = await run(url, n)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {"client": client, "n": n, "cpu": cpu, "wall": wall, "chars": chars}


def _run_child(client: str, n: int, port: int) -> dict[str, Any]:
    argv = [sys.executable, "-m", "bench.bench_printed", "--child", client, "--n", str(n)]
    argv += ["--port", str(port)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=600)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _median(results: list[dict[str, Any]], client: str, n: int) -> float:
    return float(statistics.median(r["cpu"] for r in results if r["client"] == client and r["n"] == n))


def _marginal(results: list[dict[str, Any]], client: str, small: int, large: int) -> float:
    return (_median(results, client, large) - _median(results, client, small)) / (large - small)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="the cost of reading answers for printed tool calls")
    parser.add_argument("--tokens", type=int, nargs=2, default=[2000, 20000], metavar=("SMALL", "LARGE"))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(asyncio.run(_child(args.child, args.n, args.port))))
        return
    server, port = _start_server()
    results: list[dict[str, Any]] = []
    try:
        for rep in range(args.reps):
            results += [_run_child(c, n, port) for n in args.tokens for c in CLIENTS]
            print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr)
    finally:
        server.terminate()
        server.wait(timeout=10)
    small, large = args.tokens
    floor = _marginal(results, "floor", small, large)
    print(f"CPU per streamed token, µs (median of {args.reps} runs; marginal between {small} and {large})")
    print(f"{'client':<14} {'marginal':>9} {'x floor':>8}")
    for client in CLIENTS:
        marginal = _marginal(results, client, small, large)
        print(f"{client:<14} {marginal * 1e6:>9.2f} {marginal / floor:>8.2f}")
    added = _marginal(results, "agent_printed", small, large) - _marginal(results, "agent", small, large)
    print(f"printed_turns adds {added * 1e6:.2f} µs/token = {added / floor:.2f} x the floor")


if __name__ == "__main__":
    main()
