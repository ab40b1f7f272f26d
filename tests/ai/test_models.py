"""The built-in model catalogue: integrity of ``data/models.json``, lookups and their errors,
and thinking levels exactly as Pi's getSupportedThinkingLevels and clampThinkingLevel. Holds the
raw catalogue ``RAW`` and the ``isolated_catalogue`` fixture that ``test_models_config`` shares."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest

import pi_notebook.ai.models as catalogue
from pi_notebook.ai.env import ENV_API_KEYS
from pi_notebook.ai.models import (
    LOCAL_SERVERS,
    THINKING_LEVELS,
    ModelNotFoundError,
    clamp_thinking_level,
    get_model,
    get_models,
    get_providers,
    get_supported_thinking_levels,
    reload_user_models,
)
from pi_notebook.ai.types import Model

RAW: list[dict[str, Any]] = json.loads(
    resources.files("pi_notebook.ai").joinpath("data/models.json").read_text("utf-8")
)["models"]

# What the brief fixes for each built-in provider: wire API and base URL.
PROVIDERS: dict[str, tuple[str, str]] = {
    "openai": ("openai-responses", "https://api.openai.com/v1"),
    "anthropic": ("anthropic-messages", "https://api.anthropic.com"),
    "google": ("google-generative-ai", "https://generativelanguage.googleapis.com/v1beta"),
    "groq": ("openai-completions", "https://api.groq.com/openai/v1"),
    "deepseek": ("openai-completions", "https://api.deepseek.com"),
    "openrouter": ("openai-completions", "https://openrouter.ai/api/v1"),
    "xai": ("openai-completions", "https://api.x.ai/v1"),
    "together": ("openai-completions", "https://api.together.ai/v1"),
    "cerebras": ("openai-completions", "https://api.cerebras.ai/v1"),
    "mistral": ("openai-completions", "https://api.mistral.ai/v1"),
}

# Compat field names per API, Pi's camelCase (a misspelt flag would be silently ignored).
COMPAT_KEYS: dict[str, set[str]] = {
    "openai-completions": {
        "supportsStore",
        "supportsDeveloperRole",
        "supportsReasoningEffort",
        "supportsUsageInStreaming",
        "maxTokensField",
        "requiresToolResultName",
        "requiresAssistantAfterToolResult",
        "requiresThinkingAsText",
        "requiresReasoningContentOnAssistantMessages",
        "thinkingFormat",
        "chatTemplateKwargs",
        "openRouterRouting",
        "vercelGatewayRouting",
        "zaiToolStream",
        "supportsOpenAIGrammarTools",
        "supportsStrictMode",
        "cacheControlFormat",
        "sendSessionAffinityHeaders",
        "deferredToolsMode",
        "sessionAffinityFormat",
        "supportsLongCacheRetention",
    },
    "openai-responses": {
        "supportsDeveloperRole",
        "sessionAffinityFormat",
        "supportsLongCacheRetention",
        "supportsStrictMode",
        "supportsOpenAIGrammarTools",
        "supportsToolSearch",
        "supportsExplicitPromptCacheMode",
    },
    "anthropic-messages": {
        "supportsEagerToolInputStreaming",
        "supportsLongCacheRetention",
        "sendSessionAffinityHeaders",
        "supportsCacheControlOnTools",
        "supportsTemperature",
        "forceAdaptiveThinking",
        "allowEmptySignature",
        "supportsStrictTools",
        "supportsToolReferences",
    },
    "google-generative-ai": set(),
}


def _entry_id(entry: dict[str, Any]) -> str:
    return f"{entry['provider']}:{entry['id']}"


@pytest.fixture(autouse=True)
def isolated_catalogue(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with no run-time registrations and no user file."""
    monkeypatch.setattr(catalogue, "_registered", {})
    monkeypatch.delenv(catalogue.USER_MODELS_ENV, raising=False)
    for server in LOCAL_SERVERS.values():
        monkeypatch.delenv(server.env_var, raising=False)
    reload_user_models()
    yield
    reload_user_models()


# --- catalogue integrity ----------------------------------------------------------------------


def test_catalogue_is_curated_not_exhaustive() -> None:
    assert 40 <= len(RAW) <= 70
    assert {e["provider"] for e in RAW} == set(PROVIDERS)


