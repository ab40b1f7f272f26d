"""Shared fixtures: the loopback HTTP server and a fresh faux provider per test."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from loopback import LoopbackServer

from pi_notebook.ai.faux import FauxRegistration, register_faux_provider


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
