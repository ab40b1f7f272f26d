"""The wire half of the conformance suite: the scenarios of ``scenarios/wire.json`` played by
the real Pi (``wire_runner.mjs``) and by ``pi_notebook.ai`` against loopback servers that
record every request, reduced to comparable records.

A record is ``{"requests": [...], "events": [...], "final": {...}}``:

* a request is its method, path, JSON body and the notable headers (``NOTABLE_HEADERS``),
  secrets replaced by ``<key>``;
* an event is its type and what it says (content index, delta, content, tool call, reason),
  without the partial message (that object keeps changing until the end);
* ``final`` is the final assistant message as Pi's JSON.

Only timestamps and random ids are normalised (see ``normalise``); everything else is compared
exactly. Response ids come from the scripted replies, so they are compared too.
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from loopback import DROP, Delay, LoopbackServer, Recorded, Reply

from pi_notebook.ai.options import SimpleStreamOptions

HERE = Path(__file__).parent
SCENARIOS_FILE = HERE / "scenarios" / "wire.json"
KEYS = ("test-key", "sk-ant-oat01-test-key")  # every apiKey a scenario passes
SECRET = "<key>"

# The headers a provider actually reads, compared exactly. Everything else Pi sends comes from
# the vendor SDKs and describes the client, not the request (``x-stainless-*``: SDK name,
# version, OS, arch, runtime, retry count, timeout; ``accept-encoding``, ``accept-language``,
# ``sec-fetch-mode``, ``connection``, ``host``, ``content-length``: transport details of node's
# fetch; ``x-goog-api-client``: the genai SDK's version). ``user-agent`` is compared as
# presence only, because it names the client library.
NOTABLE_HEADERS = (
    "content-type",
    "accept",
    "authorization",
    "x-api-key",
    "x-goog-api-key",
    "api-key",
    "anthropic-version",
    "anthropic-beta",
    "anthropic-dangerous-direct-browser-access",
    "x-session-affinity",
    "session_id",
    "x-client-request-id",
    "x-app",
)


def load_scenarios() -> list[dict[str, Any]]:
    data: dict[str, Any] = json.loads(SCENARIOS_FILE.read_text())
    scenarios: list[dict[str, Any]] = data["scenarios"]
    return scenarios


# --- replies ---------------------------------------------------------------------------------


def _sse_part(event: dict[str, Any]) -> bytes:
    if "raw" in event:  # bytes that are not an SSE event (a bare JSON error chunk, say)
        return str(event["raw"]).encode()
    data = event["data"]
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event['event']}\n" if event.get("event") else ""
    return f"{head}data: {payload}\n\n".encode()


def build_replies(scenario: dict[str, Any]) -> list[Reply]:
    """The scripted replies of a scenario, one ``Reply`` per request the server will answer."""
    replies = []
    for spec in scenario["replies"]:
        if "json" in spec:
            parts: list[Any] = [json.dumps(spec["json"]).encode()]
        elif "raw" in spec:
            parts = [spec["raw"].encode()]
        else:
            events = spec.get("sse", [])
            parts = [Delay(event["delay"]) if "delay" in event else _sse_part(event) for event in events]
        if spec.get("drop"):
            parts.append(DROP)
        replies.append(Reply(status=spec["status"], parts=parts, headers=dict(spec["headers"])))
    return replies


def new_server(scenario: dict[str, Any]) -> LoopbackServer:
    server = LoopbackServer()
    server.queue(*build_replies(scenario))
    # A client that sends more requests than the script has gets the loopback's own 500,
    # which then shows up in the compared record.
    return server


def with_base_url(scenario: dict[str, Any], url: str) -> dict[str, Any]:
    """The scenario's model with ``baseUrl`` on the loopback server, shaped per API as Pi
    expects it (Google's base URL carries the version path). A scenario that must never reach
    a server (a missing key) names its own unresolvable ``baseUrl`` (``*.invalid``)."""
    model = dict(scenario["model"])
    if "baseUrl" in scenario:
        model["baseUrl"] = scenario["baseUrl"]
        return model
    model["baseUrl"] = url + ("/v1beta" if model["api"] == "google-generative-ai" else "")
    if model["api"] in ("openai-completions", "openai-responses"):
        model["baseUrl"] = url + "/v1"
    return model


# --- request records -------------------------------------------------------------------------


def _redact(name: str, value: str) -> str:
    if name == "authorization":
        scheme, _, rest = value.partition(" ")
        return f"{scheme} {SECRET}" if rest in KEYS else f"{scheme} <other>"
    if name in ("x-api-key", "x-goog-api-key", "api-key"):
        return SECRET if value in KEYS else "<other>"
    return value


def request_record(request: Recorded) -> dict[str, Any]:
    headers = {k: _redact(k, v) for k, v in sorted(request.headers.items()) if k in NOTABLE_HEADERS}
    headers["user-agent"] = "<present>" if request.headers.get("user-agent") else "<absent>"
    try:
        body: Any = request.json if request.body else None
    except ValueError:
        body = request.body.decode("utf-8", "replace")
    path = request.path
    for key in KEYS:
        path = path.replace(key, SECRET)
    return {"method": request.method, "path": path, "headers": headers, "body": body}


# --- running the real Pi -----------------------------------------------------------------------


class _LoopThread:
    """An event loop in a background thread, so loopback servers answer node while the test
    thread blocks in ``subprocess.run``."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


def run_pi_batch(scenarios: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Play every scenario through the real Pi (one node process), each against its own
    loopback server; return ``{name: record}``."""
    from pi_node import run_node

    looper = _LoopThread()
    servers: dict[str, LoopbackServer] = {}
    try:
        for s in scenarios:
            servers[s["name"]] = looper.run(new_server(s).start())
        payload = {
            "scenarios": [
                {
                    "name": s["name"],
                    "model": with_base_url(s, servers[s["name"]].url),
                    "context": s["context"],
                    "options": s["options"],
                    "simple": s["simple"],
                }
                for s in scenarios
            ]
        }
        results: dict[str, Any] = run_node("wire_runner.mjs", payload, timeout=300)
        records = {}
        for s in scenarios:
            result = results[s["name"]]
            if "thrown" in result:
                raise AssertionError(f"Pi threw in {s['name']}:\n{result['thrown']}")
            records[s["name"]] = {
                "requests": [request_record(r) for r in servers[s["name"]].requests],
                "events": result["events"],
                "final": result["final"],
            }
        return records
    finally:
        for server in servers.values():
            looper.run(server.stop())
        looper.close()


# --- running ours ------------------------------------------------------------------------------

_SIMPLE_FIELDS = set(SimpleStreamOptions.__dataclass_fields__)
# One SSL context for every scenario's client: building one per client costs ~0.1 s, and each
# test runs in its own event loop (so the providers' per-loop shared client would be rebuilt).
_SSL_CONTEXT = ssl.create_default_context()


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def python_options(options: dict[str, Any]) -> dict[str, Any]:
    return {_snake(k): v for k, v in options.items()}


def _event_record(event: Any) -> dict[str, Any]:
    data = event.to_dict()
    return {k: v for k, v in data.items() if k not in ("partial", "message", "error")}


async def run_ours(scenario: dict[str, Any]) -> dict[str, Any]:
    """Play one scenario through ``pi_notebook.ai`` against a fresh loopback server."""
    from pi_notebook.ai import Context, Model, stream, stream_simple
    from pi_notebook.ai.registry import get_api_provider

    async with LoopbackServer() as server, httpx.AsyncClient(verify=_SSL_CONTEXT) as client:
        server.queue(*build_replies(scenario))
        model = Model.model_validate(with_base_url(scenario, server.url))
        options = python_options(scenario["options"])
        options_with_client = {**options, "http_client": client}
        context = Context.model_validate(scenario["context"])
        if set(options) <= _SIMPLE_FIELDS:
            s = (stream_simple if scenario["simple"] else stream)(model, context, options_with_client)
        else:  # API-specific options go to the provider module itself
            provider = get_api_provider(model.api)
            assert provider is not None
            fn = provider.stream_simple if scenario["simple"] else provider.stream
            s = fn(model, context, options_with_client)
        events = [_event_record(e) async for e in s]
        final = (await asyncio.wait_for(s.result(), 5)).model_dump(mode="json")
        return {
            "requests": [request_record(r) for r in server.requests],
            "events": json.loads(json.dumps(events)),
            "final": final,
        }


# --- normalising and comparing --------------------------------------------------------------------


def normalise(record: dict[str, Any], scenario: dict[str, Any]) -> dict[str, Any]:
    """Replace what is legitimately different on every run: the final message's timestamp and,
    where the scenario says the provider generates them, tool call ids."""
    out: dict[str, Any] = json.loads(json.dumps(record))
    if "timestamp" in out["final"]:
        out["final"]["timestamp"] = "<timestamp>"
    if scenario.get("normalize_tool_call_ids"):
        for block in _tool_calls(out):
            block["id"] = "<generated>"
    return out


def _tool_calls(record: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for block in record["final"].get("content", []):
        if block.get("type") == "toolCall":
            yield block
    for event in record["events"]:
        if isinstance(event.get("toolCall"), dict):
            yield event["toolCall"]
        for block in event.get("content", []) if isinstance(event.get("content"), list) else []:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                yield block


def get_path(record: Any, path: str) -> Any:
    """``requests.0.headers.accept`` style lookup; a missing step gives ``"<missing>"``."""
    node = record
    for step in path.split("."):
        if isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        elif isinstance(node, dict) and step in node:
            node = node[step]
        else:
            return "<missing>"
    return node


def set_path(record: Any, path: str, value: Any) -> None:
    steps = path.split(".")
    node = record
    for step in steps[:-1]:
        node = node[int(step)] if isinstance(node, list) else node[step]
    last = steps[-1]
    if isinstance(node, list):
        while len(node) <= int(last):  # a deviation may name an item only one side has
            node.append("<missing>")
        node[int(last)] = value
    elif value == "<missing>":
        node.pop(last, None)
    else:
        node[last] = value


def differences(pi: Any, ours: Any, where: str = "") -> list[str]:
    """Every leaf where the two records differ, as ``path: pi=... ours=...`` lines."""
    if isinstance(pi, dict) and isinstance(ours, dict):
        out = []
        for key in sorted(set(pi) | set(ours), key=str):
            sub = f"{where}.{key}" if where else str(key)
            if key not in pi:
                out.append(f"{sub}: only ours = {json.dumps(ours[key])[:300]}")
            elif key not in ours:
                out.append(f"{sub}: only Pi = {json.dumps(pi[key])[:300]}")
            else:
                out += differences(pi[key], ours[key], sub)
        return out
    if isinstance(pi, list) and isinstance(ours, list):
        out = []
        for i in range(max(len(pi), len(ours))):
            sub = f"{where}.{i}"
            if i >= len(pi):
                out.append(f"{sub}: only ours = {json.dumps(ours[i])[:300]}")
            elif i >= len(ours):
                out.append(f"{sub}: only Pi = {json.dumps(pi[i])[:300]}")
            else:
                out += differences(pi[i], ours[i], sub)
        return out
    # JSON has one number type: 0 and 0.0 are the same value, but true is not 1.
    if pi != ours or isinstance(pi, bool) is not isinstance(ours, bool):
        return [f"{where}: Pi = {json.dumps(pi)[:300]}  ours = {json.dumps(ours)[:300]}"]
    return []
