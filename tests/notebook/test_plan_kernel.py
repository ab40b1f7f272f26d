"""The plan card of ``%%pi --plan`` in a real ipykernel driven through jupyter_client, clicked
while the cell runs as a browser would: Run plan runs the plan with its checklist, Edit changes
a step and the model receives the edited plan (the context of its next call is recorded in the
kernel), Cancel ends with nothing run and no state changed; and a headless run (nbclient)
prints the plan and stops unless ``--plan-run``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch

pytestmark = pytest.mark.kernel

PLAN = "1. Set x to 2\n2. Print x\n"
RECORD = '''
faux.unregister()
faux = register_faux_provider(token_size={"min": 4, "max": 4}, tokens_per_second=None)
seen = []
def said(reply):
    def factory(context, options, state, model):
        seen.append(context)
        return faux_assistant_message(reply) if isinstance(reply, str) else reply
    return factory
def texts(i):
    out = []
    for m in seen[i].messages:
        c = m.content
        out.append(c if isinstance(c, str) else "|".join(getattr(b, "text", "") for b in c))
    return out
x = 1
'''


@pytest.fixture
def pk(k: Kernel) -> Kernel:
    reply = k.run(RECORD)
    assert reply["status"] == "ok", reply
    return k


def clicks(k: Kernel, steps: list[tuple[str, str]]) -> Callable[[Watch, dict[str, Any]], None]:
    """A reaction doing ``steps`` in order once the plan card is there: ("click", label) or
    ("type", text) into the plan's editor."""
    todo = list(steps)

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        if not todo or not watch.find("ButtonModel", description="Cancel"):  # the card's last widget
            return
        kind, what = todo[0]
        if kind == "click":
            k.click(watch.button(what).comm_id)
        else:
            [editor] = watch.find("TextareaModel")
            k.set_value(editor.comm_id, what)
        todo.pop(0)

    return react


def test_run_plan_runs_it_with_progress(pk: Kernel) -> None:
    pk.run(
        f"faux.set_responses([said({PLAN!r}), said(tool_use('plan_step', {{'step': 1}}, 's1')),"
        " said(tool_use('run_code', {'code': 'x = 2'}, 'r1')),"
        " said(tool_use('plan_step', {'step': 1, 'status': 'done'}, 'd1')), said('x is 2 now')])"
    )
    cell = pk.execute("%%pi --model faux:faux-1 --plan --approve auto\nset x to 2")
    watch = Watch(pk).until_replies([cell], clicks(pk, [("click", "Run plan")]), timeout=60)
    assert watch.replies[cell][1]["status"] == "ok", watch.errors
    assert pk.value("x") == "2"
    assert pk.value("len(seen)") == "5"
    assert pk.value("'run_code' in [t.name for t in seen[0].tools]") == "False"
    assert pk.value("'plan_step' in [t.name for t in seen[1].tools]") == "True"
    assert pk.value("texts(1)[2].endswith(" + repr(PLAN.strip()) + ")") == "True"
    shown = "\n".join(str(c["data"].get("text/plain", "")) for _, _, c in watch.displays)
    assert "Plan ready (2 steps): Run plan, Edit or Cancel below." in shown
    assert "Plan accepted: running it below." in shown
    assert "Plan (1 of 2 steps done):\n  [x] 1. Set x to 2\n  [ ] 2. Print x" in shown


def test_edit_changes_a_step_and_the_model_receives_the_edited_plan(pk: Kernel) -> None:
    pk.run(f"faux.set_responses([said({PLAN!r}), said('ok, ran the edited plan')])")
    edited = "1. Set x to 3\n2. Print x"
    cell = pk.execute("%%pi --model faux:faux-1 --plan\nset x")
    steps = [("click", "Edit"), ("type", edited), ("click", "Run plan")]
    watch = Watch(pk).until_replies([cell], clicks(pk, steps), timeout=60)
    assert watch.replies[cell][1]["status"] == "ok", watch.errors
    assert pk.value("len(seen)") == "2"
    sent = pk.value("texts(1)[2]")
    assert "the plan as the user edited it" in sent
    assert sent.endswith("1. Set x to 3\n2. Print x")
    assert "Set x to 2" not in sent
    shown = "\n".join(str(c["data"].get("text/plain", "")) for _, _, c in watch.displays)
    assert "Plan accepted as edited: running it below." in shown
    assert "Plan (0 of 2 steps done, edited):\n  [ ] 1. Set x to 3" in shown


