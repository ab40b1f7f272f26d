"""What the request in flight sent and what its answer has streamed, estimated, for servers that
report usage late or never (``StreamEstimate``; an addition to Pi).

An OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio, OpenAI itself without
per-chunk usage) sends the usage only in the last chunk of a stream, and an answer cut short
(Stop, a budget, a dropped connection) often gets none. So that budgets hold and stopped or
failed runs do not read ``0 in / 0 out``, the session estimates, with Pi's four characters per
token: the request from its JSON body when it is sent (an image counts as Pi's estimate of
one, not its base64 text), the answer from the text, thinking and tool-call argument deltas as
they stream. Wherever the server said something its number wins; a usage the session
completed with an estimate carries ``estimated=True``.
"""

from __future__ import annotations

import math
from typing import Any

from ..ai.simple_options import CHARS_PER_TOKEN, ESTIMATED_IMAGE_CHARS
from ..ai.types import AssistantMessage, Model, Usage

__all__ = ["DELTAS", "StreamEstimate", "payload_tokens"]

DELTAS = frozenset({"text_delta", "thinking_delta", "toolcall_delta"})
_LONG = 2_000
"""A string this long without a space is taken for encoded data (an image, a file)."""
_NOT_SENT = frozenset({"connect", "http"})
"""Failures where the server did not take the request (unless an answer streamed: a connection
dropped mid-answer is a ``connect`` failure too): no input was processed."""


def payload_tokens(payload: Any) -> int:
    """Estimated tokens of a request body: its JSON's characters over four, an embedded image
    or other encoded data as one image."""
    return math.ceil(_chars(payload) / CHARS_PER_TOKEN)


def _chars(value: Any) -> int:
    if isinstance(value, str):
        if len(value) > _LONG and (value.startswith("data:") or " " not in value[:_LONG]):
            return ESTIMATED_IMAGE_CHARS
        return len(value) + 2
    if isinstance(value, dict):
        return 2 + sum(len(str(k)) + 3 + _chars(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return 2 + sum(_chars(v) + 1 for v in value)
    return len(str(value))


class StreamEstimate:
    """The estimate of one session's request in flight: ``sent`` tokens of its body (set when
    it is sent), ``chars`` of answer streamed since the answer started, and the model's prices
    to price them with."""

    __slots__ = ("chars", "model", "rate", "sent")

    def __init__(self) -> None:
        self.sent = 0
        self.chars = 0
        self.model: Model | None = None
        self.rate = 0.0
        """The model's dearest price per token (input or output): a bound of what an
        estimated token costs."""

    def request(self, payload: Any, model: Model) -> int:
        """A request is being sent: its estimated tokens (also returned)."""
        self.sent, self.model = payload_tokens(payload), model
        self.rate = max(model.cost.input, model.cost.output) / 1e6
        return self.sent

    def answer_started(self) -> None:
        self.chars = 0

    def streamed(self, inner: Any) -> None:
        """One streamed event of the answer (``message_update``'s assistant event)."""
        if inner.type in DELTAS:
            self.chars += len(inner.delta)

    @property
    def output(self) -> int:
        return math.ceil(self.chars / CHARS_PER_TOKEN)

    def tokens(self, usage: Usage) -> tuple[int, float, bool]:
        """Tokens and dollars of the answer in flight, the server's numbers where it gave any,
        else the estimate's; and whether an estimate counted."""
        given_in = usage.input + usage.cache_read + usage.cache_write
        inputs = given_in or self.sent
        outputs = usage.output or self.output
        estimated = inputs > given_in or outputs > usage.output
        cost = usage.cost.total
        if estimated and self.model is not None:
            rates = self.model.cost
            cost += ((inputs - given_in) * rates.input + (outputs - usage.output) * rates.output) / 1e6
        return inputs + outputs, cost, estimated

    def fill(self, message: AssistantMessage) -> bool:
        """Complete an ended answer's usage where the server said nothing: the request's input
        (unless the request never reached the server) and the streamed output. Returns whether
        it did (the usage then says ``estimated``)."""
        usage = message.usage
        failure = message.failure
        refused = failure is not None and failure.kind in _NOT_SENT and not self.chars  # none streamed
        sent = 0 if refused else self.sent
        add_in = sent if usage.input + usage.cache_read + usage.cache_write == 0 else 0
        add_out = self.output if usage.output == 0 else 0
        self.sent = 0  # a retry sends again, and is counted again
        if not (add_in or add_out):
            return False
        update: dict[str, Any] = {
            "input": usage.input + add_in,
            "output": usage.output + add_out,
            "total_tokens": usage.total_tokens + add_in + add_out,
            "estimated": True,
        }
        if self.model is not None:
            rates = self.model.cost
            extra_in, extra_out = add_in * rates.input / 1e6, add_out * rates.output / 1e6
            cost = usage.cost
            update["cost"] = cost.model_copy(
                update={
                    "input": cost.input + extra_in,
                    "output": cost.output + extra_out,
                    "total": cost.total + extra_in + extra_out,
                }
            )
        message.usage = usage.model_copy(update=update)
        return True
