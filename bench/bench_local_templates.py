"""Which chat template lets llama.cpp parse a small model's tool calls: the same requests to
llama-servers started with different ``--chat-template-file`` templates, and what came back.

```
.venv/bin/python -m bench.bench_local_templates notags=http://127.0.0.1:18081 original=http://127.0.0.1:18082
```

Each server is a real ``llama-server`` (``--jinja`` is on by default in current builds) with
the same model; only the template differs. Every prompt goes to every server once, at
temperature 0, with the compact notebook tools a local model gets (``run_code`` and the
read-only tools), non-streamed. Each answer is classified:

* ``tool call``: the server parsed it into ``tool_calls`` (the API's way);
* ``parse error``: the server answered 500 "does not match the expected ... format";
* ``call in text``: the answer's text holds a JSON object naming a tool (bare, fenced or in
  ``<tool_call>`` tags), which the server did not parse;
* ``code in text``: a fenced Python block and no call;
* ``text``: anything else.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
PROMPTS = (
    "What is the weather in Paris right now?",
    "Load data.csv with pandas and compute the mean of the column 'age'.",
    "How many rows does sales.csv have? Run code to find out.",
    "Compute the Pearson correlation between columns 'x' and 'y' of points.csv.",
    "Which variables are defined in the notebook?",
    "Read titanic.csv and tell me how many passengers survived.",
    "Plot a histogram of the 'fare' column of titanic.csv.",
    "What is 2**100? Use Python.",
)
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": CITY,
                                            "description": "Get the current weather for a city"}}  # fmt: skip
CALL_IN_TEXT = re.compile(r'\{\s*"name"\s*:\s*"(\w+)"')
FENCED_PYTHON = re.compile(r"```(?:python|py)\s*\n")


def notebook_tools() -> list[dict[str, Any]]:
    """The compact tools a headless local run with ``--approve auto`` sends (``run/fit.py``)."""
    sys.path.insert(0, str(REPO))
    from pi_notebook.notebook.run.fit import compact_tool
    from pi_notebook.notebook.tools.notebook_tools import NotebookTools

    names = ["list_variables", "inspect_variable", "read_cells", "read_notebook", "run_code", "set_variable"]
    tools = [compact_tool(t).to_tool() for t in NotebookTools(None).build(names)]
    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": t.parameters}} for t in tools]  # fmt: skip


def classify(response: httpx.Response) -> tuple[str, str]:
    if response.status_code != 200:
        message = str(response.json().get("error", {}).get("message", response.text))
        return ("parse error" if "does not match the expected" in message else "error"), message
    message = response.json()["choices"][0]["message"]
    text = message.get("content") or ""
    if message.get("tool_calls"):
        return "tool call", json.dumps(message["tool_calls"][0]["function"])[:120]
    if CALL_IN_TEXT.search(text):
        return "call in text", text[:120]
    if FENCED_PYTHON.search(text):
        return "code in text", text[:120]
    return "text", text[:120]


def main() -> None:
    servers = dict(arg.split("=", 1) for arg in sys.argv[1:])
    tools = [*notebook_tools(), WEATHER]
    tally: dict[str, Counter[str]] = {name: Counter() for name in servers}
    with httpx.Client(timeout=300) as client:
        for prompt in PROMPTS:
            for name, url in servers.items():
                body = {"model": "local", "temperature": 0, "max_tokens": 256, "tools": tools,
                        "messages": [{"role": "user", "content": prompt}]}  # fmt: skip
                start = time.monotonic()
                kind, shown = classify(client.post(f"{url}/v1/chat/completions", json=body))
                tally[name][kind] += 1
                took = time.monotonic() - start
                print(f"{name:9} {kind:12} {took:5.1f}s  {prompt[:40]!r}: {shown!r}")
    kinds = ("tool call", "parse error", "call in text", "code in text", "text", "error")
    print(f"\n{'template':9} " + " ".join(f"{k:>12}" for k in kinds))
    for name, counts in tally.items():
        print(f"{name:9} " + " ".join(f"{counts[k]:>12}" for k in kinds))


if __name__ == "__main__":
    main()