def test_cancel_ends_without_a_state_change(pk: Kernel) -> None:
    run_code = "tool_use('run_code', {'code': 'x = 99'}, 'r1')"
    pk.run(f"faux.set_responses([said({PLAN!r}), said({run_code}), 'no'])")
    cell = pk.execute("%%pi --model faux:faux-1 --plan --approve auto\nset x")
    watch = Watch(pk).until_replies([cell], clicks(pk, [("click", "Cancel")]), timeout=60)
    assert watch.replies[cell][1]["status"] == "ok", watch.errors
    assert pk.value("x") == "1"
    assert pk.value("len(seen)") == "1"
    assert pk.value("faux.get_pending_response_count()") == "2"
    assert pk.value("[m.role for m in conversations.current().state.messages]") == "['user', 'assistant']"
    shown = "\n".join(str(c["data"].get("text/plain", "")) for _, _, c in watch.displays)
    assert "Plan cancelled: nothing was run." in shown


# --- headless (nbclient, as nbconvert and papermill run a notebook) ------------------------------

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")


def execute(tmp_path: Path, sources: list[str]) -> Any:
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from kernel_driver import KERNEL_NAME, SETUP, write_kernelspec

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in [SETUP, RECORD, *sources]])
    specs = KernelSpecManager(kernel_dirs=[str(write_kernelspec(tmp_path))])
    km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
    nbclient.NotebookClient(nb, km=km, resources={"metadata": {"path": str(tmp_path)}}, timeout=60).execute()
    return nb


def text_of(cell: Any) -> str:
    out = []
    for output in cell.outputs:
        data = output.get("data", {})
        out.append(str(data.get("text/plain", output.get("text", ""))))
    return "\n".join(out)


STEP_1 = "tool_use('plan_step', {'step': 1}, 's1')"


def test_headless_prints_the_plan_and_stops_unless_plan_run(tmp_path: Path) -> None:
    nb = execute(
        tmp_path,
        [
            f"faux.set_responses([said({PLAN!r}), said(tool_use('run_code', {{'code': 'x = 5'}}, 'r1'))])",
            "%%pi --model faux:faux-1 --plan\nset x",
            "print(x, faux.get_pending_response_count())",
            f"faux.set_responses([said({PLAN!r}), said({STEP_1}), said('done')])",
            "%%pi --plan-run\nset x again",
            "print(len(seen), 'plan_step' in [t.name for t in seen[-1].tools])",
        ],
    )
    planned, after, ran, tools = (text_of(nb.cells[i]) for i in (3, 4, 6, 7))
    assert "1. Set x to 2\n2. Print x" in planned
    assert "Plan ready (2 steps); nothing was run. To run it: %%pi --plan-run" in planned
    assert after.strip() == "1 1"  # nothing ran: x unchanged, the run_code reply still queued
    assert "Plan ready (2 steps): running it (--plan-run)." in ran
    assert "Plan (0 of 2 steps done):\n  [>] 1. Set x to 2" in ran
    assert tools.strip() == "4 True"


def test_an_interrupt_while_the_card_waits_ends_the_cell(pk: Kernel) -> None:
    pk.run(f"faux.set_responses([said({PLAN!r}), said('never')])")
    cell = pk.execute("%%pi --model faux:faux-1 --plan\nset x")
    sent: list[bool] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        if not sent and watch.find("ButtonModel", description="Cancel"):
            sent.append(True)
            pk.interrupt()

    watch = Watch(pk).until_replies([cell], react, timeout=60)
    assert watch.replies[cell][1]["status"] == "error"
    assert watch.replies[cell][1]["ename"] == "KeyboardInterrupt"
    shown = "\n".join(str(c["data"].get("text/plain", "")) for _, _, c in watch.displays)
    assert "Plan not run: interrupted." in shown
    assert pk.value("faux.get_pending_response_count()") == "1"
    assert pk.run("%%pi\nstill usable?")["status"] == "ok"  # the kernel and the conversation go on
