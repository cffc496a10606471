"""JSON values at the edge: what counts as JSON arguments, and exact decoding and encoding of them.

Tool arguments are JSON: objects with string keys, arrays, strings of valid Unicode, numbers,
true, false and null, nested at most `MAX_DEPTH` levels (the arguments object is the first). A
number, integer or not, lies within ±`MAX_NUMBER` (a 64-bit float's range: what every JSON parser
reads, so every provider can take the arguments back on replay); an integer inside it is exact, at
any size. orjson decodes and encodes the common case; what it cannot do exactly goes through the
slow paths here:

- orjson decodes an integer beyond 64 bits as a float (`123456789012345678901` →
  `1.2345678901234568e+20`). `decoded_fast` spots a decoding that may hold one (a float of at
  least 2**63) and `loads` then decodes the text with exact integers;
- orjson cannot encode an integer beyond 64 bits nor nest deeper than 254 levels; `json_text`
  writes any JSON value exactly, at any depth.

Nothing here raises on bad input: a value that is not JSON gets a `Problem` that says what is wrong,
where, and how to fix it, in words for the model.
"""

from __future__ import annotations

import enum
import json
import math
import sys
import uuid
from dataclasses import dataclass
from typing import Any, Final

import orjson

from tooldeck.core.jsontext import json_text as json_text  # exact encoding lives beside it

MAX_DEPTH: Final = 64
"""Levels of objects and arrays in a call's arguments, the arguments object being the first. Deeper
data has no place in a tool call, and every provider's replay must be able to carry it."""
MAX_NUMBER: Final = sys.float_info.max
"""The largest magnitude of a number (about 1.8e308)."""
_MAX_INT: Final = int(sys.float_info.max)
_MAX_INT_DIGITS: Final = len(str(_MAX_INT))
"""309: an integer literal this long may be in range; longer ones are not (and are never converted,
so the host's `sys.set_int_max_str_digits`, at least 640, is never reached)."""
_DIGIT_MAP: Final = bytes(0x31 if 0x30 <= b <= 0x39 else 0x30 for b in range(256))
_DIGIT_RUN: Final = b"1" * 19
"""A JSON integer orjson cannot hold (below -2**63 or from 2**64) has at least 19 digits."""
_SHORTEST_LOSSY: Final = 20
SHORT_TEXT: Final = 20
"""A JSON text shorter than this can neither nest too deep nor hold an integer orjson decodes inexactly."""
_dumps: Final = orjson.dumps
"""orjson decodes an integer outside [-2**63, 2**64) as a float, which is then at least this large."""
"""A JSON text this short cannot nest more than MAX_DEPTH levels."""
_PATH_SHOWN: Final = 6
_TEXT_SHOWN: Final = 60


@dataclass(frozen=True, slots=True)
class Problem:
    """Why a value is not JSON arguments: a stable kind and one sentence for the model."""

    kind: str
    """`depth` | `key` | `unicode` | `number` | `type` | `cycle` | `syntax` | `encoding`."""
    message: str


@dataclass(frozen=True, slots=True)
class Opaque:
    """A value the records could only keep as text (an object of a type JSON does not have)."""

    type_name: str
    text: str


@dataclass(frozen=True, slots=True)
class _Bad:
    """What the exact decoder puts where a number cannot be a JSON number (found by `find_problem`)."""

    kind: str
    text: str


# -- text shown to the model ----------------------------------------------------------------------

