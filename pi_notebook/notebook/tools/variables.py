"""What ``list_variables`` and ``inspect_variable`` read, and how without side effects.

* Summaries run the values' own code, on a thread of their own with a time limit (``bounded``):
  a slow ``__repr__`` never holds the kernel, and Stop or a kernel interrupt ends the tool at
  once. ``list_variables`` keeps the rows it finished and names the value that was too slow.
  A listing of plain builtin values only (``_quick``: their summaries run no user code and
  read a bounded part of each) is made on the spot: handing it to the thread would cost more.
* A dotted path (``model.config``) is followed with ``inspect.getattr_static``: a stored
  attribute (instance or class dict, ``__slots__``, a C-level field) is read, a method is bound,
  but a property or any other descriptor is reported as such, unevaluated, and an attribute
  that only ``__getattr__`` computes is refused: either would run code of the object's class,
  which may change state in a tool that promises to only read. ``run_code`` reads them, through
  the user's approval policy. Objects of the data libraries (pandas, numpy, polars, ...) are
  read with plain ``getattr``: their attributes (``df.shape``, ``df.price``) are computed but do
  not change the object.
"""

from __future__ import annotations

import fnmatch
import inspect
import re
import threading
import types
from collections.abc import Mapping
from typing import Any

from ...ai.abort import AbortSignal
from . import bounded
from .bounded import SummaryStillRunning, SummaryTimedOut, run_bounded, summarising
from .references import looks_secret, one_line, secret_placeholder, summarize

__all__ = ["Unevaluated", "inspect_text", "list_text", "resolve", "variable_names"]

DATA_LIBRARIES = frozenset(
    {"pandas", "numpy", "polars", "pyarrow", "torch", "xarray", "duckdb", "dask", "pyspark", "scipy"}
)
_C_LEVEL = (
    types.MemberDescriptorType,
    types.GetSetDescriptorType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
    types.BuiltinFunctionType,
)
_PATH = re.compile(r"[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*")


def _matches(pattern: str, name: str) -> bool:
    """Case-insensitive: a glob when ``pattern`` has ``*?[``, else a substring."""
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(name.lower(), pattern.lower())
    return pattern.lower() in name.lower()


def variable_names(shell: Any, pattern: str | None, include_modules: bool) -> tuple[list[str], int]:
    """The user's variable names (sorted, matching ``pattern``) and how many there are in all."""
    ns, hidden = shell.user_ns, getattr(shell, "user_ns_hidden", {})
    missing = object()
    # %who's rule: a startup name counts once the user rebinds it
    names = [n for n in ns if not n.startswith("_") and ns[n] is not hidden.get(n, missing)]
    if not include_modules:
        names = [n for n in names if not isinstance(ns[n], types.ModuleType)]
    total = len(names)
    if pattern:
        names = [n for n in names if _matches(pattern, n)]
    return sorted(names), total


_ATOMS = frozenset({bool, float, complex, str, type(None)})
_INT_BITS = 4096
"""An ``int`` up to this many bits prints in microseconds (a huge one takes quadratic time)."""
_QUICK_ITEMS = 64


def _atom(value: Any) -> bool:
    kind = type(value)
    return kind in _ATOMS or (kind is int and value.bit_length() <= _INT_BITS)


def _quick(value: Any) -> bool:
    """Whether ``value``'s one-line summary runs only the interpreter's own code over a bounded
    part of it (exact builtin scalars, a ``str`` whose repr is cut first, a short list or tuple
    of them): no code of the user's, nothing that could be slow, so no thread is needed."""
    kind = type(value)
    if kind is list or kind is tuple:
        return len(value) <= _QUICK_ITEMS and all(_atom(item) for item in value)
    return _atom(value)


def _row(name: str, value: Any) -> str:
    summary = secret_placeholder(name, value) if looks_secret(name) else one_line(value)
    return f"{name}: {type(value).__name__} = {summary}"


