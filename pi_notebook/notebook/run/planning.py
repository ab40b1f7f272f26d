"""Plan mode (``%%pi --plan``): plan with read-only tools, then run the plan the user accepted.

A ``--plan`` run is an ordinary run whose tools are the read-only ones (the notebook's
``read`` group and a skill's ``read``; no MCP tool, no tool of the conversation's own) and whose
prompt carries ``PLAN_INSTRUCTION``: the model answers with a numbered plan. ``parse_plan``
reads the steps from that answer. Then:

* where someone can click, the plan card (``view/plan_card.py``) offers Run plan / Edit /
  Cancel; Run (with the steps as edited) starts a second run of the same conversation;
* ``--plan-run`` runs the plan at once; otherwise a run nobody can click (headless, the
  fallback magic) stops after the plan, with a line that says how to go on.

The second run's prompt is ``execution_prompt``: the plan's text (as the user left it) and how
to report progress, through the ``plan_step`` tool (``plan_step_tool``): a tool call, not a
phrase in the model's text, so the checklist (``ViewState.plan``, updated by the reducer from
the tool's events) never depends on how the model words its answer. Everything is ordinary
messages of the conversation: the plan is the assistant's answer, the run is a user message, a
step report is a tool call and its result, so the session file is one Pi reads as it is and a
later cell can refer to "step 3".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Literal

from ...agent import tool
from ...agent.types import AgentTool
from ...ai.types import TextContent, content_text
from ..options import RunOptions
from ..tools.notebook_tools import READ_TOOLS
from ..view.reduce import show_plan
from ..view.state import PLAN_STEP_TOOL
from .plan import RunPlan

__all__ = [
    "PLAN_INSTRUCTION",
    "Plan",
    "ask_plan",
    "asking_for_plan",
    "carry_out",
    "execution_prompt",
    "no_plan_notice",
    "note_plan",
    "parse_plan",
    "plan_mode",
    "plan_step_tool",
    "planned_notice",
    "with_instruction",
]

PLAN_INSTRUCTION = (
    "Plan mode: do not change anything yet. You may look with the read-only tools you have "
    "(variables, cells, the notebook). Then answer with a plan: a numbered list (1., 2., ...), "
    "one step per item, each saying what it will run or change. Nothing runs until the user "
    "accepts the plan."
)

_STEP = re.compile(r"^\s{0,3}(\d{1,3})[.)]\s+(\S.*)$")


@dataclass(frozen=True, slots=True)
class Plan:
    """A plan: its text as the model wrote it (or the user edited it) and its numbered steps."""

    text: str
    steps: tuple[str, ...]
    edited: bool = False


def parse_plan(text: str, *, edited: bool = False) -> Plan | None:
    """The numbered steps of ``text`` (``1.`` or ``1)`` at the start of a line; indented lines
    under a step continue it); ``None`` when there is no numbered list."""
    steps: list[str] = []
    for line in text.splitlines():
        found = _STEP.match(line)
        if found:
            steps.append(found.group(2).strip())
        elif steps and line.startswith((" ", "\t")) and line.strip():
            steps[-1] = f"{steps[-1]} {line.strip()}"
        elif steps and line.strip() and not line.startswith(("-", "*")):
            break  # the prose after the list
    return Plan(text=text.strip(), steps=tuple(steps), edited=edited) if steps else None


def asking_for_plan(plan: RunPlan) -> RunPlan:
    """The run plan of a planning run with ``with_instruction``'s message; others as they are."""
    return replace(plan, message=with_instruction(plan.message)) if plan.options.plan else plan


def with_instruction(message: Any) -> Any:
    """The user message of a planning run: the prompt, then ``PLAN_INSTRUCTION`` as its own text
    block (so the session file shows what the model was asked)."""
    content = message.content
    content = [TextContent(text=content)] if isinstance(content, str) else list(content)
    return message.model_copy(update={"content": [*content, TextContent(text=PLAN_INSTRUCTION)]})


def execution_prompt(plan: Plan) -> str:
    """The prompt of the run that carries the plan out."""
    who = "the plan as the user edited it" if plan.edited else "the plan"
    return (
        f"Run {who}, step by step, with the usual tools. Before a step call plan_step(step=N, "
        'status="started"); when it is finished call plan_step(step=N, status="done"). '
        "If a step cannot be done, say why and stop.\n\n" + plan.text
    )


