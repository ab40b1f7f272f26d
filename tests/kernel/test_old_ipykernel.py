"""The Pi kernel on the oldest supported ipykernel (6.17, IPython 7.34, in ``.venv-ipykernel6``
made by ``scripts/setup-old-kernel.sh``): installed by that interpreter, it routes cells the
same way and answers a prompt. Skipped when that venv is missing."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pi_kernel_driver import PiKernelUnderTest, install_spec

pytestmark = pytest.mark.kernel

OLD_PYTHON = Path(
    os.environ.get("PI_OLD_KERNEL_PYTHON")
    or Path(__file__).resolve().parents[2] / ".venv-ipykernel6" / "bin" / "python"
)


@pytest.fixture(scope="module")
def old(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PiKernelUnderTest]:
    if not OLD_PYTHON.exists():
        pytest.skip(f"{OLD_PYTHON} missing: run scripts/setup-old-kernel.sh to create it")
    jupyter_path = install_spec(tmp_path_factory.mktemp("old-prefix"), python=str(OLD_PYTHON))
    kernel = PiKernelUnderTest(tmp_path_factory.mktemp("old-pi"), jupyter_path)
    try:
        yield kernel
    finally:
        kernel.close()


def test_the_old_kernel_routes_every_kind_of_cell(old: PiKernelUnderTest) -> None:
    assert old.value("__import__('ipykernel').__version__.startswith('6.')") == "True"
    out = old.run("%%python\nx = (")
    assert (out["status"], out["ename"]) == ("error", "SyntaxError")
    assert old.run("!echo shell")["stdout"].strip() == "shell"
    old.python("faux.set_responses([echo])")
    prompt = "a prompt with 50% and ! in it"
    assert old.run(prompt)["status"] == "ok"
    assert old.value("seen, _pi.text") == f"{[prompt]!r} heard you"
    assert old.run("")["status"] == "ok"
    assert old.run("%pi status")["status"] == "ok"
