"""Scripted responses of the four wire APIs, cut into pieces so a fault can be spliced in.

Each API gives a model on the loopback server, an HTTP error body in its provider's shape and
a :class:`Script`: the streamed reply of one assistant turn as ``head`` (the events before any
content), ``text`` (one text block, one event per delta), ``tool`` (one tool call whose
arguments arrive in two pieces where the API streams them) and ``final`` (the events that
finish the message). :func:`fault_parts` turns a script and a fault name into the body parts
the loopback server plays.

The shapes are the ones the provider tests in ``tests/ai`` use (and the real APIs send).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loopback import DROP, Delay, Reply, json_reply, sse

from pi_notebook.ai.types import Model, ModelCost

TOOL_NAME = "lookup"
TOOL_ARGS = {"key": "alpha"}
ARGS_JSON = json.dumps(TOOL_ARGS)
ARGS_SPLIT = (ARGS_JSON[:6], ARGS_JSON[6:])  # '{"key"' + ': "alpha"}'

APIS = ("openai-completions", "openai-responses", "anthropic-messages", "google-generative-ai")


@dataclass(frozen=True)
class Script:
    head: list[bytes]
    text: list[bytes]
    tool: list[bytes]
    final: list[bytes]

    def parts(self) -> list[Any]:
        return [*self.head, *self.text, *self.tool, *self.final]


# --- openai-completions ------------------------------------------------------------------------


def _cc_chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
    obj: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage is not None:
        obj["usage"] = usage
    return sse(obj)


def _split(args: dict[str, Any] | None) -> tuple[str, str]:
    """The arguments' JSON in two pieces (``ARGS_SPLIT`` for the default ones)."""
    if args is None:
        return ARGS_SPLIT
    text = json.dumps(args)
    return text[:6], text[6:]


def _cc_tool(
    call_id: str | None, *, with_text: bool, name: str = TOOL_NAME, args: dict[str, Any] | None = None
) -> Script:
    head = [_cc_chunk({"role": "assistant", "content": ""})]
    text = [_cc_chunk({"content": "Let me "}), _cc_chunk({"content": "look."})] if with_text else []
    split = _split(args)
    function = {"name": name, "arguments": split[0]}
    first = {"index": 0, "type": "function", "function": function}
    if call_id is not None:  # None: a server that sends no id
        first["id"] = call_id
    tool = [
        _cc_chunk({"tool_calls": [first]}),
        _cc_chunk({"tool_calls": [{"index": 0, "function": {"arguments": split[1]}}]}),
    ]
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    final = [_cc_chunk({}, "tool_calls", usage), b"data: [DONE]\n\n"]
    return Script(head, text, tool, final)


def _cc_text(text: str) -> Script:
    head = [_cc_chunk({"role": "assistant", "content": ""})]
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    final = [_cc_chunk({}, "stop", usage), b"data: [DONE]\n\n"]
    return Script(head, [_cc_chunk({"content": t}) for t in _halves(text)], [], final)


# --- openai-responses --------------------------------------------------------------------------


def _ev(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields}, event=kind)


def _resp_text_events(index: int, item_id: str, text: str) -> list[bytes]:
    item = {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    done = {**item, "status": "completed", "content": [{**part, "text": text}]}
    loc = {"output_index": index, "item_id": item_id, "content_index": 0}
    return [
        _ev("response.output_item.added", output_index=index, item=item),
        _ev("response.content_part.added", **loc, part=part),
        *(_ev("response.output_text.delta", **loc, delta=d) for d in _halves(text)),
        _ev("response.output_text.done", **loc, text=text),
        _ev("response.output_item.done", output_index=index, item=done),
    ]


def _resp_completed() -> bytes:
    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    return _ev("response.completed", response={"id": "resp_1", "status": "completed", "usage": usage})


def _resp_tool(
    call_id: str | None, *, with_text: bool, name: str = TOOL_NAME, args: dict[str, Any] | None = None
) -> Script:
    split = _split(args)
    whole = "".join(split)
    head = [_ev("response.created", response={"id": "resp_1", "object": "response", "status": "in_progress"})]
    text = _resp_text_events(0, "msg_1", "Let me look.") if with_text else []
    index = 1 if with_text else 0
    item = {"type": "function_call", "id": "fc_1", "name": name, "arguments": "", "status": "in_progress"}
    if call_id is not None:  # None: a server that sends no call_id
        item["call_id"] = call_id
    tool = [
        _ev("response.output_item.added", output_index=index, item=item),
        *(
            _ev("response.function_call_arguments.delta", output_index=index, item_id="fc_1", delta=piece)
            for piece in split
        ),
        _ev("response.function_call_arguments.done", output_index=index, item_id="fc_1", arguments=whole),
        _ev(
            "response.output_item.done",
            output_index=index,
            item={**item, "arguments": whole, "status": "completed"},
        ),
    ]
    return Script(head, text, tool, [_resp_completed()])


def _resp_text(text: str) -> Script:
    head = [_ev("response.created", response={"id": "resp_2", "object": "response", "status": "in_progress"})]
    return Script(head, _resp_text_events(0, "msg_2", text), [], [_resp_completed()])


# --- anthropic-messages ------------------------------------------------------------------------


def _an_start() -> bytes:
    message = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-test",
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    return _ev("message_start", message=message)


def _an_text_block(index: int, text: str) -> list[bytes]:
    return [
        _ev("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        *(
            _ev("content_block_delta", index=index, delta={"type": "text_delta", "text": d})
            for d in _halves(text)
        ),
        _ev("content_block_stop", index=index),
    ]


def _an_final(stop_reason: str) -> list[bytes]:
    delta = {"stop_reason": stop_reason, "stop_sequence": None}
    return [_ev("message_delta", delta=delta, usage={"output_tokens": 5}), _ev("message_stop")]


def _an_tool(
    call_id: str | None, *, with_text: bool, name: str = TOOL_NAME, args: dict[str, Any] | None = None
) -> Script:
    text = _an_text_block(0, "Let me look.") if with_text else []
    index = 1 if with_text else 0
    block: dict[str, Any] = {"type": "tool_use", "name": name, "input": {}}
    if call_id is not None:  # None: a server that sends no id
        block["id"] = call_id
    tool = [
        _ev("content_block_start", index=index, content_block=block),
        *(
            _ev("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": p})
            for p in _split(args)
        ),
        _ev("content_block_stop", index=index),
    ]
    return Script([_an_start()], text, tool, _an_final("tool_use"))


