"""Helpers of the MCP tests: the test server's command, the HTTP server subprocess, and
checks on child processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from pi_notebook.mcp import McpServer

SERVER_APP = str(Path(__file__).with_name("server_app.py"))
STDIO_COMMAND = [sys.executable, SERVER_APP, "stdio"]
TOKEN_VARIABLE = "PI_MCP_TEST_TOKEN"
TOKEN_VALUE = "s3cret-token-value"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the HTTP test server exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the HTTP test server did not start listening")


def pid_of(server: McpServer) -> int:
    """The stdio server's pid, from the line it writes to stderr at start."""
    for line in server.stderr_tail(200):
        if line.startswith("server_app pid="):
            return int(line.split("=", 1)[1])
    raise AssertionError(f"no pid line in stderr: {server.stderr_tail(200)}")


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers signal 0; it is gone once its status says so
    try:
        with open(f"/proc/{pid}/status") as status:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in status)
    except FileNotFoundError:
        return False


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process_exists(pid):
            return True
        time.sleep(0.05)
    return False


class HttpServer:
    """The test server over Streamable HTTP in a subprocess; its stderr goes to a file."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = log
        with log.open("wb") as sink:
            self.process = subprocess.Popen(
                [sys.executable, SERVER_APP, "http", str(self.port)], stdout=subprocess.DEVNULL, stderr=sink
            )

    def stderr(self) -> str:
        return self.log.read_text("utf-8", "replace")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
