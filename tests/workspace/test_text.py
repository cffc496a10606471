"""Whole-file text work done in pieces (so a large file does not hold the interpreter lock for long)
gives exactly what the one-call versions give."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooldeck.workspace import reading, text
from tooldeck.workspace.limits import utf8_size

pieces = st.lists(st.sampled_from(["a", " ", "\n", "é", "中", "\U0001f600", "word ", "\t", "\x1c", "\r\n"]),
                  max_size=80).map("".join)


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text, "PIECE", 7)  # pieces cut through characters, words and lines
    monkeypatch.setattr(reading, "PIECE", 7)


@settings(derandomize=True, max_examples=500, deadline=None)
@given(pieces)
def test_pieces_give_what_one_call_gives(s: str) -> None:
    data = s.encode("utf-8")
    assert text.decode_utf8(data) == s
    assert text.encode_utf8(s) == data
    in_pieces = (reading.count_words(s), reading.count_words(data))
    reading.PIECE = 1 << 30  # one piece: the count as it was done before
    try:
        assert in_pieces == (reading.count_words(s), reading.count_words(data))
    finally:
        reading.PIECE = 7
    assert in_pieces[0] == len(s.split())  # the ASCII whitespace str.split knows (\x1c-\x1f included)
    assert utf8_size(s) == len(data)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.binary(max_size=60))
def test_invalid_utf8_is_refused_alike(data: bytes) -> None:
    try:
        expected = data.decode("utf-8")
    except UnicodeDecodeError:
        with pytest.raises(UnicodeDecodeError):
            text.decode_utf8(data)
    else:
        assert text.decode_utf8(data) == expected


def test_a_lone_surrogate_is_found_where_it_is() -> None:
    s = "abcdefghij" * 3 + "\ud800" + "xyz"
    with pytest.raises(UnicodeEncodeError) as info:
        text.encode_utf8(s)
    assert info.value.start == 30 and s[info.value.start] == "\ud800"


@settings(derandomize=True, max_examples=500, deadline=None)
@given(pieces, st.integers(0, 12))
def test_page_head_is_split_with_the_last_line_alone(s: str, splits: int) -> None:
    expected = s.split("\n", splits)
    if len(expected) == splits + 1:
        expected[-1] = expected[-1].split("\n", 1)[0]
    assert reading._head(s, splits) == expected
