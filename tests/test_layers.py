"""The import contract: ``ai`` <- ``agent`` <- (``mcp``, ``session``) <- ``runtime`` <- ``notebook``
<- ``kernel``, no cycles.

Each layer imports only the layers below it, never upwards, not even lazily inside a function
or under ``TYPE_CHECKING``; ``mcp`` (tool sources) and ``session`` (session files) sit side by
side on the agent and never import each other. Only ``notebook`` and ``kernel`` import IPython, ipykernel or
ipywidgets: importing the core in a fresh interpreter loads none of them. And no module of the
package takes part in an import cycle, counting every import the source contains; nor does any
sub-package of ``notebook`` (``run``, ``view``, ``tools`` ...) among the others. ``kernel`` (the
Pi kernel) is the top: it may import all of them, and ``notebook`` may not import it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pi_notebook"
NOTEBOOK_LIBRARIES = ("IPython", "ipykernel", "ipywidgets")
UPPER = ("pi_notebook.runtime", "pi_notebook.notebook", "pi_notebook.kernel")
FORBIDDEN = {
    "ai": ("pi_notebook.agent", "pi_notebook.mcp", "pi_notebook.session", *UPPER, *NOTEBOOK_LIBRARIES),
    "agent": ("pi_notebook.mcp", "pi_notebook.session", *UPPER, *NOTEBOOK_LIBRARIES),
    "mcp": ("pi_notebook.session", *UPPER, *NOTEBOOK_LIBRARIES),
    "session": ("pi_notebook.mcp", *UPPER, *NOTEBOOK_LIBRARIES),
    "runtime": ("pi_notebook.notebook", "pi_notebook.kernel", *NOTEBOOK_LIBRARIES),
    "notebook": ("pi_notebook.kernel",),
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
        "import pi_notebook.session, pi_notebook.runtime.agent_session\n"
        "from pi_notebook import AgentSession\n"
        f"loaded = sorted(m for m in sys.modules if m.split('.')[0] in {NOTEBOOK_LIBRARIES!r})\n"
        "print(','.join(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == ""


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports. ``from . import x`` counts as importing the
    submodule ``x`` only (not the package's ``__init__``), which is how Python resolves it."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join([*base, node.module] if node.module else base)
                else:
                    target = node.module or ""
                subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
                targets = subs if len(subs) == len(node.names) else [target, *subs]
            else:
                continue
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycle_in_the_package() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def notebook_subpackages() -> list[str]:
    return sorted(p.name for p in (PACKAGE / "notebook").iterdir() if (p / "__init__.py").is_file())


def subpackage_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Sub-package of ``notebook`` -> the other sub-packages its modules import (the modules at
    the top of ``notebook``, the extension and the shared state, are left out)."""
    subpackages = set(notebook_subpackages())

    def subpackage(module: str) -> str | None:
        first = module.removeprefix("pi_notebook.notebook.").split(".")[0]
        return first if module.startswith("pi_notebook.notebook.") and first in subpackages else None

    out: dict[str, set[str]] = {name: set() for name in subpackages}
    for module, imported in graph.items():
        source = subpackage(module)
        if source is not None:
            out[source] |= {t for t in map(subpackage, imported) if t is not None and t != source}
    return out


def test_no_import_cycle_between_the_notebook_subpackages() -> None:
    graph = subpackage_graph(import_graph())
    assert {"commands", "run", "view", "tools"} <= set(graph)
    assert graph["run"]  # the graph has edges: the runner imports the view and the tools
    assert cycles(graph) == []
