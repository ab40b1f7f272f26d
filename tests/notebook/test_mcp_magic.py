"""``%pi mcp`` on a real ``InteractiveShell`` with the real test MCP server
(``tests/mcp/server_app.py``) over stdio and over Streamable HTTP on 127.0.0.1: add, list,
remove, ``c.PiMagics.mcp_config``, the servers' tools in a ``%%pi`` run under the approval
policy, and bad arguments as one-line ``UsageError``s."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp_types", reason="the MCP SDK is an optional extra: pip install 'pi-notebook[mcp]'")
from IPython.core.error import UsageError

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "mcp"))

from kernel_ipshell import ip_fixture, outputs, run  # noqa: F401
from mcp_helpers import STDIO_COMMAND, HttpServer, process_exists, wait_for_port, wait_gone

from pi_notebook.ai.faux import FauxRegistration, faux_assistant_message, faux_tool_call
from pi_notebook.notebook import load as extension
from pi_notebook.notebook.state import NotebookState, state_for

MODEL = "--model faux:faux-1"
COMMAND = shlex.join(STDIO_COMMAND)
TOKEN_VARIABLE = "PI_MCP_MAGIC_TOKEN"


@pytest.fixture
def state(ip: Any) -> Iterator[NotebookState]:
    """The shell's state; its MCP servers closed and the config traits reset afterwards."""
    found = state_for(ip)
    try:
        yield found
    finally:
        found.close_mcp()
        magics = ip.magics_manager.registry["PiMagics"]
        magics.approvals, magics.mcp_config = {}, ""


def line(ip: Any, text: str) -> str:
    """Run ``%pi <text>`` and return what it printed."""
    result, captured = run(ip, f"%pi {text}")
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return str(captured.stdout)


def usage_error(ip: Any, text: str) -> str:
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("pi", text)
    message = str(caught.value)
    assert "\n" not in message, message
    return message


def server_pid(state: NotebookState, name: str) -> int:
    lines = [x for x in state.mcp.get(name).stderr_tail(200) if x.startswith("server_app pid=")]
    return int(lines[0].split("=", 1)[1])


def tool_use(name: str, args: dict[str, Any], call_id: str) -> Any:
    return faux_assistant_message([faux_tool_call(name, args, id=call_id)], stop_reason="toolUse")


def tool_results(ip: Any) -> list[tuple[str, bool, str]]:
    messages = ip.user_ns["_pi"].messages
    return [(m.tool_name, m.is_error, m.content[0].text) for m in messages if m.role == "toolResult"]


# --- add, list, remove ---------------------------------------------------------------------------


def test_add_list_remove_a_stdio_server(ip: Any, state: NotebookState) -> None:
    assert "no MCP servers" in line(ip, "mcp list")
    added = line(ip, f"mcp add st -- {COMMAND}")
    assert added.startswith("st: ready, ")
    assert "st__echo [ask]" in added
    listed = line(ip, "mcp list")
    assert listed.splitlines()[0].startswith("st [ready] stdio ")
    assert "st__echo [ask]" in listed
    pid = server_pid(state, "st")
    assert process_exists(pid)
    assert line(ip, "mcp remove st").strip() == "MCP server 'st' removed"
    assert wait_gone(pid)
    assert "no MCP servers" in line(ip, "mcp list")


def test_the_servers_tools_join_a_run_under_their_policy(
    ip: Any, state: NotebookState, faux: FauxRegistration
) -> None:
    line(ip, f"mcp add st -- {COMMAND}")
    faux.set_responses([tool_use("st__echo", {"text": "hi"}, "m1"), "done"])
    run(ip, f"%%pi {MODEL} --approve auto\necho")
    # no kernel: nobody can click, and an MCP tool's own "ask" outranks --approve auto
    [(name, is_error, text)] = tool_results(ip)
    assert (name, is_error) == ("st__echo", True)
    assert "needs approval (its own approval policy is 'ask')" in text

    ip.magics_manager.registry["PiMagics"].approvals = {"st__*": "auto"}
    faux.set_responses([tool_use("st__echo", {"text": "hi"}, "m2"), "done"])
    run(ip, f"%%pi {MODEL}\necho")
    assert tool_results(ip) == [("st__echo", False, "echo: hi")]
    assert "MCP tools: st__echo" in line(ip, "tools")
    assert "mcp: 1 server, 1 ready" in line(ip, "status")
    assert "approvals: st__*=auto" in line(ip, "status")

    line(ip, "mcp remove st")  # a removed server's tools leave the next run
    faux.set_responses([lambda context, *_: faux_assistant_message(",".join(t.name for t in context.tools))])
    run(ip, f"%%pi {MODEL} --tools none\nwhich tools?")
    assert ip.user_ns["_pi"].text == ""


