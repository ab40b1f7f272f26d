"""API keys from the usual environment variables, per provider id.

A key is looked up in ``options.env`` first (provider-scoped overrides), then ``os.environ``.
Keys are never logged or put into error messages: only the *name* of the variable is.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from .types import Model

ENV_API_KEYS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    # Pi's order: an OAuth token (Claude Pro/Max) wins over a plain API key.
    "anthropic": ("ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "zai": ("ZAI_API_KEY",),
    "moonshotai": ("MOONSHOT_API_KEY",),
    "huggingface": ("HF_TOKEN",),
    "nvidia": ("NVIDIA_API_KEY",),
    "vercel-ai-gateway": ("AI_GATEWAY_API_KEY",),
}

# Local OpenAI-compatible servers accept any key (or none); they never need one.
KEYLESS_PROVIDERS: frozenset[str] = frozenset({"ollama", "vllm", "llama.cpp", "lmstudio", "local"})


_REGISTERED_KEY_NAMES: dict[str, tuple[str, ...]] = {}
"""Variables named by a provider registered at run time (an extension's ``api_key="$VAR"``)."""


def register_key_variables(provider: str, names: tuple[str, ...] | None) -> None:
    """Read ``provider``'s key from ``names`` from now on (``None``: the usual names again)."""
    if names:
        _REGISTERED_KEY_NAMES[provider] = names
    else:
        _REGISTERED_KEY_NAMES.pop(provider, None)


def env_var_names(provider: str) -> tuple[str, ...]:
    """The variables consulted for ``provider``: those a registration named, known names, else
    ``<PROVIDER>_API_KEY``."""
    known = _REGISTERED_KEY_NAMES.get(provider) or ENV_API_KEYS.get(provider)
    if known:
        return known
    return (provider.upper().replace("-", "_").replace(".", "_") + "_API_KEY",)


def get_env_api_key(provider: str, env: Mapping[str, str] | None = None) -> str | None:
    for name in env_var_names(provider):
        if env and env.get(name):
            return env[name]
        value = os.environ.get(name)
        if value:
            return value
    return None


def missing_key_message(provider: str) -> str:
    names = env_var_names(provider)
    wanted = " or ".join(names)
    return f"No API key for provider: {provider}. Set {wanted} or pass api_key."


# Ollama and LM Studio listen on these ports; a URL with one of them is a local server.
_LOCAL_PORTS = frozenset({11434, 1234})


def is_local_url(base_url: str) -> bool:
    """Loopback, private-network, link-local or ``*.local`` hosts and the usual local ports."""
    try:
        parts = urlsplit(base_url)
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError:
        return False
    if port in _LOCAL_PORTS or host in ("localhost", "0.0.0.0") or host.endswith((".local", ".localhost")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def needs_api_key(model: Model) -> bool:
    """Whether a request to ``model`` is pointless without a key: local servers (Ollama, vLLM,
    llama.cpp, LM Studio, anything on a local address), faux models and models whose
    ``compat.requiresApiKey`` is false take requests without one."""
    if (
        model.provider in KEYLESS_PROVIDERS
        or model.provider.startswith("faux")
        or model.api.startswith("faux")
    ):
        return False
    if (model.compat or {}).get("requiresApiKey") is False:
        return False
    return not is_local_url(model.base_url)
