"""The ``%%pi`` settings: ``OPTIONS`` (the one table of ``%%pi`` options, from which the
parser, ``%pi help``, ``%%pi?``, the traits' help and ``docs/reference/magic.md`` are made),
``PiConfig`` (the configurable defaults of every option, read from the ``PiMagics`` config
section), the policy names and the environment variables the notebook layer reads.

Defaults come from traitlets config (``c.PiMagics.model = "anthropic:claude-sonnet-4-5"`` in
``ipython_config.py``, or ``%config PiMagics.model = ...``); the model falls back to the
``PI_NOTEBOOK_MODEL`` environment variable. ``options.py`` turns a cell's line into the options
of one run.

``%load_ext pi_notebook`` builds a ``PiConfig`` (the ``PiMagics``), so this module imports only
traitlets, IPython and modules that import nothing heavy: validators that need the notebook
tools load them when a value is set.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from IPython.core.magic_arguments import MagicArgumentParser
from traitlets import Bool, CaselessStrEnum, Dict, Float, Int, TraitError, Unicode, validate
from traitlets.config import Configurable

from ..ai.levels import THINKING_LEVELS

Policy: TypeAlias = Literal["ask", "auto", "deny"]
POLICIES: tuple[Policy, ...] = ("ask", "auto", "deny")

DEFAULT_NAME = "default"
MODEL_ENV = "PI_NOTEBOOK_MODEL"
REPLAY_ENV = "PI_NOTEBOOK_REPLAY"
DEFAULT_TIMEOUT_S = 300.0
"""Pi's default ``httpIdleTimeoutMs`` (5 minutes), in seconds."""
NO_TIMEOUT_MS = 2**31 - 1
"""``--timeout 0``: about 25 days, what Pi's coding agent passes for a disabled idle timeout."""
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


def timeout_ms(seconds: float) -> int:
    """``--timeout`` seconds as the stream options' ``timeout_ms`` (0: no limit)."""
    return NO_TIMEOUT_MS if seconds <= 0 or seconds * 1000 >= NO_TIMEOUT_MS else max(1, round(seconds * 1000))


