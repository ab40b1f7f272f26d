"""What a new conversation and a run start from where the cell says nothing, and where each
value came from: a ``c.PiMagics`` trait the user set (``PiConfig.user_set``: in the config or
changed from its default), else Pi's own ``settings.json`` (``runtime/settings_file.py``: the
global file, with the project's ``.pi/settings.json`` over it when the folder is trusted), else
the trait's default.

* model: ``c.PiMagics.model``, ``$PI_NOTEBOOK_MODEL``, Pi's ``defaultProvider`` +
  ``defaultModel``, else none;
* thinking: ``c.PiMagics.thinking``, Pi's ``defaultThinkingLevel`` (clamped to what the model
  supports, as Pi does), else ``off``;
* compaction: ``c.PiMagics.compact`` / ``compact_reserve_tokens`` /
  ``compact_keep_recent_tokens``, Pi's ``compaction`` keys, else on, 16,384 / 20,000;
* retries: ``c.PiMagics.retries`` / ``retry_base_delay``, Pi's ``retry`` keys (``enabled:
  false`` is 0 retries), else 3 from 2 s.

Pi's file is read again when it changes (``read_pi_settings`` keeps it by size and time), so a
``%pi model ... --save`` or an edit in the Pi CLI applies to the next new conversation.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..runtime.budget import Budget
from ..runtime.settings import AgentSessionSettings, RetrySettings
from ..runtime.settings_file import PiSettings, read_pi_settings
from ..session.compaction import CompactionSettings
from .config import MODEL_ENV, PiConfig, timeout_ms

__all__ = ["Effective", "conversation_budget", "effective", "session_settings"]


@dataclass(frozen=True, slots=True)
class Effective:
    """The defaults in force, and where the model and thinking level come from."""

    model: str
    """``provider:id``, or ``""`` when nothing names one."""
    model_source: str
    """``c.PiMagics.model``, ``$PI_NOTEBOOK_MODEL``, ``Pi's settings.json`` or ``""``."""
    thinking: str
    thinking_from_pi: bool
    system: str
    retries: int
    retry_base_delay: float
    compaction: CompactionSettings
    default_thinking_level: str
    """Where a switch to a reasoning model starts (``AgentSessionSettings``)."""
    pi: PiSettings

    @property
    def model_from_pi(self) -> bool:
        return self.model_source == PI_SOURCE

    @property
    def retry(self) -> RetrySettings:
        return RetrySettings(
            enabled=self.retries > 0,
            max_retries=self.retries,
            base_delay_ms=round(self.retry_base_delay * 1000),
        )

    def notices(self) -> tuple[str, ...]:
        """What is wrong with Pi's file (nothing when there is none: that is no problem)."""
        return () if self.pi.missing else self.pi.problems


PI_SOURCE = "Pi's settings.json"


USER_SET = (
    "thinking", "retries", "retry_base_delay",
    "compact", "compact_reserve_tokens", "compact_keep_recent_tokens",
)
"""The traits Pi's ``settings.json`` gives way to when the user set them."""


def effective(config: PiConfig, project: str | None = None) -> Effective:
    """The defaults ``config`` and Pi's ``settings.json`` give together (module docstring);
    ``project``: a trusted folder whose ``.pi/settings.json`` applies too."""
    pi = read_pi_settings(project_dir=project)
    mine = config.user_set_of(USER_SET)
    model, source = _model(config, pi)
    thinking_from_pi = "thinking" not in mine and pi.default_thinking_level is not None
    thinking = pi.default_thinking_level if thinking_from_pi else config.thinking
    return Effective(
        model=model,
        model_source=source,
        thinking=str(thinking),
        thinking_from_pi=thinking_from_pi,
        system=config.system,
        retries=_retries(config, pi, mine),
        retry_base_delay=(
            float(config.retry_base_delay)
            if "retry_base_delay" in mine or "base_delay_ms" not in pi.retry
            else pi.retry["base_delay_ms"] / 1000
        ),
        compaction=CompactionSettings(
            enabled=bool(_pick(config, mine, "compact", pi.compaction, "enabled")),
            reserve_tokens=int(
                _pick(config, mine, "compact_reserve_tokens", pi.compaction, "reserve_tokens")
            ),
            keep_recent_tokens=int(
                _pick(config, mine, "compact_keep_recent_tokens", pi.compaction, "keep_recent_tokens")
            ),
        ),
        default_thinking_level=pi.default_thinking_level or "medium",
        pi=pi,
    )


def session_settings(chosen: Effective, timeout: float) -> AgentSessionSettings:
    """A conversation's session settings from the settings in force: retries and compaction,
    and ``timeout`` (seconds, ``--timeout``) for its summary requests."""
    return AgentSessionSettings(
        retry=chosen.retry,
        compaction=chosen.compaction,
        summary_timeout_ms=timeout_ms(timeout),
        default_thinking_level=chosen.default_thinking_level,
    )


def conversation_budget(config: PiConfig) -> Budget | None:
    """What a conversation's runs may spend together (``c.PiMagics.max_conversation_*``)."""
    cost, tokens = config.max_conversation_cost, config.max_conversation_tokens
    return Budget(max_cost=cost or None, max_total_tokens=tokens or None) if cost or tokens else None


def _model(config: PiConfig, pi: PiSettings) -> tuple[str, str]:
    if config.model.strip():
        return config.model.strip(), "c.PiMagics.model"
    if os.environ.get(MODEL_ENV, "").strip():
        return os.environ[MODEL_ENV].strip(), f"${MODEL_ENV}"
    if pi.model_spec:
        return pi.model_spec, PI_SOURCE
    return "", ""


def _pick(config: PiConfig, mine: frozenset[str], trait: str, section: dict[str, Any], key: str) -> Any:
    """The trait when the user set it (``mine``) or Pi's file does not have ``key``, else the
    file's value."""
    if trait in mine or key not in section:
        return getattr(config, trait)
    return section[key]


def _retries(config: PiConfig, pi: PiSettings, mine: frozenset[str]) -> int:
    if "retries" in mine:
        return int(config.retries)
    if pi.retry.get("enabled") is False:
        return 0
    return int(pi.retry.get("max_retries", config.retries))
