"""One table of ``%%pi`` options (``config.OPTIONS``): the parser, ``%pi help``, ``%%pi?``, the
``c.PiMagics`` traits (types, defaults, help, checks), the values of ``RunOptions`` and
``docs/reference/magic.md`` all come from its rows. Each test walks every row, so a row added
to the table is checked with no test to write, and each fails when one of them drifts: names,
types, defaults and help."""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from traitlets import Bool, Dict, Float, Int, TraitError, Unicode

from pi_notebook.ai.types import Model
from pi_notebook.notebook.commands.conversation import HELP
from pi_notebook.notebook.config import FLAGS, OPTIONS, PARSER, Choice, Option, PiConfig, options_help
from pi_notebook.notebook.magics import PiMagics
from pi_notebook.notebook.options import RUN_ROWS, RunOptions, parse_options

ROOT = Path(__file__).resolve().parents[2]
TRAITS = {option.name: option for option in OPTIONS if option.trait}
TRAIT_CLASSES = {str: Unicode, int: Int, float: Float, bool: Bool, dict: Dict}
SAMPLE_TEXT = {"tools": "read", "model": "openai:gpt-4o-mini", "approve": "auto", "name": "other"}
"""A valid value for the rows whose checks want a particular one; others get one by type. (A
catalogue model: ``faux:faux-1`` would register the faux stand-in, which other tests must not see.)"""


def _actions() -> dict[str, argparse.Action]:
    return {a.option_strings[0]: a for a in PARSER._actions if a.option_strings and a.dest != "help"}


def _optional(kind: Any, optional: bool) -> Any:
    return kind | None if optional else kind


def _parse_type(option: Option) -> Any:
    """What the row's ``parse`` gives (its return annotation), else the row's type."""
    if option.parse is None:
        return option.value_type
    if isinstance(option.parse, type):
        return option.parse
    return typing.get_type_hints(option.parse, localns={"Model": Model})["return"]


def _same_type(annotation: Any, expected: Any) -> bool:
    """``dict[str, Policy]`` is a ``dict``; ``X | None`` must be ``X | None``."""
    if isinstance(annotation, types.UnionType) or isinstance(expected, types.UnionType):
        left, right = typing.get_args(annotation), typing.get_args(expected)
        return len(left) == len(right) and all(_same_type(a, b) for a, b in zip(left, right, strict=True))
    return (typing.get_origin(annotation) or annotation) is expected


def _sample(option: Option) -> Any:
    """A valid value of the row's type other than its default."""
    if option.name in SAMPLE_TEXT:
        return SAMPLE_TEXT[option.name]
    if option.choices:
        return next(c for c in reversed(option.choices) if c != option.default)
    kind = option.value_type
    if kind is bool:
        return not option.default
    return {int: 2, float: 1.5, str: "x", dict: {"run_code": "ask"}}[kind]


# --- the parser, %pi help and %%pi? --------------------------------------------------------------


def test_the_parser_is_the_table() -> None:
    actions = _actions()
    assert list(actions) == [option.flag for option in FLAGS]
    for option in FLAGS:
        action = actions[str(option.flag)]
        assert action.dest == option.dest, option.flag
        assert action.help == option.help.split("\n")[0], option.flag
        assert action.metavar == (option.metavar if option.kind == "value" else None), option.flag
        assert (list(action.choices) if action.choices else None) == (
            list(option.choices) if option.choices else None
        ), option.flag
        assert (action.nargs == 0) == (option.kind != "value"), option.flag
        assert action.default == (False if option.kind == "flag" else None), option.flag  # given or not
        if option.kind == "value" and option.parse is None and option.type in (int, float):
            assert action.type is option.type, option.flag


def test_pi_help_and_the_cell_magic_help_come_from_the_table() -> None:
    assert options_help() in HELP
    for option in FLAGS:
        first, *more = option.help.split("\n")
        assert f"  {option.usage:<24}{first}" in HELP or f"  {option.usage} {first}" in HELP, option.flag
        for line in more:
            assert f"{'':<24}{line}\n" in HELP, option.flag
        assert option.flag in (PiMagics.pi_cell.__doc__ or "")


# --- the traits ------------------------------------------------------------------------------------


