"""What a long conversation adds to a one-token request: CPU per request after 0, 100, 1,000 and
3,000 earlier messages, through ``pi_notebook.ai.stream``, ``Agent`` and ``AgentSession``,
against a floor that sends the same bytes, side by side in one run.

Every (client, N, repetition) runs in a fresh subprocess against ``bench.server`` (one-token
answers on ``/n/1/chat/completions``, an ``openai-completions`` model on 127.0.0.1). The child
builds N earlier messages (repeating user question, assistant text + a ``read`` tool call, its
tool result of ~300 characters, assistant answer of ~300 characters; every assistant message
with usage, as real ones carry), makes 3 untimed requests, then 20 timed ones, each adding the
user's "hi" and the answer to the conversation as a real one would, and reports the median CPU
(``time.process_time``) per request. Repetitions are interleaved (every N and client, then the
next repetition), so load from other processes hits every client alike.

Clients:

* ``floor``: the request body pi sends for the same conversation (captured once, untimed,
  through ``on_payload``), as wire-format dicts; per request: append the new messages as wire
  dicts, ``json.dumps`` the whole body, one ``httpx`` streaming request, ``json.loads`` of each
  ``data:`` line. What a request must cost: its bytes.
* ``ai``: ``pi_notebook.ai.stream`` of a ``Context`` holding the conversation's messages.
* ``agent``: ``Agent.prompt("hi")`` on an agent holding them.
* ``session``: ``AgentSession.prompt("hi")`` on a session whose file (on disk) holds them.

The report gives the median CPU ms per request at each N and the slope: the least-squares line
through the medians, in ms per 1,000 earlier messages, and each client's slope / the floor's.

Run from the repository root: ``.venv/bin/python -m bench.bench_history`` (``--reps N``,
``--sizes 0 100 1000 3000``; ``--before TREE`` runs ``ai``, ``agent`` and ``session`` on another
tree's ``pi_notebook`` too, interleaved, e.g. ``git archive 44d7c5e | tar -x -C /tmp/before``;
``--profile CLIENT`` prints a cProfile of one child at the largest size instead).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench.bench_stream import _start_server

CLIENTS = ("floor", "ai", "agent", "session")
SIZES = (0, 100, 1000, 3000)
MODEL = "gpt-4.1-mini"
WARMUP = 3
REQUESTS = 20
ANSWER = " w0"


def history(n: int) -> list[Any]:
    """``n`` earlier messages of a tool-using conversation (a whole number of turns of 4, cut)."""
    from pi_notebook.ai.types import (
        AssistantMessage,
        TextContent,
        ToolCall,
        ToolResultMessage,
        Usage,
        UserMessage,
    )

    def usage(i: int) -> Usage:
        return Usage(input=1000 + i, output=80, total_tokens=1080 + i)

    out: list[Any] = []
    i = 0
    while len(out) < n:
        call = f"call_{i:06d}"
        out += [
            UserMessage(
                content=f"Question {i}: what does the function in module_{i}.py do, and is it tested?"
            ),
            AssistantMessage(
                content=[
                    TextContent(text=f"Let me read module_{i}.py first."),
                    ToolCall(id=call, name="read", arguments={"path": f"src/module_{i}.py"}),
                ],
                api="openai-completions",
                provider="local",
                model=MODEL,
                usage=usage(i),
                stop_reason="toolUse",
            ),
            ToolResultMessage(
                tool_call_id=call,
                tool_name="read",
                content=[TextContent(text=f"def f_{i}(x):\n    return x * {i}\n" + "# padding line\n" * 18)],
            ),
            AssistantMessage(
                content=[TextContent(text=f"module_{i}.py defines f_{i}, which multiplies by {i}. " * 6)],
                api="openai-completions",
                provider="local",
                model=MODEL,
                usage=usage(i),
            ),
        ]
        i += 1
    return out[:n]


# --- the clients -------------------------------------------------------------------------------


def _model(port: int) -> Any:
    from pi_notebook.ai import openai_compatible_model

    return openai_compatible_model(MODEL, f"http://127.0.0.1:{port}/n/1", provider="local", register=False)


async def _pi_body(model: Any, messages: list[Any]) -> dict[str, Any]:
    """The body pi sends for ``messages`` (the floor's starting point, captured untimed)."""
    from pi_notebook.ai import Context, stream

    captured: list[dict[str, Any]] = []

    def keep(payload: Any, _model: Any) -> None:
        captured.append(json.loads(json.dumps(payload)))

    await stream(model, Context(messages=messages), {"on_payload": keep}).result()
    return captured[0]


class Floor:
    def __init__(self, port: int, body: dict[str, Any]) -> None:
        import httpx

        self.url = f"http://127.0.0.1:{port}/n/1/chat/completions"
        self.body = body
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(connect=30.0, read=600.0, write=60.0, pool=30.0)
        )

    async def one(self) -> str:
        messages = self.body["messages"]
        messages.append({"role": "user", "content": "hi"})
        payload = json.dumps(self.body, ensure_ascii=False).encode()
        parts: list[str] = []
        headers = {"content-type": "application/json"}
        async with self.client.stream("POST", self.url, content=payload, headers=headers) as response:
            buf = b""
            async for raw in response.aiter_raw():
                buf += raw
                lines = buf.split(b"\n")
                buf = lines.pop()
                for line in lines:
                    if line.startswith(b"data: ") and line != b"data: [DONE]":
                        choices = json.loads(line[6:])["choices"]
                        if choices and choices[0]["delta"].get("content"):
                            parts.append(choices[0]["delta"]["content"])
        text = "".join(parts)
        messages.append({"role": "assistant", "content": text})
        return text


