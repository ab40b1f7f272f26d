"""The ``%%pi`` settings: ``OPTIONS``, the one table of ``%%pi`` options and ``c.PiMagics``
traits, from whose rows the parser, ``%pi help``, ``%%pi?``, the ``PiConfig`` traits (types,
defaults, help, validation), each run's ``RunOptions`` values (``options.py``) and
``docs/reference/magic.md`` are made; the policy names and the environment variables the
notebook layer reads.

Defaults come from traitlets config (``c.PiMagics.model = "anthropic:claude-sonnet-4-5"`` in
``ipython_config.py``, or ``%config PiMagics.model = ...``); the model falls back to the
``PI_NOTEBOOK_MODEL`` environment variable. ``options.py`` turns a cell's line into the options
of one run.

``%load_ext pi_notebook`` builds a ``PiConfig`` (the ``PiMagics``), so this module imports only
traitlets, IPython and modules that import nothing heavy: checks that need the notebook tools
or the model catalogue load them when a value is set.
"""

from __future__ import annotations

import argparse
import builtins
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeAlias

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser
from traitlets import (
    Bool,
    CaselessStrEnum,
    Dict,
    Float,
    HasTraits,
    Int,
    TraitError,
    TraitType,
    Unicode,
    validate,
)
from traitlets.config import Configurable

from ..ai.levels import THINKING_LEVELS

if TYPE_CHECKING:
    from ..ai.types import Model

Policy: TypeAlias = Literal["ask", "auto", "deny"]
POLICIES: tuple[Policy, ...] = ("ask", "auto", "deny")
TOOL_MODES = ("auto", "tools", "code")
RECOVERED_CALLS = ("ask", "policy", "off")

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


def check_approvals(value: Any) -> dict[str, Policy]:
    """A valid ``c.PiMagics.approvals`` map (tool name or glob pattern -> policy); raises
    ``ValueError`` naming the bad entry."""
    if not isinstance(value, Mapping):
        raise ValueError("PiMagics.approvals maps tool names to ask, auto or deny")
    out: dict[str, Policy] = {}
    for name, policy in value.items():
        text = str(policy).strip().lower()
        if not isinstance(name, str) or not name or text not in POLICIES:
            raise ValueError(f"PiMagics.approvals[{name!r}] must be one of ask, auto, deny, not {policy!r}")
        out[name] = text
    return out


# The checks of the table's rows: each raises ``ValueError`` with the words that follow the
# option's name (``--timeout must be ...``, ``PiMagics.timeout must be ...``).


def _at_least_0(value: Any) -> Any:
    if not 0 <= value < math.inf:  # NaN fails too
        raise ValueError(f"must be 0 or more, not {value}")
    return value


def _seconds(value: Any) -> Any:
    if not 0 <= value < math.inf:
        raise ValueError(f"must be 0 or more seconds (0: no limit), not {value}")
    return value


def _temperature(value: Any) -> Any:
    if value is not None and not 0 <= value <= 2:
        raise ValueError(f"must be between 0 and 2, not {value}")
    return value


def _dollars(value: Any) -> Any:
    if not 0 <= value < math.inf:
        raise ValueError(f"takes US dollars, e.g. 0.50 (0: no limit), not {value!r}")
    return value


def _tokens(value: Any) -> Any:
    if not 0 <= value < math.inf:
        raise ValueError(f"takes tokens, e.g. 20000 (0: no limit), not {value!r}")
    if value != int(value):
        raise ValueError(f"takes a whole number of tokens, not {value}")
    return int(value)


def _dollars_text(text: str) -> float:
    """``--max-cost``: ``0.50`` or ``$0.50`` (a comma is never a decimal point: ``0,50`` is
    refused rather than read as 50 dollars)."""
    try:
        value = float(text.strip().removeprefix("$"))
    except ValueError:
        value = math.nan
    if not 0 <= value < math.inf:
        raise ValueError(f"takes US dollars, e.g. 0.50 (0: no limit), not {text!r}")
    return value


