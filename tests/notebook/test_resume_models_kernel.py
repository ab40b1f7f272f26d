"""``%pi resume`` after a real kernel restart brings back a local server's model, for each
local provider id (llama.cpp, ollama, vllm, lmstudio), and says which ``--model`` to pass when
the recorded model is out of reach (a provider nobody registered in the new kernel)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

from faults.wire import WIRES
from kernel_driver import SETUP, Kernel
from loopback import LoopbackServer, Recorded, Reply, serving

pytestmark = pytest.mark.kernel

LOCAL = {
    "llama.cpp": "LLAMA_CPP_BASE_URL",
    "ollama": "OLLAMA_BASE_URL",
    "vllm": "VLLM_BASE_URL",
    "lmstudio": "LMSTUDIO_BASE_URL",
}


def _point_local_servers(url: str) -> str:
    """Kernel code: every local server's ``*_BASE_URL`` at the loopback server (a user's
    environment, which a restarted kernel has again)."""
    return "import os\n" + "".join(f"os.environ[{var!r}] = {url + '/v1'!r}\n" for var in LOCAL.values())


def _posts(server: LoopbackServer) -> list[Recorded]:
    """The model requests (the local-server probes are GETs)."""
    return [r for r in server.requests if r.method == "POST"]


def test_resume_restores_each_local_servers_model_after_a_restart(tmp_path: Path) -> None:
    wire = WIRES["openai-completions"]
    server = LoopbackServer()
    server.default = Reply(parts=wire.text_script("Hello from the local server.").parts())
    with serving(server):
        kernel = Kernel(tmp_path)
        try:
            assert kernel.run(_point_local_servers(server.url))["status"] == "ok"
            for provider in LOCAL:
                reply = kernel.run(
                    f"%%pi --name {provider.replace('.', '')} --model {provider}:local-{provider}\nhi"
                )
                assert reply["status"] == "ok", reply
            # a provider only this kernel registered: out of reach after the restart
            code = "from pi_notebook.ai import openai_compatible_model\n"
            code += f"openai_compatible_model('mine', {server.url + '/v1'!r}, provider='myserver')"
            assert kernel.run(code)["status"] == "ok"
            assert kernel.run("%%pi --name custom --model myserver:mine\nhi")["status"] == "ok"
            kernel.km.restart_kernel(now=True)
            kernel.kc.wait_for_ready(timeout=60)
            assert kernel.run(SETUP)["status"] == "ok"
            assert kernel.run(_point_local_servers(server.url))["status"] == "ok"
            before = len(_posts(server))
            for provider in LOCAL:
                name = provider.replace(".", "")
                out = kernel.run(f"%pi --name {name} resume")
                assert out["status"] == "ok", out
                assert f"2 messages, model {provider}:local-{provider}." in out["stdout"], out["stdout"]
                assert "unknown" not in out["stdout"]
                reply = kernel.run(f"%%pi --name {name}\nand again?")  # no --model: the recorded one
                assert reply["status"] == "ok", reply
                assert _posts(server)[-1].json["model"] == f"local-{provider}"
            assert len(_posts(server)) == before + len(LOCAL)
            out = kernel.run("%pi --name custom resume")
            assert out["status"] == "ok", out
            [note] = [x for x in out["stdout"].splitlines() if "recorded model" in x]
            assert note.startswith(
                "The recorded model myserver:mine is unknown in this kernel (no provider 'myserver'"
            )
            assert note.endswith(
                "pass --model myserver:mine once its provider is registered, "
                "or another --model provider:model-id."
            )
        finally:
            kernel.close()
