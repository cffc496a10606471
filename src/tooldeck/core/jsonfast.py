"""The gate's C-speed checks of arguments (pure): True when orjson's own work shows a value is
certainly JSON within the limits, False when `jsonvalue.find_problem` must look. Split from
`jsonvalue` (what JSON arguments are, exact decoding and encoding) because these are the hot path:
each is tuned to cost by the number of values, never by the length of a text."""

from __future__ import annotations

import functools
import re
from typing import Any, Final

import orjson

from tooldeck.core.jsonvalue import MAX_DEPTH, has_long_digit_run

_STRICT: Final = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_dumps: Final = orjson.dumps
_TWO_63: Final = 9223372036854775808.0
_TWO_63_INT: Final = 2**63
_TWO_64: Final = 2**64
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_WALK_CONTAINERS: Final = 32
_SUSPECT: Final = -1
_TOO_MANY: Final = -2
_BRACKETS_SHOWN: Final = 2 * MAX_DEPTH


def plain_fast(value: Any) -> bool:
    """True when the host object `value` is certainly JSON within the limits; False means `find_problem`
    must look. A flat object (the usual tool call) is walked: no copy of its texts, however long (orjson
    would build the whole JSON text: a 70 MB argument cost 1 GB). Anything nested is decided by one
    orjson.dumps (NaN and ±Infinity, which orjson writes as null, a real null included, go to
    `find_problem`). `bytes.find`, not `in`: `in` tries the needle as an int first and pays for an
    exception."""
    if type(value) is not dict:
        return _dumped_fast(value)
    for key, v in value.items():
        if type(key) is not str or not (key.isascii() or _SURROGATE.search(key) is None):
            return False
        t = type(v)
        if t is str:
            if not v.isascii() and _SURROGATE.search(v) is not None:
                return False
        elif t is int:
            if v >= _TWO_64 or v < -_TWO_63_INT:
                return False
        elif t is float:
            if v - v != 0.0:  # NaN or ±Infinity
                return False
        elif t is not bool and v is not None:
            return _dumped_fast(value)
    return True


def _dumped_fast(value: Any) -> bool:
    try:
        out = _dumps(value, None, _STRICT)
    except TypeError:  # orjson.JSONEncodeError: a non-str key, a surrogate, bytes, > 64-bit int, depth, a cycle
        return False
    return out.find(b"null") < 0 and (len(out) <= _BRACKETS_SHOWN or out.count(b"{") + out.count(b"[") <= MAX_DEPTH)


def decoded_fast(value: dict[str, Any], text: str) -> bool:
    """True when `value`, orjson's decoding of the JSON text `text`, is certainly exact and within the
    limits; False means `loads` and `find_problem` must look. orjson's output is JSON by construction
    (str keys, valid text, finite numbers), except that it decodes an integer beyond 64 bits as a
    float (one of at least 2**63) and nests up to 1,024 levels: those two are what is checked.

    A walk costs by the number of values, a scan of the text by its length: a tool call's few values
    (long texts among them) are walked; past `_WALK_CONTAINERS` objects and arrays (dense data) the
    text is scanned for 19 digits in a row and orjson checks the depth."""
    visited = 0
    for v in value.values():
        t = type(v)
        if t is str or t is int or t is bool or v is None:
            continue
        if t is float:
            if v >= _TWO_63 or v <= -_TWO_63:
                return False
        else:
            visited = _nested_fast(v, 2, visited)
            if visited < 0:
                return visited == _TOO_MANY and not has_long_digit_run(text) and not _deeper_than(value, MAX_DEPTH)
    return True


def _nested_fast(container: Any, depth: int, visited: int) -> int:
    """Objects and arrays visited so far, or _SUSPECT, or _TOO_MANY (recursion: at most MAX_DEPTH deep)."""
    visited += 1
    if visited > _WALK_CONTAINERS:
        return _TOO_MANY
    if depth > MAX_DEPTH:
        return _SUSPECT
    for v in container.values() if type(container) is dict else container:
        t = type(v)
        if t is str or t is int or t is bool or v is None:
            continue
        if t is float:
            if v >= _TWO_63 or v <= -_TWO_63:
                return _SUSPECT
        else:
            visited = _nested_fast(v, depth + 1, visited)
            if visited < 0:
                return visited
    return visited


@functools.cache
def _orjson_depth() -> int:
    """How many levels of arrays orjson.dumps writes (254 in orjson 3.x), found once by trying."""
    low, high = 1, 4_096
    while low < high:
        mid = (low + high + 1) // 2
        try:
            orjson.dumps(_nest(mid, 0))
        except TypeError:
            high = mid - 1
        else:
            low = mid
    return low


def _nest(levels: int, value: Any) -> Any:
    for _ in range(levels):
        value = [value]
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` (orjson's own decoding of a text: nothing orjson cannot write) nests more than
    `limit` levels, at C speed: under `depth - limit` arrays, orjson.dumps fails exactly then."""
    try:
        _dumps(_nest(_orjson_depth() - limit, value))
    except TypeError:
        return True
    return False