def tool_names_seen(faux: FauxRegistration) -> None:
    """The next model call answers with the names of the tools it was given."""
    faux.set_responses([lambda context, *_: faux_assistant_message(",".join(t.name for t in context.tools))])


def test_tools_selects_mcp_tools_by_server_glob_and_name(
    ip: Any, state: NotebookState, faux: FauxRegistration
) -> None:
    line(ip, f"mcp add files -- {COMMAND}")
    line(ip, f"mcp add other -- {COMMAND}")
    files = [t.name for t in state.mcp.tools() if t.name.startswith("files__")]
    assert len(files) > 3
    assert any(t.name.startswith("other__") for t in state.mcp.tools())

    tool_names_seen(faux)
    run(ip, f"%%pi {MODEL} --tools read,files__*\nwhich tools?")
    seen = ip.user_ns["_pi"].text.split(",")
    assert seen == ["list_variables", "inspect_variable", "read_cells", "read_notebook", *files]

    tool_names_seen(faux)
    run(ip, f"%%pi {MODEL} --tools none,files__echo,other__pid\nwhich tools?")
    assert ip.user_ns["_pi"].text == "files__echo,other__pid"

    tool_names_seen(faux)  # naming no MCP tool keeps the default: every MCP tool joins
    run(ip, f"%%pi {MODEL} --tools read\nwhich tools?")
    assert ip.user_ns["_pi"].text.split(",")[4:] == [t.name for t in state.mcp.tools()]

    tool_names_seen(faux)  # none is none: no notebook tool, no MCP tool
    run(ip, f"%%pi {MODEL} --tools none\nwhich tools?")
    assert ip.user_ns["_pi"].text == ""

    ip.magics_manager.registry["PiMagics"].tools = "files__e*"  # the default spec takes them too
    try:
        assert "MCP tools a run gets (files__e*): files__echo" in line(ip, "tools")
        tool_names_seen(faux)
        run(ip, f"%%pi {MODEL}\nwhich tools?")
        assert ip.user_ns["_pi"].text == "files__echo"
    finally:
        ip.magics_manager.registry["PiMagics"].tools = "all"


def test_an_unknown_tool_name_is_one_line_listing_the_tools(
    ip: Any, state: NotebookState, faux: FauxRegistration
) -> None:
    line(ip, f"mcp add files -- {COMMAND}")
    for spec, bad in (("read,files__nope", "files__nope"), ("nosuch__*", "nosuch__*"), ("raed", "raed")):
        faux.set_responses(["never sent"])
        result, captured = run(ip, f"%%pi {MODEL} --tools {spec}\nhi")
        error = result.error_in_exec
        assert isinstance(error, UsageError), error
        message = str(error)
        assert "\n" not in message
        start = f"unknown tool {bad!r} in --tools (notebook tools: all, none, read, write, "
        assert message.startswith(start)
        assert "MCP tools, as SERVER__TOOL or SERVER__*: files__echo, files__image" in message
        assert outputs(captured) == []  # nothing drawn, nothing sent
        assert faux.get_pending_response_count() == 1


def test_add_with_approve_auto_runs_without_asking(
    ip: Any, state: NotebookState, faux: FauxRegistration
) -> None:
    assert "st__echo [auto]" in line(ip, f"mcp add st --approve auto --timeout 20 -- {COMMAND}")
    faux.set_responses([tool_use("st__echo", {"text": "yo"}, "m1"), "done"])
    run(ip, f"%%pi {MODEL} --approve deny\necho")
    assert tool_results(ip) == [("st__echo", False, "echo: yo")]


