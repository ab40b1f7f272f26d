"""The first example of ``docs/agent.md`` runs as printed: without an API key it reads the failed
run from the last assistant message and prints exactly the output the page shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "agent.md"


def _example_and_output() -> tuple[str, str]:
    text = DOC.read_text("utf-8")
    code = re.search(r"```python\n(.*?)```", text, re.DOTALL)
    printed = re.search(r"the example prints\n\n```\n(.*?)```", text, re.DOTALL)
    assert code is not None, "docs/agent.md lost its first example"
    assert printed is not None, "docs/agent.md lost the example's printed output"
    return code.group(1), printed.group(1)


def test_agent_doc_example_prints_the_documented_failure_without_a_key(tmp_path: Path) -> None:
    code, printed = _example_and_output()
    script = tmp_path / "example.py"
    script.write_text(code, "utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed
