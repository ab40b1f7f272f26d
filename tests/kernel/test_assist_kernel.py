"""What the Pi kernel answers while the user types, through jupyter_client: ``complete_request``
(Python in ``%%python`` cells and inside `` $`...` `` of a prompt, ``%pi`` subcommands, nothing
in prose), ``inspect_request`` (a variable's summary in a prompt, IPython's inspection in code)
and ``is_complete_request`` (a prompt is complete on Enter)."""

from __future__ import annotations

from typing import Any

import pytest
from pi_kernel_driver import PiKernelUnderTest

pytestmark = pytest.mark.kernel


def reply(p: PiKernelUnderTest, kind: str, **content: Any) -> dict[str, Any]:
    msg = p.kc.session.msg(f"{kind}_request", content)
    p.kc.shell_channel.send(msg)
    while True:
        answer = p.kc.get_shell_msg(timeout=20)
        if answer["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            assert answer["msg_type"] == f"{kind}_reply"
            return dict(answer["content"])


def complete(p: PiKernelUnderTest, code: str, cursor: int | None = None) -> tuple[list[str], str]:
    """The matches, and the text they replace."""
    cursor = len(code) if cursor is None else cursor
    got = reply(p, "complete", code=code, cursor_pos=cursor)
    assert got["status"] == "ok", got
    replaced = code[got["cursor_start"] : got["cursor_end"]]
    # JupyterLab places Jedi's typed completions by their own offsets: moved with the fragment
    for entry in got["metadata"].get("_jupyter_types_experimental", []):
        assert code[entry["start"] : entry["end"]] == replaced, entry
    return list(got["matches"]), replaced


@pytest.fixture(scope="module", autouse=True)
def variables(pi: PiKernelUnderTest) -> None:
    code = (
        "my_value = {'rows': 3, 'cols': 2}\nmy_other = 'text'\napi_key = 'sk-' + 'a' * 30\nimport collections"
    )
    assert pi.python(code)["status"] == "ok"


def test_completion_in_a_python_cell(pi: PiKernelUnderTest) -> None:
    matches, replaced = complete(pi, "%%python\nx = collections.Ordered")
    assert "OrderedDict" in [m.rsplit(".", 1)[-1] for m in matches]
    assert replaced in ("Ordered", "collections.Ordered")
    assert complete(pi, "%%python\nmy_v") == (["my_value"], "my_v")
    assert "%%python" in complete(pi, "%%pyth")[0]  # IPython completes the marker as a magic


def test_completion_inside_a_reference_of_a_prompt_and_nowhere_else_in_prose(pi: PiKernelUnderTest) -> None:
    prompt = "compare $`my_value` with $`my_ot"
    assert complete(pi, prompt) == (["my_other"], "my_ot")
    assert complete(pi, "first line\nlook at $`collections.Ordered") == (["OrderedDict"], "Ordered")
    assert complete(pi, "tell me about my_v") == ([], "")  # prose: nothing to complete
    assert complete(pi, "closed $`my_value` and my_v") == ([], "")


def test_pi_subcommands_complete_after_pi(pi: PiKernelUnderTest) -> None:
    assert complete(pi, "%pi res") == (["reset", "resources", "resume"], "res")
    assert complete(pi, "%pi --name side hist") == (["history"], "hist")
    matches, _ = complete(pi, "%pi ")
    assert {"model", "status", "resume", "help"} <= set(matches)
    assert complete(pi, "%%python\n%pi sta") == (["status"], "sta")


def test_templates_skills_and_commands_complete_after_a_leading_slash(pi: PiKernelUnderTest) -> None:
    """Pi's agent dir (a temporary one for the test run) holds a template and a skill; an
    extension loaded in the kernel registers a command."""
    skill = "---\\ndescription: How we plot\\n---\\nUse plt."
    extension = "def setup(pi):\\n    pi.register_command('report', lambda a, c: None)\\n"
    setup = (
        "import os, pathlib\n"
        "agent = pathlib.Path(os.environ['PI_CODING_AGENT_DIR'])\n"
        "(agent / 'prompts').mkdir(parents=True, exist_ok=True)\n"
        "(agent / 'prompts' / 'review.md').write_text('Review $1.')\n"
        "(agent / 'skills' / 'plotting').mkdir(parents=True, exist_ok=True)\n"
        f"(agent / 'skills' / 'plotting' / 'SKILL.md').write_text('{skill}')\n"
        f'pathlib.Path("ext_cmd.py").write_text("{extension}")\n'  # in the kernel's temporary folder
    )
    assert pi.python(setup)["status"] == "ok"
    try:
        assert pi.run("%pi extension load ext_cmd.py")["status"] == "ok"
        assert complete(pi, "/rev") == (["review"], "rev")
        assert complete(pi, "/skill:pl") == (["skill:plotting"], "skill:pl")
        assert complete(pi, "/rep") == (["report"], "rep")
        assert "report" in complete(pi, "%pi rep")[0]
        assert complete(pi, "please /rev") == ([], "")  # only a prompt's first word
        assert complete(pi, "/review x\nand /rev") == ([], "")
    finally:  # the agent dir is the whole test run's: leave no skill for the other tests
        cleanup = "import shutil\nshutil.rmtree(agent / 'skills')\n(agent / 'prompts' / 'review.md').unlink()"
        assert pi.python(cleanup)["status"] == "ok"


def test_inspecting_a_variable_in_a_prompt_gives_its_summary(pi: PiKernelUnderTest) -> None:
    code = "what is in my_value today?"
    got = reply(pi, "inspect", code=code, cursor_pos=code.index("my_value") + 3, detail_level=0)
    assert got["found"] is True
    assert got["data"] == {"text/plain": "my_value: dict, 2 items: {'rows': 3, 'cols': 2}"}
    secret = reply(pi, "inspect", code="use api_key", cursor_pos=8, detail_level=0)
    assert "sk-" not in str(secret)
    assert secret["data"]["text/plain"].startswith("api_key: <hidden: the name 'api_key' looks like a secret")
    missing = reply(pi, "inspect", code="nothing here", cursor_pos=3, detail_level=0)
    assert missing["found"] is False


def test_inspecting_in_a_python_cell_is_ipythons(pi: PiKernelUnderTest) -> None:
    got = reply(pi, "inspect", code="%%python\nlen(my_value)", cursor_pos=11, detail_level=0)
    assert got["found"] is True
    assert "Return the number of items in a container." in got["data"]["text/plain"]


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("tell me about for loops: for i in range(3):", "complete"),  # a prompt: Enter sends it
        ("", "complete"),
        ("%pi status", "complete"),
        ("%%python", "incomplete"),
        ("%%python\nfor i in range(3):", "incomplete"),
        ("%%python\nx = 1\n\n", "complete"),  # a cell magic ends at a blank line
        ("%%python\nx = 1\n", "complete"),  # one: Enter on the empty line below the body
        ("%%python\n", "incomplete"),  # Enter right after %%python starts the body
        ("%%python\nfor i in range(3):\n    print(i)\n    ", "complete"),  # the console's indent
        ("%%python\nx = 1", "incomplete"),
        ("%%pi --model faux:faux-1", "incomplete"),
        ("%%pi --model faux:faux-1\na longer prompt\n\n", "complete"),
        ("%%pi --model faux:faux-1\na longer prompt\n", "complete"),
    ],
)
def test_is_complete(pi: PiKernelUnderTest, code: str, status: str) -> None:
    assert reply(pi, "is_complete", code=code)["status"] == status
