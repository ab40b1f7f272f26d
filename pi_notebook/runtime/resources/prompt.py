"""The system prompt with the resources in it, as Pi 0.83's ``buildSystemPrompt`` builds a
custom prompt: the base prompt, then ``<project_context>`` (each context file in a
``<project_instructions path=...>`` block), then the ``<available_skills>`` list, then the
working directory."""

from __future__ import annotations

from collections.abc import Sequence

from .context import ContextFile
from .skills import Skill, format_skills_for_prompt

__all__ = ["build_system_prompt", "format_project_context"]


def format_project_context(files: Sequence[ContextFile]) -> str:
    """Pi's ``<project_context>`` block (``""`` without context files)."""
    if not files:
        return ""
    text = "\n\n<project_context>\n\nProject-specific instructions and guidelines:\n\n"
    for file in files:
        text += f'<project_instructions path="{file.path}">\n{file.content}\n</project_instructions>\n\n'
    return text + "</project_context>\n"


def build_system_prompt(
    base: str,
    cwd: str,
    context_files: Sequence[ContextFile] = (),
    skills: Sequence[Skill] = (),
    *,
    has_read: bool = True,
) -> str:
    """Pi's ``buildSystemPrompt`` with a custom prompt ``base``; the skills are listed only
    when the model has a ``read`` tool to open them (``has_read``)."""
    prompt = base + format_project_context(context_files)
    if has_read and skills:
        prompt += format_skills_for_prompt(skills)
    return prompt + "\nCurrent working directory: " + cwd.replace("\\", "/")
