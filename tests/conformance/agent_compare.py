"""Comparing agent traces of Pi and pi_notebook: the normalisation and a readable diff.

Only what is random or clock-bound is normalised: every ``timestamp`` becomes 0, and tool
call ids that were generated at random (``tool:<ms>:<random>``, the faux provider's format when
a scenario gives none) become ``<tool-id-N>`` in order of first appearance. JSON numbers compare
by value (Pi writes ``0`` where Python writes ``0.0``). Everything else compares exactly.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

RANDOM_TOOL_ID = re.compile(r"^tool:\d+:[0-9a-z]+$")


def normalise(result: Any) -> Any:
    ids: dict[str, str] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: 0 if key == "timestamp" else walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and RANDOM_TOOL_ID.match(value):
            return ids.setdefault(value, f"<tool-id-{len(ids) + 1}>")
        return value

    return walk(result)


def _lines(result: dict[str, Any]) -> list[str]:
    """One line per event, request and state field: diffs point at the event that differs."""
    lines: list[str] = []
    for index, event in enumerate(result.get("events", [])):
        lines.append(f"event {index}: {json.dumps(event, sort_keys=True, ensure_ascii=False)}")
    for key in sorted(k for k in result if k != "events"):
        value = result[key]
        if isinstance(value, list):
            lines += [
                f"{key} {i}: {json.dumps(v, sort_keys=True, ensure_ascii=False)}" for i, v in enumerate(value)
            ]
        elif isinstance(value, dict):
            lines += [
                f"{key}.{k}: {json.dumps(v, sort_keys=True, ensure_ascii=False)}"
                for k, v in sorted(value.items())
            ]
        else:
            lines.append(f"{key}: {json.dumps(value, ensure_ascii=False)}")
    return lines


def _first_difference(a: str, b: str) -> str:
    index = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, index - 60)
    return (
        f"  first difference at character {index}:\n"
        f"    expected ...{a[start : index + 80]}\n"
        f"    ours     ...{b[start : index + 80]}"
    )


def readable_diff(expected: dict[str, Any], ours: dict[str, Any], limit: int = 60) -> str:
    """A unified diff of the two results, one JSON line per event, with the first differing
    characters of each changed line pair spelled out."""
    a, b = _lines(expected), _lines(ours)
    out = list(
        difflib.unified_diff(a, b, "expected (Pi, after declared deviations)", "ours", lineterm="", n=1)
    )
    details = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace":
            for x, y in zip(a[i1:i2], b[j1:j2], strict=False):
                details.append(f"{x.split(':', 1)[0]}:\n{_first_difference(x, y)}")
    clipped = [line if len(line) < 400 else line[:400] + " ..." for line in out[:limit]]
    if len(out) > limit:
        clipped.append(f"... {len(out) - limit} more diff lines")
    return "\n".join([*clipped, "", *details[:8]])
