"""``pi_notebook.session`` imports ``ai`` and ``agent`` only: never the notebook layer or IPython."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SESSION = Path(__file__).resolve().parent.parent.parent / "pi_notebook" / "session"
FORBIDDEN = ("pi_notebook.notebook", "IPython", "ipykernel", "ipywidgets")


def test_no_forbidden_imports_in_the_source() -> None:
    bad = []
    for path in sorted(SESSION.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level >= 2:  # ``from ..notebook import x``
                    base = f"pi_notebook.{base}"
                names = [base] + [f"{base}.{a.name}" for a in node.names]
            bad += [f"{path.name}:{node.lineno} {n}" for n in names if n.startswith(FORBIDDEN)]
    assert bad == []


def test_importing_the_session_layer_loads_no_notebook_library() -> None:
    code = (
        "import sys, pi_notebook.session;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('IPython', 'ipykernel', 'ipywidgets')"
        " or m.startswith('pi_notebook.notebook')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
