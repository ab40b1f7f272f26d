"""One ``%%pi`` cell planned as a value before anything runs: ``RunPlan``.

``prepare_conversation`` is the one step with side effects, and says so: it gets the cell's
conversation (creating, replacing or resuming it), applies ``--model``, ``--thinking`` and
``--system``, which stay with the conversation, and on the first cell of an empty conversation
looks once for a recorded session of it that ``%pi resume`` would continue. ``plan_run`` then
only reads: the prompt as typed and as sent (``/skill:name`` and ``/template`` expanded as Pi
expands them, then ``$`expr``` references, with the pictures of those that have one), the mode (live
or static, can anyone click, headless), the approval policy and the tools it gates, the lines
shown under the run from the start (a headless run's approval line waits for the first call
the policy decides), the recording to replay, whether a failure raises, the session settings
for the run (retries, compaction, the summary timeout) and the budgets of the run and of its
conversation (refused before anything runs when the model has no prices for a dollar budget,
or the conversation has spent its own). The runner
(``runner.py``) executes a plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError

from ...ai.models import user_models_problem
from ...ai.types import Model, UserMessage
from ...runtime import AgentSession, AgentSessionSettings, Budget
from ...runtime.budget import check_priced, reached
from ...runtime.resources.loader import Resources
from ..config import MODEL_ENV, Policy
from ..defaults import conversation_budget as conversation_budget_of
from ..defaults import session_settings
from ..options import RunOptions
from ..sessions.conversations import Conversation, use_model
from ..sessions.replay import Recording, find_recording
from ..state import NotebookState
from ..tools.notebook_tools import STATE_CHANGING_TOOLS, is_notebook_tool
from ..tools.pictures import reference_content
from .approval import ApprovalSetup, RunMode, gated_by_run, resolve_policy
from .context import CellContext
from .requests import seed_notice

__all__ = ["RunPlan", "plan_run", "prepare_conversation", "strip_markers"]

_MARKER_LINE = re.compile(r"^\s*#\s*NBVAL_\w+.*$\n?", re.MULTILINE)

NO_MODEL = (
    "no model: pass --model provider:id, or run %pi model provider:id --save to make it the default "
    f"here and in Pi (or set c.PiMagics.model / {MODEL_ENV})"
)


def strip_markers(body: str) -> str:
    """The prompt without ``# NBVAL_*`` marker lines (nbval reads them; the model should not)."""
    return _MARKER_LINE.sub("", body)


@dataclass(frozen=True, slots=True)
class RunPlan:
    """Everything one run needs to know, decided before it starts."""

    options: RunOptions
    prompt: str
    """The prompt as typed (marker lines and surrounding blank space removed)."""
    message: UserMessage
    """What the model gets: the prompt with ``$`expr``` expanded, and the references."""
    mode: RunMode
    approval: ApprovalSetup
    approvals: dict[str, Policy]
    """The per-tool policies (``c.PiMagics.approvals``) as the cell read them."""
    gated: tuple[str, ...]
    """The tools whose policy is ``--approve``'s (the approval notice names them)."""
    notices: tuple[str, ...]
    """The lines under the run from its start, in order."""
    approval_notice: str | None
    """A headless run's line on the approval policy, shown when the policy first decides a call
    of a tool it gates: an answer that used no tool says nothing about blocked tools. (Where
    controls are inactive in a watched run, the line says why from the start, in ``notices``:
    it concerns Stop and the other controls too.)"""
    replay: Recording | None
    raise_on_error: bool
    settings: AgentSessionSettings
    budget: Budget | None = None
    """What this run may spend (``--max-cost``, ``--max-total-tokens``)."""
    conversation_budget: Budget | None = None
    """What the conversation's runs may spend together (``PiMagics.max_conversation_*``)."""
    name: str = ""
    """The conversation's (``options.name``)."""
    resources: Resources | None = None
    """The folder's resources as the cell read them at its start (``CellContext``): the run
    uses them as they are, without looking at the files again."""


def prepare_conversation(
    state: NotebookState, options: RunOptions, where: CellContext
) -> tuple[Conversation, tuple[str, ...]]:
    """The cell's conversation, made ready through its session (see the module docstring),
    and the lines that say what happened to it (resumed, or nothing to resume) or could (a
    recorded session of an empty conversation exists: once per conversation)."""
    conversations = state.conversations
    try:
        found = conversations.new(options.name) if options.new else conversations.get(options.name)
    except ValueError as exc:
        raise UsageError(f"default model (c.PiMagics.model / {MODEL_ENV}): {exc}") from None
    session = found.session
    if session.resource_loader is not where.loader:  # c.PiMagics.project_folder changed
        session.resource_loader = where.loader
    if session.is_streaming:
        raise UsageError(f"conversation {options.name!r} is already running; use --name for another one")
    notes: tuple[str, ...] = ()
    if options.resume and not session.messages:
        notes = (conversations.resume_latest(options.name),)
    elif not (session.messages or options.new or options.replay):
        told = state.sessions.recorded_notice(options.name, session.session_file)  # after a restart
        notes = (told,) if told else ()
    if options.model is not None:
        use_model(session, options.model)
    if options.thinking is not None:
        session.set_thinking_level(options.thinking)
    if options.system is not None:
        session.set_system_prompt(options.system)
    if session.model is None and not options.replay:
        problem = state.model_problem
        raise UsageError(f"{problem}; {NO_MODEL.removeprefix('no model: ')}" if problem else NO_MODEL)
    return found, notes


