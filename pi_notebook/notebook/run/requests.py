"""What a ``%%pi`` run adds to the model requests its agent makes: ``--temperature``,
``--timeout``, ``--seed`` where the model's API has one, and a local server's real context
window.

All are set for one run and removed after it: the conversation's ``Agent`` keeps the
user's own ``stream_fn`` and ``on_payload``, which still run (ours wrap them).

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

import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any

from ...agent import Agent
from ...ai.local_probe import probed_model
from ...ai.models import LOCAL_SERVERS
from ...ai.options import OnPayload
from ...ai.types import Model
from ..config import timeout_ms

__all__ = ["SEED_APIS", "RequestSettings", "seed_notice"]

SEED_APIS = frozenset({"openai-completions"})


def seed_notice(seed: int | None, model: Model) -> str | None:
    """One line when ``--seed`` cannot reach ``model``'s API."""
    if seed is None or model.api in SEED_APIS:
        return None
    return (
        f"--seed is ignored: the API of {model.provider}:{model.id} takes no seed "
        "(only OpenAI-compatible chat completions do)."
    )


class RequestSettings:
    """Installs a run's request settings on ``agent`` (``install``) and removes them (``restore``)."""

    def __init__(
        self, agent: Agent, *, temperature: float | None, seed: int | None, timeout: float | None = None
    ) -> None:
        self.agent = agent
        self.temperature = temperature
        self.seed = seed
        self.timeout = timeout
        self._saved: tuple[Any, OnPayload | None] | None = None

    def install(self) -> None:
        agent = self.agent
        self._saved = (agent.stream_fn, agent.on_payload)
        fields: dict[str, Any] = {}
        if self.temperature is not None:
            fields["temperature"] = self.temperature
        if self.timeout is not None:
            fields["timeout_ms"] = timeout_ms(self.timeout)
        if fields:
            agent.stream_fn = _with_options(agent.stream_fn, fields)
        if self.seed is not None:
            agent.on_payload = self._with_seed(agent.on_payload)

    def restore(self) -> None:
        if self._saved is not None:
            self.agent.stream_fn, self.agent.on_payload = self._saved
            self._saved = None

    async def probe_local_server(self) -> None:
        """Give a local server's model the server's own context window (never raises)."""
        model = self.agent.state.model
        if model.provider in LOCAL_SERVERS and model.base_url:
            self.agent.state.model = await probed_model(model)

    def _with_seed(self, inner: OnPayload | None) -> OnPayload:
        seed = self.seed

        async def on_payload(payload: dict[str, Any], model: Model) -> dict[str, Any] | None:
            if inner is not None:
                replaced = inner(payload, model)
                if inspect.isawaitable(replaced):
                    replaced = await replaced
                if replaced is not None:
                    payload = replaced
            if model.api in SEED_APIS:
                payload = {**payload, "seed": seed}
            return payload

        return on_payload


def _with_options(inner: Any, fields: dict[str, Any]) -> Any:
    """``inner`` with ``fields`` set in the stream options of every call."""

    def stream_fn(model: Model, context: Any, options: Any = None) -> Any:
        if dataclasses.is_dataclass(options) and not isinstance(options, type):
            options = dataclasses.replace(options, **fields)
        elif isinstance(options, Mapping):
            options = {**options, **fields}
        elif options is None:
            options = dict(fields)
        return inner(model, context, options)

    return stream_fn
