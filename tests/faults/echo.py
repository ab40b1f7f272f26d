"""A hostile provider for the key-leak tests: a loopback server whose error replies echo the
credential headers it received (in the message text and as a raw header dump), as an HTTP error
or as an error event inside a 200 stream, and the check that a text holds no key.

Used by ``test_secrets.py`` (provider level) and ``tests/notebook/test_no_leaks.py`` (a real
kernel, end to end).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from faults.wire import WireApi
from loopback import LoopbackServer, Recorded, Reply, sse

CREDENTIAL_HEADERS = ("authorization", "x-api-key", "x-goog-api-key")

Part = bytes | Callable[[Recorded], bytes]


class EchoServer(LoopbackServer):
    """The loopback server, where a body part may be a function of the request it answers, and
    ``route`` (when set) picks the reply for every request instead of the queue."""

    route: Callable[[Recorded], Reply] | None = None

    async def _send(self, writer: Any, reply: Reply) -> bool:
        request = self.requests[-1]
        if self.route is not None:
            reply = self.route(request)
        parts = [part(request) if callable(part) else part for part in reply.parts]
        return await super()._send(writer, Reply(reply.status, parts, reply.headers))


def credentials(request: Recorded) -> dict[str, str]:
    return {k: v for k, v in request.headers.items() if k in CREDENTIAL_HEADERS}


def echo_message(request: Recorded) -> str:
    sent = credentials(request)
    assert sent, f"no credential header was sent: {request.headers}"
    values = ", ".join(f"{k}={v}" for k, v in sent.items())
    return f"Incorrect API key provided: {values}. Request headers: {json.dumps(request.headers)}"


def http_echo(wire: WireApi, status: int) -> Reply:
    def body(request: Recorded) -> bytes:
        payload = wire.error_body(status)
        payload["error"]["message"] = echo_message(request)
        payload["error"]["received_headers"] = request.headers
        return json.dumps(payload).encode()

    return Reply(status, [body], {"content-type": "application/json"})


def stream_echo(wire: WireApi) -> Reply:
    """A 200 stream whose error event (in the API's own shape) echoes the credentials."""

    def event(request: Recorded) -> bytes:
        message = echo_message(request)
        if wire.api == "openai-responses":
            return sse({"type": "error", "code": "invalid_api_key", "message": message}, event="error")
        if wire.api == "anthropic-messages":
            error = {"type": "authentication_error", "message": message}
            return sse({"type": "error", "error": error}, event="error")
        if wire.api == "google-generative-ai":
            return sse({"error": {"code": 401, "message": message, "status": "UNAUTHENTICATED"}})
        return sse(
            {"error": {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}}
        )

    head = wire.text_script("Hello").head
    return Reply(200, [*head, event])


def leaks(text: str, keys: Mapping[str, str], markers: Iterable[str]) -> list[str]:
    """What of ``keys`` (by variable name) or of the distinctive ``markers`` ``text`` contains."""
    found = [f"{name} (the whole key)" for name, key in keys.items() if key in text]
    return found + [f"the key part {marker!r}" for marker in markers if marker in text]


def assert_no_key(where: str, text: str, keys: Mapping[str, str], markers: Iterable[str]) -> None:
    found = leaks(text, keys, markers)
    if found:
        hit = next(m for m in (*keys.values(), *markers) if m in text)
        at = text.index(hit)
        context = text[max(0, at - 150) : at + 150]
        raise AssertionError(f"{', '.join(found)} leaked into {where}: ...{context}...")