def test_http_server_with_a_header_from_the_environment(
    ip: Any, state: NotebookState, faux: FauxRegistration, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    http = HttpServer(tmp_path / "stderr.log")
    try:
        wait_for_port(http.port, http.process)
        message = usage_error(ip, f"mcp add ht {http.url} --header X-Test-Token={TOKEN_VARIABLE}")
        assert f"needs the environment variable {TOKEN_VARIABLE}, which is not set" in message
        monkeypatch.setenv(TOKEN_VARIABLE, "value-from-env")
        line(ip, f"mcp add ht {http.url} --header X-Test-Token={TOKEN_VARIABLE} --approve auto")
        listed = line(ip, "mcp list")
        assert f"ht [ready] http {http.url} (headers: X-Test-Token)" in listed
        assert "value-from-env" not in listed
        faux.set_responses([tool_use("ht__header", {"name": "X-Test-Token"}, "h1"), "done"])
        run(ip, f"%%pi {MODEL}\nheader")
        assert tool_results(ip) == [("ht__header", False, "value-from-env")]
    finally:
        state.close_mcp()
        http.stop()


def test_a_server_that_fails_to_start_is_a_usage_error_and_listed_dead(ip: Any, state: NotebookState) -> None:
    message = usage_error(ip, "mcp add broken -- /nonexistent/program")
    assert message.startswith("MCP server 'broken' is dead: could not start '/nonexistent/program'")
    listed = line(ip, "mcp list")
    assert listed.startswith("broken [dead] stdio /nonexistent/program: could not start")


# --- the config file -----------------------------------------------------------------------------


def test_mcp_config_is_loaded_when_the_extension_loads(ip: Any, state: NotebookState, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    entry = {"command": STDIO_COMMAND[0], "args": STDIO_COMMAND[1:], "approve": {"echo": "auto"}}
    config.write_text(json.dumps({"mcpServers": {"cf": entry}}))
    ip.magics_manager.registry["PiMagics"].mcp_config = str(config)
    extension.load_ipython_extension(ip)
    assert state.mcp.names() == ["cf"]
    state.mcp.get("cf").wait()
    listed = line(ip, "mcp list")
    assert "cf__echo [auto]" in listed
    assert "cf__fail [ask]" in listed


def test_a_bad_mcp_config_fails_the_run_with_the_reason(
    ip: Any, state: NotebookState, faux: FauxRegistration, tmp_path: Path
) -> None:
    ip.magics_manager.registry["PiMagics"].mcp_config = str(tmp_path / "missing.json")
    result, _ = run(ip, f"%%pi {MODEL}\nhello")
    assert isinstance(result.error_in_exec, UsageError)
    assert str(result.error_in_exec) == (
        f"c.PiMagics.mcp_config: MCP config file {str(tmp_path / 'missing.json')!r} does not exist."
    )


# --- bad arguments -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ("mcp frobnicate", "unknown %pi mcp subcommand 'frobnicate'"),
        ("mcp add", "usage: %pi mcp add NAME -- COMMAND"),
        ("mcp add --approve auto", "usage: %pi mcp add NAME -- COMMAND"),
        ("mcp add x --", "nothing after --"),
        ("mcp add x", "usage: %pi mcp add NAME -- COMMAND"),
        ("mcp add x ftp://host/mcp", "'ftp://host/mcp' is not an http(s) URL"),
        ("mcp add x http://127.0.0.1:9/mcp http://127.0.0.1:9/other", "usage: %pi mcp add NAME"),
        ("mcp add x http://127.0.0.1:9/mcp --header Authorization=sk-secret", "--header takes NAME=ENVVAR"),
        ("mcp add x http://127.0.0.1:9/mcp --header Authorization", "--header takes NAME=ENVVAR"),
        ("mcp add x http://127.0.0.1:9/mcp --header", "--header needs a value"),
        ("mcp add x --header A=B -- prog", "--header is for URL servers"),
        ("mcp add x --approve maybe -- prog", "--approve must be one of ask, auto, deny"),
        ("mcp add x --timeout soon -- prog", "--timeout takes seconds"),
        ("mcp add x --verbose -- prog", "unknown option '--verbose'"),
        ("mcp add x extra -- prog", "unexpected 'extra' before --"),
        ("mcp add x -- 'unclosed", "cannot parse %pi mcp arguments"),
        ("mcp remove", "usage: %pi mcp remove NAME"),
        ("mcp remove nothere", "no MCP server named 'nothere' (servers: none)"),
        ("mcp list extra", "%pi mcp list takes no arguments"),
    ],
)
def test_bad_arguments_are_one_line_usage_errors(
    ip: Any, state: NotebookState, args: str, expected: str
) -> None:
    assert expected in usage_error(ip, args)
    assert not state.has_mcp or state.mcp.names() == []
