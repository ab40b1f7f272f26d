"""Reading the files Pi's resources are made of, safely: one diagnostic instead of an exception.

``Diagnostic`` is Pi's resource diagnostic (``type``, ``message``, ``path``, and for a
collision the winner and loser). ``read_text`` reads a file as Pi does (UTF-8, undecodable
bytes replaced) but refuses a file over ``MAX_FILE_BYTES`` or one with NUL bytes, which no
instruction file has: Pi would put either in the system prompt whole. ``parse_frontmatter`` is
Pi's ``utils/frontmatter.js``: a leading ``---`` block parsed as YAML 1.2 (as the ``yaml``
package does: ``yes``/``no`` and dates stay strings), the rest trimmed as the body.
``Ignore`` is the ``.gitignore`` / ``.ignore`` / ``.fdignore`` matcher Pi's folder walks share.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from typing import Any, Literal

import pathspec
import yaml

__all__ = [
    "MAX_FILE_BYTES",
    "Diagnostic",
    "FileRefused",
    "Ignore",
    "parse_frontmatter",
    "read_text",
    "sorted_entries",
    "strip_frontmatter",
]

MAX_FILE_BYTES = 1024 * 1024
"""A context file, skill or template larger than this is skipped with a diagnostic."""
_SNIFF_BYTES = 8192
IGNORE_FILE_NAMES = (".gitignore", ".ignore", ".fdignore")


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found while loading (Pi's ``ResourceDiagnostic``)."""

    type: Literal["warning", "error", "collision"]
    message: str
    path: str
    winner: str | None = None
    """For a collision: the file that kept the name (the ``path`` lost it)."""

    def line(self) -> str:
        if self.type == "collision":
            return f"{self.path}: {self.message}; {self.winner} wins"
        return f"{self.path}: {self.message}"


class FileRefused(OSError):
    """A file this package will not read into a prompt (too large, binary); the message says why."""


def read_text(path: str) -> str:
    """The file as UTF-8 text (Node's ``readFileSync(path, "utf-8")``: bad bytes become U+FFFD).
    Raises ``OSError`` (``FileRefused`` for a huge or binary file, or one that is not a regular
    file: a FIFO or a device would block the read or never end)."""
    # O_NONBLOCK: opening a FIFO for reading would wait for a writer; fstat then refuses it
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with open(descriptor, "rb") as handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise FileRefused("not a regular file (a FIFO, socket or device); skipped")
        if hasattr(os, "set_blocking"):
            os.set_blocking(handle.fileno(), True)
        size = status.st_size
        if size > MAX_FILE_BYTES:
            raise FileRefused(f"file is {size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit; skipped")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise FileRefused(f"file is over the {MAX_FILE_BYTES:,}-byte limit; skipped")
    if b"\0" in data[:_SNIFF_BYTES] or b"\0" in data:
        raise FileRefused("file is binary (it has NUL bytes), not text; skipped")
    return data.decode("utf-8", errors="replace")


def error_text(exc: BaseException) -> str:
    """A one-line reason for ``exc`` (an ``OSError`` without its Python class name)."""
    if isinstance(exc, FileRefused):
        return str(exc)
    if isinstance(exc, OSError):
        return f"cannot read it ({exc.strerror or exc})"
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


# --- frontmatter -----------------------------------------------------------------------------


_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser: 10x faster


class _Yaml12Loader(_SafeLoader):  # type: ignore[misc]
    """PyYAML's safe loader with YAML 1.2's core schema for plain scalars, as the ``yaml``
    package parses them: only ``true``/``false`` are booleans, no dates or sexagesimals."""


def _core_schema() -> None:
    resolvers: dict[Any, Any] = {}
    for first, entries in yaml.SafeLoader.yaml_implicit_resolvers.items():
        kept = [
            (tag, regexp)
            for tag, regexp in entries
            if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:int")
        ]
        resolvers[first] = kept
    _Yaml12Loader.yaml_implicit_resolvers = resolvers
    _Yaml12Loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    _Yaml12Loader.add_implicit_resolver(
        "tag:yaml.org,2002:int",
        re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
        list("-+0123456789"),
    )


_core_schema()


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


_Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _normalized(content: str) -> str:
    return content.replace("\r\n", "\n").replace("\r", "\n")


def parse_frontmatter(content: str) -> tuple[dict[str, Any], str]:
    """Pi's ``parseFrontmatter``: (the YAML mapping, or ``{}``; the body). Malformed YAML
    raises ``ValueError`` with the parser's first line, as Pi's parser throws."""
    normalized = _normalized(content)
    if not normalized.startswith("---"):
        return {}, normalized
    end = normalized.find("\n---", 3)
    if end == -1:
        return {}, normalized
    source, body = normalized[4:end], normalized[end + 4 :].strip()
    if not source:
        return {}, body
    try:
        parsed = yaml.load(source, Loader=_Yaml12Loader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid YAML"
        raise ValueError(f"malformed frontmatter: {reason}") from None
    return (parsed if isinstance(parsed, dict) else {}), body


def strip_frontmatter(content: str) -> str:
    return parse_frontmatter(content)[1]


# --- folder walks ------------------------------------------------------------------------------


def sorted_entries(path: str) -> list[os.DirEntry[str]]:
    """A folder's entries in Node's ``readdirSync`` order (libuv sorts names bytewise)."""
    with os.scandir(path) as found:
        return sorted(found, key=lambda entry: os.fsencode(entry.name))


def _prefixed(line: str, prefix: str) -> str | None:
    """Pi's ``prefixIgnorePattern``: a pattern of a nested ignore file, relative to the root."""
    trimmed = line.strip()
    if not trimmed or (trimmed.startswith("#") and not trimmed.startswith("\\#")):
        return None
    pattern, negated = line, False
    if pattern.startswith("!"):
        negated, pattern = True, pattern[1:]
    elif pattern.startswith("\\!"):
        pattern = pattern[1:]
    pattern = pattern.removeprefix("/")
    return ("!" if negated else "") + prefix + pattern


class Ignore:
    """The ignore rules gathered while walking down from ``root`` (Pi shares one matcher for
    a whole walk, each nested file's patterns prefixed with its folder)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._patterns: list[str] = []
        self._spec: pathspec.GitIgnoreSpec | None = None

    def add_folder(self, folder: str) -> None:
        relative = os.path.relpath(folder, self.root)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        for name in IGNORE_FILE_NAMES:
            try:
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                    lines = re.split(r"\r?\n", handle.read())
            except OSError:
                continue
            added = [p for p in (_prefixed(line, prefix) for line in lines) if p]
            if added:
                self._patterns.extend(added)
                self._spec = None

    def ignores(self, path: str, *, folder: bool = False) -> bool:
        if not self._patterns:
            return False
        if self._spec is None:
            self._spec = pathspec.GitIgnoreSpec.from_lines(self._patterns)
        relative = os.path.relpath(path, self.root).replace(os.sep, "/")
        return bool(self._spec.match_file(relative + "/" if folder else relative))
