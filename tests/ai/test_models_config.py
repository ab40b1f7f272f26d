"""Models the user adds or names, and keys from the environment: ``register_models`` and
``openai_compatible_model``, the ``PI_NOTEBOOK_MODELS`` user file, ``resolve_model`` (the
notebook's ``--model provider:id``), and API keys from the environment with ``options.env``
overrides."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ai.test_models import (
    RAW,
    isolated_catalogue,  # noqa: F401 (its autouse fixture: no registrations, no user file)
)

import pi_notebook.ai.models as catalogue
from pi_notebook.ai.entry import complete
from pi_notebook.ai.env import env_var_names, get_env_api_key, missing_key_message
from pi_notebook.ai.event_stream import AssistantMessageEventStream
from pi_notebook.ai.events import DoneEvent
from pi_notebook.ai.models import (
    ModelNotFoundError,
    get_model,
    get_models,
    get_providers,
    models_are_equal,
    openai_compatible_model,
    register_models,
    resolve_model,
    unregister_models,
)
from pi_notebook.ai.registry import ApiProvider, register_api_provider, unregister_api_providers
from pi_notebook.ai.types import AssistantMessage, Model, Usage

# --- registration -----------------------------------------------------------------------------


def test_register_models_accepts_pi_json_and_wins_over_builtin() -> None:
    builtin = get_model("openai", "gpt-4o-mini")
    [mine] = register_models(
        [
            {
                "id": "gpt-4o-mini",
                "api": "openai-responses",
                "provider": "openai",
                "baseUrl": "http://127.0.0.1:9/v1",
                "contextWindow": 1000,
                "maxTokens": 100,
            }
        ]
    )
    assert get_model("openai", "gpt-4o-mini") is mine
    assert mine.context_window == 1000
    assert len(get_models("openai")) == len([e for e in RAW if e["provider"] == "openai"])
    unregister_models("openai", ["gpt-4o-mini"])
    assert get_model("openai", "gpt-4o-mini") is builtin


def test_register_models_provider_override_and_new_provider() -> None:
    [model] = register_models([Model(id="m1", api="openai-completions", provider="x")], provider="acme")
    assert model.provider == "acme"
    assert get_model("acme", "m1") is model
    assert get_providers()[-1] == "acme"
    unregister_models("acme")
    assert "acme" not in get_providers()


def test_openai_compatible_model() -> None:
    model = openai_compatible_model(
        "qwen3:8b",
        "http://127.0.0.1:11434/v1/",
        provider="ollama",
        reasoning=True,
        images=True,
        context_window=40_960,
        max_tokens=4096,
    )
    assert (model.api, model.base_url) == ("openai-completions", "http://127.0.0.1:11434/v1")
    assert (model.input, model.reasoning) == (["text", "image"], True)
    assert get_model("ollama", "qwen3:8b") is model
    loose = openai_compatible_model("other", "http://h/v1", register=False)
    assert loose.provider == "local"
    with pytest.raises(ModelNotFoundError):
        get_model("local", "other")


def test_models_are_equal() -> None:
    a = get_model("openai", "gpt-4o-mini")
    assert models_are_equal(a, a.model_copy(update={"name": "renamed"}))
    assert not models_are_equal(a, a.model_copy(update={"provider": "openrouter"}))
    assert not models_are_equal(a, None)
    assert not models_are_equal(None, None)


# --- PI_NOTEBOOK_MODELS -----------------------------------------------------------------------


def _user_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: Any) -> Path:
    path = tmp_path / "models.json"
    path.write_text(json.dumps(data), "utf-8")
    monkeypatch.setenv(catalogue.USER_MODELS_ENV, str(path))
    return path


def test_user_file_flat_form_sits_between_builtin_and_registered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = {
        "id": "gpt-4o-mini",
        "api": "openai-responses",
        "provider": "openai",
        "baseUrl": "https://proxy.example/v1",
        "cost": {"input": 1, "output": 2},
    }
    _user_file(tmp_path, monkeypatch, {"models": [entry]})
    assert get_model("openai", "gpt-4o-mini").base_url == "https://proxy.example/v1"
    register_models([{**entry, "baseUrl": "https://registered.example/v1"}])
    assert get_model("openai", "gpt-4o-mini").base_url == "https://registered.example/v1"


def test_user_file_provider_grouped_form_inherits_provider_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _user_file(
        tmp_path,
        monkeypatch,
        {
            "providers": {
                "homelab": {
                    "baseUrl": "http://10.0.0.5:8000/v1",
                    "api": "openai-completions",
                    "compat": {"supportsStore": False},
                    "models": [
                        {"id": "qwen3-32b", "contextWindow": 40960, "maxTokens": 8192},
                        {"id": "gemma"},
                    ],
                }
            }
        },
    )
    model = get_model("homelab", "qwen3-32b")
    assert (model.api, model.base_url, model.context_window) == (
        "openai-completions",
        "http://10.0.0.5:8000/v1",
        40960,
    )
    assert model.compat == {"supportsStore": False}
    assert [m.id for m in get_models("homelab")] == ["qwen3-32b", "gemma"]
    assert "homelab" in get_providers()


def test_user_file_is_read_lazily_and_errors_name_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad file blocks nothing else: its problem is one line (``user_models_problem``) that
    an unknown model's error repeats."""
    missing = tmp_path / "absent.json"
    monkeypatch.setenv(catalogue.USER_MODELS_ENV, str(missing))
    assert get_model("openai", "gpt-4o-mini").id == "gpt-4o-mini"
    assert re.search(r"PI_NOTEBOOK_MODELS=.*absent\.json", catalogue.user_models_problem() or "")
    with pytest.raises(catalogue.ModelNotFoundError, match=r"PI_NOTEBOOK_MODELS=.*absent\.json"):
        get_model("mine", "gone")
    _user_file(
        tmp_path,
        monkeypatch,
        {
            "models": [
                {"id": "a", "provider": "p", "api": "x"},
                {"id": "b", "provider": "p", "api": "x", "contextWindow": "big"},
            ]
        },
    )
    assert [m.id for m in get_models("p")] == ["a"]
    assert re.search(r"model #1 \(p:b\) is invalid: contextWindow: ", catalogue.user_models_problem() or "")


