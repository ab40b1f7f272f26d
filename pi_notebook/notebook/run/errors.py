"""How a ``%%pi`` cell fails: what a failed run tells the user to do, and the two exceptions a
cell ends with after its output is drawn.

* ``explain_error``: the run's error as one line that gives the reason and says what to do
  (the transcript and ``_pi.error_message`` keep the provider's own text, Pi's):

  - a connection that could not be made names the address it tried and, for a local server
    (``llama.cpp:``, ``ollama:``, ``lmstudio:``, ``vllm:``), the variable that sets it; one
    that broke after it was made says so; the cause (exception type and text) is kept;
  - a timeout names the address and how long it waited, and how to wait longer (``--timeout``);
  - an HTTP error names the status, the server and the server's own message (out of its JSON
    or HTML), and what the status calls for: the key's variable (401, 403), waiting (429),
    trying again (5xx), checking the model and options (other 4xx);
  - a reply the API's parser could not read, or one that ended early, says to run the cell
    again and what to check if it keeps happening;
  - a local server that could not parse the model's tool call says so and what to try, the
    chat templates included;
  - a missing API key says how to set the variable from a cell without the key showing.
* ``RunFailed``: a run that ended in an error raises after rendering when ``raise_on_error`` is
  on (by default in headless runs), so nbconvert, papermill and CI fail instead of exiting 0.
* ``RunInterrupted``: a kernel interrupt ends the cell as interrupted (Run All stops) and is
  shown as one line instead of a traceback through the runner.

IPython renders an exception that has ``_render_traceback_`` through that method, so both are
shown as their message only.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import Any

from ...ai.env import env_var_names
from ...ai.failures import RequestFailure
from ...ai.http import TIMED_OUT
from ...ai.models import LOCAL_SERVERS
from ...ai.overflow import is_context_overflow
from ...ai.redact import redact_url, redact_urls
from ...ai.types import Model
from ..tools.references import single_line

__all__ = [
    "INTERRUPTED",
    "UNPARSED_ADVICE",
    "RunFailed",
    "RunInterrupted",
    "explain_error",
    "is_unparsed_tool_call",
]

INTERRUPTED = (
    "Interrupted: the %%pi run was aborted. Its output above shows how far it got; "
    "the conversation continues in the next cell."
)
_CONNECTION = "Connection error"
_NO_KEY = "No API key for provider:"
"""How Pi's missing-key error begins (``ai/env.py: missing_key_message``)."""
FAUX_API = "faux"
"""How the api of every faux provider's models begins (``pi_notebook.ai.faux``)."""
MAX_REASON_CHARS = 300
"""The server's own words are cut here: the line stays one readable line."""

# llama-server's words when the model's reply is neither text nor a tool call it can parse
# ("The model produced output that does not match the expected <parser> format").
_UNPARSED_TOOL_CALL = "does not match the expected"
# Failures to open a connection at all (httpx's ConnectError: refused, no route, DNS).
_NOT_CONNECTED = re.compile(r"^(ConnectError|UnsupportedProtocol)\b|All connection attempts failed|refused")
# "Server requested 120s retry delay (max: 60s). " before an HTTP error (ai/http.py).
_RETRY_NOTE = re.compile(r"^(Server requested \d+s retry delay \(max: \d+s\)\. )")
# Pi's texts for an HTTP error: "503 ...", "503: {...}", "OpenAI API error (503): ...";
# Google's is the error JSON itself, with its "code".
_STATUS = re.compile(
    r"^(?:[A-Za-z][\w .]* error \()?(?P<status>[1-5]\d\d)\)?(?:[:\s]\s*|$)(?P<rest>.*)$", re.S
)
_QUOTA = re.compile(r"quota|billing|balance|usage limit|\bplan\b", re.I)
_UNREADABLE = ("Could not parse", "sent a response of an unexpected shape", "Unhandled stop reason")
_CUT_SHORT = re.compile(r"ended (without|before)", re.I)
UNPARSED_ADVICE = (
    "Run the cell again, pass --tool-mode code or --tools none, or start llama-server with --jinja "
    "and the model's own chat template (no --chat-template-file): a call the model then prints as "
    "text is offered on its card. A template that drops the <tool_call> tags (qwen-notags.jinja) "
    "fails like this whenever a small Qwen puts its call in a ```json fence (docs/providers.md, "
    "\"Tool calls with small local models\")."
)
"""What to do about a tool call llama.cpp could not parse: the templates measured with
Qwen2.5-Coder-0.5B (``bench/bench_local_templates.py``)."""
OVERFLOW_ADVICE = (
    "The conversation no longer fits the model's context window: compact it with %pi compact, "
    "or start over with %%pi --new."
)


def _kind(message: str, failure: RequestFailure | None) -> str | None:
    """What failed: the provider's record when the message has one, else what its text says
    (a message read back from a session file has no record)."""
    if failure is not None:
        return failure.kind
    if message.startswith(TIMED_OUT):
        return "timeout"
    return "connect" if message.startswith(_CONNECTION) else None


def is_unparsed_tool_call(message: str | None) -> bool:
    """Whether an error is a local server's "could not parse the model's output" (llama.cpp)."""
    return bool(message) and _UNPARSED_TOOL_CALL in str(message)


