"""``RunOptions``, the validated options of one ``%%pi`` cell, parsed from its line with the
defaults of ``PiConfig`` (``config.py``) applied; and model specs (``--model``, ``%pi model``,
``c.PiMagics.model``) resolved to models. Options given on a cell override the defaults for
that cell; ``--model``, ``--thinking`` and ``--system`` also stay in effect for the
conversation's later cells. Bad options raise a one-line ``UsageError``.
"""

from __future__ import annotations

import argparse
import difflib
import math
import shlex
from collections.abc import Iterable
from typing import cast

from IPython.core.error import UsageError

from ..ai.models import resolve_model as catalogue_resolve_model
from ..ai.types import Model
from ..runtime import Budget
from .config import DEFAULT_NAME, PARSER, REPLAY_ENV, PiConfig, Policy, env_flag
from .run.faux_stand_in import FAUX_PROVIDER, stand_in_model
from .tools.notebook_tools import mcp_tool_patterns, parse_tools_spec


def resolve_model(spec: str) -> Model:
    """``provider:id`` (or a unique bare id) -> a ``Model``; local servers such as
    ``ollama:llama3.2`` resolve without registration, and ``faux:<id>`` without a registered
    faux provider is the honest stand-in (``run/faux_stand_in.py``). Raises ``ValueError`` with a
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


def model_option(spec: str) -> Model:
    """``resolve_model`` for a ``--model`` / ``%pi model`` value, failing as a ``UsageError``."""
    try:
        return resolve_model(spec)
    except ValueError as exc:
        raise UsageError(f"--model: {exc}") from None


class RunOptions:
    """Validated options of one ``%%pi`` cell, defaults already applied."""

    def __init__(self, ns: argparse.Namespace, config: PiConfig, mcp_names: Iterable[str] = ()) -> None:
        self.model: Model | None = model_option(ns.model) if ns.model else None
        self.thinking: str | None = ns.thinking
        self.system: str | None = ns.system
        spec = ns.tools if ns.tools is not None else config.tools
        try:
            self.tools: list[str] = parse_tools_spec(spec, mcp_names)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        self.mcp_tools: tuple[str, ...] = mcp_tool_patterns(spec)
        """The MCP tools named (``SERVER__TOOL``, ``files__*``); empty: every MCP tool joins,
        unless ``no_tools``."""
        self.no_tools: bool = spec.strip() == "none"
        """``--tools none``: no notebook tool and no MCP tool either."""
        approve = ns.approve or config.approve or None
        self.approve: Policy | None = cast("Policy | None", approve)
        self.new: bool = ns.new
        self.name: str = ns.name or DEFAULT_NAME
        self.text: bool = ns.text or config.text
        self.plan_run: bool = ns.plan_run
        """``--plan-run``: run the plan as soon as it is made, without asking."""
        self.plan: bool = ns.plan or ns.plan_run or config.plan
        """Plan mode: this run only plans (read-only tools); ``planning.py`` runs the plan after."""
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
        self.budget: Budget | None = run_budget(ns.max_cost, ns.max_total_tokens, config)
        """``--max-cost`` / ``--max-total-tokens`` (or their ``PiMagics`` defaults); 0: no limit."""
        self.resume: bool = ns.resume
        self.replay: bool = bool(ns.replay or config.replay or env_flag(REPLAY_ENV))
        self.loop_guard: int = config.loop_guard
        code_timeout = ns.code_timeout
        if code_timeout is not None and not 0 <= code_timeout < math.inf:  # also NaN
            raise UsageError(f"--code-timeout takes seconds, 0 or more (0: no limit), not {code_timeout}")
        self.code_timeout: float | None = code_timeout
        """``--code-timeout`` as given (None: not given; ``code_limit`` applies the defaults)."""
        self._default_code_timeout = config.code_timeout
        self._headless_code_timeout = config.headless_code_timeout

    def code_limit(self, headless: bool) -> float | None:
        """Seconds one ``run_code`` call may run (None: no limit): ``--code-timeout``, else
        ``c.PiMagics.code_timeout``, else in a headless run ``headless_code_timeout``."""
        limit = self.code_timeout
        if limit is None:
            limit = self._default_code_timeout or (self._headless_code_timeout if headless else 0.0)
        return limit or None


def run_budget(max_cost: str | None, max_total_tokens: str | None, config: PiConfig) -> Budget | None:
    """The run's budget from ``--max-cost`` and ``--max-total-tokens``, each defaulting to its
    ``PiMagics`` trait; 0 (on the cell or as the default) sets no limit of that kind."""
    cost = config.max_cost if max_cost is None else _number("--max-cost", max_cost.strip().removeprefix("$"))
    tokens: float = config.max_total_tokens
    if max_total_tokens is not None:
        tokens = _number("--max-total-tokens", max_total_tokens)
    if tokens != int(tokens):
        raise UsageError(f"--max-total-tokens takes a whole number of tokens, not {max_total_tokens}")
    return Budget(max_cost=cost or None, max_total_tokens=int(tokens) or None) if cost or tokens else None


def _number(option: str, text: str) -> float:
    """A budget option's value: a finite number, 0 or more. (A comma is never a decimal point
    here: ``--max-cost 0,50`` is refused rather than read as 50 dollars.)"""
    unit = "US dollars, e.g. 0.50" if option == "--max-cost" else "tokens, e.g. 20000"
    try:
        value = float(text if option == "--max-cost" else text.replace(",", ""))
    except ValueError:
        value = math.nan
    if not 0 <= value < math.inf:
        raise UsageError(f"{option} takes {unit} (0: no limit), not {text!r}")
    return value


_PARSED: dict[str, argparse.Namespace] = {}
"""Each ``%%pi`` line parsed so far -> its namespace. The parse is a function of the line alone
(the parser is built once, at import), and a notebook repeats a few lines, so a cell parses its
line once per kernel; the defaults and every check of ``RunOptions`` still apply per cell."""
_PARSED_MAX = 256


def parse_options(line: str, config: PiConfig, mcp_names: Iterable[str] = ()) -> RunOptions:
    """Parse the ``%%pi`` line; raises ``UsageError`` (one line) on any bad option (an unknown
    tool's names ``mcp_names`` among the tools there are)."""
    parsed = _PARSED.get(line)
    if parsed is None:
        try:
            argv = shlex.split(line)  # POSIX quoting: --system "Be brief." gives the text without quotes
        except ValueError as exc:
            raise UsageError(f"cannot parse %%pi options: {exc}") from None
        try:
            parsed = PARSER.parse_args(argv)
        except UsageError as exc:
            raise UsageError(did_you_mean(str(exc), argv)) from None
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[line] = parsed
    return RunOptions(argparse.Namespace(**vars(parsed)), config, mcp_names)  # a copy: never shared


def did_you_mean(message: str, argv: Iterable[str]) -> str:
    """``message`` with ``; did you mean --model?`` for each unknown ``--option`` in ``argv`` close
    to one the parser knows (a typo such as ``--modle``), so the fix is in the error line."""
    known = [option for action in PARSER._actions for option in action.option_strings]
    hints: list[str] = []
    for word in argv:
        flag = word.split("=", 1)[0]
        if not flag.startswith("--") or flag in known:
            continue
        close = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
        if close:
            hints.append(f"{flag}: did you mean {close[0]}?")
    return "; ".join([message, *hints])
