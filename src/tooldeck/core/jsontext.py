"""Compact JSON text of any JSON value, exact for every integer and at any depth (pure): orjson's
output when it can write the value, else a walk that writes the rest the same way."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Final

import orjson

_dumps: Final = orjson.dumps


def json_text(value: Any, *, sort_keys: bool = False) -> str:
    """Compact JSON text of a JSON value (`find_problem(value, None) is None`), exact for any integer
    and at any depth. orjson's output when it can write the value."""
    try:
        return (_dumps(value, None, orjson.OPT_SORT_KEYS) if sort_keys else _dumps(value)).decode()
    except TypeError:  # an integer beyond 64 bits, or deeper than orjson goes
        pass
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:  # a literal piece of output (brackets, commas) is pushed as a _Lit
            out.append(orjson.dumps(item).decode())
        elif kind is _Lit:
            out.append(item.text)
        elif item is None or kind is bool or kind is float:
            out.append(orjson.dumps(item).decode())
        elif kind is int:
            out.append(str(item))
        elif isinstance(item, dict):
            items = sorted(item.items()) if sort_keys else list(item.items())
            stack.append(_CLOSE_OBJECT)
            for i in range(len(items) - 1, -1, -1):
                key, val = items[i]
                stack.append(val)
                stack.append(_Lit(orjson.dumps(str(key)).decode() + ":"))
                if i:
                    stack.append(_COMMA)
            out.append("{")
        elif isinstance(item, list | tuple):
            stack.append(_CLOSE_ARRAY)
            for i in range(len(item) - 1, -1, -1):
                stack.append(item[i])
                if i:
                    stack.append(_COMMA)
            out.append("[")
        elif isinstance(item, str):
            out.append(orjson.dumps(str(item)).decode())
        elif isinstance(item, int):
            out.append(str(item.__index__()))
        elif isinstance(item, enum.Enum):
            stack.append(item.value)
        else:  # float subclasses, UUID: orjson writes them
            out.append(orjson.dumps(item).decode())
    return "".join(out)


@dataclass(frozen=True, slots=True)
class _Lit:
    text: str


_COMMA: Final = _Lit(",")
_CLOSE_OBJECT: Final = _Lit("}")
_CLOSE_ARRAY: Final = _Lit("]")
