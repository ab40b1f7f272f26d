"""The import-direction contract (DESIGN.md section 1): ``ai`` <- ``agent`` <- ``notebook``.

``pi_notebook.ai`` imports neither the agent nor the notebook layer, ``pi_notebook.agent`` never
imports the notebook layer, and neither imports IPython, ipykernel or ipywidgets, not even
lazily inside a function. Importing the agent core in a fresh interpreter loads none of them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pi_notebook"
NOTEBOOK_LIBRARIES = ("IPython", "ipykernel", "ipywidgets")
FORBIDDEN = {
    "ai": ("pi_notebook.agent", "pi_notebook.notebook", "pi_notebook.session", *NOTEBOOK_LIBRARIES),
    "agent": ("pi_notebook.notebook", "pi_notebook.session", *NOTEBOOK_LIBRARIES),
    "mcp": ("pi_notebook.notebook", "pi_notebook.session", *NOTEBOOK_LIBRARIES),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports, relative imports resolved to absolute names."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            # ``from . import agent`` names a submodule through the alias
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return found


def violations(layer: str) -> list[str]:
    out = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for line, target in imported_modules(path):
            for forbidden in FORBIDDEN[layer]:
                if target == forbidden or target.startswith(forbidden + "."):
                    out.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}")
    return out


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_only_downwards(layer: str) -> None:
    assert (PACKAGE / layer).is_dir()
    assert violations(layer) == []


def test_resolution_of_relative_imports_is_checked() -> None:
    """The checker itself: a relative upward import would be caught."""
    probe = PACKAGE / "ai" / "event_stream.py"
    targets = {t for _, t in imported_modules(probe)}
    assert "pi_notebook.ai.events" in targets  # ``from .events import ...`` resolved


def test_importing_the_agent_core_loads_no_notebook_library() -> None:
    code = (
        "import sys, pi_notebook.agent, pi_notebook.ai, pi_notebook.ai.faux, pi_notebook.mcp\n"
        f"loaded = sorted(m for m in sys.modules if m.split('.')[0] in {NOTEBOOK_LIBRARIES!r})\n"
        "print(','.join(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == ""
