"""The package's size rules: every module under 600 lines and every function under 60, so a
module stays readable in one sitting and a function on one screen. A module that grows past
the limit is split by concept (as ``notebook/view/render/`` and ``notebook/view/state.py`` were)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pi_notebook"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_over_600_lines() -> None:
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text("utf-8").splitlines()) for p in modules()}
    long = {name: lines for name, lines in sizes.items() if lines > MAX_MODULE_LINES}
    assert long == {}


def test_no_function_over_60_lines() -> None:
    long = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []


def test_the_limits_are_checked_on_real_files() -> None:
    assert len(modules()) > 50
