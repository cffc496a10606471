"""Hypothesis strategies for wire arguments at their worst: every JSON type, huge and deeply nested
values, NaN and ±Infinity, lone surrogates, NUL, non-str keys, bytes, and texts that are almost JSON."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

# Every code point, lone surrogates and NUL included (the default text strategy leaves surrogates out).
ANY_CHAR = st.characters(codec=None, exclude_categories=())
ODD_CHARS = st.sampled_from(["\x00", "\udc80", "\ud83d", "\ude00", "é", "中", "😀", "\u202e", "\n", '"', "\\", "/"])
TEXT = st.one_of(st.text(st.one_of(ANY_CHAR, ODD_CHARS), max_size=12), st.text(ODD_CHARS, min_size=1, max_size=3))
UNICODE_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)

def _near_max(sign: int, delta: int) -> int:
    return int(1.7976931348623157e308) * sign + delta


def _power(exponent: int, sign: int) -> int:
    return sign * 10**exponent


def _power_plus(exponent: int, delta: int) -> int:
    return 10**exponent + delta


def _deep_array_text(levels: int) -> str:
    return '{"a": ' + "[" * levels + "]" * levels + "}"


def _wrapped(value: Any) -> dict[str, Any]:
    return {"value": value}


def _containers(inner: Any) -> Any:
    return st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4), st.tuples(inner, inner))


def _json_containers(inner: Any) -> Any:
    return st.one_of(st.lists(inner, max_size=4), st.dictionaries(UNICODE_TEXT, inner, max_size=4))


def pick(strategy: Any) -> Any:
    """For `sampled_from([...strategies]).flatmap(pick)`: weighted choice among strategies."""
    return strategy


BIG_INTS = st.one_of(
    st.integers(-(2**63) - 2, -(2**63) + 1), st.integers(2**63 - 2, 2**64 + 2),
    st.sampled_from([123456789012345678901, -123456789012345678901, 2**70]),
    # around the largest JSON number (about 1.8e308), and beyond Python's int-to-text limit (4,300 digits)
    st.builds(_near_max, st.sampled_from([1, -1]), st.integers(-1, 1)),
    st.builds(_power, st.sampled_from([308, 309, 400, 4_300, 5_000]), st.sampled_from([1, -1])),
    st.builds(_power_plus, st.integers(19, 320), st.integers(-5, 5)),
)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-1000, 1000), BIG_INTS,
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([float("nan"), float("inf"), float("-inf")]),
    TEXT, TEXT,
)
ODD_SCALARS = st.one_of(st.binary(max_size=6), st.frozensets(st.integers(0, 3), max_size=2))
KEYS = st.one_of(TEXT, TEXT, st.integers(-5, 5), st.none(), st.booleans(), st.floats(allow_nan=False))


def nest(levels: int, leaf: Any, as_dict: bool) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"k": value} if as_dict else [value]
    return value


DEEP = st.builds(nest, st.integers(50, 1_200), st.one_of(SCALARS, st.just({})), st.booleans())
NESTED = st.recursive(
    st.one_of(SCALARS, SCALARS, ODD_SCALARS),
    _containers,
    max_leaves=12,
)
VALUES = st.sampled_from([NESTED] * 5 + [DEEP]).flatmap(pick)

# JSON-only values (what a model can send): str keys, valid Unicode, finite numbers within a double.
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.integers(-(2**70), 2**70),
              st.builds(_power_plus, st.integers(19, 307), st.integers(-5, 5)),
              st.floats(allow_nan=False, allow_infinity=False), UNICODE_TEXT),
    _json_containers,
    max_leaves=12,
)


def _short_repr(value: Any) -> str:
    try:
        return repr(value)[:200]
    except ValueError:  # an int beyond Python's int-to-text limit
        return f"<{type(value).__name__}>"


def _python_json(value: Any) -> str:
    """What a provider may send: JSON text as Python writes it (NaN, Infinity and lone surrogates as
    escapes included; bytes and sets as their repr), or a repr when even that fails."""
    try:
        return json.dumps(value, allow_nan=True, skipkeys=True, default=_short_repr)
    except (TypeError, ValueError, RecursionError):
        return _short_repr(value)


def _truncated(text: str, cut: int) -> str:
    return text[: max(0, len(text) - cut)]


TEXTS = st.one_of(
    VALUES.map(_python_json),
    st.dictionaries(TEXT, VALUES, max_size=3).map(_python_json),
    st.builds(_truncated, st.dictionaries(UNICODE_TEXT, JSON_VALUES, min_size=1, max_size=3).map(json.dumps),
              st.integers(1, 5)),
    st.sampled_from(["", "   ", "null", "{}", "[]", "1", '"x"', "{", '{"a":', "NaN", "{'a': 1}", '{"a": 1e400}',
                     '{"n": 123456789012345678901}', '{"n": -9223372036854775809}', '{"\\udc80": 1}',
                     '{"a": "\\ud83d"}', '{"a": "\\u0000"}', "\x00", "\udc80", '{"a": ' + "9" * 400 + "}"]),
    st.integers(1, 1_500).map(_deep_array_text),
    TEXT,
)

MISSING = object()
"""The `arguments` field left out."""

ARGUMENTS = st.one_of(
    st.just(MISSING), st.none(), TEXTS, TEXTS,
    st.dictionaries(KEYS, VALUES, max_size=4), st.dictionaries(st.sampled_from(["formula", "n", "x"]), VALUES,
                                                               max_size=2),
    JSON_VALUES.map(_wrapped), VALUES,
)
