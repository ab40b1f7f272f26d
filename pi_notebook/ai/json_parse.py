"""Partial and malformed JSON as models stream it (Pi's ``utils/json-parse.ts``).

``parse_streaming_json`` runs once per streamed tool-call delta and never raises: a strict
parse, then a strict parse of the repaired text, then a port of npm ``partial-json`` 0.1.7
(the parser Pi uses, quirks included), then ``{}``. ``repair_json`` escapes raw control
characters inside string literals and doubles backslashes that start no valid escape.

Every call re-reads the whole text (Pi does too), so cost matters. When jiter's strict
error proves the text is a valid JSON prefix and its tail is one where jiter's partial mode
agrees with partial-json (nearly every streaming delta), jiter's partial parse is the
answer; everything else takes the exact port. Measured: ~2-4 µs per delta for short
arguments, ~2x a bare jiter partial parse for a 20 KB string value.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jiter

from .text import JS_WHITESPACE

__all__ = ["parse_json_with_repair", "parse_streaming_json", "repair_json"]


def _reject_constant(name: str) -> Any:
    # JSON.parse has no NaN/Infinity literals; Python's json accepts them by default.
    raise ValueError(f"Unexpected token {name}")


_py_json_parse = json.JSONDecoder(parse_constant=_reject_constant).decode
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _js_json_parse(text: str) -> Any:
    """``JSON.parse``. jiter first: it is several times faster than Python's scanner on the
    failures streaming hits on every delta. Python's scanner takes over for what jiter
    refuses but JavaScript accepts: lone UTF-16 surrogates and nesting past 200 levels."""
    try:
        data = text.encode()
    except UnicodeEncodeError:  # a raw lone surrogate
        return _py_json_parse(text)
    try:
        return jiter.from_json(data, allow_inf_nan=False)
    except ValueError as exc:
        lone_surrogate = "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None
        if not lone_surrogate and "recursion" not in str(exc):
            raise
    return _py_json_parse(text)


# --- repair ---------------------------------------------------------------------------------

# A string literal as repairJson's state machine sees it: a backslash always takes the next
# character with it (either as a kept escape or, doubled, followed by a plain character that
# can be neither a quote nor a backslash), so the literal ends at the first bare quote.
# Patterns are written "unrolled" so that long literals scan in linear time.
_STRING_LITERAL = re.compile(r'"[^"\\]*(?:\\[\s\S][^"\\]*)*\\?"?')
_CONTROL = re.compile(r"[\x00-\x1f]")
_CONTROL_BYTES = bytes(range(0x20))
_CONTROL_ESCAPES = {i: f"\\u{i:04x}" for i in range(0x20)} | {
    0x08: "\\b",
    0x0C: "\\f",
    0x0A: "\\n",
    0x0D: "\\r",
    0x09: "\\t",
}
# After dropping escaped backslashes, a backslash not followed by a valid escape character.
_BAD_ESCAPE = re.compile(rb"\\(?![\"/bfnrtu])")
# A backslash that, pairing backslash runs from their start, escapes nothing valid.
_BAD_BACKSLASH = re.compile(r'(?<!\\)((?:\\\\)*)\\(?![\\"/bfnrtu])')


def _is_clean(text: str) -> bool:
    """True when repair would leave ``text`` unchanged: no control character and every
    backslash a valid escape (C-speed scans over the UTF-8 bytes).

    Backslash runs pair up from their first backslash both here and in repair's string
    walk, so dropping ``\\\\`` pairs first leaves exactly the escapes repair would see.
    """
    data = text.encode("utf-8", "surrogatepass")
    if len(data.translate(None, _CONTROL_BYTES)) != len(data):
        return False
    return b"\\" not in data or _BAD_ESCAPE.search(data.replace(b"\\\\", b"")) is None


def _fix_literal(match: re.Match[str]) -> str:
    literal = match.group()
    if _is_clean(literal):
        return literal
    # Backslashes first: a backslash before a raw control character is doubled, then the
    # control character becomes its own escape.
    if "\\" in literal:
        literal = _BAD_BACKSLASH.sub(r"\1\\\\", literal)
    if _CONTROL.search(literal) is not None:
        literal = literal.translate(_CONTROL_ESCAPES)
    return literal


def repair_json(text: str) -> str:
    """Escape raw control characters and lone backslashes inside JSON string literals."""
    # Outside strings the text is copied verbatim, so a clean text (the common case while
    # streaming) needs no tokenizing at all.
    if _is_clean(text):
        return text
    return _STRING_LITERAL.sub(_fix_literal, text)


def parse_json_with_repair(text: str) -> Any:
    """Strict ``JSON.parse``; on failure parse the repaired text if repair changed anything.

    Raises ``ValueError`` (the repaired text's error, or the original one).
    """
    try:
        return _js_json_parse(text)
    except ValueError:
        repaired = repair_json(text)
        if repaired == text:
            raise
    return _js_json_parse(repaired)


def parse_streaming_json(text: str | None) -> Any:
    """Best-effort value of a possibly incomplete JSON text; ``{}`` when nothing parses.

    Never raises. May return a non-object (list, string, number, ``None`` for ``"null"``)
    when the text is one, exactly like Pi.
    """
    if not text or not text.strip(JS_WHITESPACE):
        return {}
    try:
        data = text.encode()
        return jiter.from_json(data, allow_inf_nan=False)
    except ValueError as exc:  # UnicodeEncodeError included: raw lone surrogates
        fast = _FAILED if isinstance(exc, UnicodeEncodeError) else _jiter_partial(text, data, str(exc))
        if fast is not _FAILED:
            return fast
    try:
        return _js_json_parse(text)  # what jiter refuses but JSON.parse may accept
    except Exception:
        pass
    repaired: str | None = None
    # Repair keeps a trailing backslash (doubled or verbatim), so the repaired text cannot
    # parse strictly either. Streaming ends a delta inside an escape often enough that
    # skipping the repair here matters; the partial parse below rarely needs it.
    if not text.endswith("\\"):
        try:
            repaired = repair_json(text)
            if repaired != text:
                return _js_json_parse(repaired)
        except Exception:
            pass
    result = _partial_parse(text)
    if result is _FAILED:
        result = _partial_parse(repair_json(text) if repaired is None else repaired)
    return {} if result is None or result is _FAILED else result


# --- the fast path: jiter where it provably agrees with partial-json ----------------------------

_TOKEN_CHARS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+-"
_COMPLETE_TOKEN = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")


def _jiter_partial(text: str, data: bytes, strict_error: str) -> Any:
    """jiter's partial parse when it must equal Pi's result, else ``_FAILED``.

    jiter's strict error says "EOF while parsing ..." only when the whole text is a valid
    JSON prefix (anything malformed fails earlier with another message). Then repair
    changes nothing that could parse, and jiter and partial-json agree on the trimmed
    text except at the tail: partial-json completes ``tr``/``nul``, salvages ``1e`` as 1
    and keeps a lone surrogate from a cut ``\\u`` escape. Those tails take the exact path.
    """
    if not strict_error.startswith("EOF while parsing"):
        return _FAILED
    # partial-json trims the text first: inside a string, trailing spaces are not content.
    trimmed = text.rstrip(JS_WHITESPACE)
    if len(trimmed) != len(text):
        data = trimmed.encode()
    if strict_error.startswith("EOF while parsing a string"):
        if "\\u" in trimmed[-12:]:
            return _FAILED
    else:
        token = trimmed[len(trimmed.rstrip(_TOKEN_CHARS)) :]
        if token and _COMPLETE_TOKEN.fullmatch(token) is None:
            return _FAILED
    try:
        value = jiter.from_json(data, partial_mode="trailing-strings", allow_inf_nan=False)
    except ValueError:
        return _FAILED
    return _FAILED if value is None else value


# --- partial-json 0.1.7 -----------------------------------------------------------------------


class _PartialJSON(Exception):
    """The text ends inside a value that may not be completed."""


class _MalformedJSON(Exception):
    """The text is not a JSON prefix."""


_BLANK = re.compile(r"[ \n\r\t]*")
_NUMBER_TOKEN = re.compile(r"[^,\]}]*")
_LITERALS: tuple[tuple[str, Any, int], ...] = (
    ("null", None, 0),
    ("true", True, 0),
    ("false", False, 0),
    ("Infinity", float("inf"), 0),
    ("-Infinity", float("-inf"), 1),  # a lone "-" is not taken for -Infinity
    ("NaN", float("nan"), 0),
)
_FAILED: Any = object()


def _partial_parse(text: str) -> Any:
    """npm ``partial-json``'s ``parse(text)`` (which trims first), or ``_FAILED``."""
    try:
        return _PartialParser(text.strip(JS_WHITESPACE)).parse()
    except Exception:
        return _FAILED


def _js_substring(text: str, start: int, end: int) -> str:
    """``String.prototype.substring``: clamp both ends to the text, swap if reversed."""
    size = len(text)
    start = min(max(start, 0), size)
    end = min(max(end, 0), size)
    if start > end:
        start, end = end, start
    return text[start:end]


class _PartialParser:
    """A faithful port of partial-json's recursive parser with every partial kind allowed."""

    __slots__ = ("index", "length", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.length = len(text)
        self.index = 0

    def parse(self) -> Any:
        return self._any()

    def _char(self) -> str:
        return self.text[self.index] if self.index < self.length else ""

    def _skip_blank(self) -> None:
        index = self.index
        if index < self.length and self.text[index] in " \n\r\t":
            self.index = _BLANK.match(self.text, index).end()  # type: ignore[union-attr]

    def _any(self) -> Any:
        self._skip_blank()
        text, index, length = self.text, self.index, self.length
        if index >= length:
            raise _PartialJSON("Unexpected end of input")
        char = text[index]
        if char == '"':
            return self._string()
        if char == "{":
            return self._object()
        if char == "[":
            return self._array()
        remaining = length - index
        for word, value, min_remaining in _LITERALS:
            if text.startswith(word, index) or (
                min_remaining < remaining < len(word) and word.startswith(text[index:])
            ):
                self.index += len(word)
                return value
        return self._number()

    def _string(self) -> str:
        text, start, length = self.text, self.index, self.length
        # Find the first quote not escaped by an odd run of backslashes. partial-json starts
        # its escape state one character after ``start``, whatever that character is.
        end, escape = length, False
        pos = start + 1
        while (quote := text.find('"', pos)) != -1:
            run = quote
            while run > start + 1 and text[run - 1] == "\\":
                run -= 1
            if (quote - run) % 2 == 0:
                end = quote
                break
            pos = quote + 1
        else:
            run = length
            while run > start + 1 and text[run - 1] == "\\":
                run -= 1
            escape = (length - run) % 2 == 1  # the text ends with a lone backslash
        closed = end < length
        self.index = end + 1 if closed else length
        stop = end if closed else length - escape
        body = text[start + 1 : stop]
        if text[start] == '"' and "\\" not in body and _CONTROL.search(body) is None:
            return body  # nothing to unescape: the common case, without a parser call
        if closed:
            try:
                return str(_js_json_parse(text[start : end + 1]))
            except ValueError as exc:
                raise _MalformedJSON(str(exc)) from None
        try:
            return str(_js_json_parse(text[start:stop] + '"'))
        except ValueError:
            # An invalid escape at the end (e.g. "\u12"): cut at the last backslash. This may
            # raise too, which the enclosing container treats as the end of its data.
            return str(_js_json_parse(_js_substring(text, start, text.rfind("\\")) + '"'))

    def _object(self) -> dict[str, Any]:
        self.index += 1
        skip_blank = self._skip_blank
        skip_blank()
        obj: dict[str, Any] = {}
        try:
            while self._char() != "}":
                skip_blank()
                if self.index >= self.length:
                    return obj
                key = self._string()
                skip_blank()
                self.index += 1  # the colon, whatever is there
                try:
                    obj[key] = self._any()
                except Exception:
                    return obj
                skip_blank()
                if self._char() == ",":
                    self.index += 1
        except Exception:
            return obj
        self.index += 1
        return obj

    def _array(self) -> list[Any]:
        self.index += 1
        arr: list[Any] = []
        try:
            while self._char() != "]":
                arr.append(self._any())
                self._skip_blank()
                if self._char() == ",":
                    self.index += 1
        except Exception:
            return arr
        self.index += 1
        return arr

    def _number(self) -> Any:
        text = self.text
        if self.index == 0:
            if text == "-":
                raise _MalformedJSON("Not sure what '-' is")
            try:
                return _js_json_parse(text)
            except ValueError:
                try:
                    return _js_json_parse(_js_substring(text, 0, text.rfind("e")))
                except ValueError:
                    pass
                raise _MalformedJSON("bad number") from None
        start = self.index
        self.index = _NUMBER_TOKEN.match(text, start).end()  # type: ignore[union-attr]
        token = text[start : self.index]
        try:
            return _js_json_parse(token)
        except ValueError:
            if token == "-":
                raise _PartialJSON("Not sure what '-' is") from None
            try:
                # Salvage "1.5e" / "2e+" as the mantissa (partial-json searches the whole text).
                return _js_json_parse(_js_substring(text, start, text.rfind("e")))
            except ValueError:
                raise _MalformedJSON("bad number") from None
