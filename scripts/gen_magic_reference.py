"""Write docs/reference/magic.md from the table of options (``config.OPTIONS``), the live
``%%pi`` parser, ``%pi`` subcommand table and ``PiMagics`` traits, so the reference cannot
drift from the code.

    python scripts/gen_magic_reference.py           # rewrite docs/reference/magic.md
    python scripts/gen_magic_reference.py --check   # exit 1 if the committed file is stale

The output depends only on the code (no environment, no time, no paths), so running it twice
gives the same bytes; ``tests/test_docs.py`` regenerates it in memory and compares.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "reference" / "magic.md"
COMMAND = "python scripts/gen_magic_reference.py"
LONG_DEFAULT = 60  # defaults longer than this are printed in full below the table

# A line of the %pi help text: two-space indent, the usage, two or more spaces, the description.
_HELP_LINE = re.compile(r"^  (?P<usage>\S.*?)\s{2,}(?P<help>\S.*)$")


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell (pipes escaped, one line)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def code(text: str) -> str:
    return f"`{cell(text)}`" if text else ""


def option_argument(option: Any) -> str:
    if option.kind == "flag":
        return "(flag)"
    if option.kind == "switch":
        return "(switch)"
    if option.choices:
        return code("|".join(option.choices))
    type_name = option.value_type.__name__
    return code(option.metavar or option.dest.upper()) + (f" ({type_name})" if type_name != "str" else "")


def option_names(option: Any) -> str:
    if option.kind == "switch":
        return code(f"{option.flag} / --no-{option.flag[2:]}")
    return code(option.flag)


def option_default(option: Any) -> str:
    if option.trait is not None:
        return f"`c.PiMagics.{option.name}`"
    if option.kind == "flag":
        return "off"
    return code(repr(option.run_default)) if option.run_default is not None else "none"


def options_section(parser: argparse.ArgumentParser, options: tuple[Any, ...]) -> list[str]:
    # A fixed width, not the terminal's ($COLUMNS), so the output is the same everywhere; and the
    # plain argparse formatter, because IPython's prefixes the prog with another "%".
    formatter = argparse.HelpFormatter(prog="%%pi", width=88)
    formatter.add_usage(None, parser._actions, parser._mutually_exclusive_groups, prefix="")
    usage = formatter.format_help().strip()
    lines = [
        "## `%%pi` options",
        "",
        "Usage (from the parser):",
        "",
        "```",
        usage,
        "```",
        "",
        "Options go on the `%%pi` line; the cell body is the prompt. A default of",
        "`c.PiMagics.<name>` means that without the option the trait applies (see below); for",
        "`--model`, `--thinking` and `--system` the trait is what a new conversation starts with,",
        "and a value given on a cell stays in effect for the conversation's later cells.",
        "",
        "| option | argument | default | help |",
        "|---|---|---|---|",
    ]
    for option in options:
        if option.flag is not None:
            lines.append(
                f"| {option_names(option)} | {option_argument(option)} | "
                f"{option_default(option)} | {cell(option.help)} |"
            )
    return [*lines, ""]


def help_rows(help_text: str, command: str) -> list[tuple[str, str]]:
    """The ``%pi help`` lines whose usage starts with ``command``, continuation lines joined."""
    rows: list[tuple[str, str]] = []
    current: list[str] | None = None
    for raw in help_text.splitlines():
        match = _HELP_LINE.match(raw)
        if match and match["usage"].split()[0] == command:
            current = [match["usage"], match["help"]]
            rows.append((current[0], current[1]))
        elif match or not raw.startswith("   ") or current is None:
            current = None
        else:  # an indented continuation of the previous description
            current[1] = f"{current[1]} {raw.strip()}"
            rows[-1] = (current[0], current[1])
    return rows


def subcommands_section(table: dict[str, Any], help_text: str) -> list[str]:
    lines = [
        "## `%pi` subcommands",
        "",
        "`%pi [--name NAME] SUBCOMMAND [ARGS]`; `--name` addresses another conversation, and",
        "`%pi` alone is `%pi help`. Usage and help as `%pi help` prints them:",
        "",
        "| subcommand | usage | help |",
        "|---|---|---|",
    ]
    for name, handler in table.items():
        rows = help_rows(help_text, name)
        if not rows:
            doc = (handler.__doc__ or "").strip().splitlines()
            rows = [(name, doc[0] if doc else "(missing from %pi help)")]
        lines.extend(f"| `{cell(name)}` | {code(f'%pi {usage}')} | {cell(text)} |" for usage, text in rows)
    return [*lines, ""]


def trait_default(trait: Any) -> str:
    value = trait.default()
    return "`None`" if value is None else f"`{cell(repr(value))}`"


def traits_section(traits: dict[str, Any]) -> list[str]:
    lines = [
        "## Configuration traits (`c.PiMagics.<name>`)",
        "",
        'Set them in `ipython_config.py` (`c.PiMagics.model = "openai:gpt-4o-mini"`) or in the',
        'notebook with `%config PiMagics.model = "openai:gpt-4o-mini"`.',
        "",
        "| trait | type | default | help |",
        "|---|---|---|---|",
    ]
    long_defaults: list[tuple[str, str]] = []
    for name in sorted(traits):
        trait = traits[name]
        kind = type(trait).__name__
        values = getattr(trait, "values", None)
        if values:
            kind = f"{kind} ({cell('|'.join(str(v) for v in values))})"
        default = trait_default(trait)
        if len(repr(trait.default())) > LONG_DEFAULT:
            long_defaults.append((name, str(trait.default())))
            default = "see below"
        lines.append(f"| `{name}` | {kind} | {default} | {cell(trait.help)} |")
    lines.append("")
    for name, value in long_defaults:
        lines.extend([f"Default of `{name}`:", "", "```text", value, "```", ""])
    return lines


def render() -> str:
    """The whole reference, from the live objects."""
    from pi_notebook.notebook import magics
    from pi_notebook.notebook.commands import conversation
    from pi_notebook.notebook.config import OPTIONS, PARSER

    traits = magics.PiMagics.class_traits(config=True)
    lines = [
        "# `%%pi` / `%pi` reference",
        "",
        f"<!-- Generated by `{COMMAND}` from the options table, the subcommand table and the traits. -->",
        "<!-- Do not edit by hand: tests/test_docs.py fails when this file is stale. -->",
        "",
        "Every option, subcommand and configuration trait, generated from the code. For what they",
        "mean in practice, read [the magic guide](../magic.md) and [the user guide](../guide.md).",
        "",
        *options_section(PARSER, OPTIONS),
        *subcommands_section(conversation.SUBCOMMANDS, conversation.HELP),
        *traits_section(traits),
        "## `%pi help`",
        "",
        "```text",
        conversation.HELP.rstrip(),
        "```",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    text = render()
    current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
    if args.check:
        if current != text:
            print(f"{OUTPUT.relative_to(ROOT)} is stale: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
