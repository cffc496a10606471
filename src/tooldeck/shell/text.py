"""Text that crosses into bashkit, monty or QuickJS must be valid Unicode; these helpers make it so.

A lone surrogate (U+D800–U+DFFF without its pair) is what Python's own `json` produces from a
`"\\udcff"` escape, but no UTF-8 text can hold one: bashkit, monty and QuickJS's host bridge all
refuse it. The shell replaces each by U+FFFD (the Unicode replacement character) and says so.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def count_lone_surrogates(text: str) -> int:
    """How many lone surrogates `text` holds (a valid pair never occurs in a Python str)."""
    if text.isascii():
        return 0
    return len(_LONE_SURROGATE.findall(text))


def well_formed(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD."""
    if text.isascii():
        return text
    return _LONE_SURROGATE.sub(REPLACEMENT, text)


def first_surrogate(text: str) -> tuple[int, str] | None:
    """The index and `U+XXXX` name of the first lone surrogate, for messages."""
    m = _LONE_SURROGATE.search(text)
    return None if m is None else (m.start(), f"U+{ord(m.group()):04X}")


def surrogate_note(text: str) -> str | None:
    """The stderr note for a command that held lone surrogates, or None."""
    n = count_lone_surrogates(text)
    if not n:
        return None
    first = first_surrogate(text)
    assert first is not None
    where, name = first
    plural = "s" if n > 1 else ""
    return (f"shell: the command held {n} lone surrogate{plural} (the first, {name}, at character {where}), "
            "which no UTF-8 text can hold; each was replaced by U+FFFD (\ufffd)")
