"""What a budget costs per streamed token, against the same session without one, measured
side by side in one run (not a test).

An ``AgentSession`` consumes a pre-built stream of ``n`` text deltas (``bench_agent``'s, no
HTTP, one partial mutated in place as the HTTP adapters do) with a listener that collects the
text: once without a budget, once with a run budget and a session budget that are never
reached, so the meter counts every update. The figure of merit is the marginal CPU per token,
``(median at large N - median at small N) / (large N - small N)``, and the ratio of the two.
Repetitions are interleaved so load from other processes hits both alike.

Run from the repository root: ``python -m bench.bench_budget`` (``--help``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from typing import Any

from bench.bench_agent import _prebuilt_stream

CLIENTS = ("no_budget", "budget")


async def _run(client: str, n: int) -> float:
    from pi_notebook import AgentSession
    from pi_notebook.ai.faux import register_faux_provider
    from pi_notebook.runtime import Budget
    from pi_notebook.session import SessionManager

    faux = register_faux_provider()  # a model for the session; the stream is the pre-built one
    stream = _prebuilt_stream(n)
    try:
        manager = SessionManager.in_memory(tempfile.gettempdir())
        session = AgentSession.create(
            model=faux.get_model(), session_manager=manager, stream_fn=lambda model, context, options: stream
        )
        parts: list[str] = []

        def listener(event: Any) -> None:
            update = event.assistant_message_event
            if update.type == "text_delta":
                parts.append(update.delta)

        session.subscribe(listener, {"message_update"})
        budget = None
        if client == "budget":
            session.budget = Budget(max_total_tokens=10**12)
            budget = Budget(max_total_tokens=10**12)
        cpu0 = time.process_time()
        await session.prompt("hi", budget=budget)
        cpu = time.process_time() - cpu0
        if len(parts) != n:
            raise SystemExit(f"{client}: {len(parts)} deltas, expected {n}")
        return cpu
    finally:
        faux.unregister()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--large", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args(argv)
    cpu: dict[tuple[str, int], list[float]] = {(c, n): [] for c in CLIENTS for n in (args.small, args.large)}
    for client in CLIENTS:
        asyncio.run(_run(client, 100))  # warm-up
    for _ in range(args.reps):
        for n in (args.small, args.large):
            for client in CLIENTS:
                cpu[client, n].append(asyncio.run(_run(client, n)))
    per_token = {
        c: (statistics.median(cpu[c, args.large]) - statistics.median(cpu[c, args.small]))
        / (args.large - args.small)
        for c in CLIENTS
    }
    for client in CLIENTS:
        print(f"{client:>10}: {per_token[client] * 1e6:.3f} µs CPU per token")
    print(f"budget / no_budget: {per_token['budget'] / per_token['no_budget']:.2f}x")


if __name__ == "__main__":
    main()