def test_user_file_follows_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _user_file(tmp_path, monkeypatch, [{"id": "one", "provider": "mine", "api": "openai-completions"}])
    assert [m.id for m in get_models("mine")] == ["one"]
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{"id": "two", "provider": "mine", "api": "openai-completions"}]), "utf-8")
    monkeypatch.setenv(catalogue.USER_MODELS_ENV, str(other))
    assert [m.id for m in get_models("mine")] == ["two"]
    monkeypatch.delenv(catalogue.USER_MODELS_ENV)
    assert get_models("mine") == []


def test_import_parses_nothing(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", "utf-8")
    code = (
        "import pi_notebook.ai.models as m, sys;"
        "assert m._builtin is None and m._user is None;"
        "assert 'pi_notebook.ai.providers' not in sys.modules;"
        "print('ok')"
    )
    env = {"PI_NOTEBOOK_MODELS": str(broken), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# --- resolve_model ----------------------------------------------------------------------------


def test_resolve_catalogue_spec() -> None:
    assert resolve_model("openai:gpt-4o-mini") is get_model("openai", "gpt-4o-mini")
    assert resolve_model(" groq:openai/gpt-oss-120b ") is get_model("groq", "openai/gpt-oss-120b")


@pytest.mark.parametrize(
    ("provider", "url"),
    [
        ("ollama", "http://127.0.0.1:11434/v1"),
        ("lmstudio", "http://127.0.0.1:1234/v1"),
        ("llama.cpp", "http://127.0.0.1:8080/v1"),
        ("vllm", "http://127.0.0.1:8000/v1"),
    ],
)
def test_resolve_unknown_local_model_uses_default_url(provider: str, url: str) -> None:
    model = resolve_model(f"{provider}:some-model:7b")
    assert (model.provider, model.id, model.api, model.base_url) == (
        provider,
        "some-model:7b",
        "openai-completions",
        url,
    )
    assert get_model(provider, "some-model:7b") is model  # registered, so later lookups agree


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("http://gpu-box:11434", "http://gpu-box:11434/v1"),
        ("http://gpu-box:11434/", "http://gpu-box:11434/v1"),
        ("https://ollama.lan/proxy/v1/", "https://ollama.lan/proxy/v1"),
    ],
)
def test_local_base_url_env_override(monkeypatch: pytest.MonkeyPatch, value: str, expected: str) -> None:
    monkeypatch.setenv("OLLAMA_BASE_URL", value)
    assert resolve_model("ollama:llama3.2").base_url == expected