def plan_mode(options: RunOptions, executing: Plan | None, read_only: bool = False) -> None:
    """A planning run (``--plan``) and a ``read_only`` one (``%pi explain``) get the read-only
    notebook tools of their ``--tools`` and no MCP tool; the run that carries out a plan
    (``executing``) is not a planning run."""
    if executing is not None:
        options.plan = False
    options.read_only = options.plan or read_only
    if options.read_only:
        options.tool_names = [name for name in options.tool_names if name in READ_TOOLS]
        options.mcp_tools = ()


def carry_out(run: Any, plan: Plan) -> None:
    """Make ``run`` (a ``PiRun`` not started yet) the run of ``plan``: ``plan_step`` among its
    tools, the plan's checklist at the top of its view."""
    run.extra_tools = [plan_step_tool(plan)]
    show_plan(run.view.state, list(plan.steps), edited=plan.edited)


def plan_step_tool(plan: Plan) -> AgentTool:
    """``plan_step``: the model says which step it starts or has finished."""
    count = len(plan.steps)

    @tool(name=PLAN_STEP_TOOL, label="Plan step")
    async def plan_step(step: int, status: Literal["started", "done"] = "started") -> str:
        """Report progress on the accepted plan: call with status "started" before a step and
        "done" after it (steps are numbered from 1)."""
        if not 1 <= step <= count:
            raise ValueError(f"the plan has steps 1 to {count}, not {step}")
        return f"step {step} {status}: {plan.steps[step - 1]}"

    return plan_step


def proposed_plan(messages: list[Any]) -> Plan | None:
    """The plan of a planning run's last assistant answer, if it ended normally."""
    last = next((m for m in reversed(messages) if getattr(m, "role", None) == "assistant"), None)
    if last is None or last.stop_reason not in ("stop", "length"):
        return None
    return parse_plan(content_text(last.content))


def note_plan(run: Any) -> None:
    """After a planning run (a ``PiRun`` with ``--plan``), before its output freezes: keep the
    proposed plan in ``run.proposed`` and say under the run what happens next."""
    options = run.plan.options
    if not options.plan or run.aborted:
        return
    run.proposed = proposed_plan(run.result().messages)
    if run.proposed is None:
        if run.result().stop_reason == "stop":
            run.view.add_notice(no_plan_notice(), "plan")
        return
    can_ask = run.plan.mode.can_ask and run.widget is not None
    run.view.add_notice(planned_notice(run.proposed, can_ask=can_ask, run_now=options.plan_run), "plan")


async def ask_plan(plan: Plan) -> Plan | None:
    """Show the plan card and wait for Run plan (the plan, as edited) or Cancel (``None``). An
    interrupt while it waits ends the cell as an interrupted run does."""
    import asyncio

    from IPython.display import display as untyped_display

    from ..host.interrupts import watch_sigint
    from ..view.plan_card import PlanChoice
    from .errors import RunInterrupted

    card = PlanChoice(plan.text, list(plan.steps))
    display: Any = untyped_display
    handle: Any = display(card.widget, display_id=True)
    try:
        with watch_sigint():
            kind, text = await card.choice
    except asyncio.CancelledError:
        card.close()
        handle.update({"text/plain": "Plan not run: interrupted."}, raw=True)
        raise RunInterrupted from None
    card.close()
    if kind == "cancel" or not text.strip():
        handle.update({"text/plain": "Plan cancelled: nothing was run."}, raw=True)
        return None
    edited = text.strip() != plan.text.strip()
    chosen = parse_plan(text, edited=edited) or Plan(text=text.strip(), steps=(text.strip(),), edited=edited)
    accepted = f"Plan accepted{' as edited' if edited else ''}: running it below."
    handle.update({"text/plain": accepted}, raw=True)
    return chosen


def planned_notice(plan: Plan, *, can_ask: bool, run_now: bool = False) -> str:
    n = len(plan.steps)
    steps = f"{n} step{'s' if n != 1 else ''}"
    if run_now:
        return f"Plan ready ({steps}): running it (--plan-run)."
    if can_ask:
        return f"Plan ready ({steps}): Run plan, Edit or Cancel below."
    return (
        f"Plan ready ({steps}); nothing was run. To run it: %%pi --plan-run (plans again, then runs), "
        'or a %%pi cell "Run the plan" in this conversation.'
    )


def no_plan_notice() -> str:
    return "No numbered plan in the answer, so nothing runs; ask again, e.g. \"answer with a numbered plan\"."
