"""Text hygiene for outgoing requests (Pi's ``utils/sanitize-unicode.ts`` and ``utils/text.ts``).

Python strings hold code points, but they can still carry UTF-16 surrogates: JSON escapes
such as ``"\\ud83d"`` decode to lone surrogates, and text that went through ``surrogatepass``
or a JavaScript peer can hold a high/low pair as two code points. Neither encodes as UTF-8,
so every provider adapter passes outgoing text through :func:`sanitize_surrogates`.
"""

from __future__ import annotations

import re

from .types import content_text

__all__ = ["JS_WHITESPACE", "content_text", "js_trim", "sanitize_surrogates", "short_hash"]

# What JavaScript's String.prototype.trim() strips (WhiteSpace + LineTerminator). Python's
# str.strip() differs: it also strips \x1c-\x1f and \x85 and keeps \ufeff.
JS_WHITESPACE = (
    " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(text: str) -> str:
    """``text.trim()`` as JavaScript does it."""
    return text.strip(JS_WHITESPACE)


_SURROGATES = re.compile(r"[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")


def _fix(match: re.Match[str]) -> str:
    pair = match.group()
    if len(pair) == 1:  # unpaired: dropped, as in Pi
        return ""
    # A high/low pair is one character in JavaScript; join it into that code point.
    return chr(0x10000 + ((ord(pair[0]) - 0xD800) << 10) + (ord(pair[1]) - 0xDC00))


def sanitize_surrogates(text: str) -> str:
    """Remove unpaired UTF-16 surrogates; join paired ones into the character they encode.

    Text without surrogates (the normal case) is returned as is after one C-speed scan.
    """
    if text.isascii() or _SURROGATES.search(text) is None:
        return text
    return _SURROGATES.sub(_fix, text)


_MASK32 = 0xFFFFFFFF


def short_hash(text: str) -> str:
    """Pi's ``shortHash``: a cyrb53-style pair of 32-bit hashes over UTF-16 code units, base 36.

    Ported bit for bit so tool-call and message ids derived from it match the ones Pi writes.
    """
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        unit = data[i] | data[i + 1] << 8
        h1 = ((h1 ^ unit) * 2654435761) & _MASK32
        h2 = ((h2 ^ unit) * 1597334677) & _MASK32
    h1 = (((h1 ^ (h1 >> 16)) * 2246822507) & _MASK32) ^ (((h2 ^ (h2 >> 13)) * 3266489909) & _MASK32)
    h2 = (((h2 ^ (h2 >> 16)) * 2246822507) & _MASK32) ^ (((h1 ^ (h1 >> 13)) * 3266489909) & _MASK32)
    return _base36(h2) + _base36(h1)


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rem = divmod(value, 36)
        out = digits[rem] + out
        if value == 0:
            return out
