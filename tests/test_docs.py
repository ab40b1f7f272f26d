"""The documentation cannot drift from the code: the generated magic reference is current, the
API reference builds with pdoc, the guide's offline walk-through runs in a real kernel, every
environment variable the package reads is in the guide, and every relative link resolves."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GUIDE = DOCS / "guide.md"


def load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the magic reference -------------------------------------------------------------------------


def test_magic_reference_is_current() -> None:
    gen = load_script("gen_magic_reference")
    committed = gen.OUTPUT.read_text(encoding="utf-8") if gen.OUTPUT.exists() else ""
    if committed != gen.render():
        pytest.fail(
            "docs/reference/magic.md is stale: run python scripts/gen_magic_reference.py", pytrace=False
        )


def test_magic_reference_lists_every_option_subcommand_and_trait() -> None:
    from pi_notebook.notebook import magics
    from pi_notebook.notebook.commands import conversation
    from pi_notebook.notebook.config import PARSER

    text = load_script("gen_magic_reference").render()
    options = [s for a in PARSER._actions for s in a.option_strings if s not in ("-h", "--help")]
    assert options, "the parser has no options?"
    rows = [line for line in text.splitlines() if line.startswith("| `-")]
    for option in options:  # paired flags share a row: `--raise-on-error / --no-raise-on-error`
        assert any(f"`{option}" in row or f" / {option}" in row for row in rows), option
    for name in conversation.SUBCOMMANDS:
        assert f"| `{name}` | `%pi {name}" in text, name
    for name, trait in magics.PiMagics.class_traits(config=True).items():
        assert f"| `{name}` |" in text, name
        assert " ".join(trait.help.split()).replace("|", "\\|") in text, name


def test_magic_reference_does_not_depend_on_the_terminal_width() -> None:
    env = {**os.environ, "COLUMNS": "30"}
    script = ROOT / "scripts" / "gen_magic_reference.py"
    result = subprocess.run(
        [sys.executable, str(script), "--check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_help_rows_join_continuations_and_ignore_other_commands() -> None:
    gen = load_script("gen_magic_reference")
    text = "%pi X\n  mcp add NAME -- CMD  start one\n      more words\n  mcpx  other\n  model [M]  set it\n"
    assert gen.help_rows(text, "mcp") == [("mcp add NAME -- CMD", "start one more words")]
    assert gen.help_rows(text, "model") == [("model [M]", "set it")]
    assert gen.help_rows(text, "status") == []


# --- the API reference ---------------------------------------------------------------------------


def test_api_reference_builds_with_the_key_pages(tmp_path: Path) -> None:
    if importlib.util.find_spec("pdoc") is None:
        pytest.fail("pdoc is missing: pip install -e '.[dev]' (it is in the dev extra)", pytrace=False)
    out = tmp_path / "api"
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_api_docs.py"), "--output", str(out)],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    expected = {
        "pi_notebook/ai.html": ["stream_simple", "get_model", "AssistantMessage"],
        "pi_notebook/agent.html": ["Agent", "AgentEvent", "tool"],
        "pi_notebook/session.html": ["SessionManager", "SessionRecorder"],
        "pi_notebook/mcp.html": ["McpManager", "connect"],
        "pi_notebook/runtime.html": ["AgentSession", "RetrySettings", "AgentSessionSettings"],
        "pi_notebook/notebook.html": ["PiMagics", "PiConfig", "NotebookState", "ask_approval"],
    }
    for page, names in expected.items():
        html = (out / page).read_text(encoding="utf-8")
        for name in names:
            assert f'id="{name}"' in html or f">{name}<" in html, f"{name} not documented in {page}"
    index = (out / "index.html").read_text(encoding="utf-8")
    for module in ("ai", "agent", "session", "mcp", "runtime", "notebook"):
        assert f"pi_notebook/{module}.html" in index, module


# --- the guide -----------------------------------------------------------------------------------


def guide_cells() -> list[str]:
    """The ``python`` blocks marked ``<!-- guide-cell -->`` in docs/guide.md, in order."""
    text = GUIDE.read_text(encoding="utf-8")
    return [m.group(1) for m in re.finditer(r"<!-- guide-cell -->\n```python\n(.*?)```", text, re.DOTALL)]


@pytest.mark.kernel
def test_the_guides_offline_walk_through_runs_in_a_kernel(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cells = guide_cells()
    assert len(cells) >= 5, "the guide lost its marked cells"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    # The kernel gets this environment: no API keys, no default model, no forced mode.
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN"))}
    env.pop("PI_NOTEBOOK_MODEL", None)
    env.pop("PI_NOTEBOOK_HEADLESS", None)
    client = nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute(env=env)
    texts = []
    for cell in notebook.cells:
        for output in cell.outputs:
            assert output.output_type != "error", f"{cell.source!r} failed: {output.get('evalue')}"
            texts.append(output.get("text") or output.get("data", {}).get("text/plain", ""))
    joined = "\n".join(texts)
    assert "scripted offline stand-in" in joined  # the unscripted faux model explains itself
    assert "You have a variable `sales`.\nstop\n['user', 'assistant', 'toolResult', 'assistant']" in joined
    assert "model: faux:faux-1" in joined  # %pi status
    assert "toolResult list_variables:" in joined  # %pi history
    assert "6 messages" in joined


# --- the runtime page's examples ----------------------------------------------------------------

RUNTIME = DOCS / "runtime.md"


def runtime_examples() -> list[tuple[str, str]]:
    """docs/runtime.md's ``python`` blocks marked ``<!-- runtime-example -->``, each paired with
    the next ``text`` block marked ``<!-- runtime-output -->``: what the example prints."""
    text = RUNTIME.read_text(encoding="utf-8")
    codes = re.findall(r"<!-- runtime-example -->\n```python\n(.*?)```", text, re.DOTALL)
    outputs = re.findall(r"<!-- runtime-output -->\n```text\n(.*?)```", text, re.DOTALL)
    assert len(codes) == len(outputs), "every runtime example needs its output block"
    return list(zip(codes, outputs, strict=True))


EXAMPLES = runtime_examples()


def test_the_runtime_page_has_its_examples() -> None:
    assert len(EXAMPLES) >= 8, "docs/runtime.md lost its marked examples"


@pytest.mark.parametrize(
    ("code", "expected"), EXAMPLES, ids=[f"example-{n}" for n in range(1, len(EXAMPLES) + 1)]
)
def test_a_runtime_example_prints_what_the_page_says(code: str, expected: str, tmp_path: Path) -> None:
    """Each example runs as a script of its own (its session files in a temporary agent dir,
    no API keys) and must print exactly the output block under it, with nothing on stderr."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN"))}
    env["PI_CODING_AGENT_DIR"] = str(tmp_path / "agent")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected
    assert result.stderr == ""


