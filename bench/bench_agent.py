"""The agent layer's costs, measured side by side in one run (not a test).

(a) CPU per streamed token of the full loop: ``openai-completions`` over loopback HTTP
    (``bench.server``) -> ``Agent`` events -> a listener collecting the text deltas, against the
    raw httpx + json floor and the bare provider stream (``bench.bench_stream``'s clients).
    ``agent_copy`` is the same with a listener that shallow-copies the partial on every
    ``message_update``, i.e. the cost of Pi's per-token ``{...partial}`` copy, which the loop
    skips (see ``pi_notebook.agent.loop``).
(b) CPU per turn of a tool round trip (assistant tool call -> no-op tool -> result -> next
    request) with the faux provider, and with a minimal stream function that completes at once
    (the loop's own overhead without any provider work).
(c) Wall time of one batch of 8 parallel tools that each wait 1 s: ``asyncio.sleep(1)`` tools,
    and sync ``time.sleep(1)`` tools in the worker threads.

Every measurement runs in a fresh subprocess after one warm-up run; repetitions are
interleaved so that load from other processes hits every client alike. Figures of merit are
marginal costs ``(median at large N - median at small N) / (large N - small N)``.

Run from the repository root: ``python -m bench.bench_agent`` (``--help`` for options).
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

from bench.bench_stream import _floor, _pi, _start_server

STREAM_CLIENTS = ("floor", "pi_stream", "agent", "agent_copy")
EVENT_CLIENTS = ("events_bare", "events_agent", "events_agent_copy")
TURN_CLIENTS = ("turns_faux", "turns_minimal")
PARALLEL_CLIENTS = ("parallel_async", "parallel_sync")


# --- (a) the full loop over HTTP -------------------------------------------------------------------


async def _agent(url: str, n: int, copy: bool = False) -> int:
    from pi_notebook.agent import Agent
    from pi_notebook.ai.entry import stream_simple
    from pi_notebook.ai.models import openai_compatible_model

    model = openai_compatible_model("gpt-4.1-mini", f"{url}/n/{n}", provider="local", register=False)
    agent = Agent(stream_fn=stream_simple, initial_state={"model": model})
    parts: list[str] = []

    def listener(event: Any, signal: Any) -> None:
        if event.type == "message_update":
            if copy:
                event.message.model_copy()
            update = event.assistant_message_event
            if update.type == "text_delta":
                parts.append(update.delta)

    agent.subscribe(listener)
    await agent.prompt("hi")
    final = agent.state.messages[-1]
    text = "".join(parts)
    if final.stop_reason != "stop" or final.content[0].text != text:
        raise RuntimeError(f"unexpected final message: {final.stop_reason} {final.error_message}")
    return len(text)


async def _stream_child(client: str, n: int, port: int) -> dict[str, Any]:
    url = f"http://127.0.0.1:{port}"

    async def agent_copy(u: str, k: int) -> int:
        return await _agent(u, k, copy=True)

    runners: dict[str, Any] = {"floor": _floor, "pi_stream": _pi, "agent": _agent, "agent_copy": agent_copy}
    run = runners[client]
    await run(url, 10)  # warm-up: imports, client, keep-alive connection
    expected = len("".join(f" w{i % 997}" for i in range(n)))
    wall0, cpu0 = time.perf_counter(), time.process_time()
    chars = await run(url, n)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    if chars != expected:
        raise SystemExit(f"{client}: received {chars} characters, expected {expected}")
    return {"client": client, "n": n, "cpu": cpu, "wall": wall}


# --- (a2) the agent layer alone: a pre-built event stream, no HTTP ------------------------------------


def _prebuilt_stream(n: int) -> Any:
    """``start``, one text block of ``n`` deltas and ``done``, mutating one partial in place as the
    HTTP adapters do; built before the clock starts."""
    from pi_notebook.ai.event_stream import AssistantMessageEventStream
    from pi_notebook.ai.events import DoneEvent, StartEvent, TextDeltaEvent, TextEndEvent, TextStartEvent
    from pi_notebook.ai.types import AssistantMessage, TextContent

    partial = AssistantMessage(content=[], stop_reason="pending")
    stream = AssistantMessageEventStream()
    stream.push(StartEvent(partial=partial))
    block = TextContent(text="")
    partial.content.append(block)
    stream.push(TextStartEvent(content_index=0, partial=partial))
    for i in range(n):
        stream.push(TextDeltaEvent(content_index=0, delta=f" w{i % 997}", partial=partial))
    block.text = "".join(f" w{i % 997}" for i in range(n))
    stream.push(TextEndEvent(content_index=0, content=block.text, partial=partial))
    partial.stop_reason = "stop"
    stream.push(DoneEvent(reason="stop", message=partial))
    stream.end()
    return stream


async def _events(client: str, n: int) -> tuple[float, int]:
    """CPU seconds to consume ``n`` deltas bare or through an ``Agent``, and the characters seen."""
    from pi_notebook.agent import Agent

    stream = _prebuilt_stream(n)
    parts: list[str] = []
    if client == "events_bare":
        cpu0 = time.process_time()
        async for event in stream:
            if event.type == "text_delta":
                parts.append(event.delta)
        return time.process_time() - cpu0, len("".join(parts))
    copy = client == "events_agent_copy"
    agent = Agent(stream_fn=lambda model, context, options: stream)

    def listener(event: Any, signal: Any) -> None:
        if event.type == "message_update":
            if copy:
                event.message.model_copy()
            update = event.assistant_message_event
            if update.type == "text_delta":
                parts.append(update.delta)

    agent.subscribe(listener)
    cpu0 = time.process_time()
    await agent.prompt("hi")
    return time.process_time() - cpu0, len("".join(parts))


async def _events_child(client: str, n: int) -> dict[str, Any]:
    await _events(client, 100)  # warm-up
    cpu, chars = await _events(client, n)
    if chars != len("".join(f" w{i % 997}" for i in range(n))):
        raise SystemExit(f"{client}: wrong text")
    return {"client": client, "n": n, "cpu": cpu, "wall": cpu}


# --- (b) tool round trips ----------------------------------------------------------------------------


def _noop_tool() -> Any:
    from pi_notebook.agent import AgentTool, AgentToolResult
    from pi_notebook.ai.types import TextContent

    result = AgentToolResult(content=[TextContent(text="ok")], details={})

    async def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> Any:
        return result

    schema = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
    return AgentTool(name="noop", description="Does nothing.", parameters=schema, execute=execute)


def _turn_messages(turns: int) -> list[Any]:
    from pi_notebook.ai.faux import faux_assistant_message, faux_tool_call

    calls = [
        faux_assistant_message(
            [faux_tool_call("noop", {"value": f"v{i}"}, id=f"c{i}")], stop_reason="toolUse"
        )
        for i in range(turns)
    ]
    return [*calls, faux_assistant_message("done")]


def _minimal_stream_fn(messages: list[Any]) -> Any:
    """Completes each call at once with the next scripted message (no provider work at all)."""
    from pi_notebook.ai.event_stream import AssistantMessageEventStream
    from pi_notebook.ai.events import DoneEvent

    script = iter(messages)

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        message = next(script).model_copy()
        stream = AssistantMessageEventStream()
        stream.push(DoneEvent(reason=message.stop_reason, message=message))
        return stream

    return stream_fn


async def _turns(turns: int, minimal: bool) -> int:
    from pi_notebook.agent import Agent
    from pi_notebook.ai.entry import stream_simple
    from pi_notebook.ai.faux import register_faux_provider

    faux = register_faux_provider(token_size={"min": 64, "max": 64})
    try:
        messages = _turn_messages(turns)
        faux.set_responses(messages)
        stream_fn = _minimal_stream_fn(messages) if minimal else stream_simple
        agent = Agent(stream_fn=stream_fn, initial_state={"model": faux.get_model(), "tools": [_noop_tool()]})
        seen = [0]
        agent.subscribe(lambda event, signal: seen.__setitem__(0, seen[0] + 1))
        await agent.prompt("go")
        results = sum(1 for m in agent.state.messages if m.role == "toolResult")
        if results != turns or agent.state.messages[-1].stop_reason != "stop":
            raise RuntimeError(f"expected {turns} tool turns, got {results}")
        return turns
    finally:
        faux.unregister()


async def _turns_child(client: str, n: int) -> dict[str, Any]:
    minimal = client == "turns_minimal"
    await _turns(5, minimal)  # warm-up
    wall0, cpu0 = time.perf_counter(), time.process_time()
    await _turns(n, minimal)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {"client": client, "n": n, "cpu": cpu, "wall": wall}


# --- (c) 8 parallel tools that each wait 1 s -------------------------------------------------------------


async def _parallel(sync: bool, count: int = 8) -> float:
    from pi_notebook.agent import Agent, tool
    from pi_notebook.ai.entry import stream_simple
    from pi_notebook.ai.faux import faux_assistant_message, faux_tool_call, register_faux_provider

    if sync:

        @tool
        def wait(i: int) -> str:
            """Block for one second."""
            time.sleep(1)
            return str(i)

    else:

        @tool
        async def wait(i: int) -> str:
            """Wait for one second."""
            await asyncio.sleep(1)
            return str(i)

    faux = register_faux_provider(token_size={"min": 64, "max": 64})
    try:
        calls = [faux_tool_call("wait", {"i": i}, id=f"w{i}") for i in range(count)]
        faux.set_responses(
            [faux_assistant_message(calls, stop_reason="toolUse"), faux_assistant_message("done")]
        )
        agent = Agent(stream_fn=stream_simple, initial_state={"model": faux.get_model(), "tools": [wait]})
        started = time.perf_counter()
        await agent.prompt("go")
        elapsed = time.perf_counter() - started
        results = [m for m in agent.state.messages if m.role == "toolResult" and not m.is_error]
        if len(results) != count:
            raise RuntimeError(f"expected {count} successful tool results, got {len(results)}")
        return elapsed
    finally:
        faux.unregister()


async def _parallel_child(client: str) -> dict[str, Any]:
    wall = await _parallel(sync=client == "parallel_sync")
    return {"client": client, "n": 8, "cpu": 0.0, "wall": wall}


# --- driver ---------------------------------------------------------------------------------------------


def _run_child(client: str, n: int, port: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.bench_agent", "--child", client, "--n", str(n), "--port", str(port)]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _median(results: list[dict[str, Any]], client: str, n: int, key: str = "cpu") -> float:
    return float(statistics.median(r[key] for r in results if r["client"] == client and r["n"] == n))


def _marginal(results: list[dict[str, Any]], client: str, small: int, large: int) -> float:
    return (_median(results, client, large) - _median(results, client, small)) / (large - small)


def _report_stream(results: list[dict[str, Any]], small: int, large: int) -> None:
    print(f"\n(a) CPU per streamed token, µs (median of runs; marginal = slope between {small} and {large})")
    print(f"{'client':<12} {f'@{small}':>8} {f'@{large}':>8} {'marginal':>9} {'x floor':>8}")
    floor = _marginal(results, "floor", small, large)
    for client in STREAM_CLIENTS:
        marginal = _marginal(results, client, small, large)
        per_small = _median(results, client, small) / small * 1e6
        per_large = _median(results, client, large) / large * 1e6
        ratio = marginal / floor
        print(f"{client:<12} {per_small:>8.2f} {per_large:>8.2f} {marginal * 1e6:>9.2f} {ratio:>8.2f}")
    best = _best(results, "agent", large) / _best(results, "floor", large)
    print(f"agent / floor, best run each at {large} tokens: {best:.2f}")
    at_large = _median(results, "agent", large) / _median(results, "floor", large)
    print(f"agent / floor at {large} tokens (whole request): {at_large:.2f}   (target <= 2.5)")
    copy = _marginal(results, "agent_copy", small, large) - _marginal(results, "agent", small, large)
    print(f"shallow copy of the partial per message_update: {copy * 1e6:.2f} µs/token")


def _best(results: list[dict[str, Any]], client: str, n: int) -> float:
    return float(min(r["cpu"] for r in results if r["client"] == client and r["n"] == n)) / n


def _report_events(
    events: list[dict[str, Any]], stream: list[dict[str, Any]], small: int, large: int
) -> None:
    print("\n(a2) the agent layer alone: the same events pre-built, consumed bare or through Agent, µs/token")
    print(f"{'client':<18} {'marginal':>9} {f'best@{large}':>12}")
    for client in EVENT_CLIENTS:
        marginal = _marginal(events, client, small, large)
        print(f"{client:<18} {marginal * 1e6:>9.2f} {_best(events, client, large) * 1e6:>12.2f}")
    layer = _marginal(events, "events_agent", small, large) - _marginal(events, "events_bare", small, large)
    copy = _marginal(events, "events_agent_copy", small, large) - _marginal(
        events, "events_agent", small, large
    )
    floor_best = _best(stream, "floor", large)
    print(f"agent layer per token: {layer * 1e6:.2f} µs = {layer / floor_best:.2f} x the floor's best run")
    print(f"Pi's shallow copy per update adds {copy * 1e6:.2f} µs/token = {copy / floor_best:.2f} x floor")


def _report_turns(results: list[dict[str, Any]], small: int, large: int) -> None:
    print(f"\n(b) CPU per tool round trip (one turn), µs (marginal between {small} and {large} turns)")
    for client in TURN_CLIENTS:
        print(f"{client:<14} {_marginal(results, client, small, large) * 1e6:>9.1f}")


def _report_parallel(results: list[dict[str, Any]]) -> None:
    print("\n(c) wall time of 8 parallel tools that each wait 1 s (whole prompt, two faux turns)")
    for client in PARALLEL_CLIENTS:
        walls = [r["wall"] for r in results if r["client"] == client]
        median = statistics.median(walls)
        print(f"{client:<16} median {median:.3f} s   max {max(walls):.3f} s   (target <= 1.1 s)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="pi_notebook.agent: per-token, per-turn and parallel-tool costs"
    )
    parser.add_argument("--tokens", type=int, nargs=2, default=[2000, 20000], metavar=("SMALL", "LARGE"))
    parser.add_argument("--turns", type=int, nargs=2, default=[20, 200], metavar=("SMALL", "LARGE"))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--only", choices=("stream", "turns", "parallel"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        if args.child in STREAM_CLIENTS:
            result = asyncio.run(_stream_child(args.child, args.n, args.port))
        elif args.child in EVENT_CLIENTS:
            result = asyncio.run(_events_child(args.child, args.n))
        elif args.child in TURN_CLIENTS:
            result = asyncio.run(_turns_child(args.child, args.n))
        else:
            result = asyncio.run(_parallel_child(args.child))
        print(json.dumps(result))
        return
    server, port = _start_server()
    try:
        stream: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        turns: list[dict[str, Any]] = []
        parallel: list[dict[str, Any]] = []
        for rep in range(args.reps):
            if args.only in (None, "stream"):
                stream += [_run_child(c, n, port) for n in args.tokens for c in STREAM_CLIENTS]
                events += [_run_child(c, n, port) for n in args.tokens for c in EVENT_CLIENTS]
            if args.only in (None, "turns"):
                turns += [_run_child(c, n, port) for n in args.turns for c in TURN_CLIENTS]
            if args.only in (None, "parallel"):
                parallel += [_run_child(c, 8, port) for c in PARALLEL_CLIENTS]
            print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr)
        if stream:
            _report_stream(stream, *args.tokens)
            _report_events(events, stream, *args.tokens)
        if turns:
            _report_turns(turns, *args.turns)
        if parallel:
            _report_parallel(parallel)
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
