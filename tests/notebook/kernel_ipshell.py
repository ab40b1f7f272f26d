"""A real IPython ``InteractiveShell`` (no kernel, no terminal) for the magic and tool tests.

IPython keeps one shell per process, so the fixture returns the same instance every time and
resets what the tests change: the extension, the conversations, ``_pi`` and test variables.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from traitlets.config import Config

from pi_notebook.notebook import conversations
from pi_notebook.notebook import load as extension

_shell: InteractiveShell | None = None


def get_shell() -> InteractiveShell:
    global _shell
    if _shell is None:
        os.environ.setdefault("IPYTHONDIR", tempfile.mkdtemp(prefix="pi-ipython-"))
        config = Config()
        config.HistoryManager.hist_file = ":memory:"
        _shell = InteractiveShell.instance(config=config)
    return _shell


@pytest.fixture(name="ip")
def ip_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    """The shell with ``%load_ext pi_notebook`` done; conversations cleared before and after."""
    monkeypatch.delenv("PI_NOTEBOOK_MODEL", raising=False)
    monkeypatch.delenv("PI_NOTEBOOK_HEADLESS", raising=False)
    shell = get_shell()
    shell.autoawait = True
    extension.load_ipython_extension(shell)
    conversations.clear()
    magics = shell.magics_manager.registry.get("PiMagics")
    if magics is not None:
        magics.retries = 0  # a failure shows at once; the retry tests turn retrying on
    before = set(shell.user_ns)
    try:
        yield shell
    finally:
        conversations.clear()
        for name in set(shell.user_ns) - before:
            shell.user_ns.pop(name, None)
        shell.user_ns.pop("_pi", None)
        shell.autoawait = True
        magics = shell.magics_manager.registry.get("PiMagics")
        if magics is not None:
            traits = (
                "model",
                "thinking",
                "system",
                "tools",
                "approve",
                "max_turns",
                "loop_guard",
                "text",
                "plan",
                "raise_on_error",
                "temperature",
                "retry_base_delay",
                "timeout",
                "max_cost",
                "max_total_tokens",
                "max_conversation_cost",
                "max_conversation_tokens",
            )
            for trait in traits:
                setattr(magics, trait, magics.trait_defaults(trait))
            magics.retries = 0


def run(shell: Any, cell: str) -> tuple[Any, Any]:
    """Run ``cell`` like a notebook cell; return (ExecutionResult, captured output)."""
    with capture_output() as captured:
        result = shell.run_cell(cell, store_history=True)
    return result, captured


def outputs(captured: Any) -> list[dict[str, Any]]:
    """The display data dicts published while capturing."""
    return [output.data for output in captured.outputs]
