"""The notebook tools against a real ``InteractiveShell``: bounded summaries, secret redaction,
history and notebook reading, code execution with captured output, cell insertion, assignment."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kernel_ipshell import ip_fixture, run  # noqa: F401

from pi_notebook.agent.types import AgentToolResult
from pi_notebook.notebook.host.interrupts import watch_sigint
from pi_notebook.notebook.state import state_for
from pi_notebook.notebook.tools.notebook_tools import (
    NOTEBOOK_TOOL_NAMES,
    NotebookTools,
    is_notebook_tool,
    parse_tools_spec,
)
from pi_notebook.notebook.tools.references import (
    expand_references,
    format_references,
    one_line,
    redact_text,
    summarize,
)

FAKE_KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def call(tools: NotebookTools, tool_name: str, **args: Any) -> AgentToolResult:
    tool = next(t for t in tools.build([tool_name]) if t.name == tool_name)
    return asyncio.run(tool.execute("call-1", args, None, None))  # type: ignore[arg-type]


def text_of(result: AgentToolResult) -> str:
    return "\n".join(b.text for b in result.content if b.type == "text")


@pytest.fixture
def tools(ip: Any) -> NotebookTools:
    return state_for(ip).tools  # the shell's tools read the error log the extension feeds


# --- spec ---------------------------------------------------------------------------------------


def test_tools_spec_groups_names_and_errors() -> None:
    assert parse_tools_spec("all") == list(NOTEBOOK_TOOL_NAMES)
    assert parse_tools_spec("none") == []
    assert parse_tools_spec("read") == ["list_variables", "inspect_variable", "read_cells", "read_notebook"]
    assert parse_tools_spec("read_cells, run_code,read_cells") == ["read_cells", "run_code"]
    with pytest.raises(ValueError, match="unknown tool 'rm_rf'"):
        parse_tools_spec("read,rm_rf")


def test_built_tools_are_marked_and_state_changers_are_sequential(tools: NotebookTools) -> None:
    built = {t.name: t for t in tools.build(list(NOTEBOOK_TOOL_NAMES))}
    assert list(built) == list(NOTEBOOK_TOOL_NAMES)
    assert all(is_notebook_tool(t) for t in built.values())
    assert {n for n, t in built.items() if t.execution_mode == "sequential"} == {
        "run_code",
        "insert_cell",
        "set_variable",
        "insert_cells",
        "edit_cell",
        "delete_cells",
        "run_cell",
    }
    schema = built["run_code"].to_tool().parameters
    assert schema["required"] == ["code"]


# --- list / inspect -------------------------------------------------------------------------


def test_list_variables_summarises_and_hides_private_modules_and_secrets(
    ip: Any, tools: NotebookTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_TEST_SECRET_VALUE", "env-value-must-not-leak")
    ip.user_ns.update(
        {
            "df_rows": list(range(1000)),
            "_private": 1,
            "OPENAI_API_KEY": FAKE_KEY,
            "db_password": "hunter2",
            "harmless": "hello",
            "env": os.environ,
            "json": json,
        }
    )
    out = text_of(call(tools, "list_variables"))
    assert "df_rows: list = 1000 items: [0, 1, 2," in out
    assert "harmless: str = 'hello'" in out
    assert "_private" not in out
    assert "json:" not in out
    assert FAKE_KEY not in out
    assert "hunter2" not in out
    assert "env-value-must-not-leak" not in out
    assert "OPENAI_API_KEY: str = <hidden" in out
    assert "env: _Environ = environment (values hidden)" in out
    assert "json: module" in text_of(call(tools, "list_variables", include_modules=True, pattern="JSO"))


def test_inspect_variable_is_bounded_and_redacts(ip: Any, tools: NotebookTools) -> None:
    ip.user_ns.update(
        {
            "config": {"model": "gpt", "api_key": FAKE_KEY, "nested": {"auth_token": "t0k"}},
            "note": f"please use {FAKE_KEY} for this",
            "big": "x" * 100_000,
        }
    )
    shown = text_of(call(tools, "inspect_variable", name="config"))
    assert "'model': 'gpt'" in shown
    assert "'api_key': <hidden>" in shown
    assert "'auth_token': <hidden>" in shown
    assert FAKE_KEY not in shown
    assert "t0k" not in shown
    note = text_of(call(tools, "inspect_variable", name="note"))
    assert FAKE_KEY not in note
    assert "[REDACTED]" in note
    big = text_of(call(tools, "inspect_variable", name="big", max_chars=500))
    assert len(big) <= 520
    assert "100000 chars" in big


def test_inspect_variable_attributes_and_refusals(ip: Any, tools: NotebookTools) -> None:
    class Box:
        def __init__(self) -> None:
            self.inner = [1, 2, 3]
            self.secret_key = "abc"

    ip.user_ns["box"] = Box()
    assert "list, 3 items: [1, 2, 3]" in text_of(call(tools, "inspect_variable", name="box.inner"))
    assert "hidden" in text_of(call(tools, "inspect_variable", name="box.secret_key"))
    for bad in ("box._secret", "os.environ._data", "1+1", "box.inner[0]"):
        with pytest.raises(ValueError, match="not a variable name"):
            call(tools, "inspect_variable", name=bad)
    with pytest.raises(ValueError, match="No variable named 'missing'"):
        call(tools, "inspect_variable", name="missing")


def test_environ_is_never_read(ip: Any, tools: NotebookTools, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_TEST_VISIBLE", "value-from-env")
    ip.run_cell("import os as _os_mod\nenvcopy = _os_mod.environ")
    assert "value-from-env" not in text_of(call(tools, "inspect_variable", name="envcopy"))
    assert "value-from-env" not in summarize({"env": os.environ})


def test_a_secret_value_is_hidden_under_any_name(
    ip: Any, tools: NotebookTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key in no known format, copied from a secret-named variable of the environment or the
    notebook to an innocent name, is hidden by value in every tool result and reference."""
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plain-7f3a9c2e-token")
    ip.user_ns["db_password"] = "horse-battery-staple"
    ip.run_cell("import os\ncreds = os.environ['MY_SERVICE_TOKEN']\nsettings = {'pw': db_password}")
    shown = text_of(call(tools, "inspect_variable", name="creds"))
    assert "plain-7f3a9c2e-token" not in shown
    assert "[REDACTED]" in shown
    assert "horse-battery-staple" not in text_of(call(tools, "list_variables"))
    _, refs = expand_references("look at $`settings` and $`creds.upper().lower()`", ip.user_ns)
    attached = format_references(refs)
    assert "horse-battery-staple" not in attached
    assert "plain-7f3a9c2e-token" not in attached
    assert attached.count("[REDACTED]") == 2


