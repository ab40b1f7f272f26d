"""Spending limits (``Budget``) of one run and of a conversation, the spend they are held
against (``Spend``), the meter of one run (``BudgetMeter``) and what an ``AgentSession`` keeps
for its budgets (``SessionBudgets``: the conversation's budget and spend, the running meter).

Pi has no budgets; this is an addition. A budget limits US dollars (``max_cost``), tokens
(``max_total_tokens``), or both. Tokens are everything the requests processed: input, cached
or not (``input + cache_read + cache_write`` in Pi's usage) plus output; every request of a
run counts, so a turn that resends a long context counts it again, as the provider bills it.
Dollars are the usage priced with the model's catalogue prices (``ai.cost``), so a model
without prices cannot keep a cost budget (``check_priced``), while a token budget still works.

The spend is counted from the usage that streams in: each ``message_update`` partial carries
what the provider has reported so far (Anthropic: the input when the message starts, the
output when it ends; OpenAI-compatible servers that report usage in every chunk: as they go;
the faux provider: its estimate from the first event), and each finished answer its final
usage. ``BudgetMeter.reached`` is asked on every such report; the session stops the run the
first time it says so (see ``AgentSession``).

Servers that report usage late (an OpenAI-compatible server's last chunk) or never are held by
the session's estimate (``estimate.py``): before each request is sent its body is estimated,
and a request that alone would reach a budget is not sent; while the answer streams, its
output is counted as it arrives, and the run stops mid-stream once the estimate reaches the
budget. Only a streamed delta or start stops the run there: the end of a block or the usage of
a finished answer never turns that answer into an aborted one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..agent import AgentRunOptions
from ..agent.tools import resolve
from ..agent.types import TurnContext
from ..ai.abort import AbortError
from ..ai.types import Model, Usage
from .estimate import DELTAS, StreamEstimate

__all__ = [
    "Budget",
    "BudgetMeter",
    "Spend",
    "check_priced",
    "format_usd",
    "has_prices",
    "reached",
    "tokens_of",
]


@dataclass(frozen=True, slots=True)
class Budget:
    """A spending limit; a field left ``None`` sets no limit of that kind."""

    max_cost: float | None = None
    """US dollars, as the model's catalogue prices the usage."""
    max_total_tokens: int | None = None
    """Input (cached or not) plus output tokens, over every request the limit covers."""

    def __post_init__(self) -> None:
        cost = self.max_cost
        if cost is not None and (isinstance(cost, bool) or not math.isfinite(cost) or cost <= 0):
            raise ValueError(f"max_cost takes a positive number of US dollars, e.g. 0.50, not {cost!r}")
        tokens = self.max_total_tokens
        if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1):
            raise ValueError(f"max_total_tokens takes a positive whole number of tokens, not {tokens!r}")

    @property
    def limited(self) -> bool:
        return self.max_cost is not None or self.max_total_tokens is not None


def has_prices(model: Model) -> bool:
    """Whether the catalogue prices ``model`` (any price above zero, a tier included)."""
    prices = model.cost
    rates = [prices, *(prices.tiers or ())]
    return any(r.input or r.output or r.cache_read or r.cache_write for r in rates)


def check_priced(
    budget: Budget | None, model: Model, what: str = "max_cost", instead: str = "max_total_tokens"
) -> None:
    """Raise ``ValueError`` when ``budget`` limits dollars and ``model`` has no prices (the
    spend could never be counted: the budget would never stop anything)."""
    if budget is not None and budget.max_cost is not None and not has_prices(model):
        raise ValueError(
            f"{what} needs the model's prices, and {model.provider}:{model.id} has none in the "
            f"catalogue: limit tokens instead ({instead})"
        )


def tokens_of(usage: Usage) -> int:
    """The tokens a budget counts for one request: input, cached or not, plus output."""
    return usage.input + usage.output + usage.cache_read + usage.cache_write


