"""ToolArguments: the one place where a call's wire arguments are decoded.

Every "no arguments" spelling (absent, JSON null, `"null"`, a blank string, `"{}"`) becomes `{}`;
a JSON object and the JSON string encoding of one give equal arguments (integers exact at any size
a JSON number can have); anything else is Invalid and kept verbatim for the records:

- not an object (arrays, scalars, truncated JSON, raw or string-encoded): the classic message that
  quotes what came;
- an object that is not JSON arguments (`core.jsonvalue.find_problem`: nested too deep, a non-str
  key, text that is not valid Unicode, NaN or a number too large, a value of a type JSON does not
  have): a message that names the problem, where it is, and how to fix it.
"""

from __future__ import annotations

from typing import Any, Final

from orjson import JSONDecodeError
from orjson import loads as _loads

from tooldeck.core.errors import INVALID_ARGUMENTS, ToolCallError
from tooldeck.core.jsonfast import decoded_fast, plain_fast
from tooldeck.core.jsonvalue import (
    SHORT_TEXT,
    Problem,
    find_problem,
    json_text,
    loads_exact,
    shown,
)
from tooldeck.core.rawvalue import RawObject, preview, raw_form

INVALID_ARGUMENTS_QUOTE_CHARS: Final = 200


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
"""Sentinel for a call whose `arguments` field is absent on the wire."""


class ToolArguments:
    """Either a decoded JSON object or the verbatim raw form of something that is not one."""

    __slots__ = ("_raw", "problem", "value")

    def __init__(self, obj: dict[str, Any] | None, raw: str | RawObject | None, problem: Problem | None = None) -> None:
        self.value = obj
        """The decoded object, or None when the arguments are Invalid."""
        self._raw = raw
        self.problem = problem
        """Why an object is not JSON arguments (None: valid, or not an object at all)."""

    @classmethod
    def decode(cls, wire: Any = MISSING) -> ToolArguments:
        kind = type(wire)
        if kind is str:
            try:
                value = _loads(wire)
            except JSONDecodeError:
                return cls._not_orjson(wire)
            return cls._decoded(wire, value)
        if kind is dict:
            return cls._object(wire)
        if isinstance(wire, str):
            return cls._text(wire)
        if wire is MISSING or wire is None:
            return cls({}, None)
        if isinstance(wire, RawObject):  # read back from the records
            return cls.decode(wire.value)
        if isinstance(wire, dict):
            return cls._object(wire)
        if isinstance(wire, bytes | bytearray | memoryview):
            try:
                text = bytes(wire).decode("utf-8")
            except UnicodeDecodeError as exc:
                return cls(None, raw_form(wire), Problem("encoding", f"the arguments are bytes that are not UTF-8 "
                                                         f"text (byte {exc.start + 1} of {len(wire)}); send them "
                                                         "as a JSON object"))
            return cls._text(text)
        return cls(None, raw_form(wire))

    @classmethod
    def _object(cls, value: dict[Any, Any]) -> ToolArguments:
        """A host-passed object: valid when it is JSON within the limits."""
        if plain_fast(value):
            return cls(value, None)
        problem = find_problem(value)
        return cls(value, None) if problem is None else cls(None, raw_form(value), problem)

    @classmethod
    def _text(cls, text: str) -> ToolArguments:
        try:
            value = _loads(text)
        except JSONDecodeError:
            return cls._not_orjson(text)
        return cls._decoded(text, value)

    @classmethod
    def _decoded(cls, text: str, value: Any) -> ToolArguments:
        """`text` as orjson decoded it (`value`): exact and within the limits, or decoded again exactly."""
        if type(value) is dict:
            if len(text) < SHORT_TEXT or decoded_fast(value, text):
                return cls(value, None)
            return cls._checked(text, loads_exact(text))  # integers beyond 64 bits, or deep
        return cls({}, None) if value is None else cls(None, text)

    @classmethod
    def _not_orjson(cls, text: str) -> ToolArguments:
        """What orjson refuses: blank, not JSON, or JSON that is not JSON arguments (NaN, 1e400, a lone
        surrogate escape, deeper than orjson goes)."""
        if not text.strip():
            return cls({}, None)
        return cls._checked(text, loads_exact(text))

    @classmethod
    def _checked(cls, text: str, value: Any) -> ToolArguments:
        if isinstance(value, Problem):
            return cls(None, text, None if value.kind == "syntax" else value)
        if isinstance(value, dict):
            problem = find_problem(value)
            return cls(value, None) if problem is None else cls(None, text, problem)
        return cls({}, None) if value is None else cls(None, text)

    @property
    def is_valid(self) -> bool:
        return self.value is not None

    @property
    def raw_invalid(self) -> str | RawObject | None:
        """The raw form of Invalid arguments (the text as sent, or a host object's raw form); None when valid."""
        return self._raw

    def invalid_message(self, call_name: str | None = None) -> str:
        if self.problem is not None:
            lead = f"Invalid arguments for `{shown(call_name)}`" if call_name else "Invalid arguments"
            return f"{lead}: {self.problem.message}. Fix the arguments and call again."
        raw = self._raw
        if not isinstance(raw, str):
            raw = "" if raw is None else preview(raw.value, INVALID_ARGUMENTS_QUOTE_CHARS + 1)
        quote = shown(raw[:INVALID_ARGUMENTS_QUOTE_CHARS], INVALID_ARGUMENTS_QUOTE_CHARS * 6)
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
        return json_text(self.to_replay_object())

    def to_record(self) -> dict[str, Any] | str | RawObject:
        """Object → the map; Invalid → its raw form, verbatim."""
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
        return hash(json_text(self.value, sort_keys=True))

    def __repr__(self) -> str:
        if self.value is not None:
            return f"ToolArguments.Object({self.value!r})"
        return f"ToolArguments.Invalid({self._raw!r})"