def test_resolve_aliases_and_registered_local_models_win() -> None:
    assert resolve_model("llamacpp:tiny").provider == "llama.cpp"
    assert resolve_model("LM-Studio:tiny").provider == "lmstudio"
    mine = openai_compatible_model("big", "http://127.0.0.1:9999/v1", provider="vllm", context_window=131_072)
    assert resolve_model("vllm:big") is mine


def test_resolve_bare_ids() -> None:
    assert resolve_model("gpt-4o-mini") is get_model("openai", "gpt-4o-mini")
    with pytest.raises(
        ModelNotFoundError, match=r"ambiguous; use one of groq:openai/gpt-oss-120b, together:"
    ):
        resolve_model("openai/gpt-oss-120b")
    with pytest.raises(ModelNotFoundError, match=r"write provider:model-id, e.g. openai:gpt-4o-mini"):
        resolve_model("no-such-model")


def test_resolve_errors() -> None:
    with pytest.raises(ModelNotFoundError, match=r"Unknown model anthropic:claude-nope\."):
        resolve_model("anthropic:claude-nope")
    with pytest.raises(ModelNotFoundError, match=r"no provider 'nowhere'"):
        resolve_model("nowhere:model")
    for bad in (":gpt-4o", "openai:", "", "  "):
        with pytest.raises(ValueError, match="provider:model-id"):
            resolve_model(bad)


def test_resolve_faux_provider(faux: Any) -> None:
    assert resolve_model("faux:faux-1") is faux.get_model()


# --- API keys from the environment ------------------------------------------------------------


def test_options_env_overrides_process_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-process")
    assert get_env_api_key("openai") == "from-process"
    assert get_env_api_key("openai", {"OPENAI_API_KEY": "from-options"}) == "from-options"
    assert get_env_api_key("openai", {"OPENAI_API_KEY": ""}) == "from-process"  # empty = unset, as in Pi
    monkeypatch.delenv("OPENAI_API_KEY")
    assert get_env_api_key("openai") is None
    assert get_env_api_key("openai", {"GROQ_API_KEY": "other"}) is None


def test_variable_order_and_fallback_names(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "api-key")
    assert get_env_api_key("anthropic") == "api-key"
    # Pi's getEnvApiKey prefers the OAuth token, also when it comes from options.env.
    assert get_env_api_key("anthropic", {"ANTHROPIC_OAUTH_TOKEN": "oauth"}) == "oauth"
    monkeypatch.setenv("GOOGLE_API_KEY", "google")
    assert get_env_api_key("google") == "google"
    assert env_var_names("llama.cpp") == ("LLAMA_CPP_API_KEY",)
    assert env_var_names("my-host") == ("MY_HOST_API_KEY",)
    monkeypatch.setenv("MY_HOST_API_KEY", "h")
    assert get_env_api_key("my-host") == "h"


def test_missing_key_message_names_variables_only() -> None:
    assert missing_key_message("anthropic") == (
        "No API key for provider: anthropic. Set ANTHROPIC_OAUTH_TOKEN or ANTHROPIC_API_KEY or pass api_key."
    )


async def test_entry_point_takes_the_key_from_options_env(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str | None] = []

    def fake_stream(model: Model, context: Any, options: Any) -> AssistantMessageEventStream:
        seen.append(options.api_key)
        s = AssistantMessageEventStream()
        msg = AssistantMessage(
            content=[], api=model.api, provider=model.provider, model=model.id, usage=Usage()
        )
        s.push(DoneEvent(reason="stop", message=msg))
        s.end()
        return s

    register_api_provider(ApiProvider("test-env-api", fake_stream, fake_stream), "test-models")
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    model = Model(id="m", api="test-env-api", provider="groq", base_url="https://api.groq.com/openai/v1")
    try:
        done = await complete(model, {"messages": []}, {"env": {"GROQ_API_KEY": "k-options"}})
        assert done.stop_reason == "stop"
        assert seen == ["k-options"]
        missing = await complete(model, {"messages": []})
        assert missing.stop_reason == "error"
        assert missing.error_message == "No API key for provider: groq. Set GROQ_API_KEY or pass api_key."
        assert seen == ["k-options"]  # the provider was never called without a key
    finally:
        unregister_api_providers("test-models")
