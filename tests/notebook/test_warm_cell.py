"""What a warm ``%%pi`` cell no longer does again, and that each shortcut stays right when
something changes: a line parsed once per kernel still takes the ``c.PiMagics`` defaults of
now; the run uses the resources its cell read at the start, and a file added or changed before
the next cell is in that cell's prompt; plain values are listed without a summary thread, any
other value still on one; entry timestamps formatted from a cached second stay exact."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, run  # noqa: F401

from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message
from pi_notebook.notebook.options import parse_options
from pi_notebook.notebook.state import state_for
from pi_notebook.notebook.tools import variables
from pi_notebook.session.entries import iso_to_ms, ms_to_iso

LINE = "--model faux:faux-1 --text"


def _cell(ip: Any, body: str, line: str = LINE) -> None:
    result, _ = run(ip, f"%%pi {line}\n{body}")
    assert result.error_in_exec is None, result.error_in_exec


def test_a_parsed_line_takes_the_defaults_of_now_and_is_never_shared(ip: Any) -> None:
    config = state_for(ip).config
    first = parse_options(LINE, config)
    config.max_turns = 3
    try:
        second = parse_options(LINE, config)
    finally:
        config.max_turns = 0
    assert (first.max_turns, second.max_turns) == (0, 3)  # 0: no limit
    assert first.model is not None
    assert second.model is not None
    assert first is not second
    assert first.tool_names == second.tool_names
    assert first.tool_names is not second.tool_names


class _Prompts:
    def __init__(self, faux: FauxRegistration) -> None:
        self.system: list[str] = []
        faux.set_responses([self._reply] * 3)

    def _reply(self, context: Any, *rest: Any) -> Any:
        self.system.append(context.system_prompt or "")
        return faux_assistant_message("ok")


@pytest.fixture
def folder(ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A notebook in an empty folder, in a temporary HOME and agent dir."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    where = tmp_path / "project"
    where.mkdir()
    (where / "analysis.ipynb").write_text("{}", encoding="utf-8")
    ip.user_ns["__session__"] = str(where / "analysis.ipynb")
    yield where
    ip.user_ns.pop("__session__", None)


def test_context_files_added_between_cells_reach_the_next_prompt(
    ip: Any, faux: FauxRegistration, folder: Path
) -> None:
    """The first cell's folder has nothing to add (its run options are left as they are); the
    next cell reads the new AGENTS.md at its start, and the run uses what the cell read."""
    prompts = _Prompts(faux)
    _cell(ip, "first")
    (folder / "AGENTS.md").write_text("Use the lake.\n", encoding="utf-8")
    _cell(ip, "second")
    (folder / "AGENTS.md").write_text("Use the warehouse.\n", encoding="utf-8")
    _cell(ip, "third")
    assert "Use the lake." not in prompts.system[0]
    assert "Use the lake." in prompts.system[1]
    assert "Use the warehouse." in prompts.system[2]
    assert "Use the lake." not in prompts.system[2]


class _Slow:
    """User code in ``__repr__`` (it could be slow): it records the thread it ran on."""

    threads: list[str] = []

    def __repr__(self) -> str:
        _Slow.threads.append(threading.current_thread().name)
        return "slow"


@pytest.mark.parametrize(
    ("value", "quick"),
    [
        (list(range(10)), True),
        ((1.5, "a", None, True), True),
        ("x" * 10_000_000, True),  # reprlib cuts it before printing
        (2**100, True),
        (2**100_000, False),  # printing a huge int takes quadratic time
        (list(range(1000)), False),
        ([1, _Slow()], False),
        (_Slow(), False),
        (b"bytes", False),  # reprlib prints bytes whole
        ({"a": 1}, False),  # reprlib sorts a dict's keys, all of them
    ],
    ids=range(10),
)
def test_only_values_with_a_bounded_summary_skip_the_thread(value: Any, quick: bool) -> None:
    assert variables._quick(value) is quick


async def test_listing_plain_values_inline_gives_the_threaded_rows() -> None:
    ns = {"numbers": list(range(10)), "name": "pi", "slow": _Slow()}
    plain = await variables.list_text(ns, ["name", "numbers"], 50, None)  # inline
    mixed = await variables.list_text(ns, ["name", "numbers", "slow"], 50, None)  # on a thread
    assert plain == "name: str = 'pi'\nnumbers: list = 10 items: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"
    assert mixed == f"{plain}\nslow: _Slow = slow"
    assert _Slow.threads[-1] == "pi-summary"  # never on the kernel's thread


@pytest.mark.parametrize(
    "ms", [0, 999, 1000, 1_733_467_200_123, 1_733_467_200_999, 1_733_467_201_000, -1, -1001]
)
def test_timestamps_are_exact_across_second_boundaries(ms: int) -> None:
    ms_to_iso(ms + 5000)  # another second formatted just before
    assert iso_to_ms(ms_to_iso(ms)) == ms
    ms_to_iso(ms)  # the same second again, from the cache
    assert iso_to_ms(ms_to_iso(ms)) == ms


def test_a_trait_configured_at_its_default_value_counts_as_set_by_the_user() -> None:
    from traitlets.config import Config

    from pi_notebook.notebook.config import PiConfig

    config = Config()
    config.PiMagics.retries = PiConfig.class_traits()["retries"].default_value
    found = PiConfig(config=config)
    assert found.user_set_of(("retries", "compact", "thinking")) == {"retries"}
    found.compact = not found.compact
    assert found.user_set_of(("retries", "compact", "thinking")) == {"retries", "compact"}