def explain_error(message: str | None, model: Model, failure: RequestFailure | None = None) -> str | None:
    """A clearer one-line version of a run's error for the user, or ``None`` to show it as is
    (also for the faux provider, whose errors are scripted text, not a server's). ``failure``
    is the failed message's record (``AssistantMessage.failure``): kind and status come from it."""
    if not message or model.api.startswith(FAUX_API):
        return None
    message = redact_urls(message)  # a message read back from an older session file, too
    if message.startswith(_NO_KEY):
        return _explain_missing_key(model)
    if _UNPARSED_TOOL_CALL in message and model.provider in LOCAL_SERVERS:
        return f"{message.rstrip('.')}: the server could not parse the model's tool call. {UNPARSED_ADVICE}"
    where = redact_url(model.base_url) if model.base_url else f"the {model.provider} API"
    kind = _kind(message, failure)
    if kind == "timeout" and message.startswith(TIMED_OUT):
        return _explain_timeout(message, model, where)
    if kind == "connect" and message.startswith(_CONNECTION):
        return _explain_connection(message, model, where)
    overflow = is_context_overflow(SimpleNamespace(stop_reason="error", error_message=message))
    status = failure.status if failure is not None and failure.kind == "http" else None
    http = _explain_http(message, model, where, overflow, status)
    if http is not None:
        return http
    said = single_line(message, MAX_REASON_CHARS).rstrip(".")
    if overflow:
        return f"{said}. {OVERFLOW_ADVICE}"
    if any(part in message for part in _UNREADABLE):
        return (
            f"{said}. Run the cell again; if it keeps failing, check that "
            f"{where} speaks the {model.api} API that {model.provider}:{model.id} uses."
        )
    if _CUT_SHORT.search(message):
        return f"{said}: the answer was cut short. Run the cell again."
    return None


def _explain_missing_key(model: Model) -> str:
    """What can be done from a cell: the key is read from the kernel's environment at each
    call. The advice never puts the key in the notebook (``%env NAME=value`` echoes it)."""
    names = env_var_names(model.provider)
    name = names[0]
    either = f"{' or '.join(names)}; e.g. " if len(names) > 1 else ""
    return (
        f"No API key for {model.provider}. Set {either}{name} in the kernel from a cell without "
        f'showing it: import os, getpass; os.environ["{name}"] = getpass.getpass() (not '
        f"%env {name}=..., which prints it), or before starting Jupyter; then run the cell again."
    )


def _explain_connection(message: str, model: Model, where: str) -> str:
    cause = message[len(_CONNECTION) :].lstrip(":. ").strip() or "no answer"
    if not _NOT_CONNECTED.search(cause):
        why = single_line(cause, MAX_REASON_CHARS).rstrip(".")
        return (
            f"The connection to {where} broke before the answer was complete ({why}). "
            "Run the cell again; if it keeps breaking, look at the server's log or the proxy in between."
        )
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


def _explain_http(
    message: str, model: Model, where: str, overflow: bool, known_status: int | None = None
) -> str | None:
    """``HTTP 503 from <where>: <the server's message>. <what to do>``, or ``None`` when the
    message is not an HTTP error. ``known_status``: the status the provider recorded (the text
    is then read only for the server's own words)."""
    note_match = _RETRY_NOTE.match(message)
    note = note_match.group(1) if note_match else ""
    found = _status_and_reason(message[len(note) :])
    if found is None and known_status is None:
        return None
    status, reason = found if found is not None else (0, "")
    status = known_status if known_status is not None else status
    said = f": {reason.rstrip('.')}" if reason else ""
    advice = OVERFLOW_ADVICE if overflow else _advice(status, reason, model)
    return f"{note}HTTP {status} from {where}{said}. {advice}"


def _status_and_reason(text: str) -> tuple[int, str] | None:
    """The status of an HTTP error text and the server's own message in it."""
    match = _STATUS.match(text)
    if match is not None:
        status, rest = int(match["status"]), match["rest"].strip()
        rest = rest.removeprefix(f"{status} ")  # "OpenAI API error (500): 500 status code (no body)"
    else:  # Google's error JSON, alone or after Pi's "got status: undefined. "
        rest = text[text.find("{") :] if "{" in text else ""
        error = _error_object(_json(rest))
        code = error.get("code") if error is not None else None
        if not isinstance(code, int) or not 100 <= code <= 599:
            return None
        status = code
    if rest == "status code (no body)":
        return status, ""
    return status, single_line(_server_words(rest), MAX_REASON_CHARS)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _error_object(data: Any) -> dict[str, Any] | None:
    """The error object of an error body: its ``error`` member, else the body itself."""
    if not isinstance(data, dict):
        return None
    inner = data.get("error")
    return inner if isinstance(inner, dict) else data


def _server_words(rest: str) -> str:
    """What the server said: the ``message`` of a JSON error, the title of an HTML page (a
    proxy's error page), else the text."""
    error = _error_object(_json(rest))
    if error is not None:
        text = error.get("message")
        if isinstance(text, str):
            rest = text
    title = re.search(r"<title>(.*?)</title>", rest, re.I | re.S)
    if title is not None:
        return title.group(1).strip()
    return re.sub(r"<[^>]+>", " ", rest) if rest.lstrip().startswith("<") else rest


def _advice(status: int, reason: str, model: Model) -> str:
    if status in (401, 403):
        keys = " or ".join(env_var_names(model.provider))
        return f"The server did not accept the API key: check {keys}."
    if status == 429 and _QUOTA.search(reason):
        return "The account's quota or billing limit is reached: check it with the provider."
    if status == 429:
        return "Rate limited: wait a moment, then run the cell again."
    if status >= 500 or status in (408, 409):
        return "The server failed on its side: run the cell again in a moment."
    if status == 404:
        return f"Check the model id ({model.provider}:{model.id}) and the server's address."
    return (
        "The server rejected the request: check --model and the cell's options, or start over "
        "with %%pi --new."
    )


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
