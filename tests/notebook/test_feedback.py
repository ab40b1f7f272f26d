"""Feedback the user can trust, on a real ``InteractiveShell`` with the faux provider and
loopback servers: notices that say why (headless approvals, an ignored thinking level),
errors that say what to do, headless failures that fail the notebook, ``--temperature`` /
``--seed`` on the request, and local servers' real context window."""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401
from loopback import DROP, LoopbackServer, json_reply, serving, sse

from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_tool_call
from pi_notebook.ai.local_probe import clear_probe_cache
from pi_notebook.ai.models import unregister_models
from pi_notebook.notebook import conversations
from pi_notebook.notebook.options import resolve_model
from pi_notebook.notebook.run.errors import RunFailed, explain_error

MODEL = "--model faux:faux-1"


def pi(shell: Any, line: str, body: str) -> tuple[Any, Any]:
    return run(shell, f"%%pi {line}\n{body}")


def set_v() -> Any:
    """A turn calling a tool the approval policy gates."""
    call = faux_tool_call("set_variable", {"name": "v", "value": 1}, id="call-1")
    return faux_assistant_message([call], stop_reason="toolUse")


def plain(captured: Any) -> str:
    found = outputs(captured)
    assert len(found) == 1, found
    return str(found[0]["text/plain"])


# --- notices --------------------------------------------------------------------------------------


