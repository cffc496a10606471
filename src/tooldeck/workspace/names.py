"""How workspace paths are shown to the model, and how the shown spelling is read back (pure).

A file name may hold any character the filesystem takes: a newline, a carriage return, a tab, a
bidi override, a zero-width space, or bytes that are not UTF-8 (Python gives those to us as the
surrogates U+DC80–U+DCFF). Shown raw, such a name could fake lines of a listing or a search result
(`output/a\\nb:1: x`) or hide its true spelling. So every path the file tools show is escaped:

- a character of Unicode category Cc (controls, C0 and C1), Cf (format: bidi marks and embeddings,
  zero-width characters, the BOM), Zl or Zp (line and paragraph separators), Cs (a surrogate, i.e.
  a byte that is not UTF-8), a backslash, and a whitespace character at the start or end of a name
  are written as `\\u{HEX}` (the code point in hex: a newline is `\\u{A}`, a backslash `\\u{5C}`,
  the byte 0xFF of a non-UTF-8 name `\\u{DCFF}`);
- everything else is shown as it is.

`parse_path` reads `\\u{HEX}` back (`decode`), so the model can copy a shown path into any file tool
and reach the same file. A backslash that does not start `\\u{HEX}` stays a folder separator, as
before. Shown text therefore never holds a character that starts a new line (`str.splitlines()`
splits it nowhere) or changes the direction of the text around it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

ESCAPED_CATEGORIES: Final = frozenset(("Cc", "Cf", "Zl", "Zp", "Cs"))
_ESCAPE: Final = re.compile(r"\\u\{([0-9A-Fa-f]{1,6})\}")
MAX_CODE_POINT: Final = 0x10FFFF


def _escape_char(ch: str) -> str:
    return f"\\u{{{ord(ch):X}}}"


def _needs_escape(ch: str) -> bool:
    return ch == "\\" or unicodedata.category(ch) in ESCAPED_CATEGORIES


def shown_name(name: str) -> str:
    """One path segment as the model sees it."""
    if name.isprintable() and "\\" not in name and not (name[:1].isspace() or name[-1:].isspace()):
        return name  # the common case: nothing to escape
    out = [_escape_char(ch) if _needs_escape(ch) else ch for ch in name]
    # whitespace at either end of a name is invisible in a listing: make it visible
    i = 0
    while i < len(out) and len(out[i]) == 1 and out[i].isspace():
        out[i] = _escape_char(out[i])
        i += 1
    j = len(out) - 1
    while j >= i and len(out[j]) == 1 and out[j].isspace():
        out[j] = _escape_char(out[j])
        j -= 1
    return "".join(out)


def shown(path: str) -> str:
    """A relative path (segments joined by `/`) as the model sees it."""
    if path.isprintable() and "\\" not in path and " " not in path:
        return path
    return "/".join(shown_name(seg) for seg in path.split("/"))


def shown_text(raw: str) -> str:
    """Any text from the model quoted back in a message (an invalid path): escaped like a name, but
    its slashes and inner spaces kept."""
    if raw.isprintable() and "\\" not in raw:
        return raw
    return "".join(_escape_char(ch) if _needs_escape(ch) else ch for ch in raw)


def visible(text: str) -> str:
    """Text the model sent, echoed in a message (a search pattern): only the characters that could
    break or reorder lines are escaped; backslashes stay as they were written."""
    if text.isprintable():
        return text
    return "".join(_escape_char(ch) if unicodedata.category(ch) in ESCAPED_CATEGORIES else ch for ch in text)


_BIDI: Final = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def shown_line(text: str) -> str:
    """A line of a file's content in a search result: what could end the line or reorder it is escaped
    (controls but the tab, line and paragraph separators, bidi controls), so no content can fake a
    result line (`output/x.md:9: …` after a carriage return) or hide one; other format characters
    (zero-width joiners of emoji, soft hyphens) stay, as the file holds them."""
    if text.isprintable():
        return text
    return "".join(_escape_char(ch) if ch != "\t" and (unicodedata.category(ch) in ("Cc", "Zl", "Zp", "Cs")
                                                      or ch in _BIDI) else ch for ch in text)


def decode(raw: str) -> str:
    """`raw` with every `\\u{HEX}` replaced by its character and every other backslash by `/`.

    Raises ValueError for a code point past U+10FFFF (the caller reports it as an invalid path)."""
    if "\\" not in raw:
        return raw
    out: list[str] = []
    last = 0
    for m in _ESCAPE.finditer(raw):
        out.append(raw[last:m.start()].replace("\\", "/"))
        cp = int(m.group(1), 16)
        if cp > MAX_CODE_POINT:
            raise ValueError(f"`\\u{{{m.group(1)}}}` is past U+10FFFF")
        out.append(chr(cp))
        last = m.end()
    out.append(raw[last:].replace("\\", "/"))
    return "".join(out)

