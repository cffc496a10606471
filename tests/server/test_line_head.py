"""`line_head.leading_id`: the id of a request read from the start of its text (hypothesis: never a wrong id)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.server.line_head import leading_id

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) |
    st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)
_ID = st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1) | st.text(max_size=30)


@st.composite
def _requests(draw: st.DrawFn) -> tuple[bytes, Any]:
    """A JSON-RPC-like object with an id (and decoys: `id` keys inside nested values), its keys in any order,
    with any spacing and escaping, as bytes; and its id."""
    request_id = draw(_ID)
    members = draw(st.dictionaries(st.text(max_size=8).filter(lambda k: k != "id"), _JSON, max_size=5))
    members["params"] = {"id": draw(_ID), "arguments": draw(_JSON)}
    members["id"] = request_id
    keys = draw(st.permutations(list(members)))
    ascii_only = draw(st.booleans())
    space = draw(st.sampled_from(["", " ", "\n\t "]))
    text = "{" + space + ("," + space).join(
        f"{json.dumps(k, ensure_ascii=ascii_only)}{space}:{space}{json.dumps(members[k], ensure_ascii=ascii_only)}"
        for k in keys) + space + "}"
    return text.encode(), request_id


@given(_requests())
@settings(max_examples=300)
def test_the_whole_text_gives_its_id(request: tuple[bytes, Any]) -> None:
    data, request_id = request
    assert leading_id(data) == request_id


@given(_requests(), st.data())
@settings(max_examples=300)
def test_any_start_of_it_gives_its_id_or_none(request: tuple[bytes, Any], data: st.DataObject) -> None:
    text, request_id = request
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    assert leading_id(text[:cut]) in (None, request_id)


@given(st.binary(max_size=200))
def test_any_bytes_give_an_id_or_none_and_never_raise(data: bytes) -> None:
    found = leading_id(data)
    assert found is None or isinstance(found, int | str)


def test_what_it_gives_and_refuses() -> None:
    assert leading_id(b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"arguments": {"x": "') == 7
    assert leading_id(b'{"jsonrpc":"2.0","method":"tools/call","id":"a-1","params":{') == "a-1"
    assert leading_id(b'{"\\u0069d": 3, "method"') == 3  # an escaped key is the key it decodes to
    assert leading_id(b'{"method": "x", "params": {"id": 4}, "id": 5}') == 5  # a nested id is not the id
    assert leading_id(b'{"method": "x", "params": {"id": 4, "text": "') is None
    assert leading_id(b'{"id": 12') is None  # the number may go on
    assert leading_id(b'{"id": 12,') == 12
    assert leading_id(b'{"id": true, ') is None and leading_id(b'{"id": 1.5, ') is None
    assert leading_id(b'{"id": null, ') is None
    assert leading_id(b'[{"id": 1}]') is None and leading_id(b"") is None
