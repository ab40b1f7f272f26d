"""One table of ``%%pi`` options (``config.OPTIONS``): the parser, ``%pi help``, ``%%pi?``, the
``c.PiMagics`` traits' help, the run options and ``docs/reference/magic.md`` all come from it.
Each test fails when one of them drifts from the table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from pi_notebook.notebook.commands.conversation import HELP
from pi_notebook.notebook.config import OPTIONS, PARSER, PiConfig, options_help
from pi_notebook.notebook.magics import PiMagics
from pi_notebook.notebook.options import RunOptions, parse_options

RUN_FIELDS = {"max_cost": "budget", "max_total_tokens": "budget"}
"""Options that make a run option of another name (both make the run's ``Budget``)."""


def _actions() -> dict[str, argparse.Action]:
    return {a.option_strings[0]: a for a in PARSER._actions if a.option_strings and a.dest != "help"}


def test_the_parser_is_the_table() -> None:
    actions = _actions()
    assert list(actions) == [option.flag for option in OPTIONS]
    for option in OPTIONS:
        action = actions[option.flag]
        assert action.dest == option.dest
        assert action.help == option.help.split("\n")[0]
        assert (list(action.choices) if action.choices else None) == (
            list(option.choices) if option.choices else None
        )
        assert (action.nargs == 0) == (option.kind != "value")


def test_pi_help_and_the_cell_magic_help_come_from_the_table() -> None:
    assert options_help() in HELP
    for option in OPTIONS:
        assert f"  {option.usage}" in HELP
        assert option.flag in (PiMagics.pi_cell.__doc__ or "")


def test_each_option_with_a_default_names_its_trait_and_the_trait_says_so() -> None:
    traits = PiConfig.class_traits(config=True)
    for option in OPTIONS:
        if option.trait is None:
            continue
        assert option.trait == option.dest, option.flag
        assert traits[option.trait].help.startswith(option.trait_help()), option.flag


def test_every_option_reaches_the_run_options() -> None:
    parsed = parse_options("", PiConfig())
    assert isinstance(parsed, RunOptions)
    for option in OPTIONS:
        assert hasattr(parsed, RUN_FIELDS.get(option.dest, option.dest)), option.flag
