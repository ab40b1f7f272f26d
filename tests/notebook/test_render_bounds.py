"""A long answer is saved once in the notebook: the frozen output's HTML has it whole and its
``text/plain`` (deterministic, for nbval) cuts it, so a 5 MB answer does not make a 10 MB cell."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from test_render import state_of
from view_events import Run

from pi_notebook.notebook.view.render import render_text, static_bundle

ANSWER = "".join(f"line {n} of a very long answer\n" for n in range(170_000)) + "THE-END"  # ~5 MB


def test_a_5_mb_answer_is_saved_once() -> None:
    run = Run().start("go")
    run.turn_end(run.assistant(("text", ANSWER), stream=False)).end()
    state = state_of(run, "go")
    bundle = static_bundle(state)
    assert "THE-END" in bundle["text/html"], "the HTML lost the answer's end"
    assert "THE-END" not in bundle["text/plain"]
    assert bundle["text/plain"].startswith("> go\n\nline 0 of a very long answer\n")
    assert "more characters, shown in the HTML output)" in bundle["text/plain"]
    assert len(bundle["text/plain"]) < 30_000
    assert sum(len(v) for v in bundle.values()) < 1.2 * len(ANSWER)
    assert static_bundle(state_of(run, "go"))["text/plain"] == bundle["text/plain"]  # deterministic
    assert "THE-END" in render_text(state), "--text output (no HTML beside it) must keep it whole"
