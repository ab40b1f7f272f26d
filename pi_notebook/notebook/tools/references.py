"""Bounded, secret-safe summaries of kernel values, and the `` $`expr` `` prompt references.

Every summary is capped (characters, items, rows) so a huge object never floods the model's
context, and fast on huge values (only a slice of a long string is copied, nested containers
are shown to three levels without recursing further); the values of data libraries (pandas,
numpy, polars, pyarrow, torch, xarray, DuckDB, dask, Spark) are summarised by ``summaries/``
through the already-imported library.

Secrets: a value whose *name* looks like a secret (``KEY``, ``TOKEN``, ``SECRET``,
``PASSWORD``, ``PASSWD``, ``CREDENTIAL``) is never shown; dict entries under such keys are
hidden; ``os.environ`` is never read; and text that looks like a well-known API key format
(``sk-...``, ``ghp_...``, ``AIza...``, ``hf_...``, ``xoxb-...``, ``AKIA...``), or that holds
the value of a secret-named environment or notebook variable (``secret_values``: the key in
``creds = os.environ["OPENAI_API_KEY"]`` too), is replaced by ``[REDACTED]`` in everything the
notebook tools and `` $`expr` `` references return and in the session files.

`` $`expr` `` in a prompt: the expression is evaluated in the user namespace and its summary
is attached to the user message (and its picture, for a value that has one: ``pictures.py``).
Braces are never interpolated, so code in a prompt passes through untouched.
"""

from __future__ import annotations

import inspect
import os
import re
import reprlib
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from .bounded import SummaryStillRunning, SummaryTimedOut, summarising, wait_bounded
from .summaries import recognise

MAX_SUMMARY_CHARS = 2_000
ONE_LINE_CHARS = 100

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
SECRET_VALUE = re.compile(
    r"sk-[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|AIza[0-9A-Za-z_\-]{30,}"
    r"|hf_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16}|glpat-[A-Za-z0-9_\-]{20,}"
)
REDACTED = "[REDACTED]"
REFERENCE = re.compile(r"\$`([^`\n]+)`")

_ENVIRON_TYPE = type(os.environ)


def looks_secret(name: str) -> bool:
    return SECRET_NAME.search(name) is not None


def redact_text(text: str) -> str:
    """Replace substrings that look like API keys."""
    return SECRET_VALUE.sub(REDACTED, text)


_MIN_SECRET_CHARS = 6  # shorter values would redact ordinary words


_environ_seen: list[Any] = [None, ()]  # the environment last scanned, its secret values


def _environ_secrets() -> tuple[str, ...]:
    """The secret-named environment variables' values, scanned again only when the environment
    changed (``os.environ`` decodes every name and value it yields: tens of microseconds per
    tool result otherwise). The raw mapping under ``os.environ`` is compared as a snapshot."""
    raw = getattr(os.environ, "_data", None)
    snapshot = tuple(raw.items()) if isinstance(raw, dict) else None
    if snapshot is not None and snapshot == _environ_seen[0]:
        return cast(tuple[str, ...], _environ_seen[1])
    found = tuple(v for k, v in os.environ.items() if looks_secret(k) and len(v) >= _MIN_SECRET_CHARS)
    _environ_seen[:] = [snapshot, found]
    return found


def secret_values(namespace: Mapping[str, Any] | None) -> list[str]:
    """Values that must never be shown or written: secret-named environment variables and
    variables of ``namespace`` (``OPENAI_API_KEY``, ``db_password``, ...), longest first."""
    found = set(_environ_secrets())
    for name, value in list((namespace or {}).items()):
        secret = isinstance(value, str) and not name.startswith("_") and looks_secret(name)
        if secret and len(value) >= _MIN_SECRET_CHARS:
            found.add(value)
    return sorted(found, key=len, reverse=True)


def redact_known(text: str, secrets: list[str]) -> str:
    """``redact_text``, then every one of ``secrets`` (``secret_values``) replaced."""
    text = redact_text(text)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis when it was longer."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + "…"


