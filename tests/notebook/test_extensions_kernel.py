"""An extension's ``ctx.ui`` in a real ipykernel driven through jupyter_client: a
``tool_call`` handler asks ``confirm`` in the cell and the test clicks Yes for one call and No
for the other; a ``before_agent_start`` handler asks ``select`` (a button per option) and
``input`` (a text box, typed into and submitted with OK); a headless run (``allow_stdin``
false, as nbclient sends) is asked nothing and the output says what was answered."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel, Watch

pytestmark = pytest.mark.kernel

EXTENSION = """
def setup(pi):
    async def guard(event, ctx):
        if await ctx.ui.confirm(f"Run {event.tool_name}?", f"text={event.input.text}"):
            return None
        return {"block": True, "reason": "Not confirmed in the cell."}

    async def ask(event, ctx):
        if not event.prompt.startswith("pick"):
            return None
        colour = await ctx.ui.select("Which colour?", ["red", "blue"])
        name = await ctx.ui.input("Your name?", "your name")
        ctx.ui.notify(f"picked {colour}; the name has {len(name)} letters")
        return None

    pi.on("tool_call", guard)
    pi.on("before_agent_start", ask)
"""

TOOLS = '''
from pi_notebook.agent import tool

@tool
def shout(text: str) -> str:
    """Say it loudly."""
    return text.upper()

pi_notebook.current().state.tools = [shout]
'''
RESULTS = "[(m.tool_call_id, m.is_error, m.content[0].text) for m in _pi.messages if m.role == 'toolResult']"


@pytest.fixture
def extension(k: Kernel, tmp_path: Path) -> Iterator[Kernel]:
    path = tmp_path / "asking.py"
    path.write_text(textwrap.dedent(EXTENSION))
    reply = k.run(f"%pi extension load {path}")
    assert reply["status"] == "ok", reply
    assert reply["stdout"].startswith("loaded"), reply
    yield k
    k.run("from pi_notebook.notebook.state import state_for; state_for().extensions.reset()")


def dialog_parts(watch: Watch, index: int) -> list[Any]:
    """The widgets of the ``index``-th question shown (a ``pi-dialog`` box is opened after its
    children, so once it is there, all of them are)."""
    boxes = sorted(
        (w for w in watch.find("VBoxModel") if "pi-dialog" in w.state.get("_dom_classes", ())),
        key=lambda w: w.opened_at,
    )
    if len(boxes) <= index:
        return []
    out: list[Any] = []
    pending = [boxes[index]]
    while pending:
        widget = pending.pop()
        out.append(widget)
        for ref in widget.state.get("children", ()):
            child = watch.widgets.get(str(ref).removeprefix("IPY_MODEL_"))
            if child is not None:
                pending.append(child)
    return out


def clicking(k: Kernel, plan: list[tuple[str, Any]]) -> Any:
    """A reaction doing ``plan`` in order: ``("click", label)`` clicks the button of that label
    in the current question (then the next question is the current one), ``("type",
    (placeholder, text))`` types into its text box."""
    done: list[Any] = []

    def react(watch: Watch, msg: dict[str, Any]) -> None:
        if len(done) == len(plan):
            return
        action, what = plan[len(done)]
        index = sum(1 for step in plan[: len(done)] if step[0] == "click")
        parts = dialog_parts(watch, index)
        model, key, value = (
            ("ButtonModel", "description", what)
            if action == "click"
            else ("TextModel", "placeholder", what[0])
        )
        found = [w for w in parts if w.state.get("_model_name") == model and w.state.get(key) == value]
        if not found:
            return
        done.append(found[0])
        if action == "click":
            k.click(found[0].comm_id)
        else:
            k.set_value(found[0].comm_id, what[1])

    return react, done


def test_confirm_is_answered_with_the_buttons_in_the_cell(extension: Kernel) -> None:
    k = extension
    assert k.run(TOOLS)["status"] == "ok"
    calls = "tool_use('shout', {'text': 'a'}, 'c1'), tool_use('shout', {'text': 'b'}, 'c2')"
    k.run(f"faux.set_responses([{calls}, 'ok'])")
    cell = k.execute("%%pi --model faux:faux-1\nshout twice")
    react, done = clicking(k, [("click", "Yes"), ("click", "No")])
    watch = Watch(k).until_replies([cell], react, timeout=40)
    assert watch.replies[cell][1]["status"] == "ok"
    assert len(done) == 2
    assert k.value(RESULTS) == "[('c1', False, 'A'), ('c2', True, 'Not confirmed in the cell.')]"
    text = watch.final_bundle()["text/plain"]
    assert "An extension asked \u201cRun shout?\u201d: Yes." in text
    assert "An extension asked \u201cRun shout?\u201d: No." in text
    assert all(w.state.get("disabled") for w in watch.find("ButtonModel", description="Yes"))


def test_select_and_input_in_the_cell(extension: Kernel) -> None:
    k = extension
    k.run("faux.set_responses(['ok'])")
    cell = k.execute("%%pi --model faux:faux-1\npick a colour")
    react, done = clicking(k, [("click", "blue"), ("type", ("your name", "Ada")), ("click", "OK")])
    watch = Watch(k).until_replies([cell], react, timeout=40)
    assert watch.replies[cell][1]["status"] == "ok"
    assert len(done) == 3
    text = watch.final_bundle()["text/plain"]
    assert "An extension asked \u201cWhich colour?\u201d: blue." in text
    assert "An extension asked \u201cYour name?\u201d: answered." in text
    assert "Ada" not in text  # what was typed is the extension's, not the output's
    assert "picked blue; the name has 3 letters" in text


def test_a_headless_run_is_asked_nothing(extension: Kernel) -> None:
    k = extension
    assert k.run(TOOLS)["status"] == "ok"
    k.run("faux.set_responses([tool_use('shout', {'text': 'a'}, 'h1'), 'ok'])")
    cell = k.execute("%%pi --model faux:faux-1\nshout", allow_stdin=False)
    watch = Watch(k).until_replies([cell], timeout=40)
    assert watch.replies[cell][1]["status"] == "ok"
    assert not watch.find("ButtonModel", description="Yes")
    assert k.value(RESULTS) == "[('h1', True, 'Not confirmed in the cell.')]"
    shown = "".join(text for _, text in watch.stdout) + str(
        [c["data"].get("text/plain", "") for _, _, c in watch.displays]
    )
    assert "An extension asked \u201cRun shout?\u201d: answered No (headless run:" in shown


def test_every_conversation_hears_session_shutdown_when_the_kernel_exits(tmp_path: Path) -> None:
    log = tmp_path / "shutdown.log"
    path = tmp_path / "bye.py"
    path.write_text(
        "def setup(pi):\n"
        f"    pi.on('session_shutdown', lambda e: open({str(log)!r}, 'a').write(e.reason + '\\n'))\n"
    )
    k = Kernel(tmp_path / "kernel")
    try:
        assert k.run(f"%pi extension load {path}")["status"] == "ok"
        k.run("faux.set_responses(['one', 'two'])")
        for cell in ("%%pi --model faux:faux-1\nhi", "%%pi --model faux:faux-1 --name other\nhi"):
            assert k.run(cell)["status"] == "ok"
    finally:
        k.kc.stop_channels()
        k.km.shutdown_kernel(now=False)  # a shutdown request: the kernel exits as it would for the user
    assert log.read_text() == "quit\nquit\n"
