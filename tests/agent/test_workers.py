"""The worker threads that run sync tool code (``pi_notebook.agent.workers``): results,
exceptions, context variables, true parallelism, the thread cap, and a caller that gives up."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading

import pytest

from pi_notebook.agent import workers
from pi_notebook.agent.workers import run_in_worker

REQUEST = contextvars.ContextVar("REQUEST", default="unset")


async def test_result_thread_and_context_variables() -> None:
    REQUEST.set("cell 7")

    def work(x: int, *, y: int) -> tuple[int, str, str]:
        return x + y, threading.current_thread().name, REQUEST.get()

    total, thread, seen = await run_in_worker(work, 1, y=2)
    assert (total, seen) == (3, "cell 7")
    assert thread.startswith("pi-tool")
    assert thread != threading.current_thread().name


async def test_the_functions_exception_is_raised_by_the_await() -> None:
    def broken() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        await run_in_worker(broken)


async def test_blocking_calls_run_in_parallel() -> None:
    """Eight calls that each wait for all eight: they only return if all run at once."""
    barrier = threading.Barrier(8, timeout=10)
    results = await asyncio.gather(*(run_in_worker(barrier.wait) for _ in range(8)))
    assert sorted(results) == list(range(8))


async def test_a_cancelled_caller_leaves_the_thread_to_finish_and_drops_its_result() -> None:
    release, finished = threading.Event(), threading.Event()
    errors: list[dict[str, object]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _loop, context: errors.append(context))

    def slow() -> str:
        release.wait(10)
        finished.set()
        return "late"

    task = asyncio.ensure_future(run_in_worker(slow))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert await asyncio.to_thread(finished.wait, 10)
    await asyncio.sleep(0.05)
    assert errors == []  # the dropped result did not hit the cancelled future
    assert await run_in_worker(lambda: "next") == "next"


async def test_jobs_beyond_the_cap_wait_for_a_free_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "MAX_WORKERS", 2)
    pool = workers._Pool()
    monkeypatch.setattr(workers, "_pool", pool)
    gate = threading.Event()
    names: list[str] = []

    def job() -> str:
        gate.wait(10)
        names.append(threading.current_thread().name)
        return "done"

    calls = [asyncio.ensure_future(run_in_worker(job)) for _ in range(5)]
    await asyncio.sleep(0.05)
    assert not any(call.done() for call in calls)
    gate.set()
    assert await asyncio.gather(*calls) == ["done"] * 5
    assert len(set(names)) == 2  # five jobs, two threads
    assert await run_in_worker(lambda: "again") == "again"  # the counts still add up


async def test_a_fast_call_comes_back_without_a_loop_iteration(monkeypatch: pytest.MonkeyPatch) -> None:
    """Returned within ``FAST_WAIT_S`` (made long here, so that a busy machine cannot make the
    test flaky), the result is taken at once: nothing else runs on the loop meanwhile."""
    monkeypatch.setattr(workers, "FAST_WAIT_S", 10.0)
    ran: list[str] = []
    asyncio.get_running_loop().call_soon(ran.append, "other")
    assert await run_in_worker(lambda: 42) == 42
    assert ran == []
    await asyncio.sleep(0)
    assert ran == ["other"]


async def test_a_slow_call_lets_the_loop_go_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "FAST_WAIT_S", 0.0)
    ticks: list[int] = []

    async def ticker() -> None:
        for i in range(3):
            ticks.append(i)
            await asyncio.sleep(0.01)

    def slow() -> str:
        threading.Event().wait(0.1)
        return "slow"

    task = asyncio.ensure_future(ticker())
    assert await run_in_worker(slow) == "slow"
    assert ticks == [0, 1, 2]
    await task


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
async def test_a_forked_child_starts_threads_of_its_own() -> None:
    """The parent's idle threads do not exist in a child; a job there must still run."""
    assert await run_in_worker(lambda: "warm") == "warm"  # the parent now has an idle thread
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a fresh loop, one job, the answer through the pipe
        answer = b"no answer in 10 s"
        try:
            answer = asyncio.run(asyncio.wait_for(run_in_worker(lambda: b"child ok"), 10))
        finally:
            os.write(write, answer)
            os._exit(0)
    os.close(write)
    answer = await asyncio.to_thread(os.read, read, 100)
    os.close(read)
    await asyncio.to_thread(os.waitpid, pid, 0)
    assert answer == b"child ok"
