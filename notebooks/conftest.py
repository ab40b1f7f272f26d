"""The tutorials run as tests (nbval) offline, against the outputs stored in them.

Their setup cells call a real model when ``PI_NOTEBOOK_MODEL`` is set, and a few environment
variables change what they print (a user model file adds to the catalogue, a forced headless
mode changes the %%pi notice, a local server URL moves the stand-in, replay or recording
switches change where answers come from). nbval's kernels inherit this process's environment,
so these are removed before the first kernel starts. Every ``%%pi`` conversation is recorded as
a Pi session file; while testing, those go to a temporary agent dir, never to ``~/.pi/agent``.
"""

import atexit
import os
import shutil
import tempfile

for name in (
    "PI_NOTEBOOK_MODEL",
    "PI_NOTEBOOK_MODELS",
    "PI_NOTEBOOK_HEADLESS",
    "PI_NOTEBOOK_RECORD",
    "PI_NOTEBOOK_REPLAY",
    "PI_NOTEBOOK_SESSION_DIR",
    "LLAMA_CPP_BASE_URL",
    "OLLAMA_BASE_URL",
):
    os.environ.pop(name, None)

if not os.path.basename(os.environ.get("PI_CODING_AGENT_DIR", "")).startswith("pi-agent-test-"):
    _agent_dir = tempfile.mkdtemp(prefix="pi-agent-test-")  # tests/notebook/conftest.py's prefix
    os.environ["PI_CODING_AGENT_DIR"] = _agent_dir
    atexit.register(shutil.rmtree, _agent_dir, True)
