"""The resources half of one ``AgentSession``: which loader it asks, what a prompt expands to,
and one run's settings with the resources in them (the system prompt with Pi's blocks, the
skill-file ``read`` tool when skills are loaded)."""

from __future__ import annotations

from ...agent import AgentRunOptions, AgentState, AgentTool
from .loader import ResourceLoader, Resources
from .run import run_with_resources
from .skill_tool import skill_read_tool

__all__ = ["SessionResources"]


class SessionResources:
    """What a session reads its context files, skills and templates from. The constructor
    only stores; nothing is read before the first run asks."""

    def __init__(self, loader: ResourceLoader | None, cwd: str) -> None:
        self.loader = loader
        """Where the context files, skills and templates come from (``None``: none are used)."""
        self._cwd = cwd
        self._skill_tool: AgentTool | None = None

    def current(self) -> Resources | None:
        """What the loader has now (re-read if a file changed), or ``None``."""
        return self.loader.current() if self.loader is not None else None

    def expand(self, text: str) -> str:
        """``text`` with ``/skill:name`` and ``/template`` expanded as Pi expands a prompt
        (unchanged without resources, or when no skill or template has that name)."""
        resources = self.current() if text.startswith("/") else None
        return resources.expand(text) if resources is not None else text

    def run_options(
        self,
        run: AgentRunOptions | None,
        state: AgentState,
        *,
        skills: bool = True,
        resources: Resources | None = None,
    ) -> AgentRunOptions | None:
        """``run`` with the resources' system prompt, and the skill-file tool when skills are
        loaded and no tool of the run is already called ``read`` (``skills`` false: no skill
        tool, and no skills listed). ``resources``: those the caller read for this run (default:
        the loader's now); unchanged ``run`` when they add nothing (no context file, no skill)."""
        if self.loader is None:
            return run
        resources = resources if resources is not None else self.loader.current()
        if not (resources.context_files or resources.skills):
            return run  # the agent's own prompt and tools, as they are
        tool = self._read_tool if skills else None
        return run_with_resources(resources, run, state.tools, state.system_prompt, tool)

    def _read_tool(self) -> AgentTool:
        if self._skill_tool is None:

            def roots() -> tuple[str, ...]:  # the loader of now: a notebook may switch folders
                last = self.loader.last if self.loader is not None else None
                return last.skill_dirs if last is not None else ()

            self._skill_tool = skill_read_tool(roots, self._cwd)
        return self._skill_tool
