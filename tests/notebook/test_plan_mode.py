"""Plan mode (``%%pi --plan``, ``--plan-run``, ``c.PiMagics.plan``) on a real ``InteractiveShell``
with the faux provider: the planning run sees only read-only tools and the plan instruction,
a run nobody can click stops after the plan and says how to go on, ``--plan-run`` runs the plan
with ``plan_step`` progress checked off, the plan stays in the conversation and in the session
file as ordinary messages; plus the parser and the reducer's checklist."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401
from session_helpers import files, rows, sdir_fixture  # noqa: F401

from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_tool_call
from pi_notebook.notebook.run.planning import PLAN_INSTRUCTION, execution_prompt, parse_plan
from pi_notebook.notebook.tools.notebook_tools import READ_TOOLS, STATE_CHANGING_TOOLS
from pi_notebook.notebook.view.reduce import ViewState, reduce, show_plan
from pi_notebook.notebook.view.render import render_html, render_text

MODEL = "--model faux:faux-1"
PLAN = (
    "I looked at `df`.\n\n1. Drop the rows without a price\n2. Plot the price per year\n"
    "3. Summarise the trend\n"
)


class Recorder:
    """Faux replies that record the context each model call saw."""

    def __init__(self) -> None:
        self.contexts: list[Any] = []

    def reply(self, message: Any) -> Any:
        def factory(context: Any, options: Any, state: Any, model: Any) -> Any:
            self.contexts.append(context)
            return faux_assistant_message(message) if isinstance(message, str) else message

        return factory

    def tools(self, index: int) -> list[str]:
        return sorted(t.name for t in self.contexts[index].tools or ())

    def texts(self, index: int) -> list[str]:
        out = []
        for message in self.contexts[index].messages:
            content = message.content
            if not isinstance(content, str):
                content = "|".join(getattr(b, "text", "") for b in content)
            out.append(content)
        return out


def step(n: int, status: str, call_id: str) -> Any:
    call = faux_tool_call("plan_step", {"step": n, "status": status}, id=call_id)
    return faux_assistant_message([call], stop_reason="toolUse")


def pi(shell: Any, line: str, body: str) -> tuple[Any, Any]:
    return run(shell, f"%%pi {line}\n{body}")


def shown(captured: Any) -> str:
    return "\n".join(str(o.get("text/plain", "")) for o in outputs(captured))


# --- the plan and its checklist (pure) ---------------------------------------------------------


def test_parse_plan_reads_numbered_steps_and_their_continuations() -> None:
    found = parse_plan("Intro.\n\n1. First\n2) Second\n   more of it\n3. Third\n\nShall I go on?")
    assert found is not None
    assert found.steps == ("First", "Second more of it", "Third")
    assert parse_plan("No list here, only prose.") is None


def test_checklist_follows_plan_step_events_in_the_reducer() -> None:
    from pi_notebook.agent.types import AgentToolResult, ToolExecutionEndEvent, ToolExecutionStartEvent

    state = show_plan(ViewState(prompt="run it"), ["a", "b", "c"], edited=True)

    def call(n: int, status: str, error: bool = False) -> None:
        args = {"step": n, "status": status}
        ids = {"tool_call_id": f"{n}{status}", "tool_name": "plan_step"}
        start = ToolExecutionStartEvent(**ids, args=args)
        end = ToolExecutionEndEvent(**ids, result=AgentToolResult(content=[]), is_error=error)

        reduce(state, start)
        reduce(state, end)

    call(1, "started")
    call(1, "done")
    call(2, "started")
    call(9, "started", error=True)  # a refused call changes nothing
    assert state.plan is not None
    assert (state.plan.done, state.plan.current) == ({1}, 2)
    text = render_text(state)
    assert "Plan (1 of 3 steps done, edited):\n  [x] 1. a\n  [>] 2. b\n  [ ] 3. c" in text
    html = render_html(state)
    assert "☑ 1. a" in html
    assert "<b>▶ 2. b</b>" in html
    assert "☐ 3. c" in html


# --- planning in a run nobody can click -----------------------------------------------------------


def test_plan_uses_read_only_tools_and_stops_after_the_plan(ip: Any, faux: FauxRegistration) -> None:
    rec = Recorder()
    faux.set_responses([rec.reply(PLAN)])
    ip.user_ns["df"] = [1, 2, 3]
    result, captured = pi(ip, f"{MODEL} --plan", "clean df and plot prices")
    assert result.error_in_exec is None
    assert len(rec.contexts) == 1
    assert faux.get_pending_response_count() == 0
    offered = rec.tools(0)
    assert offered
    assert set(offered) <= set(READ_TOOLS)
    assert not set(offered) & set(STATE_CHANGING_TOOLS)
    assert rec.texts(0) == [f"clean df and plot prices|{PLAN_INSTRUCTION}"]
    text = shown(captured)
    assert "1. Drop the rows without a price" in text
    assert "Plan ready (3 steps); nothing was run. To run it: %%pi --plan-run" in text
    assert ip.user_ns["_pi"].text == PLAN


def test_plan_trait_is_the_default(ip: Any, faux: FauxRegistration) -> None:
    rec = Recorder()
    faux.set_responses([rec.reply(PLAN)])
    ip.run_line_magic("config", "PiMagics.plan = True")
    try:
        _, captured = pi(ip, MODEL, "clean df")
    finally:
        ip.run_line_magic("config", "PiMagics.plan = False")
    assert rec.texts(0)[0].endswith(PLAN_INSTRUCTION)
    assert "Plan ready (3 steps)" in shown(captured)


def test_an_answer_without_a_plan_runs_nothing(ip: Any, faux: FauxRegistration) -> None:
    faux.set_responses(["I would rather not plan."])
    _, captured = pi(ip, f"{MODEL} --plan-run", "do it")
    assert "No numbered plan in the answer, so nothing runs" in shown(captured)
    assert faux.get_pending_response_count() == 0


# --- --plan-run ----------------------------------------------------------------------------------


def test_plan_run_executes_the_plan_with_progress(ip: Any, faux: FauxRegistration, sdir: Path) -> None:
    rec = Recorder()
    faux.set_responses(
        [
            rec.reply(PLAN),
            rec.reply(step(1, "started", "s1")),
            rec.reply(step(1, "done", "d1")),
            rec.reply(step(2, "started", "s2")),
            rec.reply(step(2, "done", "d2")),
            rec.reply("Steps 1 and 2 done; the trend is up."),
        ]
    )
    result, captured = pi(ip, f"{MODEL} --plan-run", "clean df and plot prices")
    assert result.error_in_exec is None
    assert faux.get_pending_response_count() == 0
    # the run: every usual tool plus plan_step; the plan in its prompt
    assert "plan_step" in rec.tools(1)
    assert set(STATE_CHANGING_TOOLS) <= set(rec.tools(1))
    sent = rec.texts(1)
    assert sent[:2] == [f"clean df and plot prices|{PLAN_INSTRUCTION}", PLAN]
    assert sent[2] == execution_prompt(parse_plan(PLAN.strip()))  # type: ignore[arg-type]
    assert "1. Drop the rows without a price" in sent[2]
    text = shown(captured)
    assert "Plan ready (3 steps): running it (--plan-run)." in text
    assert "Plan (2 of 3 steps done):\n  [x] 1. Drop the rows without a price\n  [x] 2. Plot" in text
    assert "  [ ] 3. Summarise the trend" in text
    assert ip.user_ns["_pi"].text == "Steps 1 and 2 done; the trend is up."
    # the session file: ordinary messages (user, assistant, tool results), nothing Pi cannot read
    [path] = files(sdir)
    kinds = [(r["type"], r.get("message", {}).get("role")) for r in rows(path) if r["type"] == "message"]
    assert [role for _, role in kinds] == [
        "user", "assistant", "user", *["assistant", "toolResult"] * 4, "assistant"
    ]


def test_a_follow_up_sees_the_plan(ip: Any, faux: FauxRegistration) -> None:
    rec = Recorder()
    faux.set_responses([rec.reply(PLAN), rec.reply("Step 3 would summarise the trend.")])
    pi(ip, f"{MODEL} --plan", "clean df")
    pi(ip, "", "what does step 3 do?")
    assert rec.texts(1)[1:] == [PLAN, "what does step 3 do?"]


def test_plan_step_outside_the_plan_is_an_error_for_the_model(ip: Any, faux: FauxRegistration) -> None:
    rec = Recorder()
    faux.set_responses([rec.reply(PLAN), rec.reply(step(7, "started", "bad")), rec.reply("sorry")])
    pi(ip, f"{MODEL} --plan-run", "go")
    result = rec.contexts[2].messages[-1]
    assert result.role == "toolResult"
    assert result.is_error
    assert "the plan has steps 1 to 3, not 7" in result.content[0].text


@pytest.mark.parametrize("line", ["--plan --text", "--plan-run --text"])
def test_plan_options_parse(ip: Any, faux: FauxRegistration, line: str) -> None:
    from pi_notebook.notebook.options import parse_options
    from pi_notebook.notebook.state import state_for

    options = parse_options(line, state_for(ip).config)
    assert options.plan
    assert options.plan_run == ("plan-run" in line)


# --- the card's widgets --------------------------------------------------------------------------


def test_plan_card_edit_then_run_returns_the_edited_text_once() -> None:
    import asyncio

    from pi_notebook.notebook.view.plan_card import PlanChoice

    async def scenario() -> tuple[Any, ...]:
        card = PlanChoice("1. a\n2. b", ["a", "b"])
        hidden = card.editor.layout.display
        card.edit_button.click()
        shown = card.editor.layout.display
        card.editor.value = "1. a\n2. c"
        card.run_button.click()
        card.cancel_button.click()  # after the choice: ignored
        choice = await asyncio.wait_for(card.choice, 5)
        disabled = (card.run_button.disabled, card.edit_button.disabled, card.editor.disabled)
        card.close()
        return hidden, shown, choice, disabled

    hidden, shown, choice, disabled = asyncio.run(scenario())
    assert (hidden, shown) == ("none", "")
    assert choice == ("run", "1. a\n2. c")
    assert disabled == (True, True, True)


def test_plan_card_cancel() -> None:
    import asyncio

    from pi_notebook.notebook.view.plan_card import PlanChoice

    async def scenario() -> Any:
        card = PlanChoice("1. a", ["a"])
        card.cancel_button.click()
        return await asyncio.wait_for(card.choice, 5)

    assert asyncio.run(scenario()) == ("cancel", "")


def test_the_fallback_magic_stops_after_the_plan_unless_plan_run(ip: Any, faux: FauxRegistration) -> None:
    rec = Recorder()
    ip.autoawait = False  # the %%pi cell magic, run to the end without waiting for clicks
    faux.set_responses([rec.reply(PLAN), rec.reply("never")])
    _, captured = pi(ip, f"{MODEL} --plan", "clean df")
    assert "Plan ready (3 steps); nothing was run." in shown(captured)
    assert faux.get_pending_response_count() == 1
    faux.set_responses([rec.reply(PLAN), rec.reply(step(1, "started", "s1")), rec.reply("step 1 begun")])
    _, captured = pi(ip, "--plan-run", "clean df")
    assert "Plan (0 of 3 steps done):\n  [>] 1. Drop the rows without a price" in shown(captured)
    assert ip.user_ns["_pi"].text == "step 1 begun"
    assert faux.get_pending_response_count() == 0
