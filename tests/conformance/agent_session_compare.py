"""Comparing AgentSession traces of Pi and pi_notebook: the normalisation on top of
``agent_compare``'s (timestamps, random tool-call ids, ``0`` against ``0.0``).

* Session entry ids are random: each becomes ``<entry-N>`` in the order the entries were
  appended, wherever it appears (``id``, ``parentId``, ``firstKeptEntryId``, a compaction's
  result in ``compaction_end``). Entry timestamps are ISO strings under ``timestamp`` and become
  ``0`` like every other timestamp.
* ``message_update`` events keep the assistant event's ``type``, ``contentIndex`` and
  ``delta``: the streamed partials are the Agent's, compared to the byte by the agent
  conformance suite; here the order of the session's events around them is what matters.

Everything else (the session's events with all their fields, step and action outcomes, the
provider requests with the summarization prompts, state, entries in memory and in the file)
compares exactly.
"""

from __future__ import annotations

from typing import Any

from conformance.agent_compare import normalise

PARTIAL_KEYS = ("type", "contentIndex", "delta")


def _condense(event: dict[str, Any]) -> dict[str, Any]:
    if event.get("type") != "message_update":
        return event
    inner = event.get("assistantMessageEvent") or {}
    kept = {key: inner[key] for key in PARTIAL_KEYS if key in inner}
    return {"type": "message_update", "assistantMessageEvent": kept}


def _entry_ids(result: dict[str, Any]) -> dict[str, str]:
    ids: dict[str, str] = {}
    for entry in result.get("entries") or []:
        if isinstance(entry.get("id"), str):
            ids.setdefault(entry["id"], f"<entry-{len(ids) + 1}>")
    return ids


def normalise_session(result: dict[str, Any]) -> Any:
    """``result`` with entry ids numbered, ``message_update`` condensed, then ``normalise``d."""
    ids = _entry_ids(result)

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, str):
            return ids.get(value, value)
        return value

    condensed = {**result, "events": [_condense(e) for e in result.get("events", [])]}
    return normalise(walk(condensed))
