"""How a prompt is drawn for a terminal frontend (``jupyter console --kernel pi``, qtconsole):
as text streamed to stdout, with approvals asked through the kernel's stdin request.

A terminal renders no widgets and ignores ``update_display_data``, so the live view would show
one line ("pi_notebook live view") and nothing of the answer. The kernel takes a request as a
terminal's when it may ask for input (``allow_stdin``) and names no notebook cell (JupyterLab,
Notebook 7 and other notebook frontends send the ``cellId`` of the cell they run).

``TerminalView`` is a ``RunView``: the runner hands it every event, as it does the live view.
Text deltas are written as they come (the kernel's stdout sends them on every flush); a tool
call is one line when it starts and one when it ends, with the result below it (bounded:
``RESULT_LINES`` lines of at most ``RESULT_CHARS`` characters in all, saying how much more the
result has; the model received it whole); an approval is a ``[y/N]`` question. The
question blocks the kernel's loop until the answer comes, which is what the run waits for
anyway; Ctrl-C at the question (the console passes it on to the kernel) denies the call and
interrupts the run as Ctrl-C does anywhere else. The output left behind is the ending and the
footer line: the answer itself is already on the terminal. The footer's elapsed time is the
view's own clock, from the view's creation to the end of the run (message timestamps mark when a
message started, so they miss the time the last answer took to stream). Agent code that runs long gets a
"still running" line (elapsed time, last line it printed) when it passes a few seconds and then
every ``PROGRESS_EVERY`` seconds, written to the kernel's stdout as it was when the run began
(``run_code`` captures ``sys.stdout`` while its code runs).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..notebook.view.reduce import ToolCard, ViewState, add_notice, mark_approval, reduce, set_elapsed
from ..notebook.view.render.text import args_text, end_text, footer_text, format_args

__all__ = ["RESULT_CHARS", "RESULT_LINES", "TerminalView"]

RESULT_LINES = 20
RESULT_CHARS = 2000

PROGRESS_EVERY = 10.0
"""Seconds between two "still running" lines of one tool call on the terminal."""

Ask = Callable[[str], str]
"""The kernel's ``raw_input``: sends an ``input_request`` and returns the reply."""


def _shown_args(card: ToolCard | None) -> str:
    """A call's arguments after its name: `` {json}`` on the line when they are one line,
    else the lines (code as code, ``render.text.args_text``) indented below it."""
    if card is None:
        return ""
    text = args_text(card)
    if "\n" in text:
        return "\n" + "\n".join("    " + line if line else line for line in text.split("\n"))
    raw = format_args(card, indent=None)
    return f" {raw}" if raw else ""


def _shown_result(card: ToolCard | None) -> str:
    """A finished call's result as indented lines below its end line, bounded (module
    docstring); empty when the result has no text."""
    return _bounded_lines(card.content if card is not None else "", "of the result")


def _bounded_lines(text: str, what: str) -> str:
    """``text`` as indented lines, at most ``RESULT_LINES`` lines and ``RESULT_CHARS``
    characters, then how much more ``what`` has; empty for blank text."""
    text = text.strip("\n")
    if not text.strip():
        return ""
    lines = text.split("\n")
    kept: list[str] = []
    room = RESULT_CHARS
    for line in lines[:RESULT_LINES]:
        kept.append(line[:room])
        room -= len(kept[-1]) + 1
        if room <= 0:
            break
    hidden_lines = len(lines) - len(kept)
    hidden_chars = len(text) - len("\n".join(kept))
    body = "\n".join("    " + line if line else line for line in kept)
    if hidden_chars > 0:
        more = f"{hidden_lines:,} more lines" if hidden_lines > 0 else f"{hidden_chars:,} more characters"
        body += f"\n    … ({more} {what} not shown here; the model received it whole)"
    return "\n" + body


