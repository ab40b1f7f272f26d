"""Skills as Pi 0.83 finds, validates, lists and expands them (``skills.js``, the skill parts of
``package-manager.js``, ``AgentSession._expandSkillCommand``).

Discovery (``collect_skill_files``): in a folder with a ``SKILL.md``, that file is the skill
and nothing below it is looked at; otherwise subfolders are searched (not those starting with
``.``, not ``node_modules``, not what an ignore file excludes), and in ``pi`` mode the folder's
own ``*.md`` files are skills too. Each file is validated (``load_skill``): a ``description`` is
required (without it the skill is not loaded), the name (frontmatter ``name``, else the folder's
name) must be lowercase letters, digits and single hyphens, at most 64 characters; a bad name
is a warning and the skill still loads. ``load_skills`` keeps the first skill of each name (a
later one is a collision diagnostic) and each real file once.

A folder that cannot be read and a symlink that leads back into the walk are one diagnostic
each (Pi skips both silently, the second only after following it 40 levels deep).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from .files import Diagnostic, Ignore, error_text, parse_frontmatter, read_text, sorted_entries

__all__ = [
    "Skill",
    "collect_skill_files",
    "expand_skill_command",
    "format_skills_for_prompt",
    "load_skill",
    "load_skills",
]

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
Mode = Literal["pi", "agents"]
Touched = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    file_path: str
    base_dir: str
    scope: str
    """``user`` (the agent dir, ``~/.agents/skills``) or ``project``."""
    disable_model_invocation: bool = False
    """Kept out of ``<available_skills>``; ``/skill:name`` still expands it."""


def _js_length(text: str) -> int:
    """``String.length``: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def _name_errors(name: str) -> list[str]:
    errors = []
    if _js_length(name) > MAX_NAME_LENGTH:
        errors.append(f"name exceeds {MAX_NAME_LENGTH} characters ({_js_length(name)})")
    if not name or any(c not in "abcdefghijklmnopqrstuvwxyz0123456789-" for c in name):
        errors.append("name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)")
    if name.startswith("-") or name.endswith("-"):
        errors.append("name must not start or end with a hyphen")
    if "--" in name:
        errors.append("name must not contain consecutive hyphens")
    return errors


def _description_errors(description: object) -> list[str]:
    if not isinstance(description, str) or not description.strip():
        return ["description is required"]
    if _js_length(description) > MAX_DESCRIPTION_LENGTH:
        return [f"description exceeds {MAX_DESCRIPTION_LENGTH} characters ({_js_length(description)})"]
    return []


def load_skill(path: str, scope: str) -> tuple[Skill | None, list[Diagnostic]]:
    """Pi's ``loadSkillFromFile``: the skill (``None`` without a description or when the file
    cannot be read or parsed) and its warnings."""
    problems: list[Diagnostic] = []
    try:
        frontmatter, _ = parse_frontmatter(read_text(path))
    except (OSError, ValueError) as exc:
        return None, [Diagnostic("warning", error_text(exc), path)]
    folder = os.path.dirname(path)
    description = frontmatter.get("description")
    problems += [Diagnostic("warning", e, path) for e in _description_errors(description)]
    raw_name = frontmatter.get("name")
    name = str(raw_name) if raw_name else os.path.basename(folder)
    problems += [Diagnostic("warning", e, path) for e in _name_errors(name)]
    if not isinstance(description, str) or not description.strip():
        return None, problems
    invocation = frontmatter.get("disable-model-invocation") is True
    return Skill(name, description, path, folder, scope, invocation), problems


# --- discovery -----------------------------------------------------------------------------------


