"""The shape of one tool call as a model sent it: `Call` (id, name, arguments), read from a wire object.

Every provider's decoded call (`protocols/`) and every host's hand-built call dict come in through
`Call.from_wire`: the one place that decides what a call without a usable id or name is. A turn with a
call that has no id is refused whole (`UnpairedCall`, `model.invalid_tool_call`): its result could not
be paired with it. A missing or non-str name is not refused here: it becomes text and the gate answers
it with `tool.unknown_tool`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tooldeck.core.arguments import MISSING
from tooldeck.core.errors import INVALID_TOOL_CALL, TooldeckError
from tooldeck.core.rawvalue import RawObject, raw_form


class UnpairedCall(TooldeckError):
    """A call without a usable id: its result could not be paired with it, so no call of its turn runs."""

    def __init__(self, message: str) -> None:
        super().__init__(INVALID_TOOL_CALL, message)


@dataclass(slots=True)
class Call:
    id: str
    name: str
    arguments: Any

    @classmethod
    def from_wire(cls, call: Mapping[str, Any]) -> Call:
        """The call of a wire object (`{"id", "name", "arguments"}`, or OpenAI's `{"id", "function": {…}}`).

        Without a non-empty string `id` it raises `UnpairedCall` (`model.invalid_tool_call`): a result
        must carry its call's id. A missing or empty name is `""`, and a name that is not a str its JSON
        text: the gate answers such a call with `tool.unknown_tool`."""
        if type(call) is not dict and not isinstance(call, Mapping):
            raise UnpairedCall(f"a tool call must be an object with an `id`, got {type(call).__name__}; no call of "
                               "the turn was run (have the model retry the turn)")
        fn = call.get("function")
        if fn is None or (type(fn) is not dict and not isinstance(fn, Mapping)):
            fn = call
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise UnpairedCall("a tool call needs a non-empty string `id` to pair its result with it; no call of "
                               "the turn was run (have the model retry the turn)")
        name = fn.get("name")
        arguments = fn.get("arguments", MISSING)
        if arguments is MISSING:
            arguments = fn.get("args", MISSING)
        return cls(call_id, name if type(name) is str else as_text(name), arguments)

    @classmethod
    def salvage(cls, call: Any) -> Call:
        """`from_wire` for the records of a turn it refused: never raises. An id or name that is not a
        str is kept as its JSON text (`""` when absent); a call that is not an object is kept whole as
        its raw arguments."""
        if type(call) is not dict and not isinstance(call, Mapping):
            return cls("", "", call)
        fn = call.get("function")
        if fn is None or (type(fn) is not dict and not isinstance(fn, Mapping)):
            fn = call
        arguments = fn.get("arguments", MISSING)
        if arguments is MISSING:
            arguments = fn.get("args", MISSING)
        call_id, name = call.get("id"), fn.get("name")
        return cls(call_id if type(call_id) is str else as_text(call_id),
                   name if type(name) is str else as_text(name), arguments)

    def raw_text(self) -> str | RawObject | None:
        """The raw form of the wire arguments for the records (`core.rawvalue`): the str as sent, a
        host object's JSON text or its RawObject, None when absent."""
        a = self.arguments
        if a is MISSING:
            return None
        if isinstance(a, str):
            return a
        return raw_form(a)


def has_id(call: Any) -> bool:
    """Whether a wire call carries the non-empty string id `from_wire` requires."""
    if type(call) is not dict and not isinstance(call, Mapping):
        return False
    call_id = call.get("id")
    return isinstance(call_id, str) and bool(call_id)


def as_text(value: Any) -> str:
    """An id or name that is not a str, as text for the records and messages (`""` when absent)."""
    if value is None or value is MISSING:
        return ""
    if isinstance(value, str):
        return str.__str__(value)
    return str(raw_form(value))
