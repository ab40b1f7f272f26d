"""Sessions across real kernels: ``%pi resume`` after a kernel restart (jupyter_client), and a
notebook recorded under nbclient, then replayed under nbclient with no model answers scripted."""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from kernel_driver import KERNEL_NAME, SETUP, Kernel, write_kernelspec

from pi_notebook.session.storage import encode_cwd

REPLAY_NOTE_TEXT = re.compile(r"\n*Replayed \((?:--replay|%pi show)\): the answer recorded at [^\n]*\n?$")
REPLAY_NOTE_HTML = re.compile(r"<div class=\"pi-notice[^>]*>Replayed \((?:--replay|%pi show)\):.*?</div>")


def without_replay_note(data: dict[str, Any]) -> dict[str, Any]:
    """A replayed output's bundle without the line that marks it as replayed (the rest is the
    recorded run's output exactly); fails when the line is missing."""
    data = copy.deepcopy(data)
    text, marked = REPLAY_NOTE_TEXT.subn("", data["text/plain"])
    assert marked == 1, data["text/plain"]
    ended = data["text/plain"].endswith("\n") and not text.endswith("\n")
    data["text/plain"] = text + "\n" if ended else text
    if "text/html" in data:
        data["text/html"], marked = REPLAY_NOTE_HTML.subn("", data["text/html"])
        assert marked == 1, data["text/html"]
    return data

pytestmark = pytest.mark.kernel

RECORD_CONTEXT = """\
seen = []
def reply(context, options, state, model):
    seen.append([m.role for m in context.messages])
    return faux_assistant_message('You asked me to remember 42.')
faux.set_responses([reply])
"""


def test_resume_after_a_kernel_restart(tmp_path: Path, private_agent_dir: Path) -> None:
    kernel = Kernel(tmp_path)
    try:
        kernel.run("faux.set_responses(['Noted: 42.'])")
        reply = kernel.run("%%pi --model faux:faux-1\nremember the number 42")
        assert reply["status"] == "ok", reply
        [path] = (private_agent_dir / "sessions" / encode_cwd(str(tmp_path))).glob("*.jsonl")
        kernel.km.restart_kernel(now=True)
        kernel.kc.wait_for_ready(timeout=60)
        assert kernel.run(SETUP)["status"] == "ok"
        assert kernel.value("'_pi' in globals(), len(conversations.current().state.messages)") == "False 0"
        out = kernel.run("%pi resume")
        assert out["status"] == "ok", out
        assert f"resumed from {path.name}: 2 messages" in out["stdout"]
        assert kernel.run(RECORD_CONTEXT)["status"] == "ok"
        reply = kernel.run("%%pi\nwhich number?")  # no --model: the recorded model came back
        assert reply["status"] == "ok", reply
        # the previous turn, the restart note (a custom message, sent as user text), the prompt
        assert kernel.value("seen") == "[['user', 'assistant', 'user', 'user']]"
        assert kernel.value("_pi.text") == "You asked me to remember 42."
        roles = [json.loads(x).get("message", {}).get("role") for x in path.read_text().splitlines()]
        assert [r for r in roles if r] == ["user", "assistant", "user", "assistant"]  # same file
    finally:
        kernel.close()


NOTEBOOK_SETUP = """\
%load_ext pi_notebook
import os
from pi_notebook.ai.faux import register_faux_provider, faux_assistant_message, faux_tool_call
faux = register_faux_provider(token_size={"min": 1, "max": 1})
if os.environ.get("PI_NOTEBOOK_REPLAY") != "1":
    faux.set_responses([
        faux_assistant_message([faux_tool_call("list_variables", {}, id="t1")], stop_reason="toolUse"),
        "There is **one** variable: `faux`.",
        "Second answer.",
    ])
"""


