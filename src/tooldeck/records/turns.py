"""The JSON a turn's row holds: its calls (`turns.calls`) and a batch of their results (`results.results`).

A model turn is one row and each batch of its results one row, because the cost of a write
transaction is mostly the B-tree pages it dirties (and the bound values), not the bytes: ten call
rows with a dozen columns each cost about twice one row holding the same calls as JSON.

Entries are JSON arrays, by position:

- call, requested: `[index, call_id, call_name, raw_arguments]`
- call, started:   `[index, call_id, call_name, raw_arguments, tool_id, arguments, started_at]`
- either may end with one more slot, `provider` (so 5 or 8 long), when the model turn carried
  provider-native data to send back: `{"data": <the call's provider data>}` and, on the turn's first
  call, `{"items": [<the turn's provider items>]}` (`protocols/items.py`). A turn without any has
  entries of 4 and 7 as before (schema v6 only changed the view to tell them apart).
- result: `[index, status, tool_id, started_at, finished_at, content, structured, is_error, error_code,
  resource_refs, raw_result, effects]`; `content` is null only for a call migrated from a v2 store
  that had a final status but no results row (its `result` reads as None).

Values are stored as they were given. A text slot (ids, names, raw arguments, content, error code)
holding a str JSON cannot carry (a lone surrogate) becomes `{"utf8": <its surrogate-preserving
UTF-8 bytes as latin-1>}`, so it reads back exactly. The raw arguments slot holds the str as sent,
a host object's JSON text, or, for a host object no JSON text holds (`core.rawvalue.RawObject`),
`{"host": [tokens…]}`, which reads back as an equal RawObject. A JSON slot (arguments,
structured, resource_refs, raw_result, effects) holding JSON is written exactly (integers beyond 64
bits included, read back exact); a value JSON cannot hold keeps the rules of `sqlite.dump` (sets
as lists, bytes decoded, anything else as its repr).
"""

from __future__ import annotations

from typing import Any

import orjson

from tooldeck.core.jsonvalue import decode_exact, find_problem, json_text
from tooldeck.core.rawvalue import RawObject
from tooldeck.records.sqlite import dump, fallback

_OPTIONS = orjson.OPT_NON_STR_KEYS

CALL_TEXT = (1, 2, 3, 4)
CALL_JSON = (5,)
RESULT_TEXT = (1, 2, 5, 8)
RESULT_JSON = (6, 9, 10, 11)
STARTED_LEN = 7
"""A call entry this long (or longer) was admitted (`started`); a shorter one was only `requested`."""
REQUESTED_WITH_PROVIDER = 5
STARTED_WITH_PROVIDER = 8


def provider_slot(entry: list[Any]) -> int | None:
    """Where a call entry keeps its provider slot (see the module doc), or None."""
    n = len(entry)
    return 4 if n == REQUESTED_WITH_PROVIDER else 7 if n == STARTED_WITH_PROVIDER else None


def provider(entry: list[Any]) -> dict[str, Any] | None:
    """The provider slot of a call entry (None when it has none)."""
    slot = provider_slot(entry)
    return entry[slot] if slot is not None else None


def _exact(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return {"utf8": value.encode("utf-8", "surrogatepass").decode("latin-1")}
    return value


def text(value: Any) -> Any:
    """A text slot as stored → the str it was, or the raw arguments slot → its RawObject (see the module doc)."""
    if type(value) is dict:
        if "host" in value:
            return RawObject.from_tokens(value["host"])
        return value["utf8"].encode("latin-1").decode("utf-8", "surrogatepass")
    return value


def _default(value: Any) -> Any:
    if type(value) is RawObject:
        return orjson.Fragment(orjson.dumps(value.to_record()))
    return fallback(value)


def _json_slot(value: Any) -> orjson.Fragment:
    if find_problem(value, None) is None:
        return orjson.Fragment(json_text(value))
    return orjson.Fragment(dump(value))  # type: ignore[arg-type]


def encode(entries: list[list[Any]], text_slots: tuple[int, ...], json_slots: tuple[int, ...]) -> str:
    """The JSON text of `entries` (call or result entries; pass CALL_* or RESULT_* slots)."""
    try:
        return orjson.dumps(entries, default=_default, option=_OPTIONS).decode()
    except TypeError:  # orjson's JSONEncodeError included: only odd values get here, slot by slot
        pass
    calls = text_slots is CALL_TEXT
    safe = []
    for entry in entries:
        entry = list(entry)
        extra = provider_slot(entry) if calls else None
        for i in text_slots:
            if i < len(entry) and i != extra:
                entry[i] = _exact(entry[i])
        for i in json_slots:
            if i < len(entry) and entry[i] is not None:
                entry[i] = _json_slot(entry[i])
        if extra is not None and entry[extra] is not None:  # checked JSON, maybe with integers beyond 64 bits
            entry[extra] = _json_slot(entry[extra])
        safe.append(entry)
    return orjson.dumps(safe, default=_default, option=_OPTIONS).decode()


def encode_calls(entries: list[list[Any]]) -> str:
    return encode(entries, CALL_TEXT, CALL_JSON)


def encode_results(entries: list[list[Any]]) -> str:
    return encode(entries, RESULT_TEXT, RESULT_JSON)


def decode(data: str | bytes) -> list[list[Any]]:
    return decode_exact(data)