def test_summaries_are_capped() -> None:
    nested = {"level": [{"deep": list(range(100))} for _ in range(100)]}
    text = summarize(nested, limit=300)
    assert len(text) <= 300
    assert len(one_line("y" * 10_000)) <= 100
    assert redact_text(f"key={FAKE_KEY}; gh=ghp_{'a' * 36}") == "key=[REDACTED]; gh=[REDACTED]"


def test_pandas_dataframe_summary_when_installed(ip: Any, tools: NotebookTools) -> None:
    pd = pytest.importorskip("pandas")
    ip.user_ns["frame"] = pd.DataFrame({"a": range(1000), "b": ["x"] * 1000})
    shown = text_of(call(tools, "inspect_variable", name="frame"))
    assert "DataFrame with 1,000 rows x 2 columns" in shown
    assert "a: int64" in shown
    assert len(shown) < 2100


def test_numpy_array_summary_when_installed(ip: Any, tools: NotebookTools) -> None:
    np = pytest.importorskip("numpy")
    ip.user_ns["arr"] = np.arange(1_000_000).reshape(1000, 1000)
    shown = text_of(call(tools, "inspect_variable", name="arr"))
    assert "shape=(1000, 1000)" in shown
    assert "..." in shown
    assert len(shown) < 2100


# --- history and notebook ---------------------------------------------------------------------


def test_read_cells_has_sources_outputs_and_errors(ip: Any, tools: NotebookTools) -> None:
    run(ip, "alpha = 41")
    run(ip, "alpha + 1")
    run(ip, "1/0")
    out = text_of(call(tools, "read_cells", last=3))
    assert "alpha = 41" in out
    assert "Out[" in out
    assert "int: 42" in out
    assert "Error[" in out
    assert "ZeroDivisionError: division by zero" in out
    count = ip.execution_count - 1
    only = call(tools, "read_cells", start=count, end=count)
    assert only.details == {"cells": [count], "images": 0}
    assert "1/0" in text_of(only)


