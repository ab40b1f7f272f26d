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
    skill_tool: Callable[[], AgentTool],
) -> AgentRunOptions:
    """``run`` (or the agent's own tools and prompt) with the resources' system prompt, and
    ``skill_tool()`` added when skills are loaded and no tool of the run is called ``read``.

    A run given an empty tool list (``run.tools == []``: the notebook's ``--tools none``) gets
    no tool at all: no skill ``read`` tool either, and so no list of skills it could not open.
    """
    run = run if run is not None else AgentRunOptions()
    no_tools = run.tools is not None and len(run.tools) == 0
    tools = list(run.tools if run.tools is not None else agent_tools)
    if resources.skills and not no_tools and not any(t.name == SKILL_TOOL_NAME for t in tools):
        tools.append(skill_tool())
    base = run.system_prompt if run.system_prompt is not None else agent_prompt
    # with skills there is a tool called read now (unless the run has none), so Pi's list applies
    prompt = resources.system_prompt(base, has_read=not no_tools)
    return replace(run, tools=tools, system_prompt=prompt)