def test_headless_ask_says_it_became_deny_and_why(
    ip: Any, faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_NOTEBOOK_HEADLESS", "1")
    faux.set_responses([set_v(), "a"])
    _, captured = pi(ip, f"{MODEL} --approve ask", "q")
    assert (
        "Headless run (PI_NOTEBOOK_HEADLESS=1): --approve ask became deny, since nobody can click "
        "Approve; delete_cells, edit_cell, insert_cell, insert_cells, run_cell, run_code, set_variable "
        "are blocked (pass --approve auto to allow them)."
    ) in plain(captured)


def test_ask_where_nobody_can_click_says_it_became_deny(ip: Any, faux: FauxRegistration) -> None:
    ip.autoawait = False  # the plain cell magic: nothing answers a click
    faux.set_responses(["a"])
    _, captured = pi(ip, f"{MODEL} --approve ask", "q")
    assert (
        "so nothing answers a click. --approve ask became deny: delete_cells, edit_cell, insert_cell, "
        "insert_cells, run_cell, run_code, set_variable are blocked."
    ) in plain(captured)


def test_the_approval_notice_appears_only_when_a_gated_tool_is_on(
    ip: Any, faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_NOTEBOOK_HEADLESS", "1")
    faux.set_responses(["a", "b", set_v(), "c"])
    _, captured = pi(ip, f"{MODEL} --tools read", "q")
    assert plain(captured) == "> q\n\na\n"
    _, captured = pi(ip, "--tools none", "q")
    assert "Headless run" not in plain(captured)
    _, captured = pi(ip, "--tools read,set_variable", "q")
    assert "Headless run: approvals follow --approve deny" in plain(captured)


def test_an_answer_that_used_no_tool_says_nothing_about_blocked_tools(
    ip: Any, faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The policy's line comes with the first call it decides: a plain answer has none, a
    read-only call neither, and a gated call gets it once, after the transcript so far."""
    monkeypatch.setenv("PI_NOTEBOOK_HEADLESS", "1")
    read = faux_assistant_message([faux_tool_call("list_variables", {}, id="r")], stop_reason="toolUse")
    faux.set_responses(["plain answer", read, "seen", set_v(), set_v(), "done"])
    _, captured = pi(ip, MODEL, "q")
    assert "blocked" not in plain(captured)
    assert "Headless run" not in plain(captured)
    _, captured = pi(ip, MODEL, "look")
    assert "Headless run" not in plain(captured)
    _, captured = pi(ip, MODEL, "set v")
    assert plain(captured).count("Headless run: approvals follow --approve deny") == 1
    assert "v" not in ip.user_ns


def test_an_ignored_thinking_level_is_said_once(ip: Any, faux: FauxRegistration) -> None:
    faux.set_responses(["a", "b", "c"])
    _, captured = pi(ip, f"{MODEL} --thinking high --tools none", "q")
    note = "--thinking high is ignored: faux:faux-1 does not support reasoning."
    assert note in plain(captured)
    _, captured = pi(ip, "--tools none", "again")
    assert "--thinking" not in plain(captured)
    _, captured = pi(ip, "--thinking low --tools none", "and low")
    assert "--thinking low is ignored" in plain(captured)


# --- loopback servers for the shell (its cells run their own event loop) -------------------------


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    """A loopback HTTP server on its own thread and loop, since a cell runs on the shell's loop."""
    with serving(LoopbackServer()) as srv:
        yield srv


@pytest.fixture
def local_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Point ``llama.cpp:`` at an address; forget registered local models and probes after."""

    def point(url: str) -> None:
        monkeypatch.setenv("LLAMA_CPP_BASE_URL", url)

    clear_probe_cache()
    try:
        yield point
    finally:
        clear_probe_cache()
        unregister_models("llama.cpp")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def chat_reply(text: str, usage: dict[str, int] | None = None) -> list[bytes]:
    """A Chat Completions stream as llama-server sends it."""
    head = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "tiny"}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    if usage is not None:
        chunks.append({**head, "choices": [], "usage": usage})
    return [sse(c) for c in chunks] + [b"data: [DONE]\n\n"]


# --- errors say what to do ------------------------------------------------------------------------


def test_a_refused_local_server_names_its_address_and_variable(
    ip: Any, local_server: Callable[[str], None]
) -> None:
    port = free_port()  # nothing listens there
    local_server(f"http://127.0.0.1:{port}")
    result, captured = pi(ip, "--model llama.cpp:tiny --tools none", "hello?")
    assert result.error_in_exec is None  # interactive: the output says it, the cell goes on
    shown = plain(captured)
    assert (
        f"Error: Cannot connect to http://127.0.0.1:{port}/v1 (ConnectError: "  # the cause's type is kept
    ) in shown
    assert shown.rstrip().endswith("Is the llama.cpp server running? Set LLAMA_CPP_BASE_URL to its address.")
    assert ip.user_ns["_pi"].error_message.startswith("Connection error: ConnectError: ")


def test_a_changed_base_url_reaches_the_next_run_of_the_same_model(
    ip: Any, server: LoopbackServer, local_server: Callable[[str], None]
) -> None:
    local_server(server.url)
    server.queue(json_reply(404, {}))  # no /props: the guessed window stays
    server.queue_sse(chat_reply("first"))
    _, captured = pi(ip, "--model llama.cpp:tiny --tools none", "q")
    assert "first" in plain(captured)
    port = free_port()  # nothing listens there
    local_server(f"http://127.0.0.1:{port}")
    _, captured = pi(ip, "--model llama.cpp:tiny --tools none", "again")
    assert f"Cannot connect to http://127.0.0.1:{port}/v1" in plain(captured)
    assert len(server.requests) == 2  # the second run did not go to the old address


def test_a_tool_call_llama_server_cannot_parse_says_what_to_try(
    ip: Any, server: LoopbackServer, local_server: Callable[[str], None]
) -> None:
    local_server(server.url)
    server.queue(json_reply(404, {}))
    unparsed = "The model produced output that does not match the expected peg-native format"
    server.queue_sse([sse({"error": {"code": 500, "message": unparsed, "type": "server_error"}})])
    _, captured = pi(ip, "--model llama.cpp:tiny", "hello?")
    shown = plain(captured)
    assert f"Error: {unparsed}: the server could not parse the model's tool call." in shown
    assert "pass --tool-mode code or --tools none" in shown
    # the recipe: the templates with which llama.cpp parses (or leaves as text) a small model's calls
    assert "start llama-server with --jinja and the model's own chat template" in shown
    assert "(qwen-notags.jinja) fails like this" in shown


def test_tools_none_sends_no_tool_even_with_skills_so_the_advice_works(
    ip: Any,
    server: LoopbackServer,
    local_server: Callable[[str], None],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent_dir = tmp_path / "agent"
    skill = agent_dir / "skills" / "plot" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\ndescription: How we plot\n---\nUse plt.\n", encoding="utf-8")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    run(ip, "%pi reload")  # the folder's resources read again: the user skill loads
    local_server(server.url)
    server.queue(json_reply(404, {}))
    unparsed = "The model produced output that does not match the expected peg-native format"
    server.queue_sse([sse({"error": {"code": 500, "message": unparsed, "type": "server_error"}})])
    _, captured = pi(ip, "--model llama.cpp:tiny", "hello?")
    assert "--tools none" in plain(captured)
    tools = [t["function"]["name"] for t in server.requests[-1].json["tools"]]
    assert "read" in tools  # the skill's read tool joins a run with tools
    assert "<available_skills>" in server.requests[-1].json["messages"][0]["content"]
    server.queue(json_reply(404, {}))  # a run after a failure asks the server's window again
    server.queue_sse(chat_reply("hello there"))
    _, captured = pi(ip, "--model llama.cpp:tiny --tools none", "hello?")  # as the advice says
    assert "hello there" in plain(captured)
    body = server.requests[-1].json
    assert "tools" not in body  # no tool at all: the skill's read tool neither
    assert "<available_skills>" not in body["messages"][0]["content"]  # nor skills it could not open
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    monkeypatch.undo()
    run(ip, "%pi reload")  # the next tests' runs get no skill from here


OPENAI = "openai:gpt-4o-mini"
GEMINI = "google:gemini-2.5-flash"


@pytest.mark.parametrize(
    ("spec", "error", "line"),
    [
        (  # Pi's texts for one HTTP error differ per API: every one gives the status and the words
            OPENAI,
            'OpenAI API error (503): {"message":"Overloaded","type":"server_error"}',
            "HTTP 503 from https://api.openai.com/v1: Overloaded. The server failed on its side: run "
            "the cell again in a moment.",
        ),
        (
            OPENAI,
            "OpenAI API error (500): 500 status code (no body)",
            "HTTP 500 from https://api.openai.com/v1. The server failed on its side: run the cell "
            "again in a moment.",
        ),
        (
            GEMINI,
            'got status: undefined. {"error":{"message":"upstream unavailable","code":503}}',
            "HTTP 503 from https://generativelanguage.googleapis.com/v1beta: upstream unavailable. "
            "The server failed on its side: run the cell again in a moment.",
        ),
        (
            OPENAI,
            "429 You exceeded your current quota, please check your plan and billing details.",
            "HTTP 429 from https://api.openai.com/v1: You exceeded your current quota, please check "
            "your plan and billing details. The account's quota or billing limit is reached: check "
            "it with the provider.",
        ),
        (
            OPENAI,
            "Server requested 120s retry delay (max: 60s). 429 slow down",
            "Server requested 120s retry delay (max: 60s). HTTP 429 from https://api.openai.com/v1: "
            "slow down. Rate limited: wait a moment, then run the cell again.",
        ),
        (
            OPENAI,
            "400 prompt is too long: 210000 tokens > 200000 maximum",
            "HTTP 400 from https://api.openai.com/v1: prompt is too long: 210000 tokens > 200000 "
            "maximum. The conversation no longer fits the model's context window: compact it with "
            "%pi compact, or start over with %%pi --new.",
        ),
        (
            OPENAI,
            "404 The model `gpt-5-nano-x` does not exist",
            "HTTP 404 from https://api.openai.com/v1: The model `gpt-5-nano-x` does not exist. Check "
            "the model id (openai:gpt-4o-mini) and the server's address.",
        ),
        (
            OPENAI,
            "Connection error: RemoteProtocolError: Server disconnected without sending a response.",
            "The connection to https://api.openai.com/v1 broke before the answer was complete "
            "(RemoteProtocolError: Server disconnected without sending a response). Run the cell "
            "again; if it keeps breaking, look at the server's log or the proxy in between.",
        ),
        (
            OPENAI,
            "No API key for provider: openai. Set OPENAI_API_KEY or pass api_key.",
            "No API key for openai. Set OPENAI_API_KEY in the kernel from a cell without showing it: "
            'import os, getpass; os.environ["OPENAI_API_KEY"] = getpass.getpass() (not %env '
            "OPENAI_API_KEY=..., which prints it), or before starting Jupyter; then run the cell again.",
        ),
        ("faux:faux-1", "529 overloaded: the provider is busy, retry later", None),  # scripted, no server
    ],
)
def test_an_error_line_gives_the_reason_and_what_to_do(
    spec: str, error: str, line: str | None, faux: FauxRegistration
) -> None:
    """What the run's ``Error:`` line says for errors the kernel fault subset does not meet
    (``tests/notebook/test_faults_kernel.py``); ``None``: the text already says what to do."""
    assert explain_error(error, resolve_model(spec)) == line


def test_a_missing_key_says_how_to_set_it_from_a_cell(ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _, captured = pi(ip, "--model openai:gpt-4o-mini --tools none", "q")
    [bundle] = outputs(captured)
    assert 'os.environ["OPENAI_API_KEY"] = getpass.getpass()' in bundle["text/plain"]
    said = "No API key for provider: openai. Set OPENAI_API_KEY or pass api_key."
    assert ip.user_ns["_pi"].error_message == said, "the transcript keeps Pi's text"


def test_tokens_reported_before_a_failure_stay_in_the_footer(
    ip: Any, server: LoopbackServer, local_server: Callable[[str], None]
) -> None:
    local_server(server.url)
    server.queue(json_reply(404, {"error": "no /props here"}))  # the probe: not llama-server
    usage = {"prompt_tokens": 321, "completion_tokens": 5, "total_tokens": 326}
    server.queue_sse([*chat_reply("partial answer", usage)[:-1], DROP])  # cut before [DONE]
    _, captured = pi(ip, "--model llama.cpp:tiny --tools none", "q")
    [bundle] = outputs(captured)
    assert "Error: " in bundle["text/plain"]
    assert "321 in / 5 out tokens" in bundle["text/html"]


# --- headless failures fail the notebook ----------------------------------------------------------


FAILED = "429 rate limited, retry later"


def test_a_headless_run_that_fails_raises_after_rendering(
    ip: Any, faux: FauxRegistration, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_NOTEBOOK_HEADLESS", "1")
    faux.set_responses([faux_assistant_message([], stop_reason="error", error_message=FAILED)])
    result, captured = pi(ip, f"{MODEL} --tools none", "q")
    assert f"Error: {FAILED}" in plain(captured)  # drawn first
    error = result.error_in_exec
    assert isinstance(error, RunFailed)
    assert str(error).startswith(
        f"The %%pi run ended with an error: {FAILED}\n(Raised because this run is headless"
    )
    assert ip.user_ns["_pi"].stop_reason == "error"
    faux.set_responses([faux_assistant_message([], stop_reason="error", error_message=FAILED)])
    result, _ = pi(ip, "--tools none --no-raise-on-error", "q")
    assert result.error_in_exec is None


def test_interactive_runs_raise_only_when_asked(ip: Any, faux: FauxRegistration) -> None:
    failed = faux_assistant_message([], stop_reason="error", error_message=FAILED)
    faux.set_responses([failed, failed, failed, "fine"])
    result, _ = pi(ip, f"{MODEL} --tools none", "q")
    assert result.error_in_exec is None
    result, _ = pi(ip, "--tools none --raise-on-error", "q")
    assert isinstance(result.error_in_exec, RunFailed)
    ip.run_line_magic("config", "PiMagics.raise_on_error = True")
    result, _ = pi(ip, "--tools none", "q")
    assert isinstance(result.error_in_exec, RunFailed)
    result, _ = pi(ip, "--tools none", "q")
    assert result.error_in_exec is None  # a run that succeeds never raises


# --- --temperature, --seed and the local server's context window ----------------------------------


def test_temperature_seed_and_the_probed_window_reach_the_request(
    ip: Any, server: LoopbackServer, local_server: Callable[[str], None]
) -> None:
    local_server(server.url)
    server.queue(json_reply(200, {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}))
    server.queue_sse(chat_reply("first"))
    server.queue_sse(chat_reply("second"))
    _, captured = pi(ip, "--model llama.cpp:tiny --tools none --temperature 0 --seed 7", "q")
    assert "first" in plain(captured)
    _, captured = pi(ip, "--tools none", "again")  # the settings were for one cell
    assert "second" in plain(captured)
    assert [(r.method, r.path) for r in server.requests] == [
        ("GET", "/props"),  # asked once, before the first request; cached after
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/chat/completions"),
    ]
    first, second = (r.json for r in server.requests[1:])
    assert (first["temperature"], first["seed"]) == (0.0, 7)
    assert "temperature" not in second
    assert "seed" not in second
    model = ip.user_ns["_pi"].model
    assert model == "llama.cpp:tiny"
    agent = conversations.current()
    assert (agent.state.model.context_window, agent.state.model.max_tokens) == (4096, 1024)
    # A quarter of the window, not the 1 that Pi's fixed 4,096-token margin leaves in 4,096.
    assert first["max_tokens"] == 1024
    assert second["max_tokens"] == 1024


def test_seed_is_said_to_be_ignored_where_the_api_has_none(ip: Any, faux: FauxRegistration) -> None:
    faux.set_responses(["a"])
    _, captured = pi(ip, f"{MODEL} --tools none --seed 3 --temperature 0.2", "q")
    assert "--seed is ignored: the API of faux:faux-1 takes no seed" in plain(captured)
    with pytest.raises(UsageError, match="--temperature must be between 0 and 2"):
        ip.run_cell_magic("pi", "--temperature 5", "q")
