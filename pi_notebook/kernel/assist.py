"""What the Pi kernel answers while the user types: completion, inspection, completeness.

* Completion: IPython's in ``%%python`` cells and IPython cells, the ``%pi`` subcommands after
  ``%pi``, template, ``skill:`` and command names after a prompt's leading ``/``, and IPython's
  inside an open `` $`...` `` of a prompt; elsewhere in a prompt nothing (prose has no
  completions).
* Inspection: in a prompt, the name under the cursor gets the bounded, secret-safe summary a
  `` $`name` `` reference would attach; in code, IPython's own inspection.
* Completeness: a prompt is complete as typed (a terminal submits it on Enter); a cell starting
  with ``%%`` (``%%python``, ``%%pi``) ends at the first empty line after its body (one Enter
  on an empty line sends it: IPython's own check wants a second one, since it reads the line the
  cursor is on as part of the cell only once a newline follows it); other IPython input follows
  IPython's rules, without the kernel's own transformers (the ``%%pi`` one binds the run
  function as it goes).

Functions of text and a namespace; ``kernel.py`` wires them to the messages.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .routing import classify

__all__ = [
    "SUBCOMMAND_LINE",
    "complete_reply",
    "inspect_prompt",
    "is_complete",
    "mask_python_marker",
    "open_reference",
    "shift_reply",
]

Completer = Callable[[str, int], dict[str, Any]]

SUBCOMMAND_LINE = re.compile(r"^\s*%pi\s+(?:--name\s+\S+\s+)?([\w-]*)$")
_NAME_AT = re.compile(r"[A-Za-z_][\w.]*")
SLASH_WORD = re.compile(r"^\s*/([\w:.-]*)$")
"""A prompt's first word being typed after ``/`` (a template, ``skill:NAME``, a command)."""


def mask_python_marker(code: str) -> str:
    """``code`` with its ``%%python`` line blanked to spaces: offsets stay, IPython sees Python."""
    first, newline, rest = code.partition("\n")
    return " " * len(first) + newline + rest


def open_reference(code: str, cursor: int) -> int | None:
    """Where the expression of an unclosed `` $`...` `` before ``cursor`` starts (on the
    cursor's line), or ``None`` when the cursor is not inside one."""
    line_start = code.rfind("\n", 0, cursor) + 1
    before = code[line_start:cursor]
    opening = before.rfind("$`")
    if opening < 0 or "`" in before[opening + 2 :]:
        return None
    return line_start + opening + 2


def shift_reply(reply: dict[str, Any], offset: int) -> dict[str, Any]:
    """A completion reply for a fragment moved to where the fragment starts in the cell."""
    shifted = dict(reply)
    shifted["cursor_start"] = reply["cursor_start"] + offset
    shifted["cursor_end"] = reply["cursor_end"] + offset
    metadata = dict(reply.get("metadata") or {})
    for key, entries in list(metadata.items()):
        if isinstance(entries, list) and all(isinstance(e, dict) and "start" in e for e in entries):
            metadata[key] = [{**e, "start": e["start"] + offset, "end": e["end"] + offset} for e in entries]
    shifted["metadata"] = metadata
    return shifted


def _matches(matches: list[str], start: int, end: int) -> dict[str, Any]:
    return {"status": "ok", "matches": matches, "cursor_start": start, "cursor_end": end, "metadata": {}}


def complete_reply(
    code: str,
    cursor: int,
    ipython: Completer,
    subcommands: Callable[[], list[str]],
    slash_names: Callable[[], list[str]] = list,
) -> dict[str, Any]:
    """The ``complete_reply`` content for ``code`` at ``cursor``; ``ipython`` is the kernel's
    own completion of a code fragment, ``subcommands`` the ``%pi`` subcommand names,
    ``slash_names`` what a prompt may start with after ``/``."""
    kind = classify(code)
    line_start = code.rfind("\n", 0, cursor) + 1
    pi_line = SUBCOMMAND_LINE.match(code[line_start:cursor])
    if pi_line is not None and kind != "prompt":
        word = pi_line.group(1)
        found = sorted(name for name in subcommands() if name.startswith(word))
        return _matches(found, cursor - len(word), cursor)
    if kind == "python":
        if cursor <= code.find("\n") or "\n" not in code:
            return _matches([], cursor, cursor)
        return ipython(mask_python_marker(code), cursor)
    if kind == "prompt":
        slash = SLASH_WORD.match(code[:cursor])
        if slash is not None:
            word = slash.group(1)
            found = sorted(name for name in slash_names() if name.startswith(word))
            return _matches(found, cursor - len(word), cursor)
        start = open_reference(code, cursor)
        if start is None:
            return _matches([], cursor, cursor)
        return shift_reply(ipython(code[start:cursor], cursor - start), start)
    return ipython(code, cursor)


def name_at(code: str, cursor: int) -> str | None:
    """The dotted name under (or just before) ``cursor``."""
    for match in _NAME_AT.finditer(code):
        if match.start() <= cursor <= match.end():
            return match.group().rstrip(".") or None
    return None


def lookup(name: str, namespace: Mapping[str, Any]) -> tuple[bool, Any]:
    """``(found, value)`` of a dotted name in ``namespace``; attributes are read as IPython's
    inspector reads them."""
    head, *rest = name.split(".")
    if head not in namespace:
        return False, None
    value = namespace[head]
    for part in rest:
        try:
            value = getattr(value, part)
        except Exception:
            return False, None
    return True, value


def inspect_prompt(code: str, cursor: int, namespace: dict[str, Any]) -> dict[str, Any]:
    """The ``inspect_reply`` content for a prompt: the summary of the variable at ``cursor``."""
    from ..notebook.tools.references import evaluate_reference, redact_known, secret_values

    name = name_at(code, cursor)
    found, _ = lookup(name, namespace) if name else (False, None)
    if not found or name is None:
        return {"status": "ok", "found": False, "data": {}, "metadata": {}}
    reference = evaluate_reference(name, namespace)
    text = f"{name}: {redact_known(reference.summary, secret_values(namespace))}"
    return {"status": "ok", "found": True, "data": {"text/plain": text}, "metadata": {}}


def is_complete(code: str) -> dict[str, Any]:
    """The ``is_complete_reply`` content for ``code`` (module docstring)."""
    kind = classify(code)
    if kind in ("prompt", "empty"):
        return {"status": "complete"}
    if code.lstrip().startswith("%%"):
        return _cell_magic_complete(code)
    from IPython.core.inputtransformer2 import TransformerManager

    status, indent = TransformerManager().check_complete(code)  # type: ignore[no-untyped-call]
    reply: dict[str, Any] = {"status": status}
    if status == "incomplete":
        reply["indent"] = " " * (indent or 0)
    return reply


def _cell_magic_complete(code: str) -> dict[str, Any]:
    """A ``%%`` cell is complete when the line being typed is empty (spaces allowed: a terminal
    fills in an indent) and a line of body comes before it: Enter on the first empty line sends
    the cell, and Enter right after the ``%%`` line starts the body."""
    lines = code.lstrip("\n").split("\n")
    body = lines[1:-1]
    if len(lines) >= 2 and not lines[-1].strip() and any(line.strip() for line in body):
        return {"status": "complete"}
    return {"status": "incomplete", "indent": _indent(lines[-1] if len(lines) > 1 else "")}


def _indent(line: str) -> str:
    """The indent of the next line: the current one's, one level deeper after a ``:``."""
    indent = line[: len(line) - len(line.lstrip())]
    return indent + "    " if line.rstrip().endswith(":") else indent
