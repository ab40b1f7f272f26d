"""Prompt templates as Pi 0.83 loads and expands them (``prompt-templates.js``).

A template is a ``*.md`` file of a prompts folder (not searched recursively); its name is the
file name without ``.md``; ``description`` and ``argument-hint`` come from the frontmatter (the
description defaults to the body's first non-empty line, cut at 60 characters). A prompt
``/name args`` is replaced by the template's body with the arguments substituted: ``$1``,
``$2``..., ``$@`` and ``$ARGUMENTS`` (all), ``${N:-default}``, ``${@:-default}``, ``${@:N}``
(from the Nth), ``${@:N:L}`` (L from the Nth). Arguments split on blanks, quotes group.
The first template of a name wins; a later one is a collision diagnostic.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from .files import Diagnostic, Ignore, error_text, parse_frontmatter, read_text, sorted_entries

__all__ = [
    "PromptTemplate",
    "collect_template_files",
    "expand_prompt_template",
    "load_templates",
    "parse_command_args",
    "substitute_args",
]


@dataclass(frozen=True, slots=True)
class PromptTemplate:
    name: str
    description: str
    content: str
    file_path: str
    scope: str
    argument_hint: str | None = None


def parse_command_args(text: str) -> list[str]:
    """Pi's ``parseCommandArgs``: blank-separated words, ``"..."`` and ``'...'`` grouping."""
    args: list[str] = []
    current = ""
    quote: str | None = None
    for char in text:
        if quote is not None:
            if char == quote:
                quote = None
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif _JS_SPACE.match(char):
            if current:
                args.append(current)
                current = ""
        else:
            current += char
    if current:
        args.append(current)
    return args


_JS_SPACE = re.compile(r"[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]")
_PLACEHOLDER = re.compile(r"\$\{(\d+|ARGUMENTS|@):-([^}]*)\}|\$\{@:(\d+)(?::(\d+))?\}|\$(ARGUMENTS|@|\d+)")


def substitute_args(content: str, args: Sequence[str]) -> str:
    """Pi's ``substituteArgs`` (replacements are not substituted again)."""
    every = " ".join(args)

    def positional(number: str) -> str:
        index = int(number) - 1
        return args[index] if 0 <= index < len(args) else ""

    def replace(match: re.Match[str]) -> str:
        target, default, start, length, simple = match.groups()
        if target:
            value = every if target in ("@", "ARGUMENTS") else positional(target)
            return value or default
        if start:
            begin = max(int(start) - 1, 0)
            chosen = args[begin : begin + int(length)] if length else args[begin:]
            return " ".join(chosen)
        if simple in ("ARGUMENTS", "@"):
            return every
        return positional(simple)

    return _PLACEHOLDER.sub(replace, content)


def load_template(path: str, scope: str) -> PromptTemplate:
    """Pi's ``loadTemplateFromFile``; raises ``OSError`` / ``ValueError`` when it cannot."""
    frontmatter, body = parse_frontmatter(read_text(path))
    name = os.path.basename(path).removesuffix(".md")
    description = frontmatter.get("description") or ""
    if not description:
        first = next((line for line in body.split("\n") if line.strip()), None)
        if first:
            description = first[:60] + ("..." if len(first) > 60 else "")
    hint = frontmatter.get("argument-hint")
    return PromptTemplate(name, str(description), body, path, scope, str(hint) if hint else None)


def collect_template_files(
    folder: str, problems: list[Diagnostic] | None = None, touched: Callable[[str], None] = lambda p: None
) -> list[str]:
    """Pi's ``collectAutoPromptEntries``: the ``*.md`` files directly in ``folder`` (an
    unreadable folder is a diagnostic in ``problems``; Pi skips it silently)."""
    touched(folder)
    if not os.path.isdir(folder):
        return []
    ignore = Ignore(folder)
    ignore.add_folder(folder)
    try:
        entries = sorted_entries(folder)
    except OSError as exc:
        if problems is not None:
            reason = f"cannot read this folder ({exc.strerror}); skipped"
            problems.append(Diagnostic("warning", reason, folder))
        return []
    found = []
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "node_modules" or ignore.ignores(entry.path):
            continue
        try:
            if entry.is_file() and entry.name.endswith(".md"):
                found.append(entry.path)
                touched(entry.path)
        except OSError:
            continue
    return found


def load_templates(files: Iterable[tuple[str, str]]) -> tuple[list[PromptTemplate], list[Diagnostic]]:
    """The templates of ``(path, scope)`` pairs in precedence order, first of a name kept (Pi's
    ``dedupePrompts``). A file that cannot be read is a diagnostic (Pi skips it silently)."""
    by_name: dict[str, PromptTemplate] = {}
    problems: list[Diagnostic] = []
    collisions: list[Diagnostic] = []
    for path, scope in files:
        try:
            template = load_template(path, scope)
        except (OSError, ValueError) as exc:
            problems.append(Diagnostic("warning", error_text(exc), path))
            continue
        existing = by_name.get(template.name)
        if existing is not None:
            message = f'name "/{template.name}" collision'
            collisions.append(Diagnostic("collision", message, path, winner=existing.file_path))
            continue
        by_name[template.name] = template
    return list(by_name.values()), problems + collisions


_COMMAND = re.compile(r"/(\S+)(?:\s+([\s\S]*))?")


def expand_prompt_template(text: str, templates: Sequence[PromptTemplate]) -> str:
    """Pi's ``expandPromptTemplate``: ``/name args`` replaced by the template, else ``text``."""
    if not text.startswith("/"):
        return text
    match = _COMMAND.fullmatch(text)
    if match is None:
        return text
    template = next((t for t in templates if t.name == match.group(1)), None)
    if template is None:
        return text
    return substitute_args(template.content, parse_command_args(match.group(2) or ""))