class TerminalView:
    """The ``RunView`` of a terminal frontend (module docstring)."""

    def __init__(self, prompt: str, notices: Sequence[str], ask: Ask) -> None:
        self.state = ViewState(prompt=prompt)
        self._started = time.monotonic()
        self._ask = ask
        self._out = sys.stdout  # the kernel's, before run_code captures it
        self._progress_at: dict[str, float] = {}
        self._at_line_start = True
        self._sent_shown = False
        self._last_shown: str | None = None
        """The call whose start line, with its arguments, is the last thing written."""
        for line in notices:
            self.add_notice(line)

    def _emit(self, text: str) -> None:
        if text:
            self._last_shown = None
            self._out.write(text)
            self._at_line_start = text.endswith("\n")

    def _line(self, text: str) -> None:
        self._emit(("" if self._at_line_start else "\n") + text + "\n")

    def _clock(self) -> None:
        set_elapsed(self.state, time.monotonic() - self._started)

    def handle(self, event: Any) -> None:
        kind = event.type
        if kind == "agent_end":
            self._clock()
        reduce(self.state, event)
        if kind == "message_update":
            inner = event.assistant_message_event
            if inner.type == "text_delta":
                self._emit(inner.delta)
        elif kind == "message_end" and getattr(event.message, "role", None) == "assistant":
            if not self._at_line_start:
                self._emit("\n")
        elif kind == "message_end" and self.state.sent and not self._sent_shown:
            # a template expanded, values attached: what the model got, before its answer
            self._sent_shown = True
            self._line("[what the model received]" + _bounded_lines(self.state.sent, "of the message"))
        elif kind == "tool_execution_start":
            card = self.state.tool_card(event.tool_call_id)
            self._line(f"[tool] {event.tool_name}{_shown_args(card)}")
            self._last_shown = event.tool_call_id
        elif kind == "tool_execution_update":
            self._progress(event.tool_call_id, event.tool_name)
        elif kind == "tool_execution_end":
            card = self.state.tool_card(event.tool_call_id)
            ended = f"[tool] {event.tool_name}: {'error' if event.is_error else 'done'}"
            self._line(ended + _shown_result(card))

    def _progress(self, tool_call_id: str, name: str) -> None:
        """A running call's progress line, at most once every ``PROGRESS_EVERY`` seconds."""
        card = self.state.tool_card(tool_call_id)
        now = time.monotonic()
        last = self._progress_at.get(tool_call_id, -PROGRESS_EVERY)
        if card is None or not card.progress or now - last < PROGRESS_EVERY:
            return
        self._progress_at[tool_call_id] = now
        self._line(f"[tool] {name}: {card.progress}")
        self._out.flush()

    def request_approval(self, tool_call_id: str) -> asyncio.Future[bool]:
        card = self.state.tool_card(tool_call_id)
        name = card.name if card is not None else "the tool"
        mark_approval(self.state, tool_call_id, "pending_approval")
        # right below the call's own lines the question need not repeat its arguments
        shown = "" if tool_call_id == self._last_shown else _shown_args(card)
        # arguments on lines of their own: the question asks after them, on its own line
        question = f"Approve {name}?{shown}\n[y/N] " if "\n" in shown else f"Approve {name}{shown}? [y/N] "
        approved = self._question(question)
        mark_approval(self.state, tool_call_id, "running" if approved else "denied")
        if not approved:
            self._line(f"[tool] {name}: denied")
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        future.set_result(approved)
        return future

    def _question(self, question: str) -> bool:
        """Ask on the terminal; ``False`` for anything but yes, no stdin, or Ctrl-C (which then
        goes on to the handler that interrupts the run)."""
        sys.stdout.flush()
        on_main = threading.current_thread() is threading.main_thread()
        previous = signal.getsignal(signal.SIGINT) if on_main else None
        try:
            if on_main:
                # ipykernel's input request polls its socket until a reply comes; the console
                # sends none after Ctrl-C, so the interrupt must end the wait here. The swap is
                # inside the try: a KeyboardInterrupt that escaped would stop the kernel's loop.
                signal.signal(signal.SIGINT, signal.default_int_handler)
            answer = self._ask(question)
        except KeyboardInterrupt:
            if on_main:
                signal.signal(signal.SIGINT, previous)
                on_main = False
                if callable(previous):
                    previous(signal.SIGINT, None)
            return False
        except Exception:  # no stdin (StdinNotImplementedError), a closed channel: nobody said yes
            return False
        finally:
            if on_main:
                signal.signal(signal.SIGINT, previous)
        return answer.strip().lower() in ("y", "yes")

    def resolve_approval(self, tool_call_id: str, approved: bool) -> None:
        mark_approval(self.state, tool_call_id, "running" if approved else "denied")
        card = self.state.tool_card(tool_call_id)
        if not approved and card is not None:
            self._line(f"[tool] {card.name}: denied")

    def add_notice(self, text: str, key: str | None = None) -> None:
        add_notice(self.state, text, key)
        self._line(text)

    def close(self) -> None:
        self._clock()
        if not self._at_line_start:
            self._emit("\n")
        sys.stdout.flush()

    def static_bundle(self) -> dict[str, str]:
        ending = end_text(self.state)
        footer = footer_text(self.state.footer)
        return {"text/plain": "\n".join(line for line in (ending, footer) if line)}
