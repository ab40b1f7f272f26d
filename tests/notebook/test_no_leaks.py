"""API keys never leak, end to end: fake keys in a real kernel's environment, notebooks executed
with nbclient and saved with nbformat, and not one key (nor a distinctive part of one) in the
cell outputs, the saved file, the session files, the kernel's stdout/stderr, its log (every
logger at DEBUG, httpx and httpcore included) or an exception it raised.

The provider is hostile (``faults/echo.py``): its error replies echo the credential headers it
received, as HTTP errors of four APIs and as an error event inside a 200 stream, with a retried
500, a refused connection, a ``--raise-on-error`` run, an exception from the HTTP layer, and a
successful run whose model asks the notebook tools about a variable that holds a key under an
innocent name. Every conversation is recorded as a session file.

Tutorials: the ones that read a key (06 calls two OpenAI-compatible servers: a gateway whose
key is missing and a loopback stand-in that receives ``LLAMA_CPP_API_KEY``) or write and print
session files (07), each in its own kernel with the same keys and log. The others use only the
offline faux model, which never reads a key, and already run under nbval.
"""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from faults.echo import EchoServer, assert_no_key, credentials, http_echo, stream_echo
from faults.wire import WIRES, closed_port_url
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from kernel_driver import kernel_env, kernel_manager
from loopback import Recorded, Reply, serving, sse

from pi_notebook.ai.env import ENV_API_KEYS

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytestmark = pytest.mark.kernel

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
TUTORIALS = ("06-providers-and-models.ipynb", "07-sessions.ipynb")
KEY_NAMES = sorted({name for names in ENV_API_KEYS.values() for name in names} | {"LLAMA_CPP_API_KEY"})


class Keys:
    """A fake key per variable: ``fake-KEYMARK<nn>-<20 random hex digits>``, so a whole key, its
    marker and its random part can each be searched for."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.parts: list[str] = []
        for index, name in enumerate(KEY_NAMES):
            marker, secret = f"KEYMARK{index:02d}", secrets.token_hex(10)
            self.values[name] = f"fake-{marker}-{secret}"
            self.parts += [marker, secret]

    def assert_absent(self, where: str, text: str) -> None:
        assert_no_key(where, text, self.values, self.parts)


# --- the hostile provider ------------------------------------------------------------------------

# provider:id -> (api, the first segment of its path on the echo server: how it answers)
ECHO_MODELS = {
    "openai:echo-completions": ("openai-completions", "e401"),
    "openai:echo-responses": ("openai-responses", "e401"),
    "anthropic:echo-oauth": ("anthropic-messages", "e401"),
    "anthropic:echo": ("anthropic-messages", "e500"),
    "google:echo": ("google-generative-ai", "e401"),
    "openrouter:echo-stream": ("openai-completions", "stream"),
    "mistral:echo-ok": ("openai-completions", "ok"),
}


def wire_of(path: str) -> Any:
    if path.endswith("/chat/completions"):
        return WIRES["openai-completions"]
    if path.endswith("/responses"):
        return WIRES["openai-responses"]
    if path.endswith("/messages"):
        return WIRES["anthropic-messages"]
    return WIRES["google-generative-ai"]


def cc_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return sse(
        {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]}
    )


def inspect_call(name: str) -> Reply:
    """A Chat Completions reply that calls ``inspect_variable`` on ``name``."""
    call = {"index": 0, "id": "call_1", "type": "function"}
    call["function"] = {"name": "inspect_variable", "arguments": json.dumps({"name": name})}
    parts = [cc_chunk({"role": "assistant", "content": ""}), cc_chunk({"tool_calls": [call]})]
    return Reply(200, [*parts, cc_chunk({}, "tool_calls"), b"data: [DONE]\n\n"])


def route(request: Recorded) -> Reply:
    kind, wire = request.path.split("/")[1], wire_of(request.path)
    if kind == "e401":
        return http_echo(wire, 401)
    if kind == "e500":
        return http_echo(wire, 500)
    if kind == "stream":
        return stream_echo(wire)
    if request.json["messages"][-1]["role"] != "tool":
        return inspect_call("creds")
    return Reply(200, wire.text_script("All good.").parts())


def write_models(path: Path, base: str) -> None:
    models = [
        {
            "id": spec.split(":")[1],
            "provider": spec.split(":")[0],
            "api": api,
            "baseUrl": base_url(base, spec, api, kind),
        }
        for spec, (api, kind) in ECHO_MODELS.items()
    ]
    refused = {"id": "echo-refused", "provider": "groq", "api": "openai-completions"}
    models.append({**refused, "baseUrl": closed_port_url() + "/v1"})
    path.write_text(json.dumps({"models": models}))


def base_url(base: str, spec: str, api: str, kind: str) -> str:
    suffix = {"openai-completions": "/v1", "openai-responses": "/v1", "google-generative-ai": "/v1beta"}
    return f"{base}/{kind}/{spec.split(':', maxsplit=1)[0]}{suffix.get(api, '')}"


# --- the notebooks -------------------------------------------------------------------------------

LOGGING = """\
import logging
logging.basicConfig(filename={log!r}, level=logging.DEBUG, force=True,
                    format="%(asctime)s %(name)s %(levelname)s %(message)s")
