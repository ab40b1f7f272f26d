"""Agent-test fixtures. Puts this folder on ``sys.path`` so tests can ``import agent_helpers``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pi_notebook.agent import set_default_stream_fn


@pytest.fixture(autouse=True)
def _restore_default_stream_fn() -> Iterator[None]:
    """A test that installs a default stream function must not leak it into the next one."""
    yield
    set_default_stream_fn(None)