def shown(text: str, limit: int = _TEXT_SHOWN) -> str:
    """`text` safe to quote in a message: lone surrogates escaped (`\\udc80`), at most `limit` characters."""
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_unicode(text: str) -> bool:
    """False when `text` holds a lone surrogate (it cannot be UTF-8, so no JSON can carry it)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _surrogate_at(text: str) -> str:
    for i, ch in enumerate(text):
        if 0xD800 <= ord(ch) <= 0xDFFF:
            return f"a lone surrogate \\u{ord(ch):04x} at character {i + 1}"
    return "characters that are not Unicode text"


class _Path:
    """A linked path (parent, key): O(1) to extend, rendered only for a message."""

    __slots__ = ("depth", "key", "parent")

    def __init__(self, parent: _Path | None, key: Any) -> None:
        self.parent, self.key = parent, key
        self.depth = 0 if parent is None else parent.depth + 1

    def where(self) -> str:
        keys: list[str] = []
        node: _Path | None = self
        while node is not None and node.parent is not None:
            keys.append(shown(str(node.key), 40) if isinstance(node.key, str) else str(node.key))
            node = node.parent
        if not keys:
            return "the arguments object"
        keys.reverse()
        if len(keys) > _PATH_SHOWN:
            keys = [*keys[:3], "…", *keys[-2:]]
        return "`" + "/".join(keys) + "`"


_ROOT = _Path(None, None)


def _type_name(value: Any) -> str:
    return value.type_name if type(value) is Opaque else type(value).__name__


def _type_problem(value: Any, path: _Path) -> Problem:
    name = _type_name(value)
    if isinstance(value, bytes | bytearray | memoryview):
        fix = "send text instead (binary data as base64 text)"
    elif isinstance(value, set | frozenset):
        fix = "send an array instead"
    else:
        fix = "send a JSON value: an object, array, string, number, true, false or null"
    return Problem("type", f"{path.where()} holds a Python `{shown(name, 40)}` value, which is not JSON; {fix}")


def _number_problem(bad: _Bad, path: _Path) -> Problem:
    where = path.where()
    if bad.kind == "integer":
        return Problem("number", f"{where} is an integer of {bad.text} digits, too large for a JSON number (the "
                       "largest is about 1.8e308). Send it as a string if it must be that large")
    if bad.kind == "overflow":
        return Problem("number", f"{where}: the number {shown(bad.text, 30)} is too large for a JSON number (the "
                       "largest is about 1.8e308). Send a smaller number, or send it as a string")
    return Problem("number", f"{where} is {bad.text}, which is not a JSON number. Send a finite number, or null "
                   "if there is none")


def _float_problem(value: float, path: _Path) -> Problem | None:
    if math.isfinite(value):
        return None
    return _number_problem(_Bad("constant", "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"),
                           path)


def _int_problem(value: int, path: _Path) -> Problem | None:
    if value.bit_length() <= 1023 or -_MAX_INT <= value <= _MAX_INT:
        return None
    return _number_problem(_Bad("integer", f"{int_digits(value):,}"), path)


def int_digits(value: int) -> int:
    """Decimal digits of `value` (without its sign), for any size."""
    value = abs(value)
    guess = max(1, int(value.bit_length() * 0.30102999566398120))
    # The guess is exact or one short; `10 ** guess` is the smallest number with guess + 1 digits.
    return guess + 1 if value >= 10**guess else guess


_DONE = object()


def find_problem(value: Any, max_depth: int | None = MAX_DEPTH) -> Problem | None:
    """The first thing in `value` that is not JSON (within `max_depth` levels; None: any depth), or None.

    Iterative, so any depth and any size is safe; a cycle is found, not followed. Enum members count
    as their value and UUIDs as their text (orjson writes them so); tuples count as arrays.
    """
    stack: list[Any] = [(value, _ROOT)]
    active: set[int] = set()
    while stack:
        item, path = stack.pop()
        if item is _DONE:
            active.discard(path)
            continue
        kind = type(item)
        if kind is str:
            if not is_unicode(item):
                return Problem("unicode", f"{path.where()} is not valid Unicode text: it holds "
                               f"{_surrogate_at(item)}. Send valid UTF-8 text (a character beyond U+FFFF is "
                               "written as both halves of its surrogate pair)")
            continue
        if kind is int:
            problem = _int_problem(item, path)
        elif kind is float:
            problem = _float_problem(item, path)
        elif item is None or kind is bool:
            continue
        elif kind is dict or kind is list or kind is tuple or isinstance(item, dict | list | tuple):
            problem = _container_problem(item, path, max_depth, active, stack)
        elif kind is _Bad:
            problem = _number_problem(item, path)
        elif isinstance(item, str):  # subclasses (StrEnum, IntEnum, …) are what their base type is
            if not is_unicode(item):
                stack.append((str.__str__(item), path))
            continue
        elif isinstance(item, int):
            problem = _int_problem(item, path)
        elif isinstance(item, float):
            problem = _float_problem(item, path)
        elif isinstance(item, enum.Enum):
            stack.append((item.value, path))
            continue
        elif isinstance(item, uuid.UUID):
            continue
        else:
            problem = _type_problem(item, path)
        if problem is not None:
            return problem
    return None


def _container_problem(item: Any, path: _Path, max_depth: int | None, active: set[int],
                       stack: list[Any]) -> Problem | None:
    if max_depth is not None and path.depth + 1 > max_depth:
        return Problem("depth", f"{path.where()} is nested more than {max_depth} levels deep (objects and arrays, "
                       f"the arguments object being the first); at most {max_depth} are accepted. Send a flatter "
                       "structure, or the deep part as a JSON string")
    ident = id(item)
    if ident in active:
        return Problem("cycle", f"{path.where()} refers back to an object or array that contains it (a cycle), "
                       "which JSON cannot hold")
    active.add(ident)
    stack.append((_DONE, ident))
    if isinstance(item, dict):
        for key, val in item.items():
            if type(key) is not str:
                if not isinstance(key, str):
                    return Problem("key", f"{path.where()} has the key {shown(_key_text(key))} "
                                   f"({_type_name(key)}); object keys must be strings. Send string keys")
                key = str(key)
            if not is_unicode(key):
                return Problem("unicode", f"a key of {path.where()} (`{shown(key)}`) is not valid Unicode text: "
                               f"it holds {_surrogate_at(key)}. Send keys of valid UTF-8 text")
            stack.append((val, _Path(path, key)))
    else:
        for i, val in enumerate(item):
            stack.append((val, _Path(path, i)))
    return None


def _key_text(key: Any) -> str:
    try:
        return repr(key)
    except Exception:  # a huge int, or a repr that fails
        return f"<{type(key).__name__}>"


# -- decoding -------------------------------------------------------------------------------------

def has_long_digit_run(text: str) -> bool:
    """True when `text` has 19 digits in a row: it may hold an integer orjson would decode as a float."""
    return len(text) >= _SHORTEST_LOSSY and \
        text.encode("utf-8", "surrogatepass").translate(_DIGIT_MAP).find(_DIGIT_RUN) >= 0


def _parse_int(digits: str) -> int | _Bad:
    count = len(digits) - (digits[0] == "-")
    if count > _MAX_INT_DIGITS:
        return _Bad("integer", f"{count:,}")
    value = int(digits)
    return value if -_MAX_INT <= value <= _MAX_INT else _Bad("integer", f"{count:,}")


def _parse_float(text: str) -> float | _Bad:
    value = float(text)
    return _Bad("overflow", text) if math.isinf(value) else value


def _parse_constant(name: str) -> _Bad:
    return _Bad("constant", name)


def loads(text: str) -> Any:
    """The exact value of the JSON text `text`, or a `Problem` (never raises).

    orjson first; Python's decoder, with exact integers, for what orjson cannot decode exactly or at
    all. What that decoder accepts beyond JSON (NaN, Infinity, lone surrogates) is left in the value
    (as markers for the numbers) for `find_problem` to name with its place.
    """
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return loads_exact(text)
    return loads_exact(text) if has_long_digit_run(text) else value


def loads_exact(text: str) -> Any:
    try:
        return json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except RecursionError:
        return Problem("depth", f"the arguments are nested more than {MAX_DEPTH} levels deep (objects and "
                       f"arrays); at most {MAX_DEPTH} are accepted. Send a flatter structure")
    except ValueError as exc:  # json.JSONDecodeError
        return Problem("syntax", f"not valid JSON ({shown(str(exc), 120)})")


def decode_exact(data: str | bytes) -> Any:
    """Exact decoding of a JSON text that is known to be valid (records written by tooldeck); raises on
    an invalid one."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        text = data if isinstance(data, str) else bytes(data).decode("utf-8")
        return json.loads(text, parse_int=int)
    if isinstance(data, str) and has_long_digit_run(data):
        return json.loads(data, parse_int=int)
    return value
