"""What a ``%%pi`` run adds to the model requests its agent makes: ``--temperature``,
``--timeout``, ``--seed`` where the model's API has one, and a local server's real context
window.

They reach the agent as ``AgentRunOptions`` for that run only (``run_options``): the
conversation's ``Agent`` is never changed, and its own ``stream_fn`` and ``on_payload`` still run.

* ``--temperature`` goes into the stream options every provider reads (Anthropic drops it
  while thinking is on, as Pi does).
* ``--timeout`` becomes the stream options' ``timeout_ms``, an idle timeout (see
  ``ai/http.py``), as Pi's coding agent passes its ``httpIdleTimeoutMs``; 0 (no limit) is
  the largest 32-bit number of milliseconds (``config.timeout_ms``), as there, since a
  timeout of 0 ms would fail at once.
* ``--seed`` exists in OpenAI-compatible chat completions (OpenAI, and llama.cpp, Ollama,
  LM Studio and vLLM through that API); Pi's options have no seed, so it is added to the
  request body of ``openai-completions`` models and reported as ignored for the others.
* A model of a local server (``llama.cpp:``, ``ollama:``, ``lmstudio:``, ``vllm:``) starts
  with a guessed context window; ``local_probe.probed_model`` asks the server once (cached
  per server and model) so the window and ``max_tokens`` are the server's own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...agent import AgentRunOptions, AgentTool
from ...agent.types import BeforeToolCallHook, TurnContext
from ...ai.local_probe import probed_model
from ...ai.models import LOCAL_SERVERS
from ...ai.options import OnPayload
from ...ai.types import Model
from ...runtime import AgentSession
from ..config import timeout_ms
from ..options import RunOptions

__all__ = [
    "SEED_APIS",
    "probe_local_server",
    "run_options",
    "seed_notice",
    "seed_payload",
    "silent_server_bound",
]

SEED_APIS = frozenset({"openai-completions"})


def seed_notice(seed: int | None, model: Model) -> str | None:
    """One line when ``--seed`` cannot reach ``model``'s API."""
    if seed is None or model.api in SEED_APIS:
        return None
    return (
        f"--seed is ignored: the API of {model.provider}:{model.id} takes no seed "
        "(only OpenAI-compatible chat completions do)."
    )


def silent_server_bound(timeout: float, retries: int, base_delay: float) -> float | None:
    """The longest one model call can wait on a server that accepts the request and never
    answers: each attempt ends at the idle ``timeout`` and is retried (a timeout is transient),
    plus the waits between attempts; ``None`` without a timeout (it waits until Stop or an
    interrupt). A server that trickles bytes slower than the timeout is not bounded by it."""
    if timeout <= 0:
        return None
    waits = sum(base_delay * 2.0**n for n in range(retries))
    return (retries + 1) * timeout + waits


async def probe_local_server(session: AgentSession) -> None:
    """Give a local server's model the server's own context window (never raises)."""
    model = session.model
    if model is not None and model.provider in LOCAL_SERVERS and model.base_url:
        session.refresh_model(await probed_model(model))


def seed_payload(seed: int) -> OnPayload:
    """The run's ``on_payload`` for ``--seed``: the seed in the body of an API that has one
    (it runs after the agent's own ``on_payload``, on the payload that one returned)."""

    def on_payload(payload: dict[str, Any], model: Model) -> dict[str, Any] | None:
        return {**payload, "seed": seed} if model.api in SEED_APIS else None

    return on_payload


def run_options(
    options: RunOptions,
    *,
    tools: Sequence[AgentTool],
    before_tool_call: BeforeToolCallHook,
    should_stop_after_turn: Callable[[TurnContext], Any],
) -> AgentRunOptions:
    """What one cell's options make of the run: its tools, approval gate, turn limit and the
    request settings (``--temperature``, ``--timeout``, ``--seed``), for that run only."""
    return AgentRunOptions(
        tools=tools,
        before_tool_call=before_tool_call,
        should_stop_after_turn=should_stop_after_turn,
        on_payload=None if options.seed is None else seed_payload(options.seed),
        temperature=options.temperature,
        timeout_ms=timeout_ms(options.timeout),
    )
