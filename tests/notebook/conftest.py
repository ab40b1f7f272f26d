"""Session files written by the notebook tests go to a temporary agent dir, never to the
user's ``~/.pi/agent``: every conversation is recorded by default, and kernels started by the
tests inherit this environment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def private_agent_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("pi-agent")
    saved = {k: os.environ.get(k) for k in ("PI_CODING_AGENT_DIR", "PI_NOTEBOOK_SESSION_DIR")}
    os.environ["PI_CODING_AGENT_DIR"] = str(root)
    os.environ.pop("PI_NOTEBOOK_SESSION_DIR", None)
    try:
        yield root
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
