"""The Pi kernel the kernel-test modules share: installed into a temporary prefix with
``python -m pi_notebook.kernel install --prefix``, found through ``JUPYTER_PATH`` and started by
jupyter_client by its name, one per module (``pi``), handed to each test with fresh
conversations and an empty faux queue (``p``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "notebook"))  # kernel_driver
sys.path.insert(0, str(Path(__file__).parent))

from pi_kernel_driver import PiKernelUnderTest, install_spec


@pytest.fixture(scope="module")
def pi_prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_spec(tmp_path_factory.mktemp("prefix"))


@pytest.fixture(scope="module")
def pi(tmp_path_factory: pytest.TempPathFactory, pi_prefix: Path) -> Iterator[PiKernelUnderTest]:
    started = PiKernelUnderTest(tmp_path_factory.mktemp("pi-kernel"), pi_prefix)
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def p(pi: PiKernelUnderTest) -> PiKernelUnderTest:
    return pi.fresh()
