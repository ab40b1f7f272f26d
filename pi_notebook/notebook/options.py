"""The ``%%pi`` options: their configurable defaults (``PiConfig``), the parser, and
``RunOptions``, the validated options of one cell.

Defaults come from traitlets config (``c.PiMagics.model = "anthropic:claude-sonnet-4-5"`` in
``ipython_config.py``, or ``%config PiMagics.model = ...``); the model falls back to the
``PI_NOTEBOOK_MODEL`` environment variable. Options given on a cell override them for that
cell; ``--model``, ``--thinking`` and ``--system`` also stay in effect for the conversation's
later cells. Bad options raise a one-line ``UsageError``.
"""

from __future__ import annotations

import argparse
import os
import shlex
from dataclasses import dataclass
from typing import Any, cast

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser
from traitlets import Bool, CaselessStrEnum, Dict, Float, Int, TraitError, Unicode, validate
from traitlets.config import Configurable

from ..ai.models import THINKING_LEVELS
from ..ai.models import resolve_model as catalogue_resolve_model
from ..ai.types import Model
from .approval import POLICIES, Policy, check_approvals
from .faux_stand_in import FAUX_PROVIDER, stand_in_model
from .tools import parse_tools_spec

DEFAULT_NAME = "default"
MODEL_ENV = "PI_NOTEBOOK_MODEL"
REPLAY_ENV = "PI_NOTEBOOK_REPLAY"
DEFAULT_TIMEOUT_S = 300.0
"""Pi's default ``httpIdleTimeoutMs`` (5 minutes), in seconds."""
CONFIG_SECTION = "PiMagics"
DEFAULT_SYSTEM_PROMPT = (
    "You are Pi, an assistant working inside a Jupyter notebook. The user writes prompts in "
    "%%pi cells; the notebook's Python kernel is live. Use the notebook tools to look at "
    "variables, cells and the notebook before answering questions about them, and to run code "
    "when asked. Keep answers concise and use Markdown; put code in fenced blocks."
)


@dataclass(frozen=True, slots=True)
class Defaults:
    """Settings of a new conversation."""

    model: str = ""
    thinking: str = "off"
    system: str = DEFAULT_SYSTEM_PROMPT


def resolve_model(spec: str) -> Model:
    """``provider:id`` (or a unique bare id) -> a ``Model``; local servers such as
    ``ollama:llama3.2`` resolve without registration, and ``faux:<id>`` without a registered
    faux provider is the honest stand-in (``faux_stand_in.py``). Raises ``ValueError`` with a
    one-line reason."""
    try:
        return catalogue_resolve_model(spec)
    except KeyError as exc:  # ModelNotFoundError: its str() is already a clean sentence
        provider, _, model_id = spec.strip().partition(":")
        if provider == FAUX_PROVIDER and model_id:
            found = stand_in_model(model_id)
            if found is not None:
                return found
        raise ValueError(str(exc.args[0]) if exc.args else f"unknown model {spec!r}") from None


