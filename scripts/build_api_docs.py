"""Build the HTML API reference of pi_notebook from its docstrings with pdoc (offline).

    python scripts/build_api_docs.py                  # writes build/api/ (git-ignored)
    python scripts/build_api_docs.py --output DIR     # elsewhere

Open ``build/api/index.html`` in a browser. The pages of ``ai``, ``agent``, ``session`` and
``mcp`` show the names in each package's ``__all__``; ``notebook`` has no ``__all__``, so
each of its modules gets a page. The generated HTML is never committed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = ROOT / "build" / "api"
MODULES = (
    "pi_notebook.ai",
    "pi_notebook.agent",
    "pi_notebook.session",
    "pi_notebook.mcp",
    "pi_notebook.runtime",
    "pi_notebook.notebook",
)


def command(output: Path) -> list[str]:
    """The pdoc command line (run with the current interpreter, so the venv's pdoc is used)."""
    return [
        sys.executable, "-m", "pdoc",
        "--docformat", "restructuredtext",  # the docstrings use ``code`` and *emphasis*
        "--footer-text", "pi_notebook API reference",
        "--output-directory", str(output),
        *MODULES,
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the pi_notebook API reference with pdoc.")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="output directory")
    args = parser.parse_args(argv)
    # pdoc warns on annotations it cannot evaluate (names imported only for type checking); it
    # then shows the annotation as written, so the warnings are kept visible but are harmless.
    result = subprocess.run(command(args.output), cwd=ROOT, check=False)
    if result.returncode == 0:
        print(f"API reference written to {args.output / 'index.html'}")
    return result.returncode


if __name__ == "__main__":
    raise SystemExit(main())
