"""The ``read`` tool a session offers when skills are loaded: Pi's skill list tells the model to
"use the read tool to load a skill's file", so the tool has that name, but it reads only inside
the loaded skills' folders (a skill's ``SKILL.md`` and the files it references). A path outside
them, a symlink out of them included, is refused with a message that says so; nothing is
written. Long files come in pages, as Pi's ``read`` gives them (``offset`` / ``limit`` lines).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ...agent.types import AgentTool, AgentToolResult
from ...ai.types import TextContent
from .files import error_text, read_text

__all__ = ["SKILL_TOOL_NAME", "skill_read_tool"]

SKILL_TOOL_NAME = "read"
MAX_LINES = 2000
MAX_BYTES = 50 * 1024

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Absolute path of a file in a skill's folder"},
        "offset": {"type": "integer", "description": "Line number to start reading from (1-indexed)"},
        "limit": {"type": "integer", "description": "Maximum number of lines to read"},
    },
    "required": ["path"],
}


def _inside(path: str, roots: Sequence[str]) -> bool:
    real = os.path.realpath(path)
    for root in roots:
        top = os.path.realpath(root)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return True
    return False


def read_skill_file(
    path: str, roots: Sequence[str], cwd: str, offset: int = 1, limit: int | None = None
) -> str:
    """The text of ``path`` (relative to ``cwd``) if it lies in one of ``roots``; raises
    ``PermissionError`` outside them and ``OSError`` / ``ValueError`` when it cannot be read."""
    target = os.path.abspath(os.path.join(cwd, os.path.expanduser(path)))
    if not _inside(target, roots):
        shown = ", ".join(roots) if roots else "none are loaded"
        raise PermissionError(
            f"{target} is outside the skill folders ({shown}); this read tool opens only the files "
            "of the skills listed in the system prompt"
        )
    if os.path.isdir(target):
        names = sorted(os.listdir(target))
        return "\n".join(n + ("/" if os.path.isdir(os.path.join(target, n)) else "") for n in names)
    try:
        text = read_text(target)
    except OSError as exc:
        raise OSError(f"{target}: {error_text(exc)}") from None
    return _page(text, max(offset, 1), limit)


def _page(text: str, offset: int, limit: int | None) -> str:
    lines = text.split("\n")
    if offset > len(lines):
        raise ValueError(f"offset {offset} is beyond the end of the file ({len(lines)} lines)")
    chosen = lines[offset - 1 : offset - 1 + (limit or MAX_LINES)][:MAX_LINES]
    shown: list[str] = []
    size = 0
    for line in chosen:
        size += len(line.encode("utf-8")) + 1
        if size > MAX_BYTES and shown:
            break
        shown.append(line)
    end = offset - 1 + len(shown)
    out = "\n".join(shown)
    if end < len(lines):
        out += f"\n\n[Showing lines {offset}-{end} of {len(lines)}. Use offset={end + 1} to continue.]"
    return out


def skill_read_tool(roots: Callable[[], Sequence[str]], cwd: str) -> AgentTool:
    """The ``read`` tool over the folders ``roots()`` returns when it runs."""

    def execute(tool_call_id: str, args: Any, signal: Any = None, on_update: Any = None) -> AgentToolResult:
        text = read_skill_file(
            str(args["path"]), list(roots()), cwd, int(args.get("offset") or 1), args.get("limit")
        )
        return AgentToolResult(content=[TextContent(text=text)], details={"path": args["path"]})

    return AgentTool(
        name=SKILL_TOOL_NAME,
        description=(
            "Read a file of a skill: its SKILL.md or a file in the skill's folder that it refers to. "
            "Only skill folders can be read. Long files are paged with offset/limit (lines)."
        ),
        parameters=_PARAMETERS,
        execute=execute,
        label="read skill file",
    )
