"""One run's settings with the resources in them: the system prompt with Pi's blocks, and the
skill-file ``read`` tool when skills are loaded (``AgentSession`` calls this before each run)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ...agent import AgentRunOptions, AgentTool
from .loader import Resources
from .skill_tool import SKILL_TOOL_NAME

__all__ = ["run_with_resources"]


def run_with_resources(
    resources: Resources,
    run: AgentRunOptions | None,
    agent_tools: Sequence[AgentTool],
    agent_prompt: str,
    skill_tool: Callable[[], AgentTool] | None,
) -> AgentRunOptions:
    """``run`` (or the agent's own tools and prompt) with the resources' system prompt, and
    ``skill_tool()`` added when skills are loaded and no tool of the run is called ``read``.

    ``skill_tool`` ``None``: the run gets no skill ``read`` tool (the notebook's ``--tools
    none``), and so no list of skills it could not open.
    """
    run = run if run is not None else AgentRunOptions()
    tools = list(run.tools if run.tools is not None else agent_tools)
    has_read = any(t.name == SKILL_TOOL_NAME for t in tools)
    if resources.skills and skill_tool is not None and not has_read:
        tools.append(skill_tool())
        has_read = True
    base = run.system_prompt if run.system_prompt is not None else agent_prompt
    # the skills are listed where a tool called read can open them, as Pi lists them
    prompt = resources.system_prompt(base, has_read=has_read)
    return replace(run, tools=tools, system_prompt=prompt)