def test_the_traits_are_the_table() -> None:
    traits = PiMagics.class_traits(config=True)
    assert sorted(traits) == sorted(TRAITS), "a c.PiMagics trait without a row, or a row without its trait"
    for name, option in TRAITS.items():
        trait = traits[name]
        expected = Choice if option.choices else TRAIT_CLASSES[option.value_type]
        assert type(trait) is expected, name
        assert trait.default() == option.default, name
        assert trait.allow_none == (option.default is None), name
        assert trait.help == option.trait_help, name
        assert " ".join(option.help.split()) in trait.help, name  # one text, not another one
        if option.choices:
            assert set(option.choices) <= set(trait.values), name
            assert set(trait.values) - set(option.choices) <= {option.default}, name
        if option.flag:
            assert option.trait == option.dest, name


def test_the_typed_view_of_the_traits_matches_the_rows() -> None:
    declared = typing.get_type_hints(PiConfig)
    own = PiConfig.__annotations__
    assert own, "PiConfig declares the types code reads its traits as"
    for name in own:
        assert name in TRAITS, f"PiConfig declares {name}, which no row of OPTIONS makes"
        option = TRAITS[name]
        expected = _optional(option.value_type, option.default is None)
        assert _same_type(declared[name], expected), (name, declared[name], expected)


def test_every_trait_checks_its_values_with_its_row() -> None:
    config = PiConfig()
    for name, option in TRAITS.items():
        sample = _sample(option)
        setattr(config, name, sample)  # a valid value is kept
        assert getattr(config, name) == (option.check(sample) if option.check else sample), name
    with pytest.raises(TraitError, match=r"^PiMagics.timeout must be 0 or more seconds \(0: no limit\)"):
        config.timeout = -1
    with pytest.raises(UsageError, match=r"^--timeout must be 0 or more seconds \(0: no limit\)"):
        parse_options("--timeout -1", config)
    with pytest.raises(TraitError, match=r"^PiMagics\.max_turns must be 0 or more, not -1"):
        config.max_turns = -1
    with pytest.raises(TraitError, match=r"^PiMagics\.temperature must be between 0 and 2"):
        config.temperature = 3.0
    with pytest.raises(TraitError, match=r"^PiMagics\.thinking must be one of off, minimal, .*, not 'huge'"):
        config.thinking = "huge"
    with pytest.raises(TraitError, match=r"^PiMagics\.approve must be one of ask, auto, deny, '', not 'x'"):
        config.approve = "x"


# --- the run options -------------------------------------------------------------------------------


def test_the_run_options_declare_the_rows_types() -> None:
    """Every run row's value is set on ``RunOptions``; those code reads are declared, as the row says."""
    declared = typing.get_type_hints(RunOptions, localns={"Model": Model})
    rows = {option.name: option for option in RUN_ROWS}
    own = RunOptions.__annotations__
    for name in own:
        assert name in rows, f"RunOptions declares {name}, which is no run row of OPTIONS"
        option = rows[name]
        expected = _optional(_parse_type(option), option.run_default is None)
        assert _same_type(declared[name], expected), (name, declared[name], expected)
    assert {option.name for option in OPTIONS if option.applies == "kernel"}.isdisjoint(own)


def test_a_run_takes_the_row_default_the_trait_or_the_cell() -> None:
    defaults = parse_options("", PiConfig())
    for option in RUN_ROWS:
        expected = option.default if option.trait and option.applies == "run" else option.run_default
        if option.name not in ("plan", "replay"):  # worked out further: --plan-run, $PI_NOTEBOOK_REPLAY
            assert getattr(defaults, option.name) == expected, option.name

    traited = [option for option in RUN_ROWS if option.trait]
    config = PiConfig(**{option.name: _sample(option) for option in traited})
    from_traits = parse_options("", config)
    for option in traited:
        expected = getattr(config, option.name) if option.applies == "run" else None
        assert getattr(from_traits, option.name) == expected, option.name  # "cell": the trait acts elsewhere

    for option in FLAGS:
        if option.kind == "flag":
            line, expected = str(option.flag), True
        elif option.kind == "switch":
            line, expected = f"--no-{str(option.flag)[2:]}", False
        else:
            text = str(_sample(option))
            parsed = option.type(text) if option.parse is None and option.type in (int, float) else text
            line, expected = f"{option.flag} {text}", option.cell_value(parsed)  # as the parser gives it
        value = getattr(parse_options(line, config), option.name)
        if isinstance(expected, Model):
            assert isinstance(value, Model), option.flag
            assert value.id == expected.id, option.flag
        else:
            assert value == expected, option.flag