def format_usd(amount: float) -> str:
    """Dollars for a one-line reason: cents from a cent up (``$0.52``), else two significant
    digits (``$0.0031``), so a small spend never reads as ``$0.00``."""
    if amount <= 0:
        return "$0.00"
    if amount >= 0.01:
        return f"${amount:,.2f}"
    decimals = 1 - math.floor(math.log10(amount))
    return f"${amount:.{decimals}f}"


@dataclass(slots=True)
class Spend:
    """Usage added up: the answers of a run, of a conversation, of a session file."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    answers: int = 0
    """Assistant messages counted (each one model request)."""
    estimated: int = 0
    """Of those, the answers whose usage the session completed with its estimate."""

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def add(self, usage: Usage) -> None:
        self.input += usage.input
        self.output += usage.output
        self.cache_read += usage.cache_read
        self.cache_write += usage.cache_write
        self.cost += usage.cost.total
        self.answers += 1
        self.estimated += bool(usage.estimated)

    def copy(self) -> Spend:
        return replace(self)


def reached(scope: str, budget: Budget | None, spent: Spend) -> str | None:
    """``"the conversation reached its budget of $2.00 ($2.01 spent)"`` when ``spent`` has
    reached ``budget`` (``scope`` names whose budget it is), else ``None``."""
    return _reached(scope, budget, spent.tokens, spent.cost)


def _reached(scope: str, budget: Budget | None, tokens: int, cost: float) -> str | None:
    if budget is None:
        return None
    if budget.max_cost is not None and cost >= budget.max_cost:
        return f"the {scope} reached its budget of {format_usd(budget.max_cost)} ({format_usd(cost)} spent)"
    if budget.max_total_tokens is not None and tokens >= budget.max_total_tokens:
        limit = budget.max_total_tokens
        return f"the {scope} reached its budget of {limit:,} token{'s' * (limit != 1)} ({tokens:,} used)"
    return None


class BudgetMeter:
    """One run's spend held against the run's budget and the conversation's (whose earlier
    spend is ``before``). ``reason`` is the one-line reason once either is reached."""

    __slots__ = ("_cost_at", "_tokens_at", "before", "conversation", "reason", "run", "spent")

    def __init__(self, run: Budget | None, conversation: Budget | None, before: Spend) -> None:
        self.run, self.conversation, self.before = run, conversation, before.copy()
        self.spent = Spend()
        """The run's finished answers."""
        self.reason: str | None = None
        self._tokens_at = self._cost_at = math.inf
        self._thresholds()

    def add(self, usage: Usage) -> None:
        """A finished answer's usage is spent."""
        self.spent.add(usage)
        self._thresholds()

    def _thresholds(self) -> None:
        """The tokens and the dollars an answer in flight must reach before any budget can be:
        below both, ``reached`` is two comparisons (it is asked on every streamed update)."""
        spent, before = self.spent, self.before
        tokens, cost = [math.inf], [math.inf]
        for budget, base in ((self.run, Spend()), (self.conversation, before)):
            if budget is not None and budget.max_total_tokens is not None:
                tokens.append(budget.max_total_tokens - base.tokens - spent.tokens)
            if budget is not None and budget.max_cost is not None:
                cost.append(budget.max_cost - base.cost - spent.cost)
        self._tokens_at, self._cost_at = min(tokens), min(cost)

    def reached(self, in_flight: Usage | None = None) -> str | None:
        """The reason, the first time the spend (with the answer still streaming) reaches a
        budget; ``None`` before that and after (the reason is kept in ``reason``)."""
        if self.reason is not None:
            return None
        tokens, cost = 0, 0.0
        if in_flight is not None:
            u = in_flight  # the per-token path: two sums and two comparisons, no call
            tokens, cost = u.input + u.output + u.cache_read + u.cache_write, u.cost.total
            if tokens < self._tokens_at and cost < self._cost_at:
                return None
        return self.reached_with(tokens, cost, estimated=False)

    def reached_with(self, tokens: int, cost: float, *, estimated: bool) -> str | None:
        """``reached`` for an answer in flight of ``tokens`` and ``cost`` (``estimated``: the
        session's estimate counted, and the reason says so)."""
        if self.reason is not None or (tokens < self._tokens_at and cost < self._cost_at):
            return None
        tokens, cost = tokens + self.spent.tokens, cost + self.spent.cost
        before = self.before
        phrase = _reached("run", self.run, tokens, cost) or _reached(
            "conversation", self.conversation, before.tokens + tokens, before.cost + cost
        )
        if phrase is not None and estimated:
            phrase = phrase[:-1] + ", estimated: the server had not said yet)"
        self.reason = None if phrase is None else f"stopped: {phrase}"
        return self.reason

    def refuse(self, sent: int, cost: float) -> str | None:
        """Before a request of ``sent`` estimated tokens (``cost`` dollars) goes out: the reason
        not to send it, when it would reach a budget by itself (it would be spent before the
        stream could be cut)."""
        if self.reason is not None or (sent < self._tokens_at and cost < self._cost_at):
            return None
        tokens, dollars = self.spent.tokens + sent, self.spent.cost + cost
        phrase = _reached("run", self.run, tokens, dollars) or _reached(
            "conversation", self.conversation, self.before.tokens + tokens, self.before.cost + dollars
        )
        if phrase is None:
            return None
        which = "the first request" if self.spent.answers == 0 else "the next request"
        scope, rest = phrase.split(" reached its ", 1)  # "the run", "budget of 300 tokens (...)"
        self.reason = (
            f"stopped before sending: {which} is about {sent:,} tokens (estimated: prompt, tools "
            f"and conversation), which would reach {scope}'s {rest.rsplit(' (', 1)[0]}; raise the "
            "budget or send less"
        )
        return self.reason

    def with_stop(self, run: AgentRunOptions | None) -> AgentRunOptions:
        """``run`` whose ``should_stop_after_turn`` also stops once a budget is reached (an
        answer that ends the run's spend without asking for tools still ends its turn)."""
        own = run.should_stop_after_turn if run is not None else None

        async def should_stop(ctx: TurnContext) -> Any:
            stop = own is not None and bool(await resolve(own(ctx)))
            return stop or self.reason is not None

        return replace(run or AgentRunOptions(), should_stop_after_turn=should_stop)


