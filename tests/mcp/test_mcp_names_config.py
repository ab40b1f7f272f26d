"""Tool names and server configs, without a server: sanitizing, shortening, collisions,
the ``mcpServers`` file, environment references and that secrets stay out of listings."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pi_notebook.mcp import ServerConfig, agent_tool_name, load_config, make_config, parse_config

PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_a_valid_pair_keeps_its_plain_name() -> None:
    assert agent_tool_name("files", "read_file") == "files__read_file"
    assert agent_tool_name("my-server", "Get-Thing2") == "my-server__Get-Thing2"


@pytest.mark.parametrize(
    ("server", "tool"),
    [
        ("files", "read.file"),
        ("my server", "list files/all"),
        ("srv", "x" * 100),
        ("ünïcode", "tööl"),
        ("s", "a" * 61),  # 64 characters with the separator: still valid
        ("s", "a" * 62),  # 65: too long
    ],
)
def test_every_name_fits_the_strictest_provider_rule(server: str, tool: str) -> None:
    name = agent_tool_name(server, tool)
    assert PROVIDER_NAME.match(name), name
    assert agent_tool_name(server, tool) == name  # deterministic


def test_changed_names_end_in_a_hash_of_the_original() -> None:
    name = agent_tool_name("files", "read.file")
    assert re.fullmatch(r"files__read_file_[0-9a-f]{8}", name)
    long = agent_tool_name("srv", "x" * 100)
    assert len(long) == 64
    assert long.startswith("srv__xxxx")


def test_names_that_sanitize_alike_do_not_collide() -> None:
    pairs = [("a", "b.c"), ("a", "b/c"), ("a", "b c"), ("a.b", "c"), ("a", "b_c")]
    names = [agent_tool_name(s, t) for s, t in pairs]
    assert len(set(names)) == len(names)
    long_a = agent_tool_name("srv", "x" * 80 + "a")
    long_b = agent_tool_name("srv", "x" * 80 + "b")
    assert long_a != long_b


def test_forced_hash_separates_an_ambiguous_pair() -> None:
    # "a__b" + "c" and "a" + "b__c" give the same plain name; the manager forces a hash
    assert agent_tool_name("a__b", "c") == agent_tool_name("a", "b__c")
    assert agent_tool_name("a", "b__c", force_hash=True) != agent_tool_name("a__b", "c")


def test_config_file_in_the_usual_shape(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    document = {
        "mcpServers": {
            "files": {"command": "npx", "args": ["-y", "server-files", "."], "env": {"DEBUG": "1"}},
            "remote": {
                "url": "https://example.invalid/mcp",
                "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"},
                "approve": {"search": "auto", "*": "ask"},
                "timeout": 30,
            },
        }
    }
    path.write_text(json.dumps(document))
    files, remote = load_config(path)
    assert files.transport == "stdio"
    assert files.command == ("npx", "-y", "server-files", ".")
    assert files.env == {"DEBUG": "1"}
    assert files.approval_for("anything") == "ask"
    assert remote.transport == "http"
    assert remote.call_timeout == 30
    assert remote.approval_for("search") == "auto"
    assert remote.approval_for("delete") == "ask"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({}, "mcpServers"),
        ({"mcpServers": {"x": {}}}, "either a command"),
        ({"mcpServers": {"x": {"command": "a", "url": "http://h"}}}, "either a command"),
        ({"mcpServers": {"x": {"command": ["a", "b"]}}}, "command must be a string"),
        ({"mcpServers": {"x": {"command": "a", "args": "b"}}}, "args must be a list"),
        ({"mcpServers": {"x": {"command": "a", "approve": "sometimes"}}}, "not one of ask, auto, deny"),
        ({"mcpServers": {"x": {"command": "a", "env": {"A": 1}}}}, "env must map"),
    ],
)
def test_bad_config_says_what_is_wrong(document: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_config(document)


def test_missing_or_broken_config_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        load_config(tmp_path / "nope.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_config(broken)


def test_header_values_come_from_the_environment_and_stay_out_of_descriptions() -> None:
    config = make_config(
        "remote",
        url="https://example.invalid/mcp",
        headers={"Authorization": "Bearer ${TOKEN_A}"},
        headers_from_env={"X-Key": "TOKEN_B"},
    )
    environ = {"TOKEN_A": "secret-a", "TOKEN_B": "secret-b"}
    assert config.resolved_headers(environ) == {"Authorization": "Bearer secret-a", "X-Key": "secret-b"}
    assert "secret" not in config.describe()
    assert "Authorization" in config.describe()
    assert "secret" not in repr(config)


def test_an_unset_variable_is_named_and_its_fix_given() -> None:
    config = make_config("remote", url="https://example.invalid/mcp", headers_from_env={"X-Key": "NOPE_VAR"})
    with pytest.raises(ValueError, match=r"NOPE_VAR, which is not set.*os\.environ"):
        config.resolved_headers({})
    stdio = make_config("s", ["prog"], env={"KEY": "${MISSING_VAR}"})
    with pytest.raises(ValueError, match="MISSING_VAR"):
        stdio.resolved_env({})


def test_approval_server_wide_and_per_tool() -> None:
    assert ServerConfig(name="s", command=("p",), approve="auto").approval_for("x") == "auto"
    per_tool = ServerConfig(name="s", command=("p",), approve={"read_file": "auto"})
    assert per_tool.approval_for("read_file") == "auto"
    assert per_tool.approval_for("write_file") == "ask"
    with pytest.raises(ValueError, match="timeouts must be positive"):
        make_config("s", ["p"], timeout=0)