# --- the reference and the rows themselves --------------------------------------------------------


def test_the_reference_is_the_table() -> None:
    spec = importlib.util.spec_from_file_location("gen", ROOT / "scripts" / "gen_magic_reference.py")
    assert spec is not None
    assert spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    text = gen.render()
    assert text == (ROOT / "docs" / "reference" / "magic.md").read_text(encoding="utf-8")
    rows = text.splitlines()
    for option in FLAGS:
        [row] = [r for r in rows if r.startswith(f"| {gen.option_names(option)} |")]
        assert row.endswith(f"| {gen.cell(option.help)} |"), option.flag
        default = f"`c.PiMagics.{option.name}`" if option.trait else gen.option_default(option)
        assert f"| {default} |" in row, option.flag
        if option.kind == "value" and option.value_type is not str:
            assert f"({option.value_type.__name__}) |" in row, option.flag  # the type
    trait_rows = text.split("## Configuration traits")[1].split("\n## ")[0].splitlines()
    for name, option in TRAITS.items():
        [row] = [r for r in trait_rows if r.startswith(f"| `{name}` |")]
        assert row.endswith(f"| {gen.cell(option.trait_help)} |"), name
        kind = (Choice if option.choices else TRAIT_CLASSES[option.value_type]).__name__
        assert row.startswith(f"| `{name}` | {kind}"), name  # the type
        if len(repr(option.default)) <= gen.LONG_DEFAULT:
            assert f"| {gen.code(repr(option.default)) if option.default is not None else '`None`'} |" in row
    assert options_help() in text


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        (lambda: Option("--x", "h", trait="y"), "trait='x'"),
        (lambda: Option(None, "h"), "a row without a flag is a trait"),
        (lambda: Option(None, "h", trait="x", applies="cell"), "a row without a flag is a trait"),
        (lambda: Option("--x", "h", trait="x", applies="kernel"), "a kernel-wide trait has no flag"),
        (lambda: Option("--x", "h", type=list), "type must be one of"),
        (lambda: Option("--x", "h", type=int, default="3"), "default '3' is not a int"),
        (lambda: Option("x", "h"), "a flag starts with --"),
    ],
)
def test_a_bad_row_fails_when_it_is_made(row: Any, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        row()


NEW_ROWS = '''
    Option("--answer-style", "answers: native|text", metavar="MODE", choices=("native", "text"),
           trait="answer_style", default="native"),
    Option(None, "Show timings under each answer.", trait="show_timings", type=bool, default=True,
           applies="kernel"),
'''
PROBE = """
import sys, importlib.util
path = sys.argv[1]
source = open(path, encoding="utf-8").read()
end = source.index(")  # fmt: skip\\nOPTION = ")
source = source[:end] + sys.argv[2] + source[end:]
spec = importlib.util.spec_from_file_location("pi_notebook.notebook.config", path)
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
exec(compile(source, path, "exec"), module.__dict__)
from pi_notebook.notebook.config import PARSER, PiConfig, options_help
from pi_notebook.notebook.magics import PiMagics
from pi_notebook.notebook.options import parse_options
traits = PiMagics.class_traits(config=True)
assert traits["answer_style"].default() == "native", traits
assert traits["show_timings"].default() is True
assert "--answer-style MODE" in options_help() and "--answer-style" in PiMagics.pi_cell.__doc__
config = PiConfig(answer_style="text")
assert parse_options("", config).answer_style == "text"
assert parse_options("--answer-style native", config).answer_style == "native"
assert not hasattr(parse_options("", config), "show_timings")
try:
    config.answer_style = "tags"
except Exception as exc:
    assert str(exc).startswith("PiMagics.answer_style must be one of native, text"), exc
else:
    raise AssertionError("a bad value was kept")
print("ok")
"""


def test_a_new_row_is_all_a_new_option_needs() -> None:
    """Two rows added to the table (as a new ``--answer-style`` option and a kernel-wide trait
    would be) make the trait, the parser's option, the ``%pi help`` line, the check and the run's
    value, with nothing else written."""
    config = ROOT / "pi_notebook" / "notebook" / "config.py"
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(config), NEW_ROWS],
        capture_output=True, text=True, timeout=120, check=False, cwd=ROOT,
    )  # fmt: skip
    assert result.stdout.strip() == "ok", result.stderr[-2000:]
