"""The Pi kernelspec behind Jupyter Kernel Gateway on 127.0.0.1: the gateway lists ``pi``, a
kernel started through its REST API answers a prompt over the websocket channels, and
JupyterLab started with ``--gateway-url`` runs the notebook on the gateway's Pi kernel in
Chromium, showing the live view. Skipped without ``jupyter_kernel_gateway`` (the dev extra)."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "notebook"))

from browser_lab import CHROMIUM, SHOTS, chromium_page, free_port
from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session
from pi_kernel_driver import REPO, install_spec

pytest.importorskip("kernel_gateway", reason="jupyter_kernel_gateway is not installed (dev extra)")
websocket = pytest.importorskip("websocket")

pytestmark = pytest.mark.kernel

SETUP = """\
%%python
from pi_notebook.ai.faux import register_faux_provider
faux = register_faux_provider(token_size={"min": 1, "max": 1}, tokens_per_second=40)
faux.set_responses(["Answered through the gateway. " * 6])
get_ipython().run_line_magic("config", 'PiMagics.model = "faux:faux-1"')
print("setup done")
"""


class Gateway:
    """``python -m kernel_gateway`` on 127.0.0.1 with a token, the Pi kernelspec on its
    ``JUPYTER_PATH`` and isolated Jupyter / IPython dirs."""

    def __init__(self, root: Path, jupyter_path: Path) -> None:
        self.root, self.jupyter_path = root, jupyter_path
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Gateway:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_NOTEBOOK_", "JPY_", "JUPYTER"))}
        env.update(
            {
                # a kernel a client starts with its own env gets only PATH and these from the
                # gateway: the package from this checkout, the test's session dir
                "KG_ENV_PROCESS_WHITELIST": "PYTHONPATH,PI_CODING_AGENT_DIR,IPYTHONDIR,JUPYTER_RUNTIME_DIR",
                "JUPYTER_PATH": str(self.jupyter_path),
                "JUPYTER_RUNTIME_DIR": str(self.root / "runtime"),
                "JUPYTER_CONFIG_DIR": str(self.root / "config"),
                "JUPYTER_DATA_DIR": str(self.root / "data"),
                "IPYTHONDIR": str(self.root / "ipython"),
                "PYTHONPATH": str(REPO),
            }
        )
        cmd = [
            sys.executable, "-m", "kernel_gateway", "--KernelGatewayApp.ip=127.0.0.1",
            f"--KernelGatewayApp.port={self.port}", f"--KernelGatewayApp.auth_token={self.token}",
            "--JupyterWebsocketPersonality.list_kernels=True",  # a server behind --gateway-url lists them
        ]  # fmt: skip
        log = (self.root / "gateway.log").open("wb")
        self.proc = subprocess.Popen(
            cmd, env=env, cwd=self.root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the gateway exited: {self.log_tail()}")
            try:
                self.get("/api")
                return self
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"the gateway did not start: {self.log_tail()}")

    def log_tail(self) -> str:
        return (self.root / "gateway.log").read_text(errors="replace")[-3000:]

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"token {self.token}")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as response:
            text = response.read()
        return json.loads(text) if text else None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # the gateway shuts its kernels down
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    with Gateway(tmp_path, install_spec(tmp_path / "prefix")) as started:
        yield started


def receive(ws: Any, deadline: float) -> dict[str, Any]:
    """The next message on the websocket, by ``deadline`` (``time.monotonic()``) or
    ``TimeoutError``. The gateway's pings count as traffic to a plain ``recv``, which answers
    them and reads on, so they would extend its timeout forever: here every frame, a ping
    too, returns to check the deadline."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("nothing from the gateway by the deadline")
        ws.settimeout(left)
        try:
            opcode, frame = ws.recv_data_frame(control_frame=True)
        except websocket.WebSocketTimeoutException:
            raise TimeoutError("nothing from the gateway by the deadline") from None
        if opcode in (websocket.ABNF.OPCODE_TEXT, websocket.ABNF.OPCODE_BINARY):
            return dict(json.loads(frame.data))
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            raise ConnectionError("the gateway closed the websocket")