async def list_text(ns: Mapping[str, Any], names: list[str], limit: int, signal: AbortSignal | None) -> str:
    """One row per variable of ``names[:limit]``; rows not summarised in time say so."""
    shown = names[:limit]
    rows: list[str] = []
    stop: threading.Event | None = None  # set when the thread's summary is abandoned

    def summarise() -> None:
        for name in shown:
            if stop is not None and stop.is_set():
                return
            value = ns.get(name)
            try:
                with summarising(value, name):
                    row = _row(name, value)
            except SummaryStillRunning:
                row = (
                    f"{name}: {type(value).__name__} = (not shown: an earlier summary of it is still running)"
                )
            rows.append(row)

    try:
        if all(_quick(ns.get(name)) for name in shown):
            summarise()  # a thread handover would cost more than these summaries
        else:
            stop = threading.Event()
            await run_bounded(summarise, what="the variables", signal=signal)
        done = rows
    except SummaryTimedOut:
        if stop is not None:
            stop.set()
        done = list(rows)
        if len(done) < len(shown):  # else the last row came in just as the time ran out
            slow = shown[len(done)]
            done.append(
                f"{slow}: {type(ns.get(slow)).__name__} = (not shown: its summary did not finish within "
                f"{bounded.SUMMARY_SECONDS:g} s, its own code such as __repr__ is slow; abandoned)"
            )
            done += [f"{name}: {type(ns.get(name)).__name__}" for name in shown[len(done) :]]
    if len(names) > limit:
        done.append(f"... and {len(names) - limit} more (use pattern or limit)")
    return "\n".join(done)


class Unevaluated:
    """An attribute ``inspect_variable`` did not read because reading it runs code."""

    def __init__(self, path: str, owner: type, kind: str) -> None:
        self.path, self.owner, self.kind = path, owner, kind

    def text(self) -> str:
        return (
            f"{self.path}: a {self.kind} of {self.owner.__name__}, not evaluated: reading it runs "
            "its getter, which may change state. Read it with run_code (it goes through the "
            "approval policy)."
        )


def resolve(ns: Mapping[str, Any], name: str) -> Any:
    """The value at ``name`` (``x`` or ``x.a.b``) without running the objects' own attribute
    code (see the module docstring), or an :class:`Unevaluated` for a descriptor on the way."""
    path = name.strip()
    if not _PATH.fullmatch(path):
        raise ValueError(f"{name!r} is not a variable name or a dotted attribute path (no '_' prefixes)")
    head, *attrs = path.split(".")
    if head not in ns:
        raise ValueError(f"No variable named {head!r} in the notebook namespace")
    value = ns[head]
    for index, attr in enumerate(attrs):
        value = _attribute(value, attr, ".".join([head, *attrs[: index + 1]]))
        if isinstance(value, Unevaluated):
            return value
    return value


def _attribute(value: Any, attr: str, path: str) -> Any:
    kind = type(value)
    if kind.__module__.split(".")[0] in DATA_LIBRARIES:
        return getattr(value, attr)
    try:
        found = inspect.getattr_static(value, attr)
    except AttributeError:
        raise ValueError(
            f"{path}: {kind.__name__} has no stored attribute {attr!r} (one its __getattr__ would "
            "compute is not read, as that runs its code); use run_code to read it"
        ) from None
    if _in_instance_dict(value, attr, found) or not hasattr(type(found), "__get__"):
        return found  # a stored value, not a descriptor
    if isinstance(found, _C_LEVEL):
        return getattr(value, attr)  # a __slots__ field or a C type's own: no Python code runs
    if isinstance(found, types.FunctionType | staticmethod | classmethod):
        if isinstance(value, type):
            return found.__get__(None, value)
        return found.__get__(value, kind)  # a bound method
    if isinstance(value, type) and isinstance(found, property):
        return found  # the property object itself, as the class shows it
    label = "property" if isinstance(found, property) else f"{type(found).__name__} descriptor"
    return Unevaluated(path, value if isinstance(value, type) else kind, label)


def _in_instance_dict(value: Any, attr: str, found: Any) -> bool:
    try:
        own = object.__getattribute__(value, "__dict__")
    except (AttributeError, TypeError):
        return False
    return isinstance(own, dict) and attr in own and own[attr] is found


async def inspect_text(value: Any, path: str, max_chars: int, signal: AbortSignal | None) -> str:
    """``path: <summary>`` of ``value``, summarised within the time limit."""
    if isinstance(value, Unevaluated):
        return value.text()

    def summarise() -> str:
        with summarising(value, path):
            return summarize(value, max_chars)

    return f"{path}: {await run_bounded(summarise, what=path, signal=signal)}"
