"""A faux model whose long answers stop mid-stream until the test lets them go: what the reload
tests need instead of a model that streams slowly on purpose.

The setup cell (``held_setup``) wraps the kernel's faux provider: a streamed text that reaches
``HOLD_AT`` waits there, its view showing a run in progress, until the test releases it
(``release``: a file the kernel deletes when it goes on), then finishes at once. So a reload
lands mid-run however loaded the machine is, and the run ends as soon as the test has seen what
it came for, where a fixed pace had to be slow enough for the slowest machine.

Imported by the kernel (the setup cell puts this directory on its ``sys.path``) and by the test.
Every wait is bounded: an unreleased stream goes on after ``HOLD_S``, and ``release`` fails when
no stream took the release within its timeout.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HOLD_AT = "w40 "
"""A streamed text holds once it contains this (the reload tests' answers count ``w0 w1 ...``)."""
HOLD_S = 300.0
"""How long a held stream waits for its release at most (less than a browser test's limit)."""


def hold_streams(faux: Any, release_file: str, hold_at: str = HOLD_AT, hold_s: float = HOLD_S) -> None:
    """Replace the stream of ``faux`` (a ``FauxRegistration``) by one that forwards its events and,
    once the streamed text contains ``hold_at``, waits until the file ``release_file`` exists
    (then deletes it and forwards the rest) or ``hold_s`` passed (then forwards the rest); aborted
    while held, it ends as an aborted faux stream does."""
    from pi_notebook.ai.abort import ABORT_MESSAGE
    from pi_notebook.ai.event_stream import AssistantMessageEventStream
    from pi_notebook.ai.events import ErrorEvent
    from pi_notebook.ai.registry import ApiProvider, register_api_provider
    from pi_notebook.ai.types import TextContent

    async def _held(options: Any) -> bool:
        """Whether the run goes on (released or timed out) rather than aborted."""
        signal = getattr(options, "signal", None)
        deadline = time.monotonic() + hold_s
        path = Path(release_file)
        # A local stat every 50 ms: not worth a thread
        while not path.exists() and time.monotonic() < deadline:  # noqa: ASYNC240
            if signal is not None and signal.aborted:
                return False
            await asyncio.sleep(0.05)
        path.unlink(missing_ok=True)  # noqa: ASYNC240
        return True

    def stream(model: Any, context: Any, options: Any = None) -> AssistantMessageEventStream:
        inner = faux.stream(model, context, options)
        out = AssistantMessageEventStream()

        async def forward() -> None:
            text, held = "", False
            async for event in inner:
                out.push(event)
                if event.type == "text_delta" and not held:
                    text += event.delta
                    if hold_at in text:
                        held = True
                        if not await _held(options):
                            out.push(ErrorEvent(reason="aborted", error=_aborted(event, text)))
                            break
            out.end()

        out.start(forward)
        return out

    def _aborted(event: Any, text: str) -> Any:
        # The inner stream ran ahead and its partials share their blocks: the text as forwarded
        message = event.partial.model_copy(deep=True)
        message.content[event.content_index] = TextContent(text=text)
        message.stop_reason, message.error_message = "aborted", ABORT_MESSAGE
        return message

    register_api_provider(ApiProvider(api=faux.api, stream=stream, stream_simple=stream), "faux-gate")


def held_setup(setup: str, release_file: Path) -> str:
    """A setup cell: ``setup`` (which registers ``faux``, unpaced), then its streams held until
    ``release(release_file)``, then ``setup done`` printed."""
    return (
        f"{setup}import sys; sys.path.insert(0, {str(HERE)!r})\n"
        "from faux_gate import hold_streams\n"
        f"hold_streams(faux, {str(release_file)!r})\n"
        'print("setup done")\n'
    )


def release(path: Path, timeout: float = 30.0) -> None:
    """Let the held stream go on: write the file and wait until the kernel has taken it."""
    path.write_text("go")
    deadline = time.monotonic() + timeout
    while path.exists():
        if time.monotonic() > deadline:
            path.unlink(missing_ok=True)
            raise AssertionError(f"no stream was held to take the release in {timeout:g} s")
        time.sleep(0.05)