def single_line(text: str, limit: int) -> str:
    """``text`` on one line (each run of whitespace, newlines included, as one space), truncated."""
    return truncate(" ".join(text.split()), limit)


def type_name(value: Any) -> str:
    kind = type(value)
    module = kind.__module__
    if module in ("builtins", "__main__"):
        return kind.__qualname__
    return f"{module.split('.')[0]}.{kind.__qualname__}"


class _SafeRepr(reprlib.Repr):
    """``reprlib`` with caps, hidden secret-keyed dict values and no ``os.environ``."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxdict, self.maxlist, self.maxtuple = 3, 12, 12, 12
        self.maxset, self.maxfrozenset, self.maxdeque = 12, 12, 12
        self.maxstring, self.maxother, self.maxlong = 120, 160, 60

    def repr_dict(self, x: Mapping[Any, Any], level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{...}"
        pieces = []
        for i, (key, value) in enumerate(x.items()):
            if i >= self.maxdict:
                pieces.append("...")
                break
            shown = "<hidden>" if isinstance(key, str) and looks_secret(key) else self.repr1(value, level - 1)
            pieces.append(f"{self.repr1(key, level - 1)}: {shown}")
        return "{" + ", ".join(pieces) + "}"

    def repr_instance(self, x: Any, level: int) -> str:
        if isinstance(x, _ENVIRON_TYPE):
            return "<os.environ: values hidden>"
        if isinstance(x, Mapping):  # OrderedDict, defaultdict, ...: hide secret-keyed values too
            return f"{type(x).__name__}({self.repr_dict(x, level)})"
        try:
            text = repr(x)
        except Exception as exc:
            return f"<{type_name(x)}: repr failed: {type(exc).__name__}>"
        return truncate(text, self.maxother)


_repr = _SafeRepr()


# Default reprs carry memory addresses ("<Foo object at 0x7f...>"): noise for the model, and they
# would make the deterministic text/plain of a run differ between two executions.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def safe_repr(value: Any) -> str:
    try:
        return _ADDRESS.sub("", redact_text(_repr.repr(value)))
    except Exception as exc:  # a broken __repr__ must not break the tool
        return f"<{type_name(value)}: repr failed: {type(exc).__name__}>"


# --- summaries ---------------------------------------------------------------------------------


def _describe_callable(value: Any) -> str:
    try:
        signature = str(inspect.signature(value))
    except (TypeError, ValueError):
        signature = "(...)"
    doc = (inspect.getdoc(value) or "").strip().splitlines()
    first = f" - {doc[0]}" if doc else ""
    kind = "class" if inspect.isclass(value) else "function"
    return f"{kind} {getattr(value, '__qualname__', type_name(value))}{signature}{first}"


def summarize(value: Any, limit: int = MAX_SUMMARY_CHARS) -> str:
    """A multi-line, bounded description of ``value`` (type, size, a capped rendering)."""
    try:
        text = _summarize(value, limit)
    except Exception as exc:
        text = f"{type_name(value)} (summary failed: {type(exc).__name__}: {exc})"
    return redact_text(truncate(text, limit))


def _summarize(value: Any, limit: int) -> str:
    if isinstance(value, _ENVIRON_TYPE):
        return f"os.environ with {len(value)} variables (values are never shown)"
    library = recognise(value)
    if library is not None:
        return library.summary(value, limit)
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    if inspect.isroutine(value) or inspect.isclass(value):
        return _describe_callable(value)
    if isinstance(value, str):
        return f"str, {len(value)} chars: {truncate(repr(value[:limit]), limit - 30)}"
    if isinstance(value, bytes | bytearray):
        return f"{type_name(value)}, {len(value)} bytes: {truncate(repr(value[:200]), 300)}"
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        return f"{type_name(value)}, {len(value)} items: {safe_repr(value)}"
    return f"{type_name(value)}: {safe_repr(value)}"


def one_line(value: Any, limit: int = ONE_LINE_CHARS) -> str:
    """A single-line summary for listings."""
    try:
        library = recognise(value)
        if library is not None:
            text = library.one_line(value)
        elif isinstance(value, _ENVIRON_TYPE):
            text = "environment (values hidden)"
        elif inspect.isroutine(value) or inspect.isclass(value):
            text = _describe_callable(value)
        elif isinstance(value, Mapping | list | tuple | set | frozenset):
            text = f"{len(value)} items: {safe_repr(value)}"
        else:
            text = safe_repr(value)
    except Exception as exc:
        text = f"<summary failed: {type(exc).__name__}>"
    return redact_text(single_line(text, limit))


def secret_placeholder(name: str, value: Any) -> str:
    return f"<hidden: the name {name!r} looks like a secret ({type_name(value)})>"


# --- $`expr` references -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reference:
    expr: str
    summary: str
    error: bool = False
    pictures: tuple[dict[str, Any], ...] = field(default=(), repr=False)
    """Display bundles with the value's picture (``pictures.py``): sent as images to a model
    with image input, as a labelled placeholder to others."""


Pictures = Callable[[str, Any], list[dict[str, Any]]]
"""``(expr, value) -> bundles``: the PNG/JPEG pictures of a referenced value."""


def find_references(text: str) -> list[str]:
    """The distinct `` $`expr` `` expressions in ``text``, in order of first use."""
    seen: dict[str, None] = {}
    for match in REFERENCE.finditer(text):
        seen.setdefault(match.group(1).strip(), None)
    return [expr for expr in seen if expr]


def evaluate_reference(
    expr: str,
    namespace: dict[str, Any],
    limit: int = MAX_SUMMARY_CHARS,
    pictures: Pictures | None = None,
    *,
    bounded: bool = False,
) -> Reference:
    """``expr`` evaluated and summarised; with ``pictures``, its PNG/JPEG pictures too (a value
    whose name looks like a secret gets neither). ``bounded``: the summary and the pictures (the
    value's own code: ``__repr__``, ``savefig``) run on a thread of their own, waited for at
    most ``SUMMARY_SECONDS`` (``bounded.py``); the expression itself runs here, as a cell would."""
    try:
        value = eval(expr, namespace)  # the user's own prompt: same trust as a cell
    except Exception as exc:
        return Reference(expr, f"{type(exc).__name__}: {exc}", error=True)
    last_name = re.split(r"[^A-Za-z0-9_]+", expr.strip())[-1] or expr
    if looks_secret(last_name) or looks_secret(expr):
        return Reference(expr, secret_placeholder(expr, value))


    def describe() -> Reference:
        with summarising(value, f"`{expr}`"):
            found = tuple(pictures(expr, value)) if pictures is not None else ()
            return Reference(expr, summarize(value, limit), pictures=found)

    try:
        return wait_bounded(describe, what=f"`{expr}`") if bounded else describe()
    except (SummaryTimedOut, SummaryStillRunning) as exc:
        return Reference(expr, f"{type_name(value)} (not summarised: {exc})", error=True)


def expand_references(
    text: str,
    namespace: dict[str, Any],
    limit: int = MAX_SUMMARY_CHARS,
    pictures: Pictures | None = None,
    *,
    bounded: bool = False,
) -> tuple[str, list[Reference]]:
    """The prompt with `` $`expr` `` turned into `` `expr` ``, and the evaluated references
    (``bounded``: see ``evaluate_reference``)."""
    exprs = find_references(text)
    if not exprs:
        return text, []
    secrets = secret_values(namespace)
    refs = [evaluate_reference(expr, namespace, limit, pictures, bounded=bounded) for expr in exprs]
    refs = [Reference(r.expr, redact_known(r.summary, secrets), r.error, r.pictures) for r in refs]
    return REFERENCE.sub(lambda m: f"`{m.group(1)}`", text), refs


def format_references(refs: list[Reference]) -> str:
    """The text attached to the user message after the prompt."""
    parts = ["Values referenced from the notebook kernel:"]
    for ref in refs:
        label = "evaluation failed" if ref.error else "value"
        parts.append(f"`{ref.expr}` ({label}):\n```\n{ref.summary}\n```")
    return "\n\n".join(parts)
