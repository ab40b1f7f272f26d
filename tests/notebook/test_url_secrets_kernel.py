"""A base URL's credentials, end to end in a real kernel: a models file whose base URLs carry
``user:password@`` and ``?key=...``, a hostile server echoing the request's path and headers
(the ``Basic`` header httpx builds from the userinfo among them), a refused connection, then
``%pi history`` and ``%pi status``. The saved ``.ipynb``, the session files and the kernel's
stdout hold neither the password, nor the query key, nor the Basic token.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from faults.echo import EchoServer
from faults.wire import closed_port_url
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from kernel_driver import kernel_env, kernel_manager
from loopback import Recorded, Reply, serving

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytestmark = pytest.mark.kernel

PASSWORD = "PASSWORD-hunter2-77"
QUERY_KEY = "QUERYKEY-SECRET-0042"
BASIC = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
LEAKS = (PASSWORD, QUERY_KEY, BASIC, "hunter2", "SECRET-0042")

CELLS = [
    "%load_ext pi_notebook",
    "%%pi --model openai:echo-url --tools none --no-raise-on-error\nhello",
    "%%pi --model groq:refused-url --tools none --no-raise-on-error\nhello",
    "%pi history\n%pi status",
    "print(_pi.error_message)",
]


def route(request: Recorded) -> Reply:
    said = f"Bad request {request.path}: {json.dumps(request.headers)}"
    body = json.dumps({"error": {"message": said, "type": "invalid_request_error"}}).encode()
    return Reply(401, [body], {"content-type": "application/json"})


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    server.route = route
    with serving(server) as started:
        yield started


def with_credentials(url: str) -> str:
    return url.replace("http://", f"http://alice:{PASSWORD}@") + f"/v1?key={QUERY_KEY}"


def test_base_url_credentials_appear_nowhere(tmp_path: Path, echo: EchoServer) -> None:
    models = tmp_path / "models.json"
    entries = [
        {
            "id": "echo-url",
            "provider": "openai",
            "api": "openai-completions",
            "baseUrl": with_credentials(echo.url),
        },
        {
            "id": "refused-url",
            "provider": "groq",
            "api": "openai-completions",
            "baseUrl": with_credentials(closed_port_url()),
        },
    ]
    models.write_text(json.dumps({"models": entries}))
    agent_dir = tmp_path / "agent"
    env = kernel_env(tmp_path)
    env.update(
        PI_CODING_AGENT_DIR=str(agent_dir),
        PI_NOTEBOOK_MODELS=str(models),
        OPENAI_API_KEY="test-key-openai",
        GROQ_API_KEY="test-key-groq",
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    km = kernel_manager(tmp_path / "k", manager=AsyncKernelManager)
    client = nbclient.NotebookClient(notebook, km=km, timeout=60, allow_errors=True)
    out_path = tmp_path / "kernel.out"
    try:
        with out_path.open("wb") as out:
            client.execute(env=env, cwd=str(tmp_path), stdout=out, stderr=out)
    finally:
        if client.kc is not None:
            client.kc.stop_channels()
        run_sync(km.shutdown_kernel)(now=True)
    saved = tmp_path / "urls.ipynb"
    nbformat.write(notebook, saved)

    [request] = echo.requests
    assert request.headers["authorization"] == f"Basic {BASIC}"
    assert QUERY_KEY in request.path
    outputs = json.dumps([cell.get("outputs", []) for cell in notebook.cells])
    assert "Bad request" in outputs, "the echoed error was not shown"
    assert "Cannot connect to http://[redacted]@127.0.0.1" in outputs, "the refused address was not named"
    sessions = sorted(p for p in agent_dir.rglob("*.jsonl"))
    assert sessions, "no session file was written"
    recorded = "".join(p.read_text() for p in sessions)
    assert "Bad request" in recorded, "the error was not recorded"
    for path in [saved, out_path, *sessions]:
        text = path.read_bytes().decode("utf-8", "replace")
        found = [leak for leak in LEAKS if leak in text]
        at = text.find(found[0]) if found else 0
        assert not found, f"{found} leaked into {path.name}: ...{text[max(0, at - 200) : at + 100]}..."
