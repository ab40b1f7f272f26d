"""No import cycle inside ``pi_notebook.ai``, counting every import statement: module level,
inside functions and under ``if TYPE_CHECKING:`` (a cycle there still couples the two modules,
and moving the import to run time would break).

The graph has one node per module file; ``from .x import y`` is an edge to ``x`` (and to
``x.y`` when that is a module of its own). A submodule's implicit import of its parent package
is not an edge, or every submodule would be in a cycle with the package's ``__init__``.

Run as a script (``python tests/ai/test_import_cycles.py [package dir]``) to print the cycles.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

AI = Path(__file__).resolve().parents[2] / "pi_notebook" / "ai"


def _module_name(path: Path, top: Path) -> str:
    parts = path.relative_to(top).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules under ``root`` it imports (relative imports resolved)."""
    top = root.parent  # module names are absolute: climb out of every enclosing package
    while (top / "__init__.py").exists():
        top = top.parent
    files = {_module_name(p, top): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
            graph[name].update(t for t in targets if t in files and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_pi_notebook_ai_has_no_import_cycle() -> None:
    graph = import_graph(AI)
    assert "pi_notebook.ai.providers.openai_completions" in graph  # the walk found the providers
    assert "pi_notebook.ai.types" in graph["pi_notebook.ai.event_stream"]
    assert cycles(graph) == []


def test_a_cycle_through_a_type_checking_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from .a import A\n")
    (package / "a.py").write_text("from .sub import b\nclass A: ...\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import A\n"
    )
    (package / "c.py").write_text("def f():\n    from . import d\n")
    (package / "d.py").write_text("import pkg.c\n")
    assert cycles(import_graph(package)) == [["pkg.a", "pkg.sub.b"], ["pkg.c", "pkg.d"]]


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else AI
    found = cycles(import_graph(root))
    for component in found:
        print("cycle:", " <-> ".join(component))
    print(f"{len(found)} import cycle(s) in {root}")