def wait_ready(ws: Any, session: Session, timeout: float = 60) -> None:
    """Ask ``kernel_info`` until the kernel answers: a request sent while the gateway is still
    connecting the kernel's channels is dropped, so a first ``execute_request`` could wait
    forever (as jupyter_client's ``wait_for_ready`` does for a local kernel)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        msg = session.msg("kernel_info_request", {})
        ws.send(json.dumps({**msg, "channel": "shell"}, default=json_default))
        asked, attempt = msg["header"]["msg_id"], min(end, time.monotonic() + 2)
        try:
            while True:
                got = receive(ws, attempt)
                if got["channel"] == "shell" and got["parent_header"].get("msg_id") == asked:
                    return
        except TimeoutError:
            continue
    raise TimeoutError(f"the kernel behind the gateway never answered kernel_info in {timeout} s")


def execute(
    ws: Any, session: Session, code: str, timeout: float = 60
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Send an ``execute_request`` over the websocket; the reply and the IOPub messages of it,
    once both the ``execute_reply`` and the IOPub ``idle`` have come, in either order (they
    travel on different channels), by one deadline."""
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
               "allow_stdin": False, "stop_on_error": True}  # fmt: skip
    msg = session.msg("execute_request", content)
    ws.send(json.dumps({**msg, "channel": "shell"}, default=json_default))
    msg_id = msg["header"]["msg_id"]
    seen: list[dict[str, Any]] = []
    reply: dict[str, Any] | None = None
    idle = False
    deadline = time.monotonic() + timeout
    while reply is None or not idle:
        try:
            got = receive(ws, deadline)
        except TimeoutError:
            raise TimeoutError(
                f"{code[:40]!r}: after {timeout} s, reply {'seen' if reply else 'missing'}, "
                f"idle {'seen' if idle else 'missing'}"
            ) from None
        if got["parent_header"].get("msg_id") != msg_id:
            continue
        if got["channel"] == "shell" and got["msg_type"] == "execute_reply":
            reply = got["content"]
        elif got["channel"] == "iopub":
            seen.append(got)
            idle = idle or (got["msg_type"] == "status" and got["content"]["execution_state"] == "idle")
    assert reply is not None
    return reply, seen


def test_a_prompt_through_the_gateways_rest_and_websocket_api(gateway: Gateway) -> None:
    specs = gateway.get("/api/kernelspecs")["kernelspecs"]
    assert specs["pi"]["spec"]["display_name"] == "Pi (Python 3)"
    kernel = gateway.request("POST", "/api/kernels", {"name": "pi"})
    ws = websocket.create_connection(
        f"ws://127.0.0.1:{gateway.port}/api/kernels/{kernel['id']}/channels",
        header=[f"Authorization: token {gateway.token}"], timeout=60,
    )  # fmt: skip
    try:
        session = Session(key=b"")
        wait_ready(ws, session)
        reply, seen = execute(ws, session, SETUP)
        assert reply["status"] == "ok", reply
        reply, seen = execute(ws, session, "Answer me, 100% through the gateway.")
        assert reply["status"] == "ok", reply
        # the client sent no stdin: a headless run, one static output
        [output] = [m["content"]["data"] for m in seen if m["msg_type"] == "display_data"]
        assert "Answered through the gateway." in output["text/plain"]
        assert "> Answer me, 100% through the gateway." in output["text/plain"]
        assert 'class="pi-view pi-static' in output["text/html"]
    finally:
        ws.close()
        gateway.request("DELETE", f"/api/kernels/{kernel['id']}")


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is not installed")
def test_jupyterlab_with_gateway_url_shows_the_live_view(gateway: Gateway, tmp_path: Path) -> None:
    playwright_sync = pytest.importorskip("playwright.sync_api")
    from test_browser_kernel import PiLab, run_cell, run_first_cell

    class GatewayLab(PiLab):
        def _write_settings(self, env: dict[str, str]) -> None:
            super()._write_settings(env)
            config = Path(env["JUPYTER_CONFIG_DIR"])
            config.mkdir(parents=True, exist_ok=True)
            (config / "jupyter_server_config.json").write_text(
                json.dumps({"GatewayClient": {"url": gateway.url, "auth_token": gateway.token}})
            )

    expect = playwright_sync.expect
    with GatewayLab(tmp_path / "lab") as lab, playwright_sync.sync_playwright() as p:
        url = lab.write_notebook("gw.ipynb", [SETUP, "Answer me through the gateway."])
        with chromium_page(p, lab, "pi-kernel-gateway-failure.png") as page:
            page.goto(url)
            page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=60_000)
            cells = page.locator(".jp-NotebookPanel .jp-CodeCell")
            run_first_cell(page, cells.nth(0))
            expect(cells.nth(0).locator(".jp-OutputArea")).to_contain_text("setup done", timeout=90_000)
            run_cell(page, cells.nth(1))
            live = cells.nth(1).locator(".pi-view:not(.pi-static)")
            expect(live).to_contain_text("Answered through the gateway.", timeout=30_000)
            expect(cells.nth(1).get_by_role("button", name="Stop")).to_be_visible()
            page.screenshot(path=str(SHOTS / "pi-kernel-gateway-live.png"), full_page=True)
            expect(cells.nth(1).locator(".pi-static")).to_be_visible(timeout=30_000)
    assert "pi" in json.dumps(gateway.get("/api/kernelspecs"))