def env_flag(name: str) -> bool | None:
    """``$name`` read as a switch: 1/true/yes/on, 0/false/no/off, else (unset) ``None``."""
    value = os.environ.get(name, "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    return None


# --- the %%pi options: one table ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Option:
    """One ``%%pi`` option, declared once: the parser, ``%pi help``, ``%%pi?``, the help of
    the ``c.PiMagics`` trait that gives its default and ``docs/reference/magic.md`` are made
    from it (``tests/notebook/test_options_table.py`` fails when one drifts)."""

    flag: str
    help: str
    """One text; its first line is the parser's (``%%pi?``), all of it ``%pi help``'s."""
    metavar: str | None = None
    kind: Literal["value", "flag", "switch"] = "value"
    """``value``: takes an argument; ``flag``: on when given; ``switch``: ``--x`` / ``--no-x``."""
    type: Any = None
    choices: tuple[str, ...] | None = None
    trait: str | None = None
    """The ``c.PiMagics`` trait that gives the default when the cell does not."""

    @property
    def dest(self) -> str:
        return self.flag[2:].replace("-", "_")

    @property
    def usage(self) -> str:
        """How ``%pi help`` shows it: ``--model provider:id``, ``--[no-]raise-on-error``."""
        if self.kind == "switch":
            return f"--[no-]{self.flag[2:]}"
        if self.kind == "flag":
            return self.flag
        return f"{self.flag} {self.metavar or self.dest.upper()}"

    def trait_help(self, extra: str = "") -> str:
        """The help of the trait behind the option: the option's own text, and ``extra``."""
        text = " ".join(self.help.split())
        return f"Default {self.flag}: {text}{extra}"


OPTIONS: tuple[Option, ...] = (
    Option("--model", "model (default: c.PiMagics.model, $PI_NOTEBOOK_MODEL, Pi's settings.json)",
           metavar="provider:id", trait="model"),
    Option("--thinking", "off|minimal|low|medium|high|xhigh|max", metavar="LEVEL",
           choices=tuple(THINKING_LEVELS), trait="thinking"),
    Option("--system", "system prompt of this conversation", metavar="TEXT", trait="system"),
    Option("--tools", "all|none|read|write|comma list of tool names, MCP ones too\n"
           "(files__read_file, files__*: then only those MCP tools join)", metavar="SPEC", trait="tools"),
    Option("--approve", "ask|auto|deny for the tools that change state (delete_cells always asks)",
           metavar="POLICY", choices=POLICIES, trait="approve"),
    Option("--new", "start a fresh conversation", kind="flag"),
    Option("--name", "use (or create) the conversation NAME", metavar="NAME"),
    Option("--text", "plain-text output, no widgets", kind="flag", trait="text"),
    Option("--plan", "plan first with read-only tools; the plan runs after Run plan on its card\n"
           "(headless: the run stops after the plan)", kind="flag", trait="plan"),
    Option("--plan-run", "plan first, then run the plan without asking", kind="flag"),
    Option("--max-turns", "stop after N model turns (0: no limit)", metavar="N", type=int, trait="max_turns"),
    Option("--temperature", "sampling temperature (0 to 2), e.g. 0 for reproducible answers", metavar="T",
           type=float, trait="temperature"),
    Option("--seed", "sampling seed (OpenAI-compatible chat completions only)", metavar="N", type=int),
    Option("--timeout", "seconds a model request may go without an answer (default 300; 0: none)",
           metavar="S", type=float, trait="timeout"),
    Option("--code-timeout", "interrupt a run_code call after S seconds (0: none; headless default 600)",
           metavar="S", type=float, trait="code_timeout"),
    Option("--max-cost", "stop the run once it has spent USD dollars (the model needs prices; 0: none)",
           metavar="USD", trait="max_cost"),
    Option("--max-total-tokens", "stop the run once its requests used N tokens, input + output (0: none)",
           metavar="N", trait="max_total_tokens"),
    Option("--raise-on-error", "raise after a run that ended in an error (default: headless runs)",
           kind="switch", trait="raise_on_error"),
    Option("--resume", "continue this notebook's latest recorded conversation first", kind="flag"),
    Option("--replay", "show the recorded answer of this prompt; no model is called", kind="flag",
           trait="replay"),
)  # fmt: skip
OPTION = {option.flag: option for option in OPTIONS}


def option_help(flag: str, extra: str = "") -> str:
    """The help of the ``c.PiMagics`` trait behind ``flag`` (``Option.trait_help``)."""
    return OPTION[flag].trait_help(extra)


def options_help() -> str:
    """The ``%%pi`` part of ``%pi help``, one line per option (continuation lines indented)."""
    lines = []
    for option in OPTIONS:
        first, *more = option.help.split("\n")
        usage = f"{option.usage:<24}" if len(option.usage) < 24 else f"{option.usage} "
        lines.append(f"  {usage}{first}")
        lines += [f"  {'':<24}{line}" for line in more]
    return "\n".join(lines)


class PiConfig(Configurable):
    """The defaults of every ``%%pi`` option, configured as ``c.PiMagics.<name>``.

    ``PiMagics`` is this class plus the magics; a shell without the extension loaded uses a
    plain ``PiConfig``, which reads the same ``PiMagics`` config section.
    """

    model = Unicode(help=option_help("--model")).tag(config=True)
    thinking = CaselessStrEnum(
        list(THINKING_LEVELS), default_value="off", help=option_help("--thinking")
    ).tag(config=True)
    system = Unicode(DEFAULT_SYSTEM_PROMPT, help=option_help("--system", " (of new conversations)")).tag(
        config=True
    )
    tools = Unicode(
        "all", help=option_help("--tools", "; when it names no MCP tool, every MCP tool joins")
    ).tag(config=True)
    approve = Unicode("", help=option_help("--approve", "; empty: ask interactive, deny headless")).tag(
        config=True
    )
    approvals = Dict(
        help="Per-tool approval policy, tool name or glob pattern -> ask|auto|deny; an entry wins "
        "over the tool's own policy (MCP config) and over --approve.",
    ).tag(config=True)
    mcp_config = Unicode(
        "", help="Path of a JSON file of MCP servers ({\"mcpServers\": {...}}), started when the "
        "extension loads (or on the first %%pi)."
    ).tag(config=True)
    max_turns = Int(0, help=option_help("--max-turns")).tag(config=True)
    loop_guard = Int(
        3,
        help="Ask before the model's Nth identical tool call in a row runs (same tool, same "
        "arguments); denied, or with nobody to ask, it does not run and the run stops; 0: off.",
    ).tag(config=True)
    code_timeout = Float(
        0.0,
        help=option_help(
            "--code-timeout", "; 0: no limit in runs someone watches (the default), headless_code_timeout in "
            "headless ones"
        ),
    ).tag(config=True)
    headless_code_timeout = Float(
        600.0,
        help="The run_code limit of headless runs (nbconvert, papermill) when code_timeout is 0 and "
        "the cell gives no --code-timeout: nobody is there to press Stop. 0: no limit.",
    ).tag(config=True)
    text = Bool(False, help=option_help("--text")).tag(config=True)
    plan = Bool(False, help=option_help("--plan")).tag(config=True)
    raise_on_error = Bool(
        None,
        allow_none=True,
        help=option_help(
            "--raise-on-error", " (not a user's Stop), so nbconvert, papermill and CI fail; None: headless"
        ),
    ).tag(config=True)
    temperature = Float(
        None, allow_none=True, help=option_help("--temperature", " (None: the provider's default)")
    ).tag(config=True)
    # Resources (``resources.py``): Pi's AGENTS.md, skills and templates of the notebook's folder.
    project_folder = Unicode(
        "", help="The folder whose AGENTS.md, .pi skills and templates apply (default: the notebook's)."
    ).tag(config=True)
    context_files = Bool(
        True, help="Put the folder's AGENTS.md / CLAUDE.md files in the system prompt (Pi's context files)."
    ).tag(config=True)
    trust_headless = Bool(
        False,
        help="Trust a project folder nobody was asked about in headless runs (nbconvert, papermill); "
        "off: such runs load no project skills, templates or settings.",
    ).tag(config=True)
    # Sessions (``sessions/``): where conversations are recorded, replay, compaction.
    record = Bool(True, help="Record conversations as Pi session files ($PI_NOTEBOOK_RECORD=0: off).").tag(
        config=True
    )
    session_dir = Unicode(
        "", help="Session files' directory (default: Pi's for the notebook folder; $PI_NOTEBOOK_SESSION_DIR)"
    ).tag(config=True)
    replay = Bool(False, help=option_help("--replay", " (every cell; $PI_NOTEBOOK_REPLAY=1)")).tag(
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
    max_cost = Float(0.0, help=option_help("--max-cost")).tag(config=True)
    max_total_tokens = Int(0, help=option_help("--max-total-tokens")).tag(config=True)
    max_conversation_cost = Float(
        0.0,
        help="US dollars the runs of one conversation may spend together (counted from its first run in "
        "this kernel); a run that reaches it stops, and the next one does not start (0: no limit).",
    ).tag(config=True)
    max_conversation_tokens = Int(
        0, help="Input + output tokens the runs of one conversation may use together (0: no limit)."
    ).tag(config=True)
    timeout = Float(
        DEFAULT_TIMEOUT_S,
        help=option_help(
            "--timeout", " (to connect, for the reply to begin, between two pieces of a streamed reply), "
            "as Pi's httpIdleTimeoutMs"
        ),
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

    @validate("retries", "retry_base_delay", "timeout", "loop_guard", "code_timeout", "headless_code_timeout")
    def _check_not_negative(self, proposal: Any) -> Any:
        if proposal["value"] < 0:
            raise TraitError(f"PiMagics.{proposal['trait'].name} must be 0 or more, not {proposal['value']}")
        return proposal["value"]

    @validate("max_cost", "max_total_tokens", "max_conversation_cost", "max_conversation_tokens")
    def _check_budget(self, proposal: Any) -> Any:
        value = proposal["value"]
        if not 0 <= value < float("inf"):  # NaN fails too
            name = proposal["trait"].name
            unit = "US dollars" if name.endswith("cost") else "tokens"
            raise TraitError(f"PiMagics.{name} takes {unit}, 0 (no limit) or more, not {value}")
        return value

    @validate("tools")
    def _check_tools(self, proposal: Any) -> str:
        from .tools.notebook_tools import parse_tools_spec  # the tool list, only when a value is set

        try:
            parse_tools_spec(str(proposal["value"]))
        except ValueError as exc:
            raise TraitError(f"PiMagics.tools: {exc}") from None
        return str(proposal["value"])

    def user_set(self, name: str) -> bool:
        """Whether the user set trait ``name``: it is in the config (``ipython_config.py``,
        ``%config``, even at its default value) or differs from its default. A trait left alone
        gives way to Pi's ``settings.json`` (``defaults.py``)."""
        for section in self.section_names():
            if section in self.config and name in self.config[section]:
                return True
        return bool(getattr(self, name) != self.trait_defaults(name))

    def user_set_of(self, names: tuple[str, ...]) -> frozenset[str]:
        """Those of ``names`` the user set (``user_set``), in one call (the config's sections
        looked up once, not per name)."""
        wanted = frozenset(names)
        configured: set[str] = set()
        for section in self.section_names():
            if section in self.config:  # a section's keys are plain names: a set operation
                configured.update(wanted.intersection(self.config[section]))
        return frozenset(
            name for name in names if name in configured or getattr(self, name) != self.trait_defaults(name)
        )

    def defaults(self) -> Defaults:
        """The traits' settings of a new conversation (Pi's ``settings.json`` is not read here:
        ``defaults.effective`` adds it); the model falls back to ``$PI_NOTEBOOK_MODEL``."""
        model = self.model.strip() or os.environ.get(MODEL_ENV, "").strip()
        return Defaults(model=model, thinking=self.thinking, system=self.system)


def check_approvals(value: Any) -> dict[str, Policy]:
    """A valid ``c.PiMagics.approvals`` map (tool name or glob pattern -> policy); raises
    ``ValueError`` naming the bad entry."""
    if not isinstance(value, Mapping):
        raise ValueError("PiMagics.approvals maps tool names to ask, auto or deny")
    out: dict[str, Policy] = {}
    for name, policy in value.items():
        text = str(policy).strip().lower()
        if not isinstance(name, str) or not name or text not in POLICIES:
            raise ValueError(
                f"PiMagics.approvals[{name!r}] must be one of ask, auto, deny, not {policy!r}"
            )
        out[name] = text
    return out


def _parser() -> MagicArgumentParser:
    """The ``%%pi`` line's parser, made from ``OPTIONS``."""
    # ``%pi``: IPython's help formatter puts one more "%" before the prog, so ``%%pi?`` reads
    # ``%%pi [--model provider:id] ...`` (with "%%pi" it read "%%%pi").
    parser = MagicArgumentParser(prog="%pi", description="Run a prompt through the agent.")  # type: ignore[no-untyped-call]
    for option in OPTIONS:
        first = option.help.split("\n")[0]
        if option.kind == "flag":
            parser.add_argument(option.flag, action="store_true", help=first)
        elif option.kind == "switch":
            parser.add_argument(
                option.flag, action=argparse.BooleanOptionalAction, dest=option.dest, default=None, help=first
            )
        else:
            parser.add_argument(
                option.flag, dest=option.dest, metavar=option.metavar, type=option.type,
                choices=list(option.choices) if option.choices else None, help=first,
            )  # fmt: skip
    return parser


PARSER = _parser()