class Ai:
    def __init__(self, port: int, messages: list[Any]) -> None:
        self.model = _model(port)
        self.messages = messages

    async def one(self) -> str:
        from pi_notebook.ai import Context, UserMessage, stream

        self.messages.append(UserMessage(content="hi"))
        answer = await stream(self.model, Context(messages=self.messages)).result()
        self.messages.append(answer)
        return "".join(b.text for b in answer.content if b.type == "text")


def _text(messages: list[Any]) -> str:
    last = messages[-1]
    if last.role != "assistant" or last.stop_reason != "stop":
        raise SystemExit(f"unexpected answer: {last!r}")
    return "".join(b.text for b in last.content if b.type == "text")


class AgentClient:
    def __init__(self, port: int, messages: list[Any]) -> None:
        from pi_notebook.agent import Agent

        self.agent = Agent(initial_state={"model": _model(port), "messages": messages})

    async def one(self) -> str:
        await self.agent.prompt("hi")
        return _text(self.agent.state.messages)


class SessionClient:
    def __init__(self, port: int, messages: list[Any], folder: str) -> None:
        from pi_notebook.runtime import AgentSession
        from pi_notebook.session import SessionManager

        manager = SessionManager.create(folder, f"{folder}/sessions")
        for message in messages:
            manager.append_message(message)
        self.session = AgentSession.create(cwd=folder, model=_model(port), session_manager=manager)
        # what a resumed session's agent holds (as ``navigate_tree`` sets it)
        self.session.agent.state.messages = manager.build_session_context().messages

    async def one(self) -> str:
        await self.session.prompt("hi")
        return _text(self.session.messages)


async def _child(client: str, n: int, port: int, profile: bool) -> dict[str, Any]:
    messages = history(n)
    with tempfile.TemporaryDirectory() as folder:
        if client == "floor":
            runner: Any = Floor(port, await _pi_body(_model(port), messages))
        elif client == "ai":
            runner = Ai(port, messages)
        elif client == "agent":
            runner = AgentClient(port, messages)
        else:
            runner = SessionClient(port, messages, folder)
        for _ in range(WARMUP):
            await runner.one()
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        cpus: list[float] = []
        for _ in range(REQUESTS):
            cpu0 = time.process_time()
            if await runner.one() != ANSWER:
                raise SystemExit(f"{client}: wrong answer")
            cpus.append(time.process_time() - cpu0)
        if profiler is not None:
            import pstats

            profiler.disable()
            stats = pstats.Stats(profiler, stream=sys.stderr)
            stats.sort_stats(os.environ.get("BENCH_SORT", "cumulative")).print_stats(
                int(os.environ.get("BENCH_TOP", "45"))
            )
    return {"client": client, "n": n, "cpu": statistics.median(cpus)}


# --- the driver ----------------------------------------------------------------------------------


def _run_child(
    client: str, n: int, port: int, profile: bool = False, tree: str | None = None
) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.bench_history", "--child", client, "--n", str(n), "--port", str(port)]
    if profile:
        cmd.append("--profile-child")
    if tree:
        cmd += ["--tree", tree]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True, timeout=600)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if tree:
        result["client"] += " (before)"
    return result


def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of (messages, seconds), in ms per 1,000 messages."""
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    num = sum((x - mx) * (y - my) for x, y in points)
    den = sum((x - mx) ** 2 for x in xs)
    return num / den * 1e6


def report(results: list[dict[str, Any]], sizes: list[int], clients: list[str]) -> None:
    def median_cpu(client: str, n: int) -> float:
        return float(statistics.median(r["cpu"] for r in results if r["client"] == client and r["n"] == n))

    reps = sum(1 for r in results if r["client"] == clients[0] and r["n"] == sizes[0])
    print(f"CPU ms per one-token request (median of {reps} runs x {REQUESTS} requests)")
    print("client          " + "".join(f"{f'@{n}':>10}" for n in sizes) + "  ms/1000 msgs  / floor")
    slopes = {c: slope([(n, median_cpu(c, n)) for n in sizes]) for c in clients}
    for c in clients:
        cells = "".join(f"{median_cpu(c, n) * 1000:>10.2f}" for n in sizes)
        ratio = slopes[c] / slopes["floor"] if "floor" in slopes and slopes["floor"] > 0 else float("nan")
        print(f"{c:<16}{cells}  {slopes[c]:>12.2f}  {ratio:>7.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--clients", nargs="+", default=list(CLIENTS), choices=CLIENTS)
    parser.add_argument("--profile", choices=CLIENTS)
    parser.add_argument(
        "--before",
        metavar="TREE",
        help="also run ai, agent and session on the pi_notebook of TREE (e.g. a git archive of an "
        "older commit), interleaved with this tree's",
    )
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    parser.add_argument("--child", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--profile-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        if args.tree:
            sys.path.insert(0, args.tree)  # pi_notebook from there (imported only from here on)
        print(json.dumps(asyncio.run(_child(args.child, args.n, args.port, args.profile_child))))
        return
    server, port = _start_server()
    try:
        if args.profile:
            _run_child(args.profile, max(args.sizes), port, profile=True)
            return
        runs = [(c, None) for c in args.clients]
        if args.before:
            runs += [(c, args.before) for c in args.clients if c != "floor"]
        for client, tree in runs:  # compile the sources once, untimed
            _run_child(client, 0, port, tree=tree)
        results: list[dict[str, Any]] = []
        for rep in range(args.reps):
            for n in args.sizes:
                for client, tree in runs:
                    results.append(_run_child(client, n, port, tree=tree))
            print(f"repetition {rep + 1}/{args.reps} done", file=sys.stderr)
        labels = [c if tree is None else f"{c} (before)" for c, tree in runs]
        report(results, args.sizes, labels)
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