def plan_run(
    state: NotebookState,
    options: RunOptions,
    conversation: Conversation,
    body: str,
    *,
    where: CellContext,
    notes: tuple[str, ...] = (),
) -> RunPlan:
    """The plan of a cell whose conversation is ready (``prepare_conversation``)."""
    prompt = strip_markers(body).strip()
    if not prompt:
        raise UsageError("%%pi needs a prompt: write it in the cell body")
    session = conversation.session
    resources = where.resources
    mode = where.mode_for(options.text)
    typed = prompt
    if prompt.startswith("/") and len(prompt) > 1:  # an extension's /command wins, as in Pi
        command = prompt[1:].split(maxsplit=1)[0]
        typed = prompt if command in state.extensions.runner.commands() else session.expand_input(prompt)
    model = session.model
    sees_images = model is None or "image" in model.input
    content = reference_content(typed, state.shell, state.errors, sees_images=sees_images)
    approvals = state.approvals()
    gated = _gated_tools(options, session, approvals)
    approval = resolve_policy(
        options.policy, can_ask=mode.can_ask, headless=mode.headless, inactive_reason=mode.reason,
        gated=gated,
    )
    raise_on_error = mode.headless.headless if options.raise_on_error is None else options.raise_on_error
    conversation_budget = conversation_budget_of(where.config)
    if not options.replay:
        _check_budgets(options, session, conversation_budget)
    policy_line = approval.notice if gated else None
    later = policy_line if mode.headless.headless else None
    upfront = (policy_line,) if policy_line and not later else ()
    return RunPlan(
        options=options,
        prompt=prompt,
        message=UserMessage(content=content),
        mode=mode,
        approval=approval,
        approvals=approvals,
        gated=tuple(gated),
        notices=(
            *_setting_notices(state, options, session, where, model or session.state.model),
            *upfront,
            *state.resources.notices(resources),
            *notes,
        ),
        approval_notice=later,
        replay=_recording(state, options, session, prompt) if options.replay else None,
        raise_on_error=raise_on_error,
        settings=session_settings(where.chosen, options.timeout),
        budget=options.budget,
        conversation_budget=conversation_budget,
        name=options.name,
        resources=resources,
    )


def _gated_tools(options: RunOptions, session: AgentSession, approvals: dict[str, Policy]) -> list[str]:
    """The tools of this run whose policy is ``--approve``'s: the state-changing notebook tools
    it offers and the conversation's own ``requires_approval`` tools, unless ``approvals``
    (``c.PiMagics.approvals``) or the tool's own policy (MCP) decides for them."""
    offered: list[tuple[str, Any]] = [
        (n, None) for n in sorted(set(STATE_CHANGING_TOOLS).intersection(options.tool_names))
    ]
    own = [(t.name, t) for t in session.state.tools if not is_notebook_tool(t)]
    return gated_by_run([*offered, *own], approvals)


def _setting_notices(
    state: NotebookState, options: RunOptions, session: AgentSession, where: CellContext, model: Model
) -> list[str]:
    """Lines that explain a setting: what is wrong with Pi's ``settings.json`` (each problem
    once), a ``--thinking`` level the model ignores (once per conversation and model), an
    ignored seed."""
    lines = state.settings_notices([*where.chosen.notices(), *filter(None, [user_models_problem()])])
    level = options.thinking or session.thinking_level
    ignored = level != "off" and not model.reasoning
    thinking = state.thinking_ignored(options.name, model, level) if ignored else None
    seed = None if options.seed is None else seed_notice(options.seed, model)
    return lines + [line for line in (thinking, seed) if line]


def _recording(state: NotebookState, options: RunOptions, session: AgentSession, prompt: str) -> Recording:
    model = session.model
    spec = f"{model.provider}:{model.id}" if model is not None else None
    return find_recording(state.sessions, options.name, prompt, spec, new=options.new)


def _check_budgets(options: RunOptions, session: AgentSession, conversation: Budget | None) -> None:
    """A dollar budget needs a model with prices; a conversation that has spent its budget
    starts no further run. Either is a one-line ``UsageError`` saying what to do."""
    if options.budget is None and conversation is None:
        return
    model = session.state.model
    try:
        check_priced(options.budget, model, "--max-cost", "--max-total-tokens")
        check_priced(
            conversation, model, "PiMagics.max_conversation_cost", "PiMagics.max_conversation_tokens"
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    phrase = reached(f"conversation {options.name!r}", conversation, session.spent)
    if phrase is not None:
        raise UsageError(
            f"{phrase[0].upper()}{phrase[1:]}: raise PiMagics.max_conversation_cost / "
            "max_conversation_tokens, or start a fresh one with --new"
        )