class _Walk:
    """One ``collectSkillEntries`` walk from ``root`` (its ignore rules, the real folders it is
    in, for loops)."""

    def __init__(self, root: str, mode: Mode, problems: list[Diagnostic], touched: Touched) -> None:
        self.root, self.mode, self.problems, self.touched = root, mode, problems, touched
        self.ignore = Ignore(root)
        self.found: list[str] = []

    def folder(self, path: str, inside: frozenset[str]) -> None:
        self.ignore.add_folder(path)
        self.touched(path)
        try:
            entries = sorted_entries(path)
        except OSError as exc:
            reason = f"cannot read this folder ({exc.strerror}); skipped"
            self.problems.append(Diagnostic("warning", reason, path))
            return
        for entry in entries:
            if entry.name == "SKILL.md" and _is_file(entry) and not self.ignore.ignores(entry.path):
                self.found.append(entry.path)
                return
        for entry in entries:
            self._entry(path, entry, inside)

    def _entry(self, path: str, entry: os.DirEntry[str], inside: frozenset[str]) -> None:
        if entry.name.startswith(".") or entry.name == "node_modules":
            return
        try:
            is_dir, is_file = entry.is_dir(), entry.is_file()
        except OSError:
            return  # a broken symlink: Pi skips it
        top = path == self.root
        if self.mode == "pi" and top and is_file and entry.name.endswith(".md"):
            if not self.ignore.ignores(entry.path):
                self.found.append(entry.path)
            return
        if not is_dir or self.ignore.ignores(entry.path, folder=True):
            return
        real = os.path.realpath(entry.path)
        if real in inside:
            message = f"symlink loop: it leads back to {real}; not followed"
            self.problems.append(Diagnostic("warning", message, entry.path))
            return
        self.folder(entry.path, inside | {real})


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def collect_skill_files(
    root: str, mode: Mode, problems: list[Diagnostic] | None = None, touched: Touched = lambda p: None
) -> list[str]:
    """The skill files under ``root`` (Pi's ``collectSkillEntries``), in Pi's order."""
    touched(root)
    if not os.path.isdir(root):
        return []
    walk = _Walk(root, mode, problems if problems is not None else [], touched)
    walk.folder(root, frozenset({os.path.realpath(root)}))
    for path in walk.found:
        touched(path)
    return walk.found


def load_skills(files: Iterable[tuple[str, str]]) -> tuple[list[Skill], list[Diagnostic]]:
    """Pi's ``loadSkills`` over ``(path, scope)`` pairs in precedence order: the first skill of
    a name wins, each real file counts once; collisions come after the other diagnostics."""
    by_name: dict[str, Skill] = {}
    real_paths: set[str] = set()
    problems: list[Diagnostic] = []
    collisions: list[Diagnostic] = []
    for path, scope in files:
        skill, found = load_skill(path, scope)
        problems.extend(found)
        if skill is None:
            continue
        real = os.path.realpath(path)
        if real in real_paths:
            continue
        existing = by_name.get(skill.name)
        if existing is not None:
            message = f'name "{skill.name}" collision'
            collisions.append(Diagnostic("collision", message, path, winner=existing.file_path))
            continue
        by_name[skill.name] = skill
        real_paths.add(real)
    return list(by_name.values()), problems + collisions


# --- the system prompt and /skill:name -------------------------------------------------------------


def _escape_xml(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def format_skills_for_prompt(skills: Sequence[Skill]) -> str:
    """Pi's ``formatSkillsForPrompt``: the ``<available_skills>`` block (``""`` when no skill is
    visible to the model)."""
    visible = [s for s in skills if not s.disable_model_invocation]
    if not visible:
        return ""
    lines = [
        "\n\nThe following skills provide specialized instructions for specific tasks.",
        "Use the read tool to load a skill's file when the task matches its description.",
        "When a skill file references a relative path, resolve it against the skill directory "
        "(parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.",
        "",
        "<available_skills>",
    ]
    for skill in visible:
        lines += [
            "  <skill>",
            f"    <name>{_escape_xml(skill.name)}</name>",
            f"    <description>{_escape_xml(skill.description)}</description>",
            f"    <location>{_escape_xml(skill.file_path)}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


def expand_skill_command(text: str, skills: Sequence[Skill]) -> tuple[str, Diagnostic | None]:
    """Pi's ``_expandSkillCommand``: ``/skill:name args`` becomes the skill's body in a
    ``<skill>`` block, then the arguments. Unknown skills pass through; a skill file that
    cannot be read passes the text through with a diagnostic."""
    if not text.startswith("/skill:"):
        return text, None
    space = text.find(" ")
    name = text[7:] if space == -1 else text[7:space]
    args = "" if space == -1 else text[space + 1 :].strip()
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        return text, None
    try:
        body = parse_frontmatter(read_text(skill.file_path))[1].strip()
    except (OSError, ValueError) as exc:
        return text, Diagnostic("warning", error_text(exc), skill.file_path)
    block = (
        f'<skill name="{skill.name}" location="{skill.file_path}">\n'
        f"References are relative to {skill.base_dir}.\n\n{body}\n</skill>"
    )
    return (f"{block}\n\n{args}" if args else block), None
