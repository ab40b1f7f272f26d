"""The ``@tool`` decorator: a typed Python function (sync or async) becomes an ``AgentTool``.

The parameter schema is built with pydantic from the signature: annotations (missing =
``Any``), defaults (optional parameters), ``Annotated[..., Field(description=...)]``. The
docstring's first paragraph is the description, and a Google (``Args:``), NumPy
(``Parameters`` + dashes) or Sphinx (``:param x:``) section describes the parameters.
Parameters named ``tool_call_id``, ``signal`` and ``on_update`` are injected by the loop and
left out of the schema; ``on_update`` also accepts a plain string. Sync functions run in the
worker pool of :mod:`.tools`; return values become results through ``AgentToolResult.of``.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from ..ai.abort import AbortSignal
from .tools import INJECTED_PARAMETERS, is_async_callable
from .types import (
    AgentTool,
    AgentToolResult,
    AgentToolUpdateCallback,
    ToolExecutionMode,
)
from .workers import run_in_worker

T = TypeVar("T")


# --- docstrings --------------------------------------------------------------------------------


@dataclass
class Docstring:
    summary: str
    params: dict[str, str] = field(default_factory=dict)


_GOOGLE_HEADER = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments):\s*$")
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_DASHES = re.compile(r"^\s*-{3,}\s*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_docstring(doc: str | None) -> Docstring:
    """The first paragraph and the parameter descriptions of a Google/NumPy/Sphinx docstring."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or _GOOGLE_HEADER.match(stripped) or stripped.startswith(":"):
            break
        summary.append(stripped)
    params = _google_params(lines) or _numpy_params(lines) or _sphinx_params(lines)
    return Docstring(" ".join(summary), params)


def _google_params(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for start, header in enumerate(lines):
        if not _GOOGLE_HEADER.match(header.strip()):
            continue
        base, entry_indent, current = _indent(header), None, None
        for line in lines[start + 1 :]:
            if not line.strip():
                continue
            indent = _indent(line)
            if indent <= base:
                break
            entry_indent = indent if entry_indent is None else entry_indent
            match = _GOOGLE_ENTRY.match(line.strip()) if indent == entry_indent else None
            if match:
                current = match.group(1)
                params[current] = match.group(2).strip()
            elif current is not None:
                params[current] = f"{params[current]} {line.strip()}".strip()
    return params


def _numpy_params(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for start in range(len(lines) - 1):
        if lines[start].strip() not in ("Parameters", "Other Parameters") or not _DASHES.match(
            lines[start + 1]
        ):
            continue
        base, names = _indent(lines[start]), []
        body = lines[start + 2 :]
        for offset, line in enumerate(body):
            if not line.strip():
                continue
            if _indent(line) <= base:
                if offset + 1 < len(body) and _DASHES.match(body[offset + 1]):
                    break  # the next section
                names = [n.strip().lstrip("*") for n in line.split(":")[0].split(",") if n.strip()]
                params.update(dict.fromkeys(names, ""))
            else:
                for name in names:
                    params[name] = f"{params[name]} {line.strip()}".strip()
    return params


def _sphinx_params(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for line in lines:
        match = _SPHINX_PARAM.match(line.strip())
        if match:
            params[match.group(1)] = match.group(2).strip()
    return params


# --- the decorator -------------------------------------------------------------------------------


def _has_description(annotation: Any) -> bool:
    if typing.get_origin(annotation) is not Annotated:
        return False
    return any(isinstance(m, FieldInfo) and m.description for m in annotation.__metadata__)


def _parameters_model(fn: Callable[..., Any], tool_name: str, docs: Docstring) -> type[BaseModel]:
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.name in INJECTED_PARAMETERS:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(
                f"@tool {tool_name}: *args/**kwargs ({param.name}) cannot be described to a model"
            )
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        description = docs.params.get(param.name)
        if description and not _has_description(annotation):
            fields[param.name] = (annotation, Field(default, description=description))
        else:
            fields[param.name] = (annotation, default)
    class_name = "".join(part.capitalize() for part in tool_name.split("_")) + "Params"
    # No derived titles (``AgentTool.json_schema`` drops them, nested models too).
    config = ConfigDict(protected_namespaces=())
    model: type[BaseModel] = create_model(class_name, __config__=config, **fields)
    return model


@dataclass(kw_only=True, eq=False)
class FunctionTool(AgentTool):
    """An ``AgentTool`` made by ``@tool``; calling it calls the original function."""

    fn: Callable[..., Any] = field(repr=False)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _adapt_update(on_update: AgentToolUpdateCallback | None) -> Callable[[Any], None]:
    if on_update is None:
        return lambda _partial: None
    return lambda partial: on_update(AgentToolResult.of(partial))


def _make_execute(fn: Callable[..., Any], model: type[BaseModel]) -> Callable[..., Any]:
    signature = inspect.signature(fn)
    exposed = [name for name in signature.parameters if name not in INJECTED_PARAMETERS]
    injected = [name for name in signature.parameters if name in INJECTED_PARAMETERS]
    positional = [p.name for p in signature.parameters.values() if p.kind is p.POSITIONAL_ONLY]
    is_async = is_async_callable(fn)

    async def execute(
        tool_call_id: str, params: Any, signal: AbortSignal | None, on_update: AgentToolUpdateCallback | None
    ) -> AgentToolResult:
        if isinstance(params, Mapping):  # called directly, not through validation
            params = model.model_validate(params)
        kwargs: dict[str, Any] = {name: getattr(params, name) for name in exposed}
        provided = {"tool_call_id": tool_call_id, "signal": signal, "on_update": _adapt_update(on_update)}
        kwargs.update((name, provided[name]) for name in injected)
        args = [kwargs.pop(name) for name in positional]
        if is_async:
            value = await fn(*args, **kwargs)
        else:
            value = await run_in_worker(fn, *args, **kwargs)
            if inspect.isawaitable(value):
                value = await value
        return AgentToolResult.of(value)

    return execute


def _make_tool(
    fn: Callable[..., Any],
    name: str | None,
    label: str | None,
    description: str | None,
    execution_mode: ToolExecutionMode | None,
    *,
    requires_approval: bool = False,
) -> FunctionTool:
    tool_name = name or fn.__name__
    docs = parse_docstring(fn.__doc__)
    model = _parameters_model(fn, tool_name, docs)
    made = FunctionTool(
        name=tool_name,
        label=label or tool_name,
        description=docs.summary if description is None else description,
        parameters=model,
        execute=_make_execute(fn, model),
        execution_mode=execution_mode,
        requires_approval=requires_approval,
        fn=fn,
    )
    made.__wrapped__ = fn  # type: ignore[attr-defined]
    made.__doc__ = fn.__doc__
    return made


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    execution_mode: ToolExecutionMode | None = None,
    requires_approval: bool = False,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    execution_mode: ToolExecutionMode | None = None,
    requires_approval: bool = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a typed function (sync or async) into an ``AgentTool``: ``@tool`` or
    ``@tool(name=..., label=..., description=..., execution_mode=..., requires_approval=...)``.
    ``requires_approval=True``: in a ``%%pi`` run the tool waits for Approve / Deny like
    ``run_code`` (see the approvals section of the magic's docs)."""
    if fn is not None:
        return _make_tool(fn, name, label, description, execution_mode, requires_approval=requires_approval)
    return lambda f: _make_tool(
        f, name, label, description, execution_mode, requires_approval=requires_approval
    )