def env_flag(name: str) -> bool | None:
    """``$name`` read as a switch: 1/true/yes/on, 0/false/no/off, else (unset) ``None``."""
    value = os.environ.get(name, "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    return None


class PiConfig(Configurable):
    """The defaults of every ``%%pi`` option, configured as ``c.PiMagics.<name>``.

    ``PiMagics`` is this class plus the magics; a shell without the extension loaded uses a
    plain ``PiConfig``, which reads the same ``PiMagics`` config section.
    """

    model = Unicode(help="Default model as provider:id (falls back to $PI_NOTEBOOK_MODEL).").tag(config=True)
    thinking = CaselessStrEnum(
        list(THINKING_LEVELS), default_value="off", help="Default thinking level."
    ).tag(config=True)
    system = Unicode(DEFAULT_SYSTEM_PROMPT, help="System prompt of new conversations.").tag(config=True)
    tools = Unicode("all", help="Default --tools spec: all|none|read|write|comma list.").tag(config=True)
    approve = Unicode(
        "", help="Default approval policy ask|auto|deny; empty: ask interactive, deny headless."
    ).tag(config=True)
    approvals = Dict(
        help="Per-tool approval policy, tool name or glob pattern -> ask|auto|deny; an entry wins "
        "over the tool's own policy (MCP config) and over --approve.",
    ).tag(config=True)
    mcp_config = Unicode(
        "", help="Path of a JSON file of MCP servers ({\"mcpServers\": {...}}), started when the "
        "extension loads (or on the first %%pi)."
    ).tag(config=True)
    max_turns = Int(0, help="Default --max-turns (0: no limit).").tag(config=True)
    text = Bool(False, help="Plain-text output by default (no widgets).").tag(config=True)
    raise_on_error = Bool(
        None,
        allow_none=True,
        help="Raise after rendering a run that ended in an error (not a user's Stop), so nbconvert, "
        "papermill and CI fail. None (default): raise in headless runs only.",
    ).tag(config=True)
    temperature = Float(
        None, allow_none=True, help="Default --temperature (None: the provider's default)."
    ).tag(config=True)
    # Sessions (``sessions.py``): where conversations are recorded, replay, compaction.
    record = Bool(True, help="Record conversations as Pi session files ($PI_NOTEBOOK_RECORD=0: off).").tag(
        config=True
    )
    session_dir = Unicode(
        "", help="Session files' directory (default: Pi's for the notebook folder; $PI_NOTEBOOK_SESSION_DIR)"
    ).tag(config=True)
    replay = Bool(False, help="Replay every %%pi cell from its recording ($PI_NOTEBOOK_REPLAY=1).").tag(
        config=True
    )
    compact = Bool(True, help="Compact a conversation automatically when it nears the context window.").tag(
        config=True
    )
    compact_reserve_tokens = Int(16384, help="Tokens kept free for the answer (Pi's reserveTokens).").tag(
        config=True
    )
    compact_keep_recent_tokens = Int(20000, help="Recent tokens kept verbatim (Pi's keepRecentTokens).").tag(
        config=True
    )

    retries = Int(
        3,
        help="Retries of a model call that failed with a transient error (overloaded, rate limited, "
        "5xx, a dropped connection), as Pi's coding agent does; 0: off.",
    ).tag(config=True)
    retry_base_delay = Float(
        2.0, help="Seconds before the first retry, doubled for each further one."
    ).tag(config=True)
    timeout = Float(
        DEFAULT_TIMEOUT_S,
        help="Default --timeout: seconds a model request may go without an answer (to connect, for "
        "the reply to begin, between two pieces of a streamed reply) before it fails, as Pi's "
        "httpIdleTimeoutMs; 0: no limit.",
    ).tag(config=True)

    @classmethod
    def section_names(cls) -> list[str]:
        names = list(super().section_names())
        return names if CONFIG_SECTION in names else [*names, CONFIG_SECTION]

    # A validator must raise TraitError: traitlets rolls a rejected value back only for that
    # type, so a ValueError from `%config PiMagics.tools = "raed"` was logged and then kept.
    @validate("approve")
    def _check_approve(self, proposal: Any) -> str:
        value = str(proposal["value"]).strip().lower()
        if value and value not in POLICIES:
            raise TraitError(f"PiMagics.approve must be one of ask, auto, deny or empty, not {value!r}")
        return value

    @validate("approvals")
    def _check_approvals(self, proposal: Any) -> dict[str, Policy]:
        try:
            return check_approvals(proposal["value"])
        except ValueError as exc:
            raise TraitError(str(exc)) from None

    @validate("retries", "retry_base_delay", "timeout")
    def _check_not_negative(self, proposal: Any) -> Any:
        if proposal["value"] < 0:
            raise TraitError(f"PiMagics.{proposal['trait'].name} must be 0 or more, not {proposal['value']}")
        return proposal["value"]

    @validate("tools")
    def _check_tools(self, proposal: Any) -> str:
        try:
            parse_tools_spec(str(proposal["value"]))
        except ValueError as exc:
            raise TraitError(f"PiMagics.tools: {exc}") from None
        return str(proposal["value"])

    def defaults(self) -> Defaults:
        """Settings of a new conversation; the model falls back to ``$PI_NOTEBOOK_MODEL``."""
        model = self.model.strip() or os.environ.get(MODEL_ENV, "").strip()
        return Defaults(model=model, thinking=self.thinking, system=self.system)


def _parser() -> MagicArgumentParser:
    parser = MagicArgumentParser(prog="%%pi", description="Run a prompt through the agent.")  # type: ignore[no-untyped-call]
    add = parser.add_argument
    add("--model", help="provider:id")
    add("--thinking", choices=list(THINKING_LEVELS), help="thinking level")
    add("--system", help="system prompt of this conversation")
    add("--tools", help="all|none|read|write|comma list of tool names")
    add("--approve", choices=list(POLICIES), help="approval policy for state-changing tools")
    add("--new", action="store_true", help="start a fresh conversation")
    add("--name", help="conversation name")
    add("--text", action="store_true", help="plain-text output, no widgets")
    add("--max-turns", type=int, dest="max_turns", help="stop after N model turns")
    add("--temperature", type=float, help="sampling temperature, e.g. 0 for reproducible answers")
    add("--seed", type=int, help="sampling seed, where the model's API has one")
    add("--timeout", type=float, help="seconds a model request may go without an answer (0: no limit)")
    add(
        "--raise-on-error",
        action=argparse.BooleanOptionalAction,
        dest="raise_on_error",
        default=None,
        help="raise after a run that ended in an error (default: in headless runs)",
    )
    add("--resume", action="store_true", help="continue this notebook's latest recorded conversation")
    add("--replay", action="store_true", help="show the recorded answer instead of calling the model")
    return parser


PARSER = _parser()


def model_option(spec: str) -> Model:
    """``resolve_model`` for a ``--model`` / ``%pi model`` value, failing as a ``UsageError``."""
    try:
        return resolve_model(spec)
    except ValueError as exc:
        raise UsageError(f"--model: {exc}") from None


class RunOptions:
    """Validated options of one ``%%pi`` cell, defaults already applied."""

    def __init__(self, ns: argparse.Namespace, config: PiConfig) -> None:
        self.model: Model | None = model_option(ns.model) if ns.model else None
        self.thinking: str | None = ns.thinking
        self.system: str | None = ns.system
        spec = ns.tools if ns.tools is not None else config.tools
        try:
            self.tools: list[str] = parse_tools_spec(spec)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        approve = ns.approve or config.approve or None
        self.approve: Policy | None = cast("Policy | None", approve)
        self.new: bool = ns.new
        self.name: str = ns.name or DEFAULT_NAME
        self.text: bool = ns.text or config.text
        max_turns = ns.max_turns if ns.max_turns is not None else (config.max_turns or None)
        if max_turns is not None and max_turns < 1:
            raise UsageError(f"--max-turns must be a positive integer, got {max_turns}")
        self.max_turns: int | None = max_turns
        temperature = ns.temperature if ns.temperature is not None else config.temperature
        if temperature is not None and not 0 <= temperature <= 2:
            raise UsageError(f"--temperature must be between 0 and 2, got {temperature}")
        self.temperature: float | None = temperature
        self.seed: int | None = ns.seed
        timeout = ns.timeout if ns.timeout is not None else config.timeout
        if not timeout >= 0:  # also NaN
            raise UsageError(f"--timeout takes seconds, 0 or more (0: no limit), not {timeout}")
        self.timeout: float = timeout
        self.raise_on_error: bool | None = (
            ns.raise_on_error if ns.raise_on_error is not None else config.raise_on_error
        )
        self.resume: bool = ns.resume
        self.replay: bool = bool(ns.replay or config.replay or env_flag(REPLAY_ENV))
        self.retries: int = config.retries
        self.retry_base_delay: float = config.retry_base_delay


def parse_options(line: str, config: PiConfig) -> RunOptions:
    """Parse the ``%%pi`` line; raises ``UsageError`` (one line) on any bad option."""
    try:
        argv = shlex.split(line)  # POSIX quoting: --system "Be brief." gives the text without quotes
    except ValueError as exc:
        raise UsageError(f"cannot parse %%pi options: {exc}") from None
    return RunOptions(PARSER.parse_args(argv), config)
