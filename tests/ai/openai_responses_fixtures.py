"""Wire helpers shared by the ``openai-responses`` tests: the Responses API's SSE events
(``event: <type>`` + ``data: <json>``) and a model on the loopback server."""

from __future__ import annotations

from typing import Any

from loopback import Delay, LoopbackServer, sse

from pi_notebook.ai import Model, ModelCost

KEY = "sk-proj-test-secret-key-0123456789"


def ev(kind: str, **fields: Any) -> bytes:
    return sse({"type": kind, **fields}, event=kind)


def created(resp_id: str = "resp_1") -> bytes:
    return ev("response.created", response={"id": resp_id, "object": "response", "status": "in_progress"})


def message_item(index: int, item_id: str, *deltas: str, phase: str | None = None) -> list[bytes]:
    item: dict[str, Any] = {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    if phase:
        item["phase"] = phase
    text = "".join(deltas)
    done = {
        **item,
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return [
        ev("response.output_item.added", output_index=index, item=item),
        ev(
            "response.content_part.added",
            output_index=index,
            item_id=item_id,
            content_index=0,
            part={"type": "output_text", "text": "", "annotations": []},
        ),
        *(
            ev("response.output_text.delta", output_index=index, item_id=item_id, content_index=0, delta=d)
            for d in deltas
        ),
        ev("response.output_text.done", output_index=index, item_id=item_id, content_index=0, text=text),
        ev("response.output_item.done", output_index=index, item=done),
    ]


def reasoning_item(
    index: int, item_id: str, summaries: list[list[str]], encrypted: str = "ENC=="
) -> list[bytes]:
    added = {"type": "reasoning", "id": item_id, "summary": []}
    out = [ev("response.output_item.added", output_index=index, item=added)]
    for j, parts in enumerate(summaries):
        out.append(
            ev(
                "response.reasoning_summary_part.added",
                output_index=index,
                item_id=item_id,
                summary_index=j,
                part={"type": "summary_text", "text": ""},
            )
        )
        out += [
            ev(
                "response.reasoning_summary_text.delta",
                output_index=index,
                item_id=item_id,
                summary_index=j,
                delta=p,
            )
            for p in parts
        ]
        out.append(
            ev(
                "response.reasoning_summary_part.done",
                output_index=index,
                item_id=item_id,
                summary_index=j,
                part={"type": "summary_text", "text": "".join(parts)},
            )
        )
    done = {
        "type": "reasoning",
        "id": item_id,
        "encrypted_content": encrypted,
        "summary": [{"type": "summary_text", "text": "".join(p)} for p in summaries],
    }
    return [*out, ev("response.output_item.done", output_index=index, item=done)]


def function_item(
    index: int, call_id: str, item_id: str, name: str, *fragments: str, final: str | None = None
) -> list[bytes]:
    item = {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": "",
        "status": "in_progress",
    }
    arguments = "".join(fragments) if final is None else final
    return [
        ev("response.output_item.added", output_index=index, item=item),
        *(
            ev("response.function_call_arguments.delta", output_index=index, item_id=item_id, delta=f)
            for f in fragments
        ),
        ev("response.function_call_arguments.done", output_index=index, item_id=item_id, arguments=arguments),
        ev(
            "response.output_item.done",
            output_index=index,
            item={**item, "arguments": arguments, "status": "completed"},
        ),
    ]


def completed(
    status: str = "completed",
    usage: dict[str, Any] | None = None,
    kind: str = "response.completed",
    **response: Any,
) -> bytes:
    body: dict[str, Any] = {"id": "resp_1", "status": status, **response}
    if usage is not None:
        body["usage"] = usage
    return ev(kind, response=body)


def paced(parts: list[bytes]) -> list[Any]:
    """The parts with a short pause after each one."""
    return [x for part in parts for x in (part, Delay(0.01))]


USAGE = {
    "input_tokens": 100,
    "input_tokens_details": {"cached_tokens": 40},
    "output_tokens": 20,
    "output_tokens_details": {"reasoning_tokens": 5},
    "total_tokens": 120,
}


def make_model(server: LoopbackServer, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "gpt-5-mini",
        "name": "GPT-5 Mini",
        "api": "openai-responses",
        "provider": "openai",
        "base_url": f"{server.url}/v1",
        "reasoning": True,
        "input": ["text", "image"],
        "cost": ModelCost(input=1.25, output=10, cache_read=0.125),
        "context_window": 400_000,
        "max_tokens": 128_000,
    }
    fields.update(overrides)
    return Model(**fields)
