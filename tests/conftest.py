"""Shared fixtures: the loopback HTTP server and a fresh faux provider per test.

Session files written while testing go to a temporary agent dir, never to the user's
``~/.pi/agent``: every ``%%pi`` conversation is recorded by default. Set at configure time, so
the kernels and notebooks the tests start (and the nbval kernels of ``notebooks/`` in the same
pytest run) inherit it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from loopback import LoopbackServer
from wheel_venv import WheelVenv, install_wheel

from pi_notebook.ai.faux import FauxRegistration, register_faux_provider

_KEYS = ("PI_CODING_AGENT_DIR", "PI_NOTEBOOK_SESSION_DIR")
_saved: dict[str, str | None] = {}
_created: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    _saved.update({k: os.environ.get(k) for k in _KEYS})
    root = tempfile.mkdtemp(prefix="pi-agent-test-")
    _created.append(root)
    os.environ["PI_CODING_AGENT_DIR"] = root
    os.environ.pop("PI_NOTEBOOK_SESSION_DIR", None)


BROWSER_TIMEOUT_S = 480
"""A browser test's limit: JupyterLab or Notebook 7 started, Chromium driven through several
cells, on a shared 2-core machine. Everything else has the ``timeout`` of pyproject.toml."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("browser") is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(BROWSER_TIMEOUT_S))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the JupyterLab servers the browser tests shared (``notebook/browser_lab.py``)."""
    browser_lab = sys.modules.get("browser_lab")
    if browser_lab is not None:
        browser_lab.stop_idle_servers()


def pytest_unconfigure(config: pytest.Config) -> None:
    for key, value in _saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    for root in _created:
        shutil.rmtree(root, ignore_errors=True)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--module-durations",
        type=int,
        default=0,
        metavar="N",
        help="after the run, the N test files (modules, notebooks) that took longest, setup included",
    )


def _module_durations(terminalreporter: Any, top: int) -> None:
    """What each test file cost (setup, call and teardown of its tests), slowest first: where a
    slow CI run's minutes went."""
    seconds: dict[str, float] = {}
    tests: dict[str, set[str]] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            nodeid, duration = getattr(report, "nodeid", ""), getattr(report, "duration", None)
            if not nodeid or not isinstance(duration, float):
                continue
            path = nodeid.split("::")[0]
            seconds[path] = seconds.get(path, 0.0) + duration
            tests.setdefault(path, set()).add(nodeid)
    ranked = sorted(seconds.items(), key=lambda item: -item[1])[:top]
    terminalreporter.write_sep("=", f"time by test file ({sum(seconds.values()):.0f} s in all)")
    for path, total in ranked:
        terminalreporter.write_line(f"{total:8.1f} s {len(tests[path]):5d} tests  {path}")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """One line per fault matrix whose tests ran (the ``MATRIX_SUMMARY`` of its test module), and
    with ``--module-durations N`` the N slowest test files."""
    top = config.getoption("--module-durations", 0)
    if top:
        _module_durations(terminalreporter, top)
    ran = {
        getattr(report, "nodeid", "").split("::")[0]
        for reports in terminalreporter.stats.values()
        for report in reports
    }
    summaries: dict[str, str] = {}  # by file: a module may be imported under two names
    for module in list(sys.modules.values()):
        summary, path = getattr(module, "MATRIX_SUMMARY", None), getattr(module, "__file__", None)
        if isinstance(summary, str) and path and os.path.relpath(path, config.rootpath) in ran:
            summaries[os.path.realpath(path)] = summary
    for summary in summaries.values():
        terminalreporter.write_line(summary)


@pytest.fixture(scope="session")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> WheelVenv:
    """This checkout's wheel installed into a fresh venv (``wheel_venv.py``), built once for the
    session: ``test_wheel_install.py`` and the wheel-backed Chromium edit test share it. The first
    test that asks for it pays the build (10-70 s) in its own time limit. Under pytest-xdist
    (``-n 2``) the workers share one build too (``_shared_wheel_venv``)."""
    if "PYTEST_XDIST_WORKER" in os.environ:
        return _shared_wheel_venv(tmp_path_factory.getbasetemp().parent)
    return install_wheel(tmp_path_factory.mktemp("wheel-install"))


def _shared_wheel_venv(run_root: Path) -> WheelVenv:
    """The build in the temp dir all xdist workers of this run share, made by the first worker
    to ask under an exclusive lock while the others wait (bounded by their tests' time limits:
    pytest-timeout interrupts the wait). A failed build leaves no marker, so the next asker
    builds again and fails its own test."""
    import fcntl
    import json

    where, marker = run_root / "wheel-install", run_root / "wheel-install.json"
    with (run_root / "wheel-install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if marker.exists():
                made = json.loads(marker.read_text())
                return WheelVenv(Path(made["where"]), made["env"])
            shutil.rmtree(where, ignore_errors=True)
            where.mkdir()
            venv = install_wheel(where)
            marker.write_text(json.dumps({"where": str(venv.where), "env": venv.env}))
            return venv
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture
def private_agent_dir() -> Path:
    """The temporary agent dir of this test run."""
    return Path(os.environ["PI_CODING_AGENT_DIR"])


@pytest.fixture
async def loopback() -> AsyncIterator[LoopbackServer]:
    server = LoopbackServer()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def faux() -> Iterator[FauxRegistration]:
    """A faux provider with a fixed chunk size (1 token = 4 characters), unregistered after."""
    registration = register_faux_provider(token_size={"min": 1, "max": 1})
    try:
        yield registration
    finally:
        registration.unregister()
