"""The raw form of wire arguments, for the records: exactly what was sent, in a form JSON can store.

- A str (the arguments as the provider sent them) is its own raw form, verbatim.
- A Python object the host passed (a provider SDK's decoded `input` or `args`) is its compact JSON
  text when that text reads back as an equal value: any JSON value, at any depth, integers exact
  within ±1.8e308 (a tuple reads back as a list, an enum member as its value, a UUID as its text).
- Any other object — a lone surrogate in a str, NaN or ±Infinity, a non-str key, bytes, a set, a
  larger integer, an object of another type, a cycle — is a `RawObject`: the object itself, stored as
  a flat list of tokens (below) that rebuilds it exactly, whatever its depth or size.

Tokens, in prefix order, each a tag and its payload: `n`, `t`, `f` (null, true, false);
`i` int (a JSON integer within 64 bits, else its hex text `"0x…"`/`"-0x…"`); `r` float (a JSON
number, or `"nan"`, `"inf"`, `"-inf"`); `s` str; `u` a str that is not valid Unicode (its
surrogate-preserving UTF-8 bytes as latin-1); `b` bytes (base64; bytearray and memoryview read back
as bytes); `l`, `T`, `S`, `F`, `d` list, tuple, set, frozenset, dict, each with its length and then
its items (a dict's as key, value pairs); `o` anything else, with its type name and its `repr` (at
most 1,000 characters; it reads back as an `Opaque`). A container met again inside itself is an
`o` token of type `cycle`.
"""

from __future__ import annotations

import base64
import enum
import math
import uuid
from typing import Any, Final

import orjson

from tooldeck.core.jsonvalue import Opaque, find_problem, is_unicode, json_text

_REPR_LIMIT: Final = 1000
_I64: Final = 1 << 63
_STRICT: Final = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_SIZED = {"l": list, "T": tuple, "S": set, "F": frozenset}


class RawObject:
    """Arguments the host passed as a Python object that no JSON text holds exactly (see the module doc)."""

    __slots__ = ("_tokens", "value")

    def __init__(self, value: Any, tokens: list[Any] | None = None) -> None:
        self.value = value
        self._tokens = tokens

    def tokens(self) -> list[Any]:
        if self._tokens is None:
            self._tokens = to_tokens(self.value)
        return self._tokens

    def to_record(self) -> dict[str, Any]:
        """The JSON the records store (`{"host": [tokens…]}`)."""
        return {"host": self.tokens()}

    @classmethod
    def from_tokens(cls, tokens: Any) -> RawObject:
        try:
            return cls(from_tokens(tokens), tokens)
        except (ValueError, TypeError, KeyError, IndexError, StopIteration, AttributeError):
            # a damaged record: kept as its text, so reading a history never fails on it
            return cls(Opaque("unreadable record", orjson.dumps(tokens, default=str).decode()[:_REPR_LIMIT]),
                       tokens)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RawObject):
            return NotImplemented
        return self.tokens() == other.tokens()

    def __hash__(self) -> int:
        return hash(orjson.dumps(self.tokens()))

    def __str__(self) -> str:
        return orjson.dumps(self.to_record()).decode()

    def __repr__(self) -> str:
        return f"RawObject({preview(self.value, 200)})"


def raw_form(value: Any) -> str | RawObject:
    """The raw form of a host-passed object (not a str): its JSON text, or a RawObject (never raises)."""
    try:
        out = orjson.dumps(value, option=_STRICT)
    except TypeError:  # orjson.JSONEncodeError: beyond 64 bits, deep, or not JSON at all: look closer
        out = None
    if out is not None and b"null" not in out:
        return out.decode()
    if find_problem(value, None) is None:
        return json_text(value)
    return RawObject(value)


def preview(value: Any, limit: int = 200) -> str:
    """A short text of any value for a message (its JSON when it has one, else a repr); never raises."""
    form = raw_form(value) if not isinstance(value, str) else value
    if isinstance(form, RawObject):
        try:
            text = repr(value)
        except Exception:  # RecursionError (deep), ValueError (a huge int), a failing __repr__
            text = str(form)
    else:
        text = form
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else text[:limit] + "…"


# -- tokens ---------------------------------------------------------------------------------------

_EXIT: Final = object()
"""On the stack of `to_tokens`: the id below it leaves the path of containers being encoded."""


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}: its repr failed>"
    return text[:_REPR_LIMIT]


def _str_tokens(text: str, out: list[Any]) -> None:
    if is_unicode(text):
        out += ("s", str.__str__(text))
    else:
        out += ("u", text.encode("utf-8", "surrogatepass").decode("latin-1"))


