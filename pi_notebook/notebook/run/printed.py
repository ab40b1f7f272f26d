"""A ``%%pi`` run's tool mode and the calls its model printed in its text.

``PrintedCalls`` gives one run's ``AgentRunOptions`` two things (``apply``):

* ``wrap_stream``: the agent's stream function for this run, through ``printed_turns``
  (``agent/printed_turns.py``). The run's mode is decided when it starts
  (``resolve_tool_mode``: ``--tool-mode`` / ``c.PiMagics.tool_mode``, the model's
  ``toolMode``, else tools). Code mode needs ``run_code`` among the run's tools; without it the
  run uses tools mode and says why. The footer names the mode of a code-mode run and of any
  run of a local model (``tool mode: tools``, ``tool mode: code``).
* ``before_tool_call``: the run's approval gate, after one question of its own: a call
  recovered from the model's text (JSON, ``<tool_call>`` tags, a ```python block in tools
  mode) asks on its card before anything else (``--recovered-calls ask``, the default),
  whatever the policy; approved, the gate still applies the policy (``deny`` still blocks).
  Denied, it does not run and, when every call of the turn was, the run ends there: the
  model's text is its answer (``should_stop_after_turn``), it is not asked again.
  With ``policy`` the gate alone decides, as for a call the model made; with ``off`` printed
  calls stay text.

Where nobody can click (headless, the fallback magic), ``ask`` cannot be answered: the calls
are left as text and one line says so. The approval of a code-mode block is ``run_code``'s own
(the policy decides, as for a call the model made).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ...agent import AgentRunOptions
from ...agent.printed_calls import PrintedCall
from ...agent.printed_turns import RECOVERED_MARKS, printed_turns, recovered_mark
from ...agent.tool_mode import ToolMode, resolve_tool_mode
from ...agent.tools import resolve
from ...agent.types import BeforeToolCallContext, BeforeToolCallResult, StreamFn, TurnContext
from ...ai.abort import AbortSignal
from ...ai.providers.openai_completions_request import is_local_model
from ...ai.types import ToolCall
from ..config import DEFAULT_SYSTEM_PROMPT
from .approval import ALWAYS_ASK, USER_DENIED, ApprovalGate
from .unparsed import offer_line

__all__ = [
    "CODE_PROMPT", "PrintedCalls", "code_system_prompt", "offer_recovered", "printed_run",
]  # fmt: skip

CODE_PROMPT = (
    "You work in a live Jupyter notebook with a Python kernel. To compute, inspect data or check "
    "anything, reply with Python in a ```python fenced block: it runs in the kernel and its "
    "output comes back as the next message (print what you need to see). One block per reply. "
    "When you know the answer, reply with it in plain text and no code block."
)
"""The code-mode system prompt: short, since small models read every token of it."""

NO_RUN_CODE = (
    "--tool-mode code needs the run_code tool (this run's --tools has none): the run used tools mode."
)


def code_system_prompt(run_prompt: str | None) -> str:
    """The run's system prompt in code mode: the notebook's default prompt (which speaks of
    tools) becomes ``CODE_PROMPT``; a prompt of the user's own, the project's context files
    and skills stay, after it."""
    rest = (run_prompt or "").replace(DEFAULT_SYSTEM_PROMPT, "").strip()
    return f"{CODE_PROMPT}\n\n{rest}" if rest else CODE_PROMPT


def offer_recovered(name: str) -> str:
    """The card's line while a recovered call waits, in its buttons' words."""
    return offer_line(name, "the model wrote this call in its text instead of making it")


def left_as_text(calls: list[PrintedCall], why: str) -> str:
    names = ", ".join(dict.fromkeys(call.name for call in calls))
    return (
        f"The model wrote a call of {names} in its text instead of making it; it was not run ({why}: "
        "pass --recovered-calls policy to let --approve decide, or --tool-mode code)."
    )


class PrintedCalls:
    """One run's tool mode and printed calls (module docstring). ``requested``: the
    ``--tool-mode`` value; ``recovered``: ``--recovered-calls``; ``tools``: the names of the
    run's tools; ``model``: the run's model when it starts; ``can_ask`` / ``why_not``: whether
    someone can click, and why not; ``notice`` adds a line under the run; ``footer`` is told
    the mode."""

    def __init__(
        self,
        gate: ApprovalGate,
        *,
        requested: str,
        recovered: str,
        tools: list[str],
        model: Callable[[], Any],
        can_ask: bool,
        why_not: str,
        notice: Callable[[str, str], None],
        footer: Callable[[str], None],
    ) -> None:
        self.gate = gate
        self.requested, self.recovered, self.tools = requested, recovered, tools
        self._model, self.can_ask, self.why_not = model, can_ask, why_not
        self._notice, self._footer = notice, footer
        self.mode: ToolMode | None = None
        """The mode of the run, once it started."""
        self.probed: str | None = None
        """What the model's server said it supports (``tools`` / ``code``), set before the run
        starts by whoever asked it; ``resolve_tool_mode`` weighs it after the user's choice and
        the model's ``toolMode``."""
        self.denied: set[str] = set()
        """Recovered calls the user denied on their cards."""
        self.left: list[PrintedCall] = []
        """Calls the model printed that stayed text (nobody could be asked)."""

    def apply(self, run: AgentRunOptions) -> AgentRunOptions:
        own = run.should_stop_after_turn

        async def should_stop_after_turn(ctx: TurnContext) -> bool:
            stop = bool(own is not None and await resolve(own(ctx)))  # asked first: it counts turns
            return self.left_alone(ctx) or stop

        return replace(
            run,
            wrap_stream=self.wrap,
            before_tool_call=self.before_tool_call,
            should_stop_after_turn=should_stop_after_turn,
        )

    def left_alone(self, ctx: TurnContext) -> bool:
        """Every call of the turn was recovered and the user denied it: the model's text is its
        answer, and the run ends there (the model is not asked again)."""
        calls = [block for block in ctx.message.content if isinstance(block, ToolCall)]
        return bool(calls) and all(call.id in self.denied for call in calls)

    def resolve(self) -> ToolMode:
        """The run's mode (``resolve_tool_mode``), told once: the footer, a line when code
        mode cannot be had."""
        if self.mode is None:
            model = self._model()
            mode = resolve_tool_mode(self.requested, model, self.probed)
            if mode == "code" and "run_code" not in self.tools:
                self._notice(NO_RUN_CODE, "tool-mode")
                mode = "tools"
            self.mode = mode
            # named where it was a choice: code mode, and any run of a model a server on the
            # user's machine serves (the models file, the server or the flag may have picked either)
            if mode == "code" or (model is not None and is_local_model(model)):
                self._footer(mode)
        return self.mode

    def wrap(self, own: StreamFn) -> StreamFn:
        if self.resolve() == "code":
            return printed_turns(own, mode="code", system_prompt=code_system_prompt)
        if self.recovered == "off":
            return own
        return printed_turns(own, mode="tools", accept=self.accept)

    def accept(self, calls: list[PrintedCall]) -> bool:
        """Printed calls become the turn's calls unless nobody could be asked about them."""
        if self.recovered == "ask" and not self.can_ask:
            self.left += calls
            self._notice(left_as_text(calls, self.why_not), "recovered")
            return False
        return True

    async def before_tool_call(
        self, ctx: BeforeToolCallContext, signal: AbortSignal | None = None
    ) -> BeforeToolCallResult | None:
        call = ctx.tool_call
        # a recovered call asks first; delete_cells asks in the gate anyway (not twice)
        recovered = recovered_mark(call) in RECOVERED_MARKS
        asks = self.recovered == "ask" and recovered and call.name not in ALWAYS_ASK
        if asks and not await self.gate.ask(call.id, offer_recovered(call.name), signal, call=call):
            self.denied.add(call.id)
            return BeforeToolCallResult(block=True, reason=USER_DENIED)
        return await self.gate(ctx, signal)


def printed_run(
    run: Any, gate: ApprovalGate, tools: list[Any], options_of_run: AgentRunOptions
) -> tuple[PrintedCalls, AgentRunOptions]:
    """The ``PrintedCalls`` of a ``PiRun`` with these ``tools``, and ``options_of_run`` with its
    stream function, gate and turn check (``PrintedCalls.apply``)."""
    printed = _printed_calls(run, gate, tools)
    return printed, printed.apply(options_of_run)


def _printed_calls(run: Any, gate: ApprovalGate, tools: list[Any]) -> PrintedCalls:
    """The ``PrintedCalls`` of a ``PiRun`` with these ``tools``."""
    options, mode = run.plan.options, run.plan.mode
    why = "a headless run" if mode.headless.headless else "nobody can click Approve in this run"

    def footer(tool_mode: str) -> None:
        run.view.state.footer.tool_mode = tool_mode

    return PrintedCalls(
        gate,
        requested=options.tool_mode,
        recovered=options.recovered_calls,
        tools=[tool.name for tool in tools],
        model=lambda: run.session.state.model,
        can_ask=mode.can_ask,
        why_not=why,
        notice=run.view.add_notice,
        footer=footer,
    )