def test_ids_are_unique_per_provider() -> None:
    ids = [_entry_id(e) for e in RAW]
    assert sorted({i for i in ids if ids.count(i) > 1}) == []


@pytest.mark.parametrize("entry", RAW, ids=_entry_id)
def test_entry_validates_without_unknown_fields(entry: dict[str, Any]) -> None:
    model = Model.model_validate(entry)
    assert not model.model_extra, f"unknown Model fields: {sorted(model.model_extra or {})}"
    assert not model.cost.model_extra, f"unknown cost fields: {sorted(model.cost.model_extra or {})}"
    for tier in model.cost.tiers or []:
        assert not tier.model_extra
    assert model.model_dump() == entry  # the file is Pi's camelCase Model JSON, field for field


@pytest.mark.parametrize("entry", RAW, ids=_entry_id)
def test_entry_limits_and_prices_are_plausible(entry: dict[str, Any]) -> None:
    model = Model.model_validate(entry)
    assert model.name.strip()
    assert model.context_window > 0
    assert 0 < model.max_tokens <= model.context_window
    assert "text" in model.input
    prices = [model.cost.input, model.cost.output, model.cost.cache_read, model.cost.cache_write]
    assert all(p >= 0 for p in prices)
    thresholds = [t.input_tokens_above for t in model.cost.tiers or []]
    assert thresholds == sorted(thresholds)
    for tier in model.cost.tiers or []:
        # A tier prices long prompts higher, and must be reachable inside the window.
        assert 0 < tier.input_tokens_above < model.context_window
        assert tier.input >= model.cost.input
        assert tier.output >= model.cost.output


@pytest.mark.parametrize("entry", RAW, ids=_entry_id)
def test_entry_api_base_url_compat_and_thinking_map(entry: dict[str, Any]) -> None:
    model = Model.model_validate(entry)
    assert (model.api, model.base_url) == PROVIDERS[model.provider]
    assert set(model.compat or {}) <= COMPAT_KEYS[model.api]
    level_map = model.thinking_level_map or {}
    assert set(level_map) <= set(THINKING_LEVELS)
    assert all(v is None or (isinstance(v, str) and v) for v in level_map.values())


def test_every_provider_has_an_api_key_variable() -> None:
    for provider in get_providers():
        assert provider in ENV_API_KEYS, provider
        assert all(name.isupper() for name in ENV_API_KEYS[provider])


def test_long_context_tiers_where_providers_charge_more() -> None:
    pro = get_model("google", "gemini-2.5-pro").cost
    assert pro.tiers is not None
    assert pro.tiers[0].input_tokens_above == 200_000
    assert (pro.tiers[0].input, pro.tiers[0].output) == (2.5, 15)
    gpt = get_model("openai", "gpt-5.5").cost
    assert gpt.tiers is not None
    assert gpt.tiers[0].input_tokens_above == 272_000


# --- lookups ----------------------------------------------------------------------------------


def test_get_model_returns_the_catalogue_entry() -> None:
    model = get_model("openai", "gpt-4o-mini")
    assert (model.provider, model.id, model.api) == ("openai", "gpt-4o-mini", "openai-responses")
    assert model.base_url == "https://api.openai.com/v1"
    assert (model.cost.input, model.cost.output) == (0.15, 0.6)
    assert get_model("openai", "gpt-4o-mini") is model


def test_unknown_model_error_is_a_readable_key_error() -> None:
    with pytest.raises(KeyError) as info:
        get_model("openai", "gpt-4o-mni")
    error = info.value
    assert isinstance(error, ModelNotFoundError)
    assert (error.provider, error.model_id) == ("openai", "gpt-4o-mni")
    text = str(error)
    assert text.startswith("Unknown model openai:gpt-4o-mni.")  # no KeyError quotes around it
    assert "Did you mean openai:gpt-4o-mini?" in text
    assert "Known openai models: gpt-4o-mini, " in text
    assert text.endswith("more).")


def test_unknown_provider_error_lists_providers_and_local_servers() -> None:
    with pytest.raises(ModelNotFoundError) as info:
        get_model("opnai", "gpt-4o-mini")
    text = str(info.value)
    assert "no provider 'opnai'" in text
    assert "openai, anthropic, google" in text
    assert "ollama:, lmstudio:, llama.cpp:, vllm:" in text
    assert "openai_compatible_model()" in text


