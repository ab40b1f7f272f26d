"""Cost of a response from its usage and the model's prices (Pi's ``calculateCost``).

Prices are USD per million tokens. ``usage.input`` is uncached input; a tiered model prices
the whole request at the tier whose ``input_tokens_above`` is the largest one strictly below
the request's total input (uncached + cache reads + cache writes). Anthropic's 1-hour cache
writes (``cache_write1h``, a subset of ``cache_write``) cost twice the base input price.
"""

from __future__ import annotations

from .types import Cost, CostTier, Model, ModelCost, Usage

__all__ = ["calculate_context_tokens", "calculate_cost"]


def _rates(prices: ModelCost, input_tokens: int) -> ModelCost | CostTier:
    chosen: ModelCost | CostTier = prices
    threshold = -1
    for tier in prices.tiers or ():
        if input_tokens > tier.input_tokens_above > threshold:
            chosen, threshold = tier, tier.input_tokens_above
    return chosen


def calculate_cost(model: Model, usage: Usage) -> Cost:
    """Set ``usage.cost`` from ``model.cost`` and return it (the same object)."""
    input_tokens = usage.input + usage.cache_read + usage.cache_write
    rates = _rates(model.cost, input_tokens)
    one_hour = usage.cache_write1h or 0
    cost = usage.cost
    cost.input = rates.input / 1_000_000 * usage.input
    cost.output = rates.output / 1_000_000 * usage.output
    cost.cache_read = rates.cache_read / 1_000_000 * usage.cache_read
    cost.cache_write = (
        rates.cache_write * (usage.cache_write - one_hour) + rates.input * 2 * one_hour
    ) / 1_000_000
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    return cost


def calculate_context_tokens(usage: Usage) -> int:
    """Tokens the request occupied: the provider's total, else the sum of the parts."""
    return usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write
