"""``%pi show [N]`` on a real ``InteractiveShell`` with the faux provider: the frozen output of
a recorded run re-rendered from the session file (the last one, the Nth from the last, after a
kernel restart from the latest recorded session), one-line errors, and the live widget a
reloaded page kept closed when its run is shown."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401
from session_helpers import MODEL, cell, restart, sdir_fixture  # noqa: F401

from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_text, faux_tool_call


def show(ip: Any, text: str = "") -> dict[str, Any]:
    result, captured = run(ip, f"%pi {text}")
    if result.error_in_exec is not None:
        raise result.error_in_exec
    [bundle] = outputs(captured)
    return bundle


def test_show_renders_the_last_run_and_the_nth_from_the_last(
    ip: Any, faux: FauxRegistration, sdir: Path
) -> None:
    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_text("Setting it."),
                    faux_tool_call("set_variable", {"name": "shown_x", "value": 7}, id="s1"),
                ],
                stop_reason="toolUse",
            ),
            "First answer is **bold**.",
            "Second answer.",
        ]
    )
    cell(ip, f"{MODEL} --approve auto", "first question")
    cell(ip, MODEL, "second question")
    last = show(ip, "show")
    assert "second question" in last["text/html"]
    assert "Second answer." in last["text/html"]
    assert "first question" not in last["text/plain"]
    assert 'class="pi-view pi-static' in last["text/html"]
    # marked: it looks like the live run otherwise
    marked = "Replayed (%pi show): the answer recorded at "
    assert marked in last["text/plain"]
    assert marked in last["text/html"]
    first = show(ip, "show 2")
    html = first["text/html"]
    assert "first question" in html
    assert "<strong>bold</strong>" in html
    assert "set_variable" in html  # the tool card, from the file
    assert "Setting it." in html
    assert "Second answer." not in html


def test_show_after_a_restart_reads_the_latest_recorded_session(
    ip: Any, faux: FauxRegistration, sdir: Path
) -> None:
    faux.set_responses(["Recorded before the restart."])
    cell(ip, MODEL, "question before the restart")
    restart(ip)
    bundle = show(ip, "show")
    assert "Recorded before the restart." in bundle["text/html"]
    assert "question before the restart" in bundle["text/plain"]


def test_show_errors_are_one_line_and_say_what_to_do(ip: Any, faux: FauxRegistration, sdir: Path) -> None:
    with pytest.raises(UsageError, match=r"no recorded %%pi run.*run a %%pi cell first"):
        show(ip, "--name nothing_here show")
    faux.set_responses(["only answer"])
    cell(ip, MODEL, "only question")
    with pytest.raises(UsageError, match=r"has 1 recorded run in .*; try %pi show 1"):
        show(ip, "show 3")
    with pytest.raises(UsageError, match="counted from the last"):
        show(ip, "show last")


@pytest.mark.parametrize(
    ("code", "name", "expected"),
    [
        ("%pi show", "default", True),
        ("  %pi show 1\n", "default", True),
        ("%pi --name other show", "other", True),
        ("%pi --name other show", "default", False),
        ("%pi show 2", "default", False),
        ("%pi show\nprint(1)", "default", False),
        ("%pi status", "default", False),
        ("%%pi\nshow", "default", False),
    ],
)
def test_which_waiting_cells_get_the_live_view(code: str, name: str, expected: bool) -> None:
    from pi_notebook.notebook.run.reattach import shows_run

    assert shows_run(code, name) is expected
