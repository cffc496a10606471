"""The id of a JSON-RPC request read from the start of its text only.

A message over `tooldeck serve --stdio`'s line limit is not read whole (its bytes are dropped as they arrive),
but its request still deserves an answer with its own id, so the client's call fails at once instead of waiting
for its timeout. `leading_id` finds the object's top-level `"id"` in the first bytes of the line
(`StdioLane.refuse` gives it 64 KiB) without parsing the rest: it walks the members in order, skipping each value
whole (strings with their escapes, nested objects and arrays), and gives up (None) on anything it cannot be sure
of — a cut value, a malformed member — so it never names an id that is not the message's own. A key written with
escapes (`"\\u0069d"`) is decoded as JSON would decode it.
"""

from __future__ import annotations

import orjson

_SPACE = frozenset(b" \t\r\n")
_VALUE_END = frozenset(b" \t\r\n,}]")


def leading_id(head: bytes) -> int | str | None:
    """The top-level `id` (an integer or a string) of the JSON object whose text begins with `head`, when the
    members before it and its value lie whole within `head`; else None. Never raises."""
    try:
        return _leading_id(head)
    except (IndexError, ValueError):  # orjson's JSONDecodeError is a ValueError
        return None


def _leading_id(head: bytes) -> int | str | None:
    i = _skip_space(head, 0)
    if head[i] != ord("{"):
        return None
    i += 1
    while True:
        i = _skip_space(head, i)
        if head[i] != ord('"'):
            return None  # `}` (no id) or not a member
        end = _string_end(head, i)
        if end is None:
            return None
        key = orjson.loads(head[i:end])
        i = _skip_space(head, end)
        if head[i] != ord(":"):
            return None
        i = _skip_space(head, i + 1)
        end = _value_end(head, i)
        if end is None:
            return None
        if key == "id":
            value = orjson.loads(head[i:end])
            return value if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)) \
                else None
        i = _skip_space(head, end)
        if head[i] != ord(","):
            return None
        i += 1


def _skip_space(data: bytes, i: int) -> int:
    while i < len(data) and data[i] in _SPACE:
        i += 1
    return i


def _string_end(data: bytes, i: int) -> int | None:
    """The index after the closing quote of the string that starts at `i`; None when it is cut."""
    i += 1
    while i < len(data):
        c = data[i]
        if c == ord("\\"):
            i += 2
        elif c == ord('"'):
            return i + 1
        else:
            i += 1
    return None


def _value_end(data: bytes, i: int) -> int | None:
    """The index after the JSON value that starts at `i`; None when it is cut (a number or a literal must be
    followed by its delimiter within `data`, else it may go on)."""
    c = data[i]
    if c == ord('"'):
        return _string_end(data, i)
    if c in (ord("{"), ord("[")):
        depth = 0
        while i < len(data):
            c = data[i]
            if c == ord('"'):
                end = _string_end(data, i)
                if end is None:
                    return None
                i = end
                continue
            if c in (ord("{"), ord("[")):
                depth += 1
            elif c in (ord("}"), ord("]")):
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return None
    start = i
    while i < len(data) and data[i] not in _VALUE_END:
        i += 1
    return i if i < len(data) and i > start else None