def test_read_notebook_reads_the_session_file_or_falls_back(
    ip: Any, tools: NotebookTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    ip.user_ns.pop("__session__", None)
    fallback = call(tools, "read_notebook")
    assert fallback.details["source"] == "history"
    assert "unknown to the kernel" in text_of(fallback)

    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": ["# Title\n", "intro"], "metadata": {}},
            {
                "cell_type": "code",
                "source": "x = 1\nx",
                "execution_count": 3,
                "metadata": {},
                "outputs": [{"output_type": "execute_result", "data": {"text/plain": "1"}, "metadata": {}}],
            },
            {
                "cell_type": "code",
                "source": "boom()",
                "execution_count": 4,
                "metadata": {},
                "outputs": [
                    {"output_type": "error", "ename": "NameError", "evalue": "boom", "traceback": []}
                ],
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "analysis.ipynb"
    path.write_text(json.dumps(notebook))
    monkeypatch.chdir(tmp_path)
    ip.user_ns["__session__"] = "some/dir/analysis.ipynb"  # relative to a server root elsewhere
    result = call(tools, "read_notebook")
    out = text_of(result)
    assert result.details == {"source": str(tmp_path / "analysis.ipynb"), "cells": 3}
    assert "[0] markdown\n# Title\nintro" in out
    assert "[1] code (In [3])\nx = 1\nx\n  -> 1" in out
    assert "NameError: boom" in out


def test_read_notebook_finds_the_file_vs_code_names(
    ip: Any, tools: NotebookTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """VS Code sets ``__vsc_ipynb_file__`` (absolute) and no ``__session__``: the tool reads
    that file, as the session recorder files the conversation under its folder."""
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.delitem(ip.user_ns, "__session__", raising=False)
    path = tmp_path / "vs.ipynb"
    cell = {"cell_type": "markdown", "source": "# From VS Code", "metadata": {}}
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    monkeypatch.setitem(ip.user_ns, "__vsc_ipynb_file__", str(path))
    result = call(tools, "read_notebook")
    assert result.details == {"source": str(path), "cells": 1}
    assert "# From VS Code" in text_of(result)


# --- state-changing tools -------------------------------------------------------------------


def test_run_code_captures_stdout_result_and_images(ip: Any, tools: NotebookTools) -> None:
    ip.user_ns["PNG"] = PNG_1X1
    code = "from IPython.display import Image, display\nprint('hi')\ndisplay(Image(data=PNG))\nz = 6 * 7\nz"
    result = call(tools, "run_code", code=code)
    out = text_of(result)
    assert "stdout:\nhi" in out
    assert "result: 42" in out
    assert "[image 1: 1x1 PNG, attached]" in out
    images = [b for b in result.content if b.type == "image"]
    assert len(images) == 1
    assert base64.b64decode(images[0].data) == PNG_1X1
    assert ip.user_ns["z"] == 42
    assert result.details["stdout"] == "hi\n"


def test_run_code_error_is_raised_with_traceback_and_redacted_output(ip: Any, tools: NotebookTools) -> None:
    ip.user_ns["leak"] = FAKE_KEY
    with pytest.raises(RuntimeError) as info:
        call(tools, "run_code", code="print(leak)\ndef f():\n    return 1/0\nf()")
    message = str(info.value)
    assert "ZeroDivisionError: division by zero" in message
    assert "return 1/0" in message  # the source line, from the registered linecache entry
    assert FAKE_KEY not in message
    assert "[REDACTED]" in message


def test_a_syntax_error_in_run_code_shows_the_line_and_the_caret(ip: Any, tools: NotebookTools) -> None:
    with pytest.raises(SyntaxError) as info:
        call(tools, "run_code", code="x = 1\ny = = 2")
    lines = str(info.value).splitlines()
    assert lines[0].strip().startswith('File "<run_code-')
    assert lines[0].endswith(", line 2")
    assert lines[1].strip() == "y = = 2"
    assert lines[2].strip() == "^"
    assert lines[2].index("^") == lines[1].index("= 2")  # under the second '='
    assert lines[3] == "SyntaxError: invalid syntax"


def test_run_code_runs_ipython_syntax_and_reports_interrupts(ip: Any, tools: NotebookTools) -> None:
    assert "result: True" in text_of(call(tools, "run_code", code="here = %pwd\nlen(here) > 0"))
    interrupted: list[bool] = []
    tools.on_interrupt = lambda: interrupted.append(True)
    with pytest.raises(RuntimeError, match="KeyboardInterrupt"):
        call(tools, "run_code", code="raise KeyboardInterrupt")
    assert interrupted == [True]


def test_run_code_does_not_start_user_code_after_an_interrupt_it_missed(
    ip: Any, tools: NotebookTools
) -> None:
    """An interrupt that lands while a run is active but before run_code installs Python's
    SIGINT handler (ipykernel's handler only schedules a task cancellation, which synchronous
    user code would not see for its whole duration) must stop run_code before it starts."""
    seen_by_kernel: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen_by_kernel.append(signum))
    try:
        with watch_sigint():
            os.kill(os.getpid(), signal.SIGINT)
            with pytest.raises(RuntimeError, match="KeyboardInterrupt"):
                call(tools, "run_code", code="ran_after_interrupt = True")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert "ran_after_interrupt" not in ip.user_ns
    assert seen_by_kernel == [signal.SIGINT]  # ipykernel's own handler still ran
    assert "result: 2" in text_of(call(tools, "run_code", code="1 + 1"))  # the flag ends with the run


def test_insert_cell_sets_the_next_input_and_joins_cells(ip: Any, tools: NotebookTools) -> None:
    tools.begin_run()
    first = call(tools, "insert_cell", code="a = 1\n")
    assert ip.rl_next_input == "a = 1"
    assert "inserted below the current cell" in text_of(first)
    second = call(tools, "insert_cell", code="b = 2")
    assert ip.rl_next_input == "a = 1\n\nb = 2"
    assert "joined with 1 earlier cell" in text_of(second)


def test_set_variable_from_value_or_expression(ip: Any, tools: NotebookTools) -> None:
    assert (
        text_of(call(tools, "set_variable", name="answer", value={"n": [1, 2]}))
        == "answer = 1 items: {'n': [1, 2]}"
    )
    assert ip.user_ns["answer"] == {"n": [1, 2]}
    ip.user_ns["base"] = 10
    call(tools, "set_variable", name="derived", expression="base * 3")
    assert ip.user_ns["derived"] == 30
    assert "hidden" in text_of(call(tools, "set_variable", name="my_token", value="abc"))
    for bad in ("_x", "In", "class", "1abc", "a b"):
        with pytest.raises(ValueError, match="cannot be assigned"):
            call(tools, "set_variable", name=bad, value=1)
    with pytest.raises(ValueError, match="exactly one of value or expression"):
        call(tools, "set_variable", name="v")
    with pytest.raises(ValueError, match="exactly one of value or expression"):
        call(tools, "set_variable", name="v", value=1, expression="2")


# --- $`expr` references -------------------------------------------------------------------------


def test_references_are_summarised_and_braces_untouched(ip: Any) -> None:
    ns = {"rows": [1, 2, 3], "OPENAI_API_KEY": FAKE_KEY}
    text, refs = expand_references("Sum $`rows` and $`len(rows)`; {x: y for x in z} $`rows`", ns)
    assert text == "Sum `rows` and `len(rows)`; {x: y for x in z} `rows`"
    assert [r.expr for r in refs] == ["rows", "len(rows)"]
    attached = format_references(refs)
    assert "`rows` (value):\n```\nlist, 3 items: [1, 2, 3]\n```" in attached
    assert "`len(rows)` (value):\n```\nint: 3\n```" in attached
    _, secret = expand_references("use $`OPENAI_API_KEY` and $`nope`", ns)
    assert FAKE_KEY not in format_references(secret)
    assert secret[1].error
    assert "NameError" in secret[1].summary


def test_secret_environment_values_follow_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment's secrets are remembered between tool results, but a variable set,
    changed or removed since is seen by the next one."""
    from pi_notebook.notebook.tools.references import secret_values

    monkeypatch.setenv("ENGINE_TEST_API_KEY", "first-secret-value")
    assert "first-secret-value" in secret_values({})
    monkeypatch.setenv("ENGINE_TEST_API_KEY", "second-secret-value")
    found = secret_values({})
    assert "second-secret-value" in found
    assert "first-secret-value" not in found
    monkeypatch.delenv("ENGINE_TEST_API_KEY")
    assert "second-secret-value" not in secret_values({})