CONVERSATION_SPENT = "{phrase}: raise the session's budget (or set it to None) to go on"


class SessionBudgets:
    """What an ``AgentSession`` keeps for its budgets: the conversation's ``budget``, its
    ``spent`` so far (every answer this session received), the meter of the run in progress
    and the reason the last run stopped for (``reason``). ``emit`` reports a reached budget,
    ``stop`` aborts the agent's run."""

    __slots__ = ("_emit", "_stop", "budget", "estimate", "meter", "reason", "spent")

    def __init__(self, emit: Callable[[str], None], stop: Callable[[], None]) -> None:
        self.budget: Budget | None = None
        self.spent = Spend()
        self.meter: BudgetMeter | None = None
        self.reason: str | None = None
        self.estimate = StreamEstimate()
        """The request in flight and its answer, estimated (``estimate.py``)."""
        self._emit, self._stop = emit, stop

    def check(self, run: Budget | None, model: Model) -> None:
        """Before a run: a dollar budget needs a priced model (``ValueError``); a conversation
        whose budget is spent does not start another run (``RuntimeError``)."""
        check_priced(run, model)
        check_priced(self.budget, model, "the conversation's max_cost")
        phrase = reached("conversation", self.budget, self.spent)
        if phrase is not None:
            raise RuntimeError(CONVERSATION_SPENT.format(phrase=phrase[0].upper() + phrase[1:]))

    def start(self, budget: Budget | None, run: AgentRunOptions | None) -> AgentRunOptions | None:
        """Meter the run when a budget applies; returns the run options it goes with."""
        self.reason = None
        limits = [b for b in (budget, self.budget) if b is not None and b.limited]
        if not limits:
            self.meter = None
            return run
        self.meter = BudgetMeter(budget, self.budget, self.spent)
        return self.meter.with_stop(run)

    @property
    def stopped(self) -> bool:
        """The run in progress reached a budget: nothing continues it (no retry, no follow-up)."""
        return self.meter is not None and self.meter.reason is not None

    def with_estimate(self, run: AgentRunOptions | None) -> AgentRunOptions:
        """``run`` whose ``on_payload`` (after the run's own) estimates each request as it is
        sent, and does not send one that alone would reach a budget (the run stops instead)."""
        run = run or AgentRunOptions()
        own = run.on_payload

        async def on_payload(payload: dict[str, Any], model: Model) -> dict[str, Any] | None:
            replaced = await resolve(own(payload, model)) if own is not None else None
            sent = self.estimate.request(payload if replaced is None else replaced, model)
            meter = self.meter
            if meter is not None:
                cost = sent * model.cost.input / 1e6
                if (reason := meter.refuse(sent, cost)) is not None:
                    self.estimate.sent = 0  # not sent: nothing to count
                    self._report(reason, stop=True)
                    raise AbortError(reason)
            return replaced

        return replace(run, on_payload=on_payload)

    def started(self, usage: Usage) -> None:
        """An answer started (with what its server reported at once, e.g. Anthropic's input)."""
        self.estimate.answer_started()
        meter = self.meter
        if meter is not None:
            self._streamed(meter, usage, stop=True)

    def streamed(self, usage: Usage, inner: Any) -> None:
        """An answer in progress streamed ``inner`` and reported ``usage`` so far: a budget the
        reported or estimated spend reaches stops the run now, on a delta or a block's start
        (the end of a block, or the usage of a finished answer, leaves the answer whole)."""
        kind, estimate = inner.type, self.estimate
        if kind in DELTAS:
            estimate.chars += len(inner.delta)
        meter = self.meter
        if meter is None:
            return
        # the per-token path: a bound of the tokens and dollars in flight, two comparisons
        tokens = (usage.input + usage.cache_read + usage.cache_write or estimate.sent) + (
            usage.output or (estimate.chars + 3) // 4
        )
        if tokens < meter._tokens_at and usage.cost.total + estimate.rate * tokens < meter._cost_at:
            return
        self._streamed(meter, usage, stop=kind.endswith(("_delta", "_start")) or kind == "start")

    def _streamed(self, meter: BudgetMeter, usage: Usage, *, stop: bool) -> None:
        tokens, cost, estimated = self.estimate.tokens(usage)
        if (reason := meter.reached_with(tokens, cost, estimated=estimated)) is not None:
            self._report(reason, stop=stop)

    def complete(self, message: Any) -> None:
        """Before an ended answer is told to anyone: its usage completed by the estimate where
        the server said nothing (``StreamEstimate.fill``)."""
        self.estimate.fill(message)

    def ended(self, message: Any) -> None:
        """An answer ended: its usage (completed by the estimate where the server said
        nothing) is spent. A budget it reaches stops the run at once when tools would run next
        (they get "Operation aborted" results, as after Stop); a plain answer keeps its ending,
        and the turn's end stops the run (``with_stop``)."""
        self.spent.add(message.usage)
        meter = self.meter
        if meter is not None:
            meter.add(message.usage)
            tools_next = message.stop_reason == "toolUse"
            reason = meter.reached()
            if reason is not None:
                self._report(reason, stop=tools_next)
            elif meter.reason is not None and tools_next:  # reached at the answer's last event
                self._stop()

    def _report(self, reason: str | None, *, stop: bool) -> None:
        if reason is None:
            return
        self.reason = reason
        self._emit(reason)
        if stop:
            self._stop()

    def finish(self) -> None:
        self.meter = None