def _tokens_text(text: str) -> int:
    """``--max-total-tokens``: a whole number, ``20000`` or ``20,000``."""
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        value = math.nan
    if not 0 <= value < math.inf:
        raise ValueError(f"takes tokens, e.g. 20000 (0: no limit), not {text!r}")
    return int(_tokens(value))


def _name(value: str) -> str:
    return value or DEFAULT_NAME


def _tools_spec(value: Any) -> str:
    """A ``tools`` spec the notebook knows (a cell's is checked with the MCP tools there are,
    in ``options.py``)."""
    from .tools.notebook_tools import parse_tools_spec  # the tool list, only when a value is set

    parse_tools_spec(str(value))
    return str(value)


def _model(spec: str) -> Model:
    from .run.faux_stand_in import model_option  # the model catalogue: loaded on first use

    return model_option(spec)


class Choice(CaselessStrEnum[str]):
    """A trait of a row with ``choices``; a bad value's error reads as the other checks' do."""

    def error(
        self, obj: HasTraits | None, value: Any, error: Exception | None = None, info: str | None = None
    ) -> NoReturn:
        names = ", ".join(repr(v) if not v else str(v) for v in self.values or ())
        raise TraitError(f"PiMagics.{self.name} must be one of {names}, not {value!r}")


Kind: TypeAlias = Literal["value", "flag", "switch"]
Applies: TypeAlias = Literal["run", "cell", "kernel"]
TRAIT_TYPES: dict[type[Any], Callable[..., TraitType[Any, Any]]] = {
    str: Unicode, int: Int, float: Float, bool: Bool, dict: Dict,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Option:
    """One ``%%pi`` option or ``c.PiMagics`` trait, declared once. From the rows of ``OPTIONS``
    come the ``%%pi`` parser, ``%pi help``, ``%%pi?``, the ``PiConfig`` traits (type, default,
    help, validation), the values of each run's ``RunOptions`` (``options.py``) and
    ``docs/reference/magic.md``; ``tests/notebook/test_options_table.py`` fails when one drifts."""

    flag: str | None
    """``--name-of-it`` on the ``%%pi`` line; ``None``: a ``c.PiMagics`` trait only."""
    help: str
    """The one help text: its first line is the parser's (``%%pi?``); all of it is
    ``%pi help``'s, the trait's and the reference's."""
    metavar: str | None = None
    kind: Kind = "value"
    """``value``: takes an argument; ``flag``: on when given; ``switch``: ``--x`` / ``--no-x``."""
    type: builtins.type[Any] = str
    """The value's type: ``str``, ``int``, ``float``, ``bool`` or ``dict`` (flags and switches
    are ``bool`` whatever this says)."""
    default: Any = None
    """The trait's default; without a trait, a run's value when the cell gives none (a flag's
    is ``False``). ``None`` makes the trait accept ``None``."""
    choices: tuple[str, ...] | None = None
    trait: str | None = None
    """The ``c.PiMagics`` trait, named as the option (``--max-turns``: ``max_turns``); ``None``:
    the option has no trait."""
    applies: Applies = "run"
    """``run``: a run takes the cell's value, else the trait's; ``cell``: a run takes the cell's
    only and the trait applies elsewhere (``model``: to new conversations); ``kernel``: a trait
    that is no run option."""
    check: Callable[[Any], Any] | None = None
    """Validates (and may normalise) the trait's value and the cell's; raises ``ValueError``
    whose words follow the option's name (``must be 0 or more, not -1``)."""
    parse: Callable[[str], Any] | None = None
    """Turns the cell's text into its value and validates it (in place of ``type`` and ``check``)."""

    def __post_init__(self) -> None:
        if self.kind == "flag" and self.default is None:
            object.__setattr__(self, "default", False)
        problem = self._problem()
        if problem:  # a bad row fails at import, so a new row is right before anything uses it
            raise ValueError(f"OPTIONS row {self.flag or self.trait}: {problem}")

    def _problem(self) -> str:
        if self.flag is None and (self.trait is None or self.kind != "value" or self.applies == "cell"):
            return "a row without a flag is a trait: give trait=NAME, and no kind or applies='cell'"
        if self.flag is not None and not self.flag.startswith("--"):
            return "a flag starts with --"
        if self.flag is not None and self.trait is not None and self.trait != self.dest:
            return f"its trait is named as the flag: trait={self.dest!r}"
        if self.flag is not None and self.applies == "kernel":
            return "a kernel-wide trait has no flag"
        if self.value_type not in TRAIT_TYPES:
            return f"type must be one of {', '.join(t.__name__ for t in TRAIT_TYPES)}"
        if self.default is not None and not isinstance(self.default, self.value_type):
            return f"default {self.default!r} is not a {self.value_type.__name__}"
        return ""

    @property
    def dest(self) -> str:
        """The parser's name for it, ``max_turns`` for ``--max-turns``."""
        return self.flag[2:].replace("-", "_") if self.flag else str(self.trait)

    @property
    def name(self) -> str:
        """The trait's name and the ``RunOptions`` attribute's."""
        return self.trait or self.dest

    @property
    def value_type(self) -> builtins.type[Any]:
        return bool if self.kind != "value" else self.type

    @property
    def run_default(self) -> Any:
        """A run's value when the cell gives none and no trait applies."""
        return None if self.applies == "cell" else self.default

    @property
    def usage(self) -> str:
        """How ``%pi help`` shows it: ``--model provider:id``, ``--[no-]raise-on-error``."""
        if self.kind == "switch":
            return f"--[no-]{self.dest.replace('_', '-')}"
        if self.kind == "flag":
            return str(self.flag)
        return f"{self.flag} {self.metavar or self.dest.upper()}"

    @property
    def trait_help(self) -> str:
        """The trait's help: the option's text on one line, and the flag that overrides it."""
        text = " ".join(self.help.split())
        return f"{text} (per cell: {self.flag})" if self.flag else text

    def make_trait(self) -> TraitType[Any, Any]:
        """The ``c.PiMagics`` trait of this row (``config=True``)."""
        options = {"default_value": self.default, "allow_none": self.default is None, "help": self.trait_help}
        if self.choices:
            extra = [] if self.default is None or self.default in self.choices else [self.default]
            return Choice([*self.choices, *extra], **options).tag(config=True)
        return TRAIT_TYPES[self.value_type](**options).tag(config=True)

    def error(self, exc: Exception, who: str) -> str:
        """The one-line error of a bad value: ``who`` (``--timeout``, ``PiMagics.timeout``) and why."""
        text = str(exc)
        return text if text.startswith("PiMagics.") else f"{who} {text}"

    def cell_value(self, given: Any) -> Any:
        """The value of ``given`` on a cell (the parser's), parsed and checked; a bad one raises
        a one-line ``UsageError``."""
        if self.kind != "value":
            return given
        try:
            if self.parse is not None:
                return self.parse(given)
            return self.check(given) if self.check is not None else given
        except ValueError as exc:
            raise UsageError(self.error(exc, str(self.flag))) from None


OPTIONS: tuple[Option, ...] = (
    # %%pi options (and the c.PiMagics traits behind them), in the order of %pi help
    Option("--model", "the model, provider:id; a cell's stays for the conversation's later cells\n"
           "(new conversations: c.PiMagics.model, $PI_NOTEBOOK_MODEL, Pi's settings.json)",
           metavar="provider:id", trait="model", default="", applies="cell", parse=_model),
    Option("--thinking", f"thinking level, {'|'.join(THINKING_LEVELS)}; a cell's stays for the\n"
           "conversation's later cells (new ones: c.PiMagics.thinking, Pi's defaultThinkingLevel)",
           metavar="LEVEL", choices=tuple(THINKING_LEVELS), trait="thinking", default="off", applies="cell"),
    Option("--system", "system prompt; a cell's stays for the conversation's later cells\n"
           "(new conversations: c.PiMagics.system)",
           metavar="TEXT", trait="system", default=DEFAULT_SYSTEM_PROMPT, applies="cell"),
    Option("--tools", "all|none|read|write|comma list of tool names, MCP ones too\n"
           "(files__read_file, files__*: only those MCP tools join; naming none: all of them)",
           metavar="SPEC", trait="tools", default="all", check=_tools_spec, parse=str),
    Option("--approve", "ask|auto|deny for the tools that change state (delete_cells always asks)\n"
           "(not set: ask when someone can click, deny in headless runs)",
           metavar="POLICY", choices=POLICIES, trait="approve", default=""),
    Option("--new", "start a fresh conversation", kind="flag"),
    Option("--name", "use (or create) the conversation NAME", metavar="NAME", default=DEFAULT_NAME,
           check=_name),
    Option("--text", "plain-text output, no widgets", kind="flag", trait="text"),
    Option("--plan", "plan first with read-only tools; the plan runs after Run plan on its card\n"
           "(headless: the run stops after the plan)", kind="flag", trait="plan"),
    Option("--plan-run", "plan first, then run the plan without asking", kind="flag"),
    Option("--tool-mode", "tools (the tool API) or code (Python in fenced blocks, each run as run_code);\n"
           "code sends no tool schemas: for models without reliable tool calling;\n"
           "auto: the model's toolMode in the models file, else what its local server says, else tools",
           metavar="MODE", choices=TOOL_MODES, trait="tool_mode", default="auto"),
    Option("--recovered-calls", "a call the model printed in its text: ask (on its card), policy, off;\n"
           "policy: --approve decides, as for a call it made; off: it stays text", metavar="HOW",
           choices=RECOVERED_CALLS, trait="recovered_calls", default="ask"),
    Option("--max-turns", "stop after N model turns (0: no limit)", metavar="N", type=int, trait="max_turns",
           default=0, check=_at_least_0),
    Option("--temperature", "sampling temperature (0 to 2), e.g. 0 for reproducible answers\n"
           "(not set: the provider's default)",
           metavar="T", type=float, trait="temperature", check=_temperature),
    Option("--seed", "sampling seed (OpenAI-compatible chat completions only)", metavar="N", type=int),
    Option("--timeout", "seconds a model request may go without an answer (0: no limit)\n"
           "(to connect, for the reply to begin, between two of its pieces: Pi's httpIdleTimeoutMs)",
           metavar="S", type=float, trait="timeout", default=DEFAULT_TIMEOUT_S, check=_seconds),
    Option("--code-timeout", "interrupt a run_code call after S seconds (0: no limit)\n"
           "(the trait's 0 and no --code-timeout: headless runs get headless_code_timeout)",
           metavar="S", type=float, trait="code_timeout", default=0.0, applies="cell", check=_seconds),
    Option("--max-cost", "stop the run once it has spent USD dollars (the model needs prices; 0: no limit)",
           metavar="USD", type=float, trait="max_cost", default=0.0, check=_dollars, parse=_dollars_text),
    Option("--max-total-tokens", "stop the run once its requests used N tokens, input + output (0: no limit)",
           metavar="N", type=int, trait="max_total_tokens", default=0, check=_tokens, parse=_tokens_text),
    Option("--raise-on-error", "raise after a run that ended in an error (not a user's Stop)\n"
           "(not set: in headless runs, so nbconvert, papermill and CI fail)",
           kind="switch", trait="raise_on_error"),
    Option("--resume", "continue this notebook's latest recorded conversation first", kind="flag"),
    Option("--replay", "show the recorded answer of this prompt; no model is called\n"
           "(c.PiMagics.replay or $PI_NOTEBOOK_REPLAY=1: every cell)", kind="flag", trait="replay"),
    # c.PiMagics traits without a flag
    Option(None, "Ask before the model's Nth identical tool call in a row runs (same tool, same arguments); "
           "denied, or with nobody to ask, it does not run and the run stops; 0: off.",
           trait="loop_guard", type=int, default=3, check=_at_least_0),
    Option(None, "Under a failing cell's traceback, show Explain and Fix buttons (where nothing can "
           "click them, one line naming %pi explain N / %pi fix N); never in headless runs. Nothing calls "
           "a model until one is clicked. False: show nothing.",
           trait="error_actions", type=bool, default=True, applies="kernel"),
    Option(None, "Per-tool approval policy, tool name or glob pattern -> ask|auto|deny; an entry wins "
           "over the tool's own policy (MCP config) and over --approve.",
           trait="approvals", type=dict, default={}, applies="kernel", check=check_approvals),
    Option(None, "Path of a JSON file of MCP servers ({\"mcpServers\": {...}}), started when the "
           "extension loads (or on the first %%pi).", trait="mcp_config", default="", applies="kernel"),
    Option(None, "The run_code limit of headless runs (nbconvert, papermill) when code_timeout is 0 and "
           "the cell gives no --code-timeout: nobody is there to press Stop. 0: no limit.",
           trait="headless_code_timeout", type=float, default=600.0, applies="kernel", check=_seconds),
    Option(None, "The folder whose AGENTS.md, .pi skills and templates apply (default: the notebook's).",
           trait="project_folder", default="", applies="kernel"),
    Option(None, "Put the folder's AGENTS.md / CLAUDE.md files in the system prompt (Pi's context files).",
           trait="context_files", type=bool, default=True, applies="kernel"),
    Option(None, "Trust a project folder nobody was asked about in headless runs (nbconvert, papermill); "
           "off: such runs load no project skills, templates or settings.",
           trait="trust_headless", type=bool, default=False, applies="kernel"),
    Option(None, "Record conversations as Pi session files ($PI_NOTEBOOK_RECORD=0: off).",
           trait="record", type=bool, default=True, applies="kernel"),
    Option(None, "Session files' directory (default: Pi's for the notebook folder; $PI_NOTEBOOK_SESSION_DIR)",
           trait="session_dir", default="", applies="kernel"),
    Option(None, "Compact a conversation automatically when it nears the context window.",
           trait="compact", type=bool, default=True, applies="kernel"),
    Option(None, "Tokens kept free for the answer (Pi's reserveTokens).",
           trait="compact_reserve_tokens", type=int, default=16384, applies="kernel"),
    Option(None, "Recent tokens kept verbatim (Pi's keepRecentTokens).",
           trait="compact_keep_recent_tokens", type=int, default=20000, applies="kernel"),
    Option(None, "Retries of a model call that failed with a transient error (overloaded, rate limited, "
           "5xx, a dropped connection), as Pi's coding agent does; 0: off.",
           trait="retries", type=int, default=3, applies="kernel", check=_at_least_0),
    Option(None, "Seconds before the first retry, doubled for each further one.",
           trait="retry_base_delay", type=float, default=2.0, applies="kernel", check=_at_least_0),
    Option(None, "US dollars the runs of one conversation may spend together (counted from its first run "
           "in this kernel); a run that reaches it stops, and the next one does not start (0: no limit).",
           trait="max_conversation_cost", type=float, default=0.0, applies="kernel", check=_dollars),
    Option(None, "Input + output tokens the runs of one conversation may use together (0: no limit).",
           trait="max_conversation_tokens", type=int, default=0, applies="kernel", check=_tokens),
)  # fmt: skip
OPTION = {option.name: option for option in OPTIONS}
"""The rows by name (``max_turns``, ``loop_guard``)."""
FLAGS = tuple(option for option in OPTIONS if option.flag)
"""The rows of the ``%%pi`` line's options, in order."""


def options_help() -> str:
    """The ``%%pi`` part of ``%pi help``, one line per option (continuation lines indented)."""
    lines = []
    for option in FLAGS:
        first, *more = option.help.split("\n")
        usage = f"{option.usage:<24}" if len(option.usage) < 24 else f"{option.usage} "
        lines.append(f"  {usage}{first}")
        lines += [f"  {'':<24}{line}" for line in more]
    return "\n".join(lines)


class PiConfig(Configurable):
    """The ``c.PiMagics`` traits: one per row of ``OPTIONS`` that has one, made from the row.

    ``PiMagics`` is this class plus the magics; a shell without the extension loaded uses a
    plain ``PiConfig``, which reads the same ``PiMagics`` config section.
    """

    # The types code reads the traits as (tests/notebook/test_options_table.py checks each
    # against its row; a trait no code reads needs no line here).
    model: str
    thinking: str
    system: str
    tools: str
    approve: str
    text: bool
    plan: bool
    max_turns: int
    tool_mode: str
    recovered_calls: str
    temperature: float | None
    timeout: float
    code_timeout: float
    max_cost: float
    max_total_tokens: int
    raise_on_error: bool | None
    replay: bool
    loop_guard: int
    error_actions: bool
    approvals: dict[str, Policy]
    mcp_config: str
    headless_code_timeout: float
    project_folder: str
    context_files: bool
    trust_headless: bool
    record: bool
    session_dir: str
    compact: bool
    compact_reserve_tokens: int
    compact_keep_recent_tokens: int
    retries: int
    retry_base_delay: float
    max_conversation_cost: float
    max_conversation_tokens: int

    # The traits, made from the rows in the class body, so traitlets' metaclass sets them up as
    # it does written-out ones (a class body's namespace is a plain dict that locals() returns).
    locals().update({option.name: option.make_trait() for option in OPTIONS if option.trait})

    @classmethod
    def section_names(cls) -> list[str]:
        names = list(super().section_names())
        return names if CONFIG_SECTION in names else [*names, CONFIG_SECTION]

    # A validator must raise TraitError: traitlets rolls a rejected value back only for that
    # type, so a ValueError from `%config PiMagics.tools = "raed"` was logged and then kept.
    @validate(*(option.name for option in OPTIONS if option.trait and option.check))
    def _check(self, proposal: Any) -> Any:
        option = OPTION[proposal["trait"].name]
        assert option.check is not None
        try:
            return option.check(proposal["value"])
        except ValueError as exc:
            raise TraitError(option.error(exc, f"PiMagics.{option.name}")) from None

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


def _parser() -> MagicArgumentParser:
    """The ``%%pi`` line's parser, made from ``OPTIONS``: every option's default is ``None``
    (``False`` for a flag), so ``RunOptions`` tells a given value from the trait's."""
    # ``%pi``: IPython's help formatter puts one more "%" before the prog, so ``%%pi?`` reads
    # ``%%pi [--model provider:id] ...`` (with "%%pi" it read "%%%pi").
    parser = MagicArgumentParser(prog="%pi", description="Run a prompt through the agent.")  # type: ignore[no-untyped-call]
    for option in FLAGS:
        flag, first = str(option.flag), option.help.split("\n")[0]
        if option.kind == "flag":
            parser.add_argument(flag, action="store_true", help=first)
        elif option.kind == "switch":
            parser.add_argument(
                flag, action=argparse.BooleanOptionalAction, dest=option.dest, default=None, help=first
            )
        else:  # int and float checked by the parser (its error names the option), the rest after
            checked = option.type in (int, float) and not option.parse
            typed: Callable[[str], Any] = option.type if checked else str
            parser.add_argument(
                flag, dest=option.dest, metavar=option.metavar, type=typed,
                choices=list(option.choices) if option.choices else None, help=first,
            )  # fmt: skip
    return parser


PARSER = _parser()