# --- environment variables and links -------------------------------------------------------------


def package_env_vars() -> set[str]:
    """``PI_...`` and ``..._BASE_URL`` names that appear as string literals in the package."""
    found: set[str] = set()
    for path in (ROOT / "pi_notebook").rglob("*.py"):
        found.update(re.findall(r"[\"'](PI_[A-Z_]+|[A-Z_]+_BASE_URL)[\"']", path.read_text(encoding="utf-8")))
    return found


def test_every_environment_variable_of_the_package_is_in_the_guide() -> None:
    names = package_env_vars()
    assert "PI_NOTEBOOK_MODEL" in names
    assert "OLLAMA_BASE_URL" in names
    guide = GUIDE.read_text(encoding="utf-8")
    missing = sorted(n for n in names if f"`{n}`" not in guide)
    assert not missing, f"docs/guide.md (Environment variables) does not document {', '.join(missing)}"


def test_every_provider_key_variable_is_in_the_guide() -> None:
    from pi_notebook.ai.env import ENV_API_KEYS

    guide = GUIDE.read_text(encoding="utf-8")
    for provider, names in ENV_API_KEYS.items():
        for name in names:
            generic = name == provider.upper().replace("-", "_") + "_API_KEY"
            assert f"`{name}`" in guide or (generic and f"`{provider}`" in guide), name


LINK = re.compile(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)")


def anchors(doc: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.DOTALL)
    headings = re.findall(r"^#+ (.+)$", text, re.MULTILINE)
    rendered = [re.sub(r"(`+) ?(.+?) ?\1", r"\2", h).strip().lower() for h in headings]  # code spans
    return {re.sub(r"[^\w\- ]", "", h).replace(" ", "-") for h in rendered}


@pytest.mark.parametrize(
    "doc",
    [*sorted(DOCS.glob("*.md")), DOCS / "reference" / "magic.md", ROOT / "README.md"],
    ids=lambda p: p.name,
)
def test_relative_links_and_anchors_resolve(doc: Path) -> None:
    for target, anchor in LINK.findall(doc.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        path = (doc.parent / target) if target else doc
        assert path.exists(), f"{doc.name}: broken link {target}"
        if anchor and path.suffix == ".md":
            assert anchor in anchors(path), f"{doc.name}: no heading for {target}#{anchor}"


def test_the_index_maps_every_document() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    for doc in DOCS.glob("*.md"):
        if doc.name != "index.md":
            assert f"]({doc.name})" in index, doc.name
    assert "](reference/magic.md)" in index
    assert "python scripts/build_api_docs.py" in index
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/index.md" in readme