def test_replay_under_nbclient_reproduces_the_outputs_without_a_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv(
        "PI_NOTEBOOK_SESSION_DIR", str(tmp_path / "recordings")
    )  # e.g. shipped with a tutorial
    sources = [
        NOTEBOOK_SETUP,
        "%%pi --model faux:faux-1\nwhat variables are there?",
        "%%pi\nand then?",
        "print(faux.state.call_count, _pi.text)",
    ]
    runs = []
    for replay in ("0", "1"):
        monkeypatch.setenv("PI_NOTEBOOK_REPLAY", replay)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
        specs = KernelSpecManager(kernel_dirs=[str(write_kernelspec(tmp_path))])
        km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
        nbclient.NotebookClient(
            nb, km=km, timeout=60, resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
        runs.append(nb.cells)
    recorded, replayed = runs
    for i in (1, 2):
        [shown], [original] = replayed[i].outputs, recorded[i].outputs
        assert without_replay_note(shown.data) == original.data
    assert "[tool] list_variables" in recorded[1].outputs[0].data["text/plain"]
    assert recorded[3].outputs[0].text == "3 Second answer.\n"
    assert replayed[3].outputs[0].text == "0 Second answer.\n"  # no model was called
    assert len(list((tmp_path / "recordings").glob("*.jsonl"))) == 1  # replay wrote nothing


def test_replay_of_an_unrecorded_cell_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("PI_NOTEBOOK_SESSION_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("PI_NOTEBOOK_REPLAY", "1")
    sources = [NOTEBOOK_SETUP, "%%pi --model faux:faux-1\nnever recorded"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    specs = KernelSpecManager(kernel_dirs=[str(write_kernelspec(tmp_path))])
    km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
    client = nbclient.NotebookClient(nb, km=km, timeout=60, resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(nbclient.exceptions.CellExecutionError) as failure:
        client.execute()
    assert "UsageError: --replay: no recorded answer for this prompt with model faux:faux-1" in str(
        failure.value
    )


TINY = """\
tiny = register_faux_provider(provider="tiny", models=[{"id": "tiny-1", "contextWindow": 2000}],
                              token_size={"min": 1, "max": 1})
tiny.set_responses(["ok one", "ok two", "SUMMARY."])
%config PiMagics.compact_reserve_tokens = 800
%config PiMagics.compact_keep_recent_tokens = 300
%config PiMagics.tools = 'none'
"""


def test_the_live_view_shows_the_compaction(tmp_path: Path) -> None:
    from kernel_driver import Watch

    kernel = Kernel(tmp_path)
    try:
        assert kernel.run(TINY)["status"] == "ok"
        words = " ".join(f"a{i}" for i in range(150))
        assert kernel.run(f"%%pi --model tiny:tiny-1\n{words}")["status"] == "ok"
        kernel.drain()
        words = " ".join(f"b{i}" for i in range(900))
        cell = kernel.execute(f"%%pi\n{words}")
        watch = Watch(kernel).until_replies([cell])
        assert watch.replies[cell][1]["status"] == "ok"
        assert watch.find("VBoxModel"), "no live view"
        notices = [w.state.get("value", "") for w in watch.find("HTMLModel")]
        assert any("Context compacted (context near the model" in str(n) for n in notices)
        assert "Context compacted" in watch.final_bundle()["text/plain"]
    finally:
        kernel.close()


def test_replay_in_a_live_view(tmp_path: Path) -> None:
    from kernel_driver import Watch

    kernel = Kernel(tmp_path)
    try:
        kernel.run("faux.set_responses(['Hello **there**, ' + 'word ' * 20])")
        first = kernel.execute("%%pi --model faux:faux-1\nsay hello")
        recorded = Watch(kernel).until_replies([first]).final_bundle()
        calls = kernel.value("faux.state.call_count")
        kernel.drain()
        again = kernel.execute("%%pi --new --replay\nsay hello")
        watch = Watch(kernel).until_replies([again])
        assert watch.replies[again][1]["status"] == "ok"
        assert watch.find("VBoxModel"), "no live view"
        assert without_replay_note({"text/plain": watch.final_bundle()["text/plain"]}) == {
            "text/plain": recorded["text/plain"]
        }
        assert kernel.value("faux.state.call_count") == calls
    finally:
        kernel.close()
