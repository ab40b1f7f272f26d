"""How a ``%%pi`` cell fails: what a failed run tells the user to do, and the two exceptions a
cell ends with after its output is drawn.

* ``explain_error``: a connection failure names the address it tried and, for a local server
  (``llama.cpp:``, ``ollama:``, ``lmstudio:``, ``vllm:``), the variable that sets it. The
  cause (its exception type and text) is kept. A timeout names the address and how long it
  waited, and says how to wait longer (``--timeout``). A local server that could not parse the
  model's tool call says so and what to try.
* ``RunFailed``: a run that ended in an error raises after rendering when ``raise_on_error`` is
  on (by default in headless runs), so nbconvert, papermill and CI fail instead of exiting 0.
* ``RunInterrupted``: a kernel interrupt ends the cell as interrupted (Run All stops) and is
  shown as one line instead of a traceback through the runner.

IPython renders an exception that has ``_render_traceback_`` through that method, so both are
shown as their message only.
"""

from __future__ import annotations

from ..ai.http import TIMED_OUT
from ..ai.models import LOCAL_SERVERS
from ..ai.types import Model

__all__ = ["INTERRUPTED", "RunFailed", "RunInterrupted", "explain_error"]

INTERRUPTED = (
    "Interrupted: the %%pi run was aborted. Its output above shows how far it got; "
    "the conversation continues in the next cell."
)
_CONNECTION = "Connection error"


# llama-server's words when the model's reply is neither text nor a tool call it can parse
# ("The model produced output that does not match the expected <parser> format").
_UNPARSED_TOOL_CALL = "does not match the expected"


def explain_error(message: str | None, model: Model) -> str | None:
    """A clearer one-line version of a run's error for the user, or ``None`` to show it as is."""
    if message and _UNPARSED_TOOL_CALL in message and model.provider in LOCAL_SERVERS:
        return (
            f"{message.rstrip('.')}: the server could not parse the model's tool call. "
            "Run the cell again, pass --tools none, or use a model that calls tools reliably."
        )
    where = model.base_url or f"the {model.provider} API"
    if message and message.startswith(TIMED_OUT):
        return _explain_timeout(message, model, where)
    if not message or not message.startswith(_CONNECTION):
        return None
    cause = message[len(_CONNECTION) :].lstrip(":. ").strip() or "no answer"
    text = f"Cannot connect to {where} ({cause})."
    server = LOCAL_SERVERS.get(model.provider)
    if server is not None:
        return f"{text} Is the {server.label} server running? Set {server.env_var} to its address."
    return f"{text} Check the network connection and any proxy settings (HTTPS_PROXY)."


def _explain_timeout(message: str, model: Model, where: str) -> str:
    """``Request timed out: no answer from the server in 30 s (ReadTimeout)`` as one line that
    names the address and says what to do."""
    cause = message[len(TIMED_OUT) :].lstrip(":. ").strip().replace("the server", where, 1)
    text = f"{cause[:1].upper()}{cause[1:]}." if cause else f"{TIMED_OUT} ({where})."
    server = LOCAL_SERVERS.get(model.provider)
    busy = (
        f"Is the {server.label} server still loading the model, or busy with a long prompt?"
        if server is not None
        else "The server is overloaded or stuck."
    )
    return f"{text} {busy} Run the cell again, or allow longer with %%pi --timeout SECONDS (0: no limit)."


class RunInterrupted(KeyboardInterrupt):
    """A kernel interrupt of a ``%%pi`` run. Reported as ``KeyboardInterrupt`` (the ``ename`` of
    the reply), which it is."""

    def __init__(self, message: str = INTERRUPTED) -> None:
        super().__init__(message)

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


RunInterrupted.__name__ = RunInterrupted.__qualname__ = "KeyboardInterrupt"


class RunFailed(Exception):
    """A ``%%pi`` run ended in an error and ``raise_on_error`` is on; its output is drawn."""

    def __init__(self, error: str, *, headless: bool) -> None:
        why = "this run is headless" if headless else "raise_on_error is on"
        super().__init__(
            f"The %%pi run ended with an error: {error}\n"
            f"(Raised because {why}, so a notebook run by nbconvert, papermill or CI fails here. "
            "Pass --no-raise-on-error or set c.PiMagics.raise_on_error = False to go on.)"
        )
        self.error = error

    def _render_traceback_(self) -> list[str]:
        return [f"RunFailed: {self}"]
