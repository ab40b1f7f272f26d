"""Cost from usage (Pi's calculateCost): rates, tiers, 1-hour cache writes, context tokens."""

from __future__ import annotations

import pytest

from pi_notebook.ai.cost import calculate_context_tokens, calculate_cost
from pi_notebook.ai.types import Model, ModelCost, Usage


def model(**cost: object) -> Model:
    return Model(id="m", api="anthropic-messages", provider="p", cost=ModelCost.model_validate(cost))


def test_prices_each_kind_of_token_per_million() -> None:
    usage = Usage(input=1_000, output=500, cache_read=2_000, cache_write=100)
    cost = calculate_cost(model(input=3, output=15, cacheRead=0.3, cacheWrite=3.75), usage)
    assert cost is usage.cost  # mutated in place and returned
    assert cost.input == pytest.approx(0.003)
    assert cost.output == pytest.approx(0.0075)
    assert cost.cache_read == pytest.approx(0.0006)
    assert cost.cache_write == pytest.approx(0.000375)
    assert cost.total == pytest.approx(0.003 + 0.0075 + 0.0006 + 0.000375)


TIERED = {
    "input": 1,
    "output": 2,
    "cacheRead": 0.1,
    "cacheWrite": 1.25,
    "tiers": [  # deliberately unsorted
        {"inputTokensAbove": 1_000_000, "input": 4, "output": 8, "cacheRead": 0.4, "cacheWrite": 5},
        {"inputTokensAbove": 200_000, "input": 2, "output": 4, "cacheRead": 0.2, "cacheWrite": 2.5},
    ],
}


@pytest.mark.parametrize(
    ("input_tokens", "cache_read", "input_rate", "output_rate"),
    [
        (200_000, 0, 1, 2),  # not strictly above the threshold: base prices
        (200_001, 0, 2, 4),
        (100_000, 100_001, 2, 4),  # cache reads count towards the tier
        (1_000_000, 1, 4, 8),  # the largest threshold below wins
    ],
)
def test_tiers_price_the_whole_request(
    input_tokens: int, cache_read: int, input_rate: float, output_rate: float
) -> None:
    usage = Usage(input=input_tokens, output=1_000_000, cache_read=cache_read)
    cost = calculate_cost(model(**TIERED), usage)
    assert cost.input == pytest.approx(input_rate * input_tokens / 1e6)
    assert cost.output == pytest.approx(output_rate)


def test_one_hour_cache_writes_cost_twice_the_input_price() -> None:
    # Pi's anthropic-cache-write-1h-cost test: input 5, cacheWrite 6.25 per Mtok.
    usage = Usage(input=100, output=5, cache_write=1_000_000, cache_write1h=400_000)
    cost = calculate_cost(model(input=5, output=25, cacheRead=0.5, cacheWrite=6.25), usage)
    assert cost.cache_write == pytest.approx(7.75, abs=1e-10)  # 600k * 6.25 + 400k * 10
    assert usage.cache_write1h == 400_000


def test_without_a_one_hour_breakdown_all_writes_use_the_cache_write_price() -> None:
    usage = Usage(input=100, output=5, cache_write=1_000_000)
    assert calculate_cost(model(input=5, output=25, cacheWrite=6.25), usage).cache_write == pytest.approx(
        6.25
    )


def test_one_hour_writes_use_the_tier_input_price() -> None:
    usage = Usage(input=300_000, cache_write=100_000, cache_write1h=100_000)
    assert calculate_cost(model(**TIERED), usage).cache_write == pytest.approx(2 * 2 * 0.1)


def test_recalculating_overwrites_previous_values() -> None:
    usage = Usage(input=1_000_000)
    calculate_cost(model(input=3), usage)
    usage.input = 0
    usage.output = 1_000_000
    cost = calculate_cost(model(input=3, output=15), usage)
    assert (cost.input, cost.output, cost.total) == (0, 15, 15)


def test_context_tokens_prefer_the_reported_total() -> None:
    assert (
        calculate_context_tokens(Usage(input=1, output=2, cache_read=3, cache_write=4, total_tokens=50)) == 50
    )
    assert calculate_context_tokens(Usage(input=1, output=2, cache_read=3, cache_write=4)) == 10