def test_get_models_and_providers() -> None:
    assert get_providers()[:3] == ["openai", "anthropic", "google"]
    assert len(get_providers()) == len(set(get_providers()))
    openai_ids = [m.id for m in get_models("openai")]
    assert "gpt-4o-mini" in openai_ids
    assert len(openai_ids) == len(set(openai_ids))
    assert len(get_models()) == len(RAW)
    assert get_models("nobody") == []


# --- thinking levels ---------------------------------------------------------------


def _reasoner(level_map: dict[str, str | None] | None = None, reasoning: bool = True) -> Model:
    return Model(id="r", api="x", provider="p", reasoning=reasoning, thinking_level_map=level_map)


@pytest.mark.parametrize(
    ("level_map", "expected"),
    [
        (None, ["off", "minimal", "low", "medium", "high"]),
        ({"xhigh": "xhigh"}, ["off", "minimal", "low", "medium", "high", "xhigh"]),
        ({"max": "max"}, ["off", "minimal", "low", "medium", "high", "max"]),
        ({"off": None}, ["minimal", "low", "medium", "high"]),
        ({"off": "none", "minimal": None, "xhigh": "xhigh"}, ["off", "low", "medium", "high", "xhigh"]),
        (
            {"minimal": None, "low": None, "medium": None, "high": "high", "max": "max"},
            ["off", "high", "max"],
        ),
        ({"xhigh": None, "max": None}, ["off", "minimal", "low", "medium", "high"]),
        (dict.fromkeys(("off", "minimal", "low", "medium", "high")), []),
    ],
)
def test_supported_thinking_levels(level_map: dict[str, str | None] | None, expected: list[str]) -> None:
    assert get_supported_thinking_levels(_reasoner(level_map)) == expected


def test_non_reasoning_model_supports_only_off() -> None:
    model = _reasoner({"xhigh": "xhigh"}, reasoning=False)
    assert get_supported_thinking_levels(model) == ["off"]
    assert [clamp_thinking_level(model, lvl) for lvl in THINKING_LEVELS] == ["off"] * 7


@pytest.mark.parametrize(
    ("level_map", "level", "expected"),
    [
        (None, "xhigh", "high"),  # nothing above: search downward
        (None, "max", "high"),
        ({"max": "max"}, "xhigh", "max"),  # upward first, even past the requested level
        ({"off": None}, "off", "minimal"),
        ({"minimal": None, "low": None, "medium": None, "high": "high"}, "minimal", "high"),
        ({"minimal": None, "low": None, "medium": None, "high": "high"}, "xhigh", "high"),
        ({"low": None}, "low", "medium"),
        ({"medium": "m"}, "medium", "medium"),
        (dict.fromkeys(("off", "minimal", "low", "medium", "high")), "low", "off"),  # fallback
    ],
)
def test_clamp_thinking_level(level_map: dict[str, str | None] | None, level: Any, expected: str) -> None:
    assert clamp_thinking_level(_reasoner(level_map), level) == expected


def test_catalogue_thinking_levels() -> None:
    assert get_supported_thinking_levels(get_model("openai", "gpt-5.5")) == [
        "off",
        "low",
        "medium",
        "high",
        "xhigh",
    ]
    assert get_supported_thinking_levels(get_model("anthropic", "claude-opus-4-6"))[-1] == "max"
    assert get_supported_thinking_levels(get_model("google", "gemini-3.1-pro-preview")) == ["low", "high"]
    assert clamp_thinking_level(get_model("google", "gemini-3.1-pro-preview"), "medium") == "high"
    assert clamp_thinking_level(get_model("openai", "o3"), "off") == "low"
    assert get_supported_thinking_levels(get_model("openai", "gpt-4o-mini")) == ["off"]


@pytest.mark.parametrize("entry", RAW, ids=_entry_id)
def test_clamp_picks_nearest_supported_level_upward_first(entry: dict[str, Any]) -> None:
    model = Model.model_validate(entry)
    supported = get_supported_thinking_levels(model)
    for level in THINKING_LEVELS:
        rank = THINKING_LEVELS.index(level)
        above = [lvl for lvl in supported if THINKING_LEVELS.index(lvl) >= rank]
        below = [lvl for lvl in supported if THINKING_LEVELS.index(lvl) < rank]
        expected = above[0] if above else below[-1] if below else "off"
        assert clamp_thinking_level(model, level) == expected, level
