"""``RunOptions``, the validated options of one ``%%pi`` cell: a value for each run option of
the table (``config.OPTIONS``), the cell's or its ``PiConfig`` trait's, and what the run works
out from them (the tools, the budget, the ``run_code`` limit). Options given on a cell override
the defaults for that cell; ``--model``, ``--thinking`` and ``--system`` also stay in effect for
the conversation's later cells. Bad options raise a one-line ``UsageError``. (``model_option``
and ``resolve_model``, from ``run/faux_stand_in.py``, turn model specs into models.)
"""

from __future__ import annotations

import argparse
import difflib
import shlex
from collections.abc import Iterable, Mapping
from typing import Any, cast

from IPython.core.error import UsageError

from ..ai.types import Model
from ..runtime import Budget
from .config import OPTIONS, PARSER, REPLAY_ENV, PiConfig, Policy, env_flag
from .run.faux_stand_in import model_option, resolve_model
from .tools.notebook_tools import mcp_tool_patterns, parse_tools_spec

__all__ = [
    "RUN_ROWS", "RunOptions", "did_you_mean", "model_option", "parse_options", "resolve_model", "run_values",
]  # fmt: skip


RUN_ROWS = tuple(option for option in OPTIONS if option.applies != "kernel")
"""The rows of ``OPTIONS`` that give each run a value."""
_RUN_PLAN = tuple(
    (option, option.name, option.dest if option.flag else None, option.kind == "flag",
     option.trait is not None and option.applies == "run", option.run_default)
    for option in RUN_ROWS
)  # fmt: skip
"""Per row, worked out once: where its value comes from (``run_values`` runs for every cell)."""


def run_values(ns: argparse.Namespace, config: PiConfig) -> dict[str, Any]:
    """A value for each of ``RUN_ROWS``: the cell's (parsed and checked), else the trait's when
    the row's trait applies to runs, else the row's default."""
    values: dict[str, Any] = {}
    for option, name, dest, is_flag, from_trait, default in _RUN_PLAN:
        given = getattr(ns, dest) if dest is not None else None
        if given is not None and (given or not is_flag):  # a flag not given is False
            values[name] = given if is_flag else option.cell_value(given)
        elif from_trait:
            values[name] = getattr(config, name)
        else:
            values[name] = default
    return values


class RunOptions:
    """Validated options of one ``%%pi`` cell: an attribute per row of ``RUN_ROWS``
    (``run_values``), and what the run works out from them."""

    # The types code reads the table's values as (tests/notebook/test_options_table.py checks
    # each against its row; every row's value is set, declared here or not).
    model: Model | None
    thinking: str | None
    system: str | None
    tools: str
    """The ``--tools`` spec; ``tool_names`` are the notebook tools it gives."""
    approve: str
    new: bool
    name: str
    text: bool
    plan: bool
    """Plan mode: this run only plans (read-only tools); ``planning.py`` runs the plan after
    (``--plan``, ``--plan-run`` or ``c.PiMagics.plan``)."""
    plan_run: bool
    """``--plan-run``: run the plan as soon as it is made, without asking."""
    max_turns: int
    tool_mode: str
    """``--tool-mode``: ``auto`` (the model's ``toolMode``, else tools), ``tools``, ``code``."""
    recovered_calls: str
    """``--recovered-calls``: what a call printed in the model's text becomes."""
    temperature: float | None
    seed: int | None
    timeout: float
    code_timeout: float | None
    """``--code-timeout`` as given (None: not given; ``code_limit`` applies the defaults)."""
    max_cost: float
    max_total_tokens: int
    raise_on_error: bool | None
    resume: bool
    replay: bool
    loop_guard: int

    def __init__(self, values: Mapping[str, Any], config: PiConfig, mcp_names: Iterable[str] = ()) -> None:
        self.__dict__.update(values)
        self.policy: Policy | None = cast("Policy | None", self.approve or None)
        """``--approve``, else ``c.PiMagics.approve``; None: the run mode decides."""
        try:
            self.tool_names: list[str] = parse_tools_spec(self.tools, mcp_names)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        self.mcp_tools: tuple[str, ...] = mcp_tool_patterns(self.tools)
        """The MCP tools named (``SERVER__TOOL``, ``files__*``); empty: every MCP tool joins,
        unless ``no_tools``."""
        self.no_tools: bool = self.tools.strip() == "none"
        """``--tools none``: no notebook tool and no MCP tool either."""
        self.plan = self.plan or self.plan_run
        self.read_only: bool = self.plan
        """Only the read-only notebook tools (no MCP tool, none of the conversation's own): a
        planning run, and ``%pi explain`` (``plan_mode``)."""
        self.replay = self.replay or bool(env_flag(REPLAY_ENV))
        cost, tokens = self.max_cost, self.max_total_tokens
        self.budget: Budget | None = (
            Budget(max_cost=cost or None, max_total_tokens=tokens or None) if cost or tokens else None
        )
        """``--max-cost`` / ``--max-total-tokens`` (or their ``PiMagics`` defaults); 0: no limit."""
        self._default_code_timeout = config.code_timeout
        self._headless_code_timeout = config.headless_code_timeout

    def code_limit(self, headless: bool) -> float | None:
        """Seconds one ``run_code`` call may run (None: no limit): ``--code-timeout``, else
        ``c.PiMagics.code_timeout``, else in a headless run ``headless_code_timeout``."""
        limit = self.code_timeout
        if limit is None:
            limit = self._default_code_timeout or (self._headless_code_timeout if headless else 0.0)
        return limit or None


_PARSED: dict[str, argparse.Namespace] = {}
"""Each ``%%pi`` line parsed so far -> its namespace. The parse is a function of the line alone
(the parser is built once, at import), and a notebook repeats a few lines, so a cell parses its
line once per kernel; the defaults and every check of the rows still apply per cell
(``run_values`` reads the namespace and never changes it)."""
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
    return RunOptions(run_values(parsed, config), config, mcp_names)


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
