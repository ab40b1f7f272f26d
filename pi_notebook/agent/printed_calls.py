"""Tool calls a model printed in its text instead of making them, and Python it fenced.

Small local models (Qwen 2.5 Coder, Llama 3.1 under llama.cpp, Ollama, LM Studio) often answer
a turn that should call a tool with text that holds the call:

* ``json``: a JSON object naming the tool, bare or in a ```json fence:
  ``{"name": "run_code", "arguments": {...}}``, also ``"parameters"`` / ``"args"`` /
  ``"input"`` for the arguments, ``"tool"`` / ``"function"`` for the name, OpenAI's
  ``{"function": {"name": ..., "arguments": "<JSON text>"}}``, and a list of such objects;
* ``tagged``: Hermes / Qwen ``<tool_call>{...}</tool_call>`` tags (the closing tag may be
  missing when the model stopped there);
* ``fenced``: ```python (``py``, ``python3``) blocks, read as calls of the Python tool when
  the run has one (``run_code``) and the answer ends with a block: the model wrote its code
  and stopped. An answer that goes on after its code (an explanation, an example among
  prose) is an answer, not a call. (``printed_turns`` reads blocks only from local models.)

``printed_calls`` finds them, in the order they appear. A candidate counts only when it names
one of the given tools and its arguments pass that tool's JSON schema (``validate_tool_call``):
a call to an unknown tool, or with arguments the tool would refuse, is never offered. Tagged
and JSON calls win over fenced code (a model that wrote both meant the call). The function is
pure: it reads text and schemas and makes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..ai.types import ToolCall
from ..ai.validation import validate_tool_call

__all__ = ["MAX_ATTEMPTS", "MAX_SCAN_CHARS", "PrintedCall", "PrintedForm", "printed_calls", "python_blocks"]

PrintedForm: TypeAlias = Literal["json", "tagged", "fenced"]

MAX_SCAN_CHARS = 200_000
"""Longer texts are not scanned for JSON objects (each ``{`` is a parse attempt)."""
MAX_ATTEMPTS = 2_000
"""At most this many ``{`` / ``[`` are tried as the start of a JSON value per text."""

_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "parameters", "args", "input", "tool_input")
_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(
    r"^[ \t]*```[ \t]*(python3?|py)[ \t]*\n(.*?)(?:^[ \t]*```[ \t]*$|\Z)",
    re.DOTALL | re.MULTILINE | re.IGNORECASE,
)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class PrintedCall:
    """One call found in a text: the tool, its (validated) arguments, the form it had and
    where it was (``start``, ``end``: offsets into the text)."""

    name: str
    arguments: dict[str, Any]
    form: PrintedForm
    start: int = 0
    end: int = 0
    source: str = field(default="", compare=False)
    """The text it was read from (the JSON object, the tag's body, the code)."""


def python_blocks(text: str) -> list[tuple[int, int, str]]:
    """The ```python fenced blocks of ``text``: (start, end, code), code without the fences; a
    last block whose closing fence is missing counts (the model stopped at its end). Blocks
    with nothing but whitespace are left out."""
    found = []
    for match in _FENCE.finditer(text):
        code = match.group(2)
        if code.strip():
            found.append((match.start(), match.end(), code.rstrip("\n") + "\n"))
    return found


def printed_calls(
    text: str, tools: Sequence[Any], *, python_tool: str | None = "run_code"
) -> list[PrintedCall]:
    """The calls ``text`` holds in a form above, of ``tools`` only (objects with ``name`` and
    ``parameters``: ``ai.Tool`` or ``AgentTool``). ``python_tool``: the tool a ```python block
    calls with ``{"code": ...}`` (``None``, or a name not among ``tools``: fenced code is
    not a call)."""
    if not text or not tools:
        return []
    by_name = {tool.name: tool for tool in tools}
    tagged = list(_tagged(text, by_name))
    taken = [(call.start, call.end) for call in tagged]
    loose = [c for c in _json_objects(text, by_name) if not _inside(c.start, taken)]
    calls = sorted(tagged + loose, key=lambda call: call.start)
    if calls or python_tool is None or python_tool not in by_name:
        return calls
    blocks = python_blocks(text)
    if not blocks or text[blocks[-1][1] :].strip():
        return []  # prose after the last block: the code is part of an answer
    fenced = []
    for start, end, code in blocks:
        call = _valid(by_name, python_tool, {"code": code}, ("fenced", start, end, code))
        if call is not None:
            fenced.append(call)
    return fenced


def _inside(offset: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= offset < end for start, end in spans)


def _tagged(text: str, by_name: Mapping[str, Any]) -> Iterator[PrintedCall]:
    for match in _TAG.finditer(text):
        body = match.group(1)
        brace = body.find("{")
        if brace < 0:
            continue
        value = _decode_at(body, brace)
        if value is None:
            continue
        for obj in value if isinstance(value, list) else [value]:
            call = _call_of(obj, by_name, ("tagged", match.start(), match.end(), body), lenient=True)
            if call is not None:
                yield call


def _json_objects(text: str, by_name: Mapping[str, Any]) -> Iterator[PrintedCall]:
    """Every JSON object (or list of objects) in ``text`` that is a call, outermost first; an
    object that is not a call is searched inside (``{"tool_calls": [...]}``), a call is not."""
    if len(text) > MAX_SCAN_CHARS:
        return
    i = 0
    for _ in range(MAX_ATTEMPTS):
        starts = [p for p in (text.find("{", i), text.find("[", i)) if p >= 0]
        if not starts:
            return
        i = min(starts)
        end, value = _decode_span(text, i)
        if value is None:
            i += 1
            continue
        objects = value if isinstance(value, list) else [value]
        calls = [_call_of(obj, by_name, ("json", i, end, text[i:end])) for obj in objects]
        found = [call for call in calls if call is not None]
        yield from found
        i = end if found else i + 1


def _decode_span(text: str, start: int) -> tuple[int, Any]:
    try:
        value, end = _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return start, None
    return end, value if isinstance(value, dict | list) else None


def _decode_at(text: str, start: int) -> Any:
    return _decode_span(text, start)[1]


_Where: TypeAlias = tuple[PrintedForm, int, int, str]
"""A candidate's form, start, end and source text."""


def _call_of(
    obj: Any, by_name: Mapping[str, Any], where: _Where, *, lenient: bool = False
) -> PrintedCall | None:
    """``obj`` as a call of a known tool, or ``None``. ``lenient`` (a tagged call): the
    arguments may be missing (a tool without required parameters)."""
    if not isinstance(obj, dict):
        return None
    inner = obj.get("function")
    if isinstance(inner, dict):  # OpenAI's {"type": "function", "function": {...}}
        obj = inner
    name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    if name is None or name not in by_name:
        return None
    key = next((k for k in _ARG_KEYS if k in obj), None)
    if key is None and not lenient:
        return None
    arguments = obj.get(key, {}) if key is not None else {}
    if isinstance(arguments, str):  # OpenAI sends the arguments as JSON text
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return _valid(by_name, name, arguments, where)


def _valid(
    by_name: Mapping[str, Any], name: str, arguments: dict[str, Any], where: _Where
) -> PrintedCall | None:
    """The call when the tool's schema accepts its arguments (as the loop would convert them)."""
    try:
        checked = validate_tool_call([by_name[name]], ToolCall(id="printed", name=name, arguments=arguments))
    except (ValueError, TypeError, RecursionError):
        return None
    args = checked if isinstance(checked, dict) else arguments
    form, start, end, source = where
    return PrintedCall(name, dict(args), form, start, end, source)
