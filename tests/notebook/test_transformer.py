"""The ``%%pi`` input transformer on a real ``InteractiveShell``: exact token matching,
comments before ``%%pi``, NBVAL marker lines, quoting, autoawait off, load/unload."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture  # noqa: F401

from pi_notebook.notebook import load as extension
from pi_notebook.notebook.load import split_pi_cell
from pi_notebook.notebook.run.plan import strip_markers


def lines(cell: str) -> list[str]:
    return cell.splitlines(keepends=True)


def call_args(transformed: str) -> tuple[str, str]:
    """The (line, body) literals of the emitted ``run_pi``/``run_cell_magic`` call."""
    tree = ast.parse(transformed.strip(), mode="exec")
    statement = tree.body[0]
    assert isinstance(statement, ast.Expr)
    node = statement.value
    if isinstance(node, ast.Await):
        node = node.value
    assert isinstance(node, ast.Call)
    *_, line, body = (ast.literal_eval(arg) for arg in node.args)
    return line, body


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("%%pi\nhello\n", ("", "hello\n")),
        ("%%pi --model faux:faux-1 --new\nhi\nthere", ("--model faux:faux-1 --new", "hi\nthere")),
        ("# NBVAL_IGNORE_OUTPUT\n%%pi --text\nq\n", ("--text", "q\n")),
        ("# a comment\n\n   # indented comment\n%%pi\nq", ("", "q")),
        ("%%pi\t--text\nq", ("--text", "q")),
        ("%%pi", ("", "")),
    ],
)
def test_split_matches_pi_cells(cell: str, expected: tuple[str, str]) -> None:
    assert split_pi_cell(lines(cell)) == expected


@pytest.mark.parametrize(
    "cell",
    [
        "%%pi_sync\nhello\n",
        "%%pie\nhello",
        "%%%pi\nhello",
        "%pi status\n",
        "x = 1\n%%pi\nhello",
        "print('%%pi')\n",
        "# only a comment\n",
        "",
    ],
)
def test_split_leaves_other_cells_alone(cell: str) -> None:
    assert split_pi_cell(lines(cell)) is None


def test_transform_emits_one_awaited_call_with_exact_literals(ip: Any) -> None:
    body = "Fix {x: 1 for x in y}\nquote ' \" and \\n backslash\n# NBVAL_SKIP\n"
    transformed = ip.transform_cell(f"# NBVAL_IGNORE_OUTPUT\n%%pi --system 'be brief'\n{body}")
    assert transformed.startswith("await _pi_run(")  # what a traceback or In[n] shows
    assert transformed.count("\n") == 1
    assert call_args(transformed) == ("--system 'be brief'", body)
    assert ip.should_run_async(transformed, transformed_cell=transformed)


def test_a_pi_cell_typed_in_a_terminal_waits_for_its_blank_line(ip: Any) -> None:
    """``check_complete`` is what IPython's terminal and ``jupyter console`` (through the
    kernel's is_complete reply) ask before Enter runs the input: a ``%%pi`` line alone ran at
    once ("%%pi needs a prompt") and a prompt could not be typed below it."""
    check = ip.input_transformer_manager.check_complete
    assert check("%%pi --model faux:faux-1\n") == ("incomplete", 0)
    assert check("%%pi --model faux:faux-1\nWhat is in df?\n") == ("incomplete", 0)
    assert check("%%pi --model faux:faux-1\nWhat is in df?\n\n") == ("complete", None)
    assert check("x = 1\n") == ("complete", None)


def test_other_magics_and_code_pass_untouched(ip: Any) -> None:
    assert "run_cell_magic('pi_sync'" in ip.transform_cell("%%pi_sync\nhello\n")
    code = "d = {k: v for k, v in {'a': 1}.items()}\n"
    assert ip.transform_cell(code) == code


def test_autoawait_off_becomes_the_cell_magic_fallback(ip: Any) -> None:
    ip.autoawait = False
    transformed = ip.transform_cell("# NBVAL_SKIP\n%%pi --text\nhello\n")
    assert transformed.startswith("get_ipython().run_cell_magic('pi',")
    assert call_args(transformed) == ("--text", "hello\n")


def test_load_twice_keeps_one_transformer_and_unload_removes_everything(ip: Any) -> None:
    extension.load_ipython_extension(ip)
    extension.load_ipython_extension(ip)
    ours = [t for t in ip.input_transformers_cleanup if getattr(t, "__pi_notebook_transformer__", False)]
    assert len(ours) == 1
    assert "pi" in ip.magics_manager.magics["cell"]
    assert "pi" in ip.magics_manager.magics["line"]
    extension.unload_ipython_extension(ip)
    try:
        assert not any(
            getattr(t, "__pi_notebook_transformer__", False) for t in ip.input_transformers_cleanup
        )
        assert "pi" not in ip.magics_manager.magics["cell"]
        assert "pi" not in ip.magics_manager.magics["line"]
        assert ip.transform_cell("%%pi\nhello\n").startswith("get_ipython().run_cell_magic('pi'")
    finally:
        extension.load_ipython_extension(ip)


def test_top_level_package_loads_the_extension(ip: Any) -> None:
    extension.unload_ipython_extension(ip)
    ip.run_line_magic("load_ext", "pi_notebook")
    assert ip.transform_cell("%%pi\nx\n").startswith("await ")


def test_strip_markers_drops_only_nbval_lines() -> None:
    body = "# NBVAL_IGNORE_OUTPUT\nexplain\n  #   NBVAL_CHECK_OUTPUT extra\n# a normal comment\nend"
    assert strip_markers(body) == "explain\n# a normal comment\nend"


def test_the_transformed_cell_names_a_run_function_in_the_namespace(ip: Any) -> None:
    from pi_notebook.notebook.run.cell import run_pi

    ip.user_ns.pop("_pi_run", None)  # e.g. after %reset
    ip.transform_cell("%%pi\nhello\n")
    assert ip.user_ns["_pi_run"] is run_pi
    assert "_pi_run" in ip.user_ns_hidden  # not listed by %who
