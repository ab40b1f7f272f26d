"""Fixtures of the fault tests: an HTTP client per test and a record of the loop's stray errors."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

# One SSL context for every client: building one per test costs ~0.1 s (nothing here uses TLS,
# but httpx builds the context when the client is made).
SSL_CONTEXT = ssl.create_default_context()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(verify=SSL_CONTEXT) as http:
        yield http


@pytest.fixture
async def loop_errors() -> AsyncIterator[list[dict[str, Any]]]:
    """Whatever reaches the event loop's exception handler during the test (a task that died
    with an unretrieved exception, a callback that raised): a fault must not leak one."""
    loop = asyncio.get_running_loop()
    errors: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    try:
        yield errors
    finally:
        loop.set_exception_handler(previous)
