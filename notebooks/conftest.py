"""The tutorials run as tests (nbval) offline, against the outputs stored in them.

Their setup cells call a real model when ``PI_NOTEBOOK_MODEL`` is set, and a few environment
variables change what they print (a user model file adds to the catalogue, a forced headless
mode changes the %%pi notice, a local server URL moves the stand-in). nbval's kernels inherit
this process's environment, so these are removed before the first kernel starts.
"""

import os

for name in (
    "PI_NOTEBOOK_MODEL",
    "PI_NOTEBOOK_MODELS",
    "PI_NOTEBOOK_HEADLESS",
    "LLAMA_CPP_BASE_URL",
    "OLLAMA_BASE_URL",
):
    os.environ.pop(name, None)
