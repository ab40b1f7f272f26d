"""``jupyter console --kernel pi`` as a user types into it, in a tmux pane: the console starts
the installed kernelspec, a ``%%python`` cell ends at one empty line, a prompt streams as text,
the approval is a ``[y/N]`` question answered on the terminal, the tool's result is printed
under its line, and the footer's elapsed time is the run's.

tmux draws what prompt_toolkit writes as a terminal would; the test reads the screen
(``capture-pane``). Every wait is bounded; the tmux server is this test's own socket."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_driver import SETUP
from pi_kernel_driver import pi_env

pytestmark = [
    pytest.mark.kernel,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)"),
]

ANSWER = "the code printed forty-two " * 6  # ~40 tokens at 40 a second: about a second


class Pane:
    """One tmux server (its own socket) running one command in a 120x50 pane."""

    def __init__(self, root: Path, script: Path) -> None:
        self.socket = str(root / "tmux.sock")
        self._tmux("new-session", "-d", "-x", "120", "-y", "50", f"bash {shlex.quote(str(script))}")
        self._tmux("set-option", "-g", "history-limit", "5000")

    def _tmux(self, *args: str) -> str:
        command = ["tmux", "-S", self.socket, *args]
        done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=20)
        return done.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-S", "-3000")

    def keys(self, *keys: str) -> None:
        for key in keys:
            if key == "Enter":
                self._tmux("send-keys", "Enter")
            else:
                self._tmux("send-keys", "-l", key)
            time.sleep(0.15)  # the console asks the kernel is_complete on each Enter

    def wait_for(self, pattern: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if re.search(pattern, screen):
                return screen
            time.sleep(0.2)
        raise TimeoutError(f"{pattern!r} not on the screen in {timeout} s; the screen:\n{self.screen()}")

    def close(self) -> None:
        self._tmux("kill-server")


@pytest.fixture
def console(tmp_path: Path, pi_prefix: Path) -> Iterator[Pane]:
    env = pi_env(tmp_path, pi_prefix)
    env.update(TERM="xterm-256color", PI_NOTEBOOK_MODEL="faux:faux-1", PYDEVD_DISABLE_FILE_VALIDATION="1")
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items() if k.isidentifier())
    script = tmp_path / "console.sh"
    script.write_text(
        exports
        + f"cd {shlex.quote(str(tmp_path))}\n"
        + f"exec {shlex.quote(sys.executable)} -m jupyter_console --kernel pi --ip 127.0.0.1 "
        "--ZMQTerminalIPythonApp.confirm_exit=False "
        "--ZMQTerminalInteractiveShell.kernel_is_complete_timeout=10\n"
    )
    (tmp_path / "setup.py").write_text(SETUP.replace("%load_ext pi_notebook\n", ""))
    pane = Pane(tmp_path, script)
    try:
        yield pane
    finally:
        try:
            pane.keys("exit", "Enter")  # the console shuts its kernel down
            time.sleep(1)
        finally:
            pane.close()  # the kernel also ends when its parent does (ipykernel's parent poller)


def test_a_run_in_jupyter_console(console: Pane) -> None:
    console.wait_for(r"In \[1\]:", timeout=90)
    # one empty line ends a %%python cell, as the docs say
    console.keys("%%python", "Enter", "exec(open('setup.py').read())", "Enter", "Enter")
    console.wait_for(r"In \[2\]:")
    responses = f"[tool_use('run_code', {{'code': 'print(6 * 7)'}}, 'r1'), {ANSWER.strip()!r}]"
    console.keys("%%python", "Enter", f"faux.set_responses({responses})", "Enter", "Enter")
    console.wait_for(r"In \[3\]:")
    console.keys("run the code", "Enter")
    console.wait_for(r"Approve run_code\? \[y/N\]")
    console.keys("y", "Enter")
    screen = console.wait_for(r"In \[4\]:")
    lines = screen.splitlines()
    at = lines.index("[tool] run_code: done")
    assert lines[at + 1 : at + 3] == ["    stdout:", "    42"], screen
    assert ANSWER.strip() in screen
    [footer] = [line for line in lines if line.startswith("2 turns · ")]
    elapsed = float(re.search(r" · ([\d.]+) s · ", footer).group(1))  # type: ignore[union-attr]
    assert elapsed >= 0.8, footer  # the answer streamed for about a second