def _an_text(text: str) -> Script:
    return Script([_an_start()], _an_text_block(0, text), [], _an_final("end_turn"))


# --- google-generative-ai ----------------------------------------------------------------------


def _g_chunk(*parts: dict[str, Any], finish: str | None = None, usage: bool = False) -> bytes:
    candidate: dict[str, Any] = {"index": 0}
    if parts:
        candidate["content"] = {"role": "model", "parts": list(parts)}
    if finish:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-2.5-flash", "responseId": "r1"}
    if usage:
        body["usageMetadata"] = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
    return sse(body)


def _g_tool(
    call_id: str | None, *, with_text: bool, name: str = TOOL_NAME, args: dict[str, Any] | None = None
) -> Script:
    # Gemini has no opening event and sends a function call whole, in one chunk.
    text = [_g_chunk({"text": t}) for t in _halves("Let me look.")] if with_text else []
    call: dict[str, Any] = {"name": name, "args": TOOL_ARGS if args is None else args}
    if call_id is not None:  # None: a call without an id (Gemini often sends none)
        call["id"] = call_id
    tool = [_g_chunk({"functionCall": call})]
    return Script([], text, tool, [_g_chunk(finish="STOP", usage=True)])


def _g_text(text: str) -> Script:
    return Script(
        [], [_g_chunk({"text": t}) for t in _halves(text)], [], [_g_chunk(finish="STOP", usage=True)]
    )


# --- per API -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WireApi:
    api: str
    provider: str
    model_id: str
    path: str  # the base URL's path on the loopback server
    tool_script: Callable[..., Script]
    text_script: Callable[[str], Script]
    error_body: Callable[[int], dict[str, Any]]
    env_key: str

    def model(self, base: str) -> Model:
        return Model(
            id=self.model_id,
            name=self.model_id,
            api=self.api,
            provider=self.provider,
            base_url=base + self.path,
            reasoning=False,
            input=["text", "image"],
            cost=ModelCost(input=1.0, output=2.0),
            context_window=128_000,
            max_tokens=4096,
        )


def _openai_error(status: int) -> dict[str, Any]:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": f"Upstream said no (HTTP {status}).", "type": kind, "code": None}}


def _anthropic_error(status: int) -> dict[str, Any]:
    kind = {401: "authentication_error", 429: "rate_limit_error", 529: "overloaded_error"}.get(
        status, "api_error" if status >= 500 else "invalid_request_error"
    )
    return {"type": "error", "error": {"type": kind, "message": f"Upstream said no (HTTP {status})."}}


def _google_error(status: int) -> dict[str, Any]:
    names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}
    name = names.get(status, "UNAVAILABLE" if status >= 500 else "FAILED_PRECONDITION")
    return {"error": {"code": status, "message": f"Upstream said no (HTTP {status}).", "status": name}}