for _name in ("httpx", "httpcore", "pi_notebook", "asyncio"):
    logging.getLogger(_name).setLevel(logging.DEBUG)
"""

CELLS = [
    "%load_ext pi_notebook\n%config PiMagics.retries = 1\n%config PiMagics.retry_base_delay = 0.01\n"
    "import os\nimport pi_notebook\n"
    "creds = os.environ['MISTRAL_API_KEY']  # a copy under a name that does not look secret",
    "%%pi --model openai:echo-completions --tools none --no-raise-on-error\nhello",
    "%%pi --model openai:echo-responses --tools none --no-raise-on-error\nhello",
    "%%pi --model anthropic:echo-oauth --tools none --no-raise-on-error\nhello",
    "del os.environ['ANTHROPIC_OAUTH_TOKEN']  # the API key is used from here on",
    "%%pi --model anthropic:echo --tools none --no-raise-on-error\nhello",
    "%%pi --model google:echo --tools none --no-raise-on-error\nhello",
    "%%pi --model openrouter:echo-stream --tools none --no-raise-on-error\nhello",
    "%%pi --model groq:echo-refused --tools none --no-raise-on-error\nhello",
    "%%pi --model mistral:echo-ok --tools read\nWhat is in creds?",
    "%%pi --model openai:echo-completions --tools none --raise-on-error\nhello",
    "%pi status\n%pi history\n%pi sessions",
    "print(repr(_pi)); print(_pi.messages); print(pi_notebook.current().state)",
    "from pi_notebook.ai import Context, UserMessage, complete_simple, get_model\n"
    "context = Context(messages=[UserMessage(content='x')])\n"
    "reply = await complete_simple(get_model('google', 'echo'), context)\n"
    "print(reply.error_message); print(repr(reply))",
    "import httpx\nfrom pi_notebook.ai.http import open_stream\n"
    "from pi_notebook.ai.options import StreamOptions\n"
    "key = os.environ['OPENAI_API_KEY']\n"
    "url = get_model('openai', 'echo-completions').base_url + '/chat/completions'\n"
    "async with httpx.AsyncClient() as client:\n"
    "    await open_stream(client, url, {'Authorization': f'Bearer {key}'}, {'model': 'm', 'messages': []},\n"
    "                      StreamOptions(api_key=key))",
]
RAISES = {10, 14}  # --raise-on-error, and the HTTP layer's ProviderError


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    server.route = route
    with serving(server) as started:
        yield started


def execute(notebook: Any, root: Path, env: dict[str, str], cwd: Path, log: Any) -> None:
    km = kernel_manager(root, manager=AsyncKernelManager)
    # --debug: the kernel logs every message it handles to its stderr, which goes to ``log``
    client = nbclient.NotebookClient(
        notebook, km=km, timeout=60, allow_errors=True, extra_arguments=["--debug"]
    )
    try:
        client.execute(env=env, cwd=str(cwd), stdout=log, stderr=log)
    finally:
        km_client = client.kc
        if km_client is not None:
            km_client.stop_channels()
        run_sync(km.shutdown_kernel)(now=True)


def test_fake_keys_appear_nowhere(tmp_path: Path, echo: EchoServer) -> None:
    keys = Keys()
    agent_dir, scratch = tmp_path / "agent", tmp_path / "tmp"
    scratch.mkdir()
    models = tmp_path / "models.json"
    log_path = tmp_path / "logging.log"  # the kernel's Python logging, every logger at DEBUG
    out_path = tmp_path / "kernel.out"  # the kernel's stdout and stderr: its own debug log
    write_models(models, echo.url)
    env = kernel_env(tmp_path)
    env.update(keys.values)
    env.update(PI_CODING_AGENT_DIR=str(agent_dir), PI_NOTEBOOK_MODELS=str(models), TMPDIR=str(scratch))
    setup = nbformat.v4.new_code_cell(LOGGING.format(log=str(log_path)))
    saved: list[Path] = []
    with out_path.open("wb") as out:
        notebook = nbformat.v4.new_notebook(cells=[setup, *(nbformat.v4.new_code_cell(c) for c in CELLS)])
        execute(notebook, tmp_path / "k0", env, tmp_path, out)
        saved.append(save(notebook, tmp_path / "leaks.ipynb"))
        for index, name in enumerate(TUTORIALS, 1):
            tutorial = nbformat.read(NOTEBOOKS / name, as_version=4)
            # 07 deletes its session folder at the end: keep it (in TMPDIR) to be searched
            tutorial.cells = [setup, *(c for c in tutorial.cells if "shutil.rmtree" not in c.source)]
            execute(tutorial, tmp_path / f"k{index}", env, NOTEBOOKS, out)
            saved.append(save(tutorial, tmp_path / name))
    check_the_run(notebook, keys, echo)
    for path in saved:
        check_errors(path)
    log = log_path.read_text(errors="replace")
    assert "httpx INFO HTTP Request: POST" in log, "the kernel's HTTP log was not captured"
    assert "httpcore.http11 DEBUG" in log
    assert "[IPKernelApp] execute_request" in out_path.read_text(errors="replace"), "no kernel debug log"
    searched = [*saved, log_path, out_path, *sorted(p for p in (agent_dir.rglob("*")) if p.is_file())]
    searched += sorted(p for p in scratch.rglob("*") if p.is_file())
    recorded = "".join(p.read_text() for p in searched if p.suffix == ".jsonl")
    assert "Incorrect API key provided" in recorded, "the echoed errors were not recorded"
    assert "creds: str, 35 chars: '[REDACTED]'" in recorded, "the tool result was not recorded"
    for path in searched:
        keys.assert_absent(str(path.relative_to(tmp_path)), path.read_bytes().decode("utf-8", "replace"))


def save(notebook: Any, path: Path) -> Path:
    nbformat.write(notebook, path)
    return path


def check_the_run(notebook: Any, keys: Keys, echo: EchoServer) -> None:
    """The keys reached the server (so there was something to leak), the echoed errors reached
    the outputs (redacted), and every output, exception and widget state is clean."""
    sent = " ".join(v for request in echo.requests for v in credentials(request).values())
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_OAUTH_TOKEN",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "MISTRAL_API_KEY",
    ):
        assert keys.values[name] in sent, f"{name} was never sent to the echo server"
    outputs = [json.dumps(cell.get("outputs", [])) for cell in notebook.cells]
    for index, text in enumerate(outputs):
        keys.assert_absent(f"the outputs of cell {index}: {notebook.cells[index].source[:60]!r}", text)
    assert "Incorrect API key provided" in "".join(outputs)
    assert "[redacted]" in "".join(outputs)
    keys.assert_absent("the notebook metadata (widget state)", json.dumps(notebook.metadata))


def check_errors(path: Path) -> None:
    """Only the cells meant to raise did (a tutorial that broke would search less)."""
    notebook = nbformat.read(path, as_version=4)
    raised = {
        i for i, c in enumerate(notebook.cells) for o in c.get("outputs", []) if o.output_type == "error"
    }
    if path.name == "leaks.ipynb":
        expected = {i + 1 for i in RAISES}  # after the logging cell
    else:
        expected = {
            i for i, c in enumerate(notebook.cells) if "raises-exception" in c.metadata.get("tags", [])
        }
    assert raised == expected, (path.name, [(i, notebook.cells[i].outputs) for i in raised - expected])
