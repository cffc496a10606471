"""ToolArguments: the one place where a call's wire arguments are decoded.

Every "no arguments" spelling (absent, JSON null, `"null"`, a blank string, `"{}"`) becomes `{}`;
a JSON object and the JSON string encoding of one give equal arguments; anything else (arrays,
scalars, truncated JSON, raw or string-encoded) is Invalid and kept verbatim for the records.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from tooldeck.core.errors import INVALID_ARGUMENTS, ToolCallError

INVALID_ARGUMENTS_QUOTE_CHARS: Final = 200


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
"""Sentinel for a call whose `arguments` field is absent on the wire."""


class ToolArguments:
    """Either a decoded JSON object or the verbatim raw text of something that is not one."""

    __slots__ = ("_raw", "value")

    def __init__(self, obj: dict[str, Any] | None, raw: str | None) -> None:
        self.value = obj
        """The decoded object, or None when the arguments are Invalid."""
        self._raw = raw

    @classmethod
    def decode(cls, wire: Any = MISSING) -> ToolArguments:
        if type(wire) is dict:
            return cls(wire, None)
        if isinstance(wire, str):
            try:
                value = orjson.loads(wire)
            except orjson.JSONDecodeError:
                return cls({}, None) if not wire.strip() else cls(None, wire)
            if isinstance(value, dict):
                return cls(value, None)
            return cls({}, None) if value is None else cls(None, wire)
        if wire is MISSING or wire is None:
            return cls({}, None)
        if isinstance(wire, dict):
            return cls(wire, None)
        if isinstance(wire, bytes | bytearray):
            return cls.decode(bytes(wire).decode("utf-8", errors="replace"))
        try:
            raw = orjson.dumps(wire).decode()
        except TypeError:
            raw = repr(wire)
        return cls(None, raw)

    @property
    def is_valid(self) -> bool:
        return self.value is not None

    @property
    def raw_invalid(self) -> str | None:
        """The verbatim text of Invalid arguments; None when they are a valid object."""
        return self._raw

    def invalid_message(self) -> str:
        raw = self._raw or ""
        quote = raw[:INVALID_ARGUMENTS_QUOTE_CHARS]
        if len(raw) > INVALID_ARGUMENTS_QUOTE_CHARS:
            quote += "…"
        return (
            "Arguments must be a JSON object; send `{}` when the call takes no arguments. "
            f"Received: `{quote}`"
        )

    def as_map(self) -> dict[str, Any]:
        if self.value is None:
            raise ToolCallError(INVALID_ARGUMENTS, self.invalid_message())
        return self.value

    def to_replay_object(self) -> dict[str, Any]:
        return self.value if self.value is not None else {}

    def encode_for_replay(self) -> str:
        return orjson.dumps(self.to_replay_object()).decode()

    def to_record(self) -> dict[str, Any] | str:
        """Object → the map; Invalid → the raw string, verbatim."""
        return self.value if self.value is not None else (self._raw or "")

    @classmethod
    def from_record(cls, value: Any) -> ToolArguments:
        if isinstance(value, dict):
            return cls(value, None)
        return cls.decode(value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolArguments):
            return NotImplemented
        return self.value == other.value and self._raw == other._raw

    def __hash__(self) -> int:
        if self.value is None:
            return hash(self._raw)
        return hash(orjson.dumps(self.value, option=orjson.OPT_SORT_KEYS))

    def __repr__(self) -> str:
        if self.value is not None:
            return f"ToolArguments.Object({self.value!r})"
        return f"ToolArguments.Invalid({self._raw!r})"
