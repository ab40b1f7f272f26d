"""Compaction of a notebook conversation on a real ``InteractiveShell`` with the faux provider:
automatic near the window, on an overflow (retried once), a second overflow reported, and
``%pi compact`` on demand."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture  # noqa: F401
from session_helpers import (
    cell,
    files,
    line,
    plain,
    rows,
    sdir_fixture,  # noqa: F401  (the `sdir` fixture)
)
from test_magic import Recorder

from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, register_faux_provider
from pi_notebook.notebook import conversations

# --- compaction ---------------------------------------------------------------------------------


@pytest.fixture
def small(sdir: Path, ip: Any) -> Iterator[FauxRegistration]:
    """A faux model with a 2000-token window, compaction settings scaled to it."""
    registration = register_faux_provider(
        provider="tiny", models=[{"id": "tiny-1", "contextWindow": 2000}], token_size={"min": 1, "max": 1}
    )
    ip.run_line_magic("config", "PiMagics.compact_reserve_tokens = 800")
    ip.run_line_magic("config", "PiMagics.compact_keep_recent_tokens = 300")
    ip.run_line_magic("config", "PiMagics.tools = 'none'")  # no tool schemas: token counts stay small
    try:
        yield registration
    finally:
        registration.unregister()


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def test_automatic_compaction_near_the_window(ip: Any, small: FauxRegistration, sdir: Path) -> None:
    seen = Recorder()
    timeouts: list[int] = []

    def summary(context: Any, options: Any, state: Any, model: Any) -> Any:
        timeouts.append(options.timeout_ms)
        return faux_assistant_message("SUMMARY: the user sent long lists.")

    small.set_responses(["ok one", "ok two", summary, seen.reply("ok three")])
    _, first = cell(ip, "--model tiny:tiny-1", words(150, "a"))  # ~270 tokens: below 2000 - 800
    assert "compacted" not in plain(first)
    # ~1350 tokens in context: over, compact after the run
    _, second = cell(ip, "--timeout 7", words(900, "b"))
    assert timeouts == [7000], "the summarizing request has the run's --timeout"
    text = plain(second)
    assert "Context compacted (context near the model's window):" in text
    assert ip.user_ns["_pi"].text == "ok two"  # the run's own answer, not the summary
    cell(ip, "", "short")
    first_seen = seen.texts()[0]
    assert first_seen.startswith("The conversation history before this point was compacted")
    assert "SUMMARY: the user sent long lists." in first_seen
    [path] = files(sdir)
    assert [r["type"] for r in rows(path)].count("compaction") == 1
    out = line(ip, "history")
    assert "#3 user: short" in out  # turns compacted away still count


def test_overflow_compacts_and_retries_once(ip: Any, small: FauxRegistration, sdir: Path) -> None:
    overflow = faux_assistant_message(
        [], stop_reason="error", error_message="prompt is too long: 2100 tokens > 2000"
    )
    overflow.provider, overflow.model = "tiny", "tiny-1"
    seen = Recorder()
    small.set_responses(["ok one", "ok two", overflow, "SUMMARY.", seen.reply("answer after retry")])
    cell(ip, "--model tiny:tiny-1", words(150, "a"))
    cell(ip, "", words(300, "b"))  # ~350 tokens: turn two is kept, turn one can be summarized
    _, captured = cell(ip, "", words(20, "c"))
    text = plain(captured)
    assert "Context compacted (context overflow)" in text
    assert ip.user_ns["_pi"].text == "answer after retry"
    assert seen.texts()[-1] == words(20, "c")  # the same turn, retried
    assert seen.texts()[0].startswith("The conversation history before this point was compacted")
    assert all("prompt is too long" not in t for t in seen.texts())
    [path] = files(sdir)
    stops = [r["message"].get("stopReason") for r in rows(path) if r["type"] == "message"]
    assert "error" in stops  # the failed answer stays in the file, as in Pi


def test_a_second_overflow_is_reported_not_retried(ip: Any, small: FauxRegistration, sdir: Path) -> None:
    def overflow() -> Any:
        def factory(context: Any, options: Any, state: Any, model: Any) -> Any:  # stamped when answered
            # An answer in the compaction's own millisecond counts as older than it (Pi's rule);
            # a real provider never answers that fast, the unpaced faux can.
            time.sleep(0.005)
            message = faux_assistant_message([], stop_reason="error", error_message="prompt is too long")
            message.provider, message.model = "tiny", "tiny-1"
            return message

        return factory

    small.set_responses(["ok one", "ok two", overflow(), "SUMMARY.", overflow()])
    cell(ip, "--model tiny:tiny-1", words(150, "a"))
    cell(ip, "", words(300, "b"))
    _, captured = cell(ip, "", words(20, "c"))
    assert "Context overflow recovery failed after one compact-and-retry attempt" in plain(captured)
    assert small.state.call_count == 5


def test_compact_on_demand(ip: Any, small: FauxRegistration, sdir: Path) -> None:
    small.set_responses(["ok one", "ok two", "SUMMARY on demand."])
    with pytest.raises(UsageError, match="compact: Nothing to compact"):
        line(ip, "compact")
    cell(ip, "--model tiny:tiny-1", words(150, "a"))
    cell(ip, "", words(300, "b"))
    out = line(ip, "compact focus on the b words")
    assert out.startswith("Context compacted: ")
    assert "messages in the context now" in out
    messages = conversations.current().state.messages
    assert messages[0].role == "compactionSummary"
    assert "SUMMARY on demand." in messages[0].summary