WIRES: dict[str, WireApi] = {
    "openai-completions": WireApi(
        "openai-completions", "openai", "gpt-test", "/v1", _cc_tool, _cc_text, _openai_error,
        "OPENAI_API_KEY",
    ),
    "openai-responses": WireApi(
        "openai-responses", "openai", "gpt-test", "/v1", _resp_tool, _resp_text, _openai_error,
        "OPENAI_API_KEY",
    ),
    "anthropic-messages": WireApi(
        "anthropic-messages", "anthropic", "claude-test", "", _an_tool, _an_text, _anthropic_error,
        "ANTHROPIC_API_KEY",
    ),
    "google-generative-ai": WireApi(
        "google-generative-ai", "google", "gemini-2.5-flash", "/v1beta", _g_tool, _g_text, _google_error,
        "GEMINI_API_KEY",
    ),
}  # fmt: skip


def _halves(text: str) -> list[str]:
    cut = len(text) // 2
    return [text[:cut], text[cut:]]


# --- faults ------------------------------------------------------------------------------------

HTTP_STATUSES = (400, 401, 404, 408, 413, 429, 500, 502, 503, 529)
STREAM_FAULTS = (
    "refused",
    "drop_after_headers",
    "drop_mid_text",
    "drop_mid_tool_args",
    "drop_before_final",
    "malformed_sse",
    "json_not_an_object",
    "json_wrong_field_types",
    "json_body_not_sse",
    "never_finishes",
    "empty_body",
)
# a proxy's HTML error page, and an error with no body at all
ODD_HTTP_FAULTS = ("http_502_html", "http_500_no_body")
FAULTS: tuple[str, ...] = (*(f"http_{s}" for s in HTTP_STATUSES), *ODD_HTTP_FAULTS, *STREAM_FAULTS)
HTML_PAGE = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
)

STALL_SECONDS = 5.0  # the stalled server's pause; the request timeout fires long before


def _wrong_field_types(api: str) -> bytes:
    """One event that is valid JSON in the API's envelope but with fields of the wrong type."""
    if api == "openai-completions":
        return sse({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": "oops"}]})
    if api == "openai-responses":
        return _ev("response.output_text.delta", output_index=0, item_id="msg_1", content_index=0, delta=42)
    if api == "anthropic-messages":
        return _ev("content_block_delta", index=0, delta={"type": "text_delta", "text": 42})
    return sse({"candidates": [{"index": 0, "content": {"role": "model", "parts": [{"text": 42}]}}]})


def _malformed(api: str) -> bytes:
    """A ``data:`` line that is not JSON, under the event name the API's parser reads."""
    event = {"openai-responses": "response.output_text.delta", "anthropic-messages": "content_block_delta"}
    head = f"event: {event[api]}\n".encode() if api in event else b""
    return head + b"data: }{ this is not JSON\n\n"


def fault_parts(api: str, fault: str, script: Script) -> list[Any]:
    """The body parts of a 200 streamed reply carrying ``fault`` (stream faults only)."""
    head, text, tool, final = script.head, script.text, script.tool, script.final
    if fault == "drop_after_headers":
        return [DROP]
    if fault == "drop_mid_text":
        return [*head, *text[: len(text) // 2 or 1], DROP]
    if fault == "drop_mid_tool_args":
        if api == "google-generative-ai":  # the call arrives whole: cut its one chunk in half
            return [*head, *text, tool[0][: len(tool[0]) // 2], DROP]
        # the tool-call opening plus the first arguments fragment, then the socket closes
        return [*head, *text, *tool[: len(tool) // 2], DROP]
    if fault == "drop_before_final":
        return [*head, *text, *tool, DROP]
    if fault == "malformed_sse":
        return [*head, *text[:1], _malformed(api), *text[1:], *tool, *final]
    if fault == "json_not_an_object":
        # JSON values that are not objects, then the stream just ends
        return [*head, b"data: [1, 2, 3]\n\n", b'data: "text"\n\n', b"data: 42\n\n", b"data: null\n\n"]
    if fault == "json_wrong_field_types":
        return [*head, *text[:1], _wrong_field_types(api)]
    if fault == "json_body_not_sse":  # a proxy answering 200 with a plain JSON error, no SSE framing
        return [json.dumps({"error": {"message": "upstream unavailable", "code": 503}}).encode()]
    if fault == "never_finishes":
        return [*head, *text[:1], Delay(STALL_SECONDS), *text[1:], *final]
    if fault == "empty_body":
        return []
    raise ValueError(f"not a stream fault: {fault}")


def fault_reply(wire: WireApi, fault: str, script: Script) -> Reply:
    if fault == "http_502_html":
        return Reply(502, [HTML_PAGE.encode()], {"content-type": "text/html"})
    if fault == "http_500_no_body":
        return Reply(500, [], {"content-type": "application/json"})
    if fault.startswith("http_"):
        status = int(fault.removeprefix("http_"))
        return json_reply(status, wire.error_body(status))
    return Reply(200, fault_parts(wire.api, fault, script))


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (the port was bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