def to_tokens(value: Any) -> list[Any]:
    """The flat token list of any value (iterative: any depth; a cycle becomes an `o` token)."""
    out: list[Any] = []
    stack: list[Any] = [value]
    active: set[int] = set()
    while stack:
        item = stack.pop()
        kind = type(item)
        if item is _EXIT:
            active.discard(stack.pop())
        elif kind is str:
            _str_tokens(item, out)
        elif kind is list or kind is dict or isinstance(item, dict | list | tuple | set | frozenset):
            ident = id(item)
            if ident in active:
                out += ("o", "cycle", f"<{type(item).__name__} that contains itself>")
                continue
            active.add(ident)
            stack.append(ident)
            stack.append(_EXIT)
            _container_tokens(item, out, stack)
        elif kind is int:
            out += ("i", item if -_I64 <= item < _I64 else hex(item))
        elif item is None:
            out.append("n")
        elif kind is bool:
            out.append("t" if item else "f")
        elif kind is float:
            out += ("r", item if math.isfinite(item) else "nan" if item != item else "inf" if item > 0 else "-inf")
        else:
            _other_tokens(item, out, stack)
    return out


def _other_tokens(item: Any, out: list[Any], stack: list[Any]) -> None:
    """Tokens of what is not an exact JSON type: subclasses, bytes, enum members, UUIDs, anything else."""
    if isinstance(item, enum.Enum) and not isinstance(item, int | str | float):
        stack.append(item.value)
    elif isinstance(item, str):
        _str_tokens(item, out)
    elif isinstance(item, int):
        number = item.__index__()
        out += ("i", number if -_I64 <= number < _I64 else hex(number))
    elif isinstance(item, float):
        stack.append(float(item))
    elif isinstance(item, bytes | bytearray | memoryview):
        out += ("b", base64.b64encode(bytes(item)).decode("ascii"))
    elif isinstance(item, uuid.UUID):
        out += ("s", str(item))
    elif type(item) is Opaque:
        out += ("o", item.type_name, item.text)
    else:
        out += ("o", type(item).__qualname__, _safe_repr(item))


def _container_tokens(item: Any, out: list[Any], stack: list[Any]) -> None:
    if type(item) is list:
        out += ("l", len(item))
        stack.extend(reversed(item))
        return
    if isinstance(item, dict):
        out += ("d", len(item))
        for key, val in reversed(list(item.items())):
            stack.append(val)
            stack.append(key)
        return
    tag = "l" if isinstance(item, list) else "T" if isinstance(item, tuple) else \
        "F" if isinstance(item, frozenset) else "S"
    elements = list(item)
    if tag in ("S", "F"):  # a set has no order: its items are sorted by their tokens, so equal sets encode alike
        elements.sort(key=lambda e: orjson.dumps(to_tokens(e)))
    out += (tag, len(elements))
    stack.extend(reversed(elements))


def from_tokens(tokens: list[Any]) -> Any:
    """The value of a token list (iterative: any depth). Raises ValueError on a damaged list."""
    it = iter(tokens)
    # Frames: [tag, items still to come, items so far]; the bottom frame collects the one result.
    frames: list[list[Any]] = [["root", 1, []]]
    for tag in it:
        if tag in ("d", "l", "T", "S", "F"):
            count = next(it)
            if type(count) is not int or count < 0:
                raise ValueError(f"bad container length {count!r}")
            frames.append([tag, count * 2 if tag == "d" else count, []])
            if count:
                continue
            done = frames.pop()
            value = _build(done[0], done[2])
        else:
            value = _scalar(tag, it)
        while True:  # attach the value; a container it completes is the next value to attach
            frame = frames[-1]
            if frame[1] <= 0:
                raise ValueError("more items than their container holds")
            frame[2].append(value)
            frame[1] -= 1
            if frame[1] or len(frames) == 1:
                break
            done = frames.pop()
            value = _build(done[0], done[2])
    if len(frames) != 1 or frames[0][1] != 0:
        raise ValueError("the token list ends inside a value")
    return frames[0][2][0]


def _scalar(tag: Any, it: Any) -> Any:
    if tag == "n":
        return None
    if tag == "t":
        return True
    if tag == "f":
        return False
    payload = next(it)
    if tag == "s":
        return str(payload)
    if tag == "i":
        return payload if type(payload) is int else int(payload, 16)
    if tag == "r":
        return float(payload)  # "nan", "inf", "-inf" included
    if tag == "u":
        return payload.encode("latin-1").decode("utf-8", "surrogatepass")
    if tag == "b":
        return base64.b64decode(payload, validate=True)
    if tag == "o":
        return Opaque(str(payload), str(next(it)))
    raise ValueError(f"unknown token {tag!r}")


def _build(tag: str, items: list[Any]) -> Any:
    if tag == "d":
        return {items[i]: items[i + 1] for i in range(0, len(items), 2)}
    return items if tag == "l" else _SIZED[tag](items)
