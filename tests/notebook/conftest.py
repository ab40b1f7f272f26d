"""The real kernel the kernel-test modules share: one per module (``kernel``), handed to each
test with fresh conversations and an empty faux queue (``k``). A module may define its own
``kernel`` or ``k`` (the old-kernel tests do), which then wins."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_driver import Kernel


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    started = Kernel(tmp_path_factory.mktemp("kernel"))
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def k(kernel: Kernel) -> Kernel:
    """The module's kernel with fresh conversations and an empty faux queue; a new one when an
    earlier test left it dead or stuck (that test has failed already)."""
    if not kernel.responsive():
        kernel.revive()
    return kernel.fresh()
