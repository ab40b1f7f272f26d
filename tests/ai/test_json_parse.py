"""Streaming/partial JSON (Pi's json-parse.ts): the table verified on Pi, repair, and a differential check of
the optimized implementation against a literal transliteration of Pi's ``repairJson`` and
npm ``partial-json`` 0.1.7 (character loops, Python's scanner as ``JSON.parse``)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_notebook.ai.json_parse import parse_json_with_repair, parse_streaming_json, repair_json

# --- every row verified on Pi ------------------------------------------------------------------------

TABLE: list[tuple[str | None, Any]] = [
    (None, {}),
    ("", {}),
    ("   ", {}),
    ("{", {}),
    ('{"a"', {}),
    ('{"a":', {}),
    ('{"a": "hel', {"a": "hel"}),
    ('{"a": 12', {"a": 12}),
    ('{"a": 1.', {}),
    ('{"a": tr', {"a": True}),
    ('{"a": nul', {"a": None}),
    ('{"a": [1, 2', {"a": [1, 2]}),
    ('{"a": {"b": "c', {"a": {"b": "c"}}),
    ('{"a": "x\\', {"a": "x"}),
    ('{"a": 1, "b": -', {"a": 1}),
    ('{"a": "\\u12', {"a": ""}),
    ('{"a": "line1\nline2"}', {"a": "line1\nline2"}),
    ('{"p":"C:\\dir\\file"}', {"p": "C:\\dir\x0cile"}),
    ('{"a": "b"} trailing', {"a": "b"}),
    ("garbage", {}),
]


@pytest.mark.parametrize(("text", "expected"), TABLE, ids=[repr(t) for t, _ in TABLE])
def test_spec_table(text: str | None, expected: Any) -> None:
    result = parse_streaming_json(text)
    assert result == expected
    assert json.dumps(result) == json.dumps(expected)  # 12 stays an int, True a bool


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("null", None),  # a strict parse is returned as is, even null
        ("[1, 2.", [1]),
        ('{"a": 1e', {"a": 1}),  # partial-json salvages the mantissa
        ('{"a": -1.5e+', {"a": -1.5}),
        ('{"a": fals', {"a": False}),
        ('"abc', "abc"),
        ("7", 7),
        ('{"a": "\\ud83d', {"a": "\ud83d"}),  # a lone surrogate, as JavaScript keeps it
        ('{"a": "\\ud83d\\ude00"}', {"a": "😀"}),
        ('{"a": "raw\nnewline', {}),  # Pi: the partial string fails JSON.parse, the key is dropped
        ('{"a": NaN}', None),  # checked below: NaN
    ],
)
def test_more_partial_shapes(text: str, expected: Any) -> None:
    result = parse_streaming_json(text)
    if text == '{"a": NaN}':
        assert list(result) == ["a"]
        assert result["a"] != result["a"]
    else:
        assert result == expected


def test_deep_nesting_beyond_jiters_limit_still_parses() -> None:
    text = "[" * 300 + "1" + "]" * 300
    value = parse_streaming_json(text)
    for _ in range(300):
        assert isinstance(value, list)
        value = value[0]
    assert value == 1


def test_every_prefix_of_a_tool_call_yields_a_growing_object() -> None:
    full = json.dumps({"path": "/tmp/a b.py", "content": 'print("hi")\n\tx = 1\\2', "count": 12, "ok": True})
    previous: dict[str, Any] = {}
    for end in range(len(full) + 1):
        value = parse_streaming_json(full[:end])
        assert isinstance(value, dict), full[:end]
        assert set(previous) <= set(value) or end == 0
        previous = value
    assert previous == json.loads(full)


# --- repair -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": "x"}', '{"a": "x"}'),  # clean text is returned unchanged
        ('{"a": "l1\nl2\tx\x01"}', '{"a": "l1\\nl2\\tx\\u0001"}'),
        ('{"p": "C:\\dir\\file"}', '{"p": "C:\\\\dir\\file"}'),  # \d doubled, \f kept
        ('{"a": "\\u00e9 \\uZZ"}', '{"a": "\\u00e9 \\uZZ"}'),  # \u stays a valid escape character
        ('{"a": "end\\', '{"a": "end\\\\'),  # a trailing lone backslash is doubled
        ('{"a": "q\\"x\\\\"}', '{"a": "q\\"x\\\\"}'),
        ('{\n  "a": 1\n}', '{\n  "a": 1\n}'),  # outside strings nothing changes
        ('x\\y "s\\y"', 'x\\y "s\\\\y"'),
        ('"\\\n"', '"\\\\\\n"'),  # backslash before a raw newline: both repaired
    ],
)
def test_repair_json(text: str, expected: str) -> None:
    assert repair_json(text) == expected


def test_parse_json_with_repair() -> None:
    assert parse_json_with_repair('{"p": "C:\\dir"}') == {"p": "C:\\dir"}
    assert parse_json_with_repair('{"a": "x\ny"}') == {"a": "x\ny"}
    with pytest.raises(ValueError):
        parse_json_with_repair('{"a": 1')  # repair changes nothing: the original error
    with pytest.raises(ValueError):
        parse_json_with_repair('{"a": "x\n')  # repaired, still incomplete: the repaired error
    with pytest.raises(ValueError):
        parse_json_with_repair('{"a": NaN}')  # JSON.parse has no NaN


# --- differential check against a literal transliteration ----------------------------------------


def _reject(name: str) -> Any:
    raise ValueError(name)


def js_parse(text: str) -> Any:
    return json.loads(text, parse_constant=_reject)


JS_WS = " \t\n\v\f\r\u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(
    map(chr, range(0x2000, 0x200B))
)
VALID = set('"\\/bfnrtu')


def ref_repair(text: str) -> str:
    out: list[str] = []
    in_string = False
    i = 0
    while i < len(text):
        ch = text[i]
        if not in_string:
            out.append(ch)
            in_string = ch == '"'
            i += 1
            continue
        if ch == '"':
            out.append(ch)
            in_string = False
            i += 1
            continue
        if ch == "\\":
            nxt = text[i + 1] if i + 1 < len(text) else None
            if nxt is None:
                out.append("\\\\")
                i += 1
                continue
            if nxt == "u" and re.fullmatch("[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                out.append("\\u" + text[i + 2 : i + 6])
                i += 6
                continue
            if nxt in VALID:
                out.append("\\" + nxt)
                i += 2
                continue
            out.append("\\\\")
            i += 1
            continue
        if ord(ch) < 0x20:
            named = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
            out.append(named.get(ch, f"\\u{ord(ch):04x}"))
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def substring(s: str, a: int, b: int) -> str:
    a, b = min(max(a, 0), len(s)), min(max(b, 0), len(s))
    return s[min(a, b) : max(a, b)]


class RefPartial:
    """partial-json 0.1.7 with Allow.ALL, line by line."""

    def __init__(self, s: str) -> None:
        self.s, self.n, self.i = s, len(s), 0

    def ch(self) -> str | None:
        return self.s[self.i] if self.i < self.n else None

    def blank(self) -> None:
        while self.i < self.n and self.s[self.i] in " \n\r\t":
            self.i += 1

    def any(self) -> Any:
        self.blank()
        if self.i >= self.n:
            raise EOFError
        c, s, i, n = self.s[self.i], self.s, self.i, self.n
        if c == '"':
            return self.string()
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        for word, value, low in (("null", None, 0), ("true", True, 0), ("false", False, 0),
                                 ("Infinity", float("inf"), 0), ("-Infinity", float("-inf"), 1),
                                 ("NaN", float("nan"), 0)):  # fmt: skip
            if s[i : i + len(word)] == word or (low < n - i < len(word) and word.startswith(s[i:])):
                self.i += len(word)
                return value
        return self.num()

    def string(self) -> Any:
        s, start = self.s, self.i
        escape = False
        self.i += 1
        while self.i < self.n and (s[self.i] != '"' or (escape and s[self.i - 1] == "\\")):
            escape = (not escape) if s[self.i] == "\\" else False
            self.i += 1
        if self.ch() == '"':
            self.i += 1
            return js_parse(s[start : self.i - int(escape)])
        try:
            return js_parse(s[start : self.i - int(escape)] + '"')
        except ValueError:
            return js_parse(substring(s, start, s.rfind("\\")) + '"')

    def obj(self) -> dict[str, Any]:
        self.i += 1
        self.blank()
        out: dict[str, Any] = {}
        try:
            while self.ch() != "}":
                self.blank()
                if self.i >= self.n:
                    return out
                key = self.string()
                self.blank()
                self.i += 1
                try:
                    out[key] = self.any()
                except Exception:
                    return out
                self.blank()
                if self.ch() == ",":
                    self.i += 1
        except Exception:
            return out
        self.i += 1
        return out

    def arr(self) -> list[Any]:
        self.i += 1
        out: list[Any] = []
        try:
            while self.ch() != "]":
                out.append(self.any())
                self.blank()
                if self.ch() == ",":
                    self.i += 1
        except Exception:
            return out
        self.i += 1
        return out

    def num(self) -> Any:
        s = self.s
        if self.i == 0:
            if s == "-":
                raise ValueError("-")
            try:
                return js_parse(s)
            except ValueError:
                return js_parse(substring(s, 0, s.rfind("e")))
        start = self.i
        if self.ch() == "-":
            self.i += 1
        while self.i < self.n and s[self.i] not in ",]}":
            self.i += 1
        try:
            return js_parse(s[start : self.i])
        except ValueError:
            if s[start : self.i] == "-":
                raise EOFError from None
            return js_parse(substring(s, start, s.rfind("e")))


def ref_partial(text: str) -> Any:
    if not text.strip(JS_WS):
        raise ValueError("empty")
    return RefPartial(text.strip(JS_WS)).any()


def ref_streaming(text: str) -> Any:
    if not text or not text.strip(JS_WS):
        return {}
    try:
        try:
            return js_parse(text)
        except ValueError:
            repaired = ref_repair(text)
            if repaired == text:
                raise
            return js_parse(repaired)
    except Exception:
        for candidate in (text, ref_repair(text)):
            try:
                result = ref_partial(candidate)
            except Exception:
                continue
            return {} if result is None else result
        return {}


def same(a: Any, b: Any) -> bool:
    return repr(a) == repr(b)  # NaN-safe, and 1 vs 1.0 vs True are told apart


JSONISH = st.text(
    alphabet=st.sampled_from(
        [*'{}[]:,"\\ \n\t\r-+.eE0123456789truefalsnIiyNa/bu\x01\x1fé🙈', "\ud83d", "\ude48"]
    ),
    max_size=30,
)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)


TRICKY_TEXT = st.text(
    alphabet=st.sampled_from(
        [*' \t\n"\\/aé🙈01e.-+', "\u00a0", "\u2028", "\u3000", "\ufeff", "\x01", "\x85"]
    ),
    max_size=10,
)
TRICKY_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-99, 99)
    | st.sampled_from([0.5, -1e-7, 1e21, 2.5e300])
    | TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TRICKY_TEXT, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None)
@given(JSONISH)
def test_matches_the_reference_on_arbitrary_text(text: str) -> None:
    assert repair_json(text) == ref_repair(text)
    assert same(parse_streaming_json(text), ref_streaming(text))


@settings(max_examples=80, deadline=None)
@given(st.one_of(JSON_VALUES, TRICKY_VALUES), st.sampled_from([None, 2]), st.booleans())
def test_matches_the_reference_on_every_prefix_of_real_json(
    value: Any, indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    for end in range(1, len(text) + 1):
        prefix = text[:end]
        assert same(parse_streaming_json(prefix), ref_streaming(prefix)), prefix
    assert same(parse_streaming_json(text), value)
