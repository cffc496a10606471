"""chat_search's index paths held to a naive scan (hypothesis), the int sets they add with, the token index
kept beside an imported chat, and `scan_limit` bounding what a search reads."""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conversation.conftest import caller, import_chat
from tooldeck.conversation import bitset
from tooldeck.conversation import search as search_module
from tooldeck.conversation.chat_store import ChatStore
from tooldeck.conversation.index import IndexDecodeError, TokenIndex
from tooldeck.conversation.model import ROLES, Chat, Message
from tooldeck.conversation.query import parse_query
from tooldeck.conversation.search import search

FAST = settings(derandomize=True, max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
THOROUGH = settings(FAST, max_examples=400)

# Pieces whose lower case is longer ('İ' → 'i̇'), that case-fold to 'ss' but lower to themselves ('ß'), that
# repeat inside a token ('abab'), and punctuation stuck to words.
_pieces = st.sampled_from(["ab", "b", "Ab", "abab", "İ", "i", "ß", "ss", "SS", "ẞ", "x", "X,", "y.", "é", "É!", "–"])
_token = st.lists(_pieces, min_size=1, max_size=3).map("".join)
_text = st.lists(_token, max_size=8).flatmap(
    lambda ts: st.lists(st.sampled_from([" ", "  ", "\n", "\t"]), min_size=len(ts), max_size=len(ts)).map(
        lambda seps: "".join(t + s for t, s in zip(ts, seps, strict=True)).strip()))
_term = st.one_of(_token, st.lists(_token, min_size=2, max_size=3).map(" ".join), _pieces)


def naive(rows: Sequence[tuple[str, str]], q: Any, lo: int, hi: int, role: str | None,
          limit: int) -> tuple[list[tuple[int, int]], int]:
    found = []
    for i in range(lo, hi + 1):
        text = rows[i][1].lower()
        if (role is None or rows[i][0] == role) and all(t in text for t in q.required) \
                and not any(t in text for t in q.excluded):
            found.append((sum(min(text.count(t), 5) for t in q.required), i))
    found.sort(reverse=True)
    return found[:limit], len(found)


@THOROUGH
@given(st.lists(st.tuples(st.sampled_from(ROLES), _text), min_size=1, max_size=40),
       st.lists(_term, min_size=1, max_size=3), st.lists(_term, max_size=2), st.none() | st.sampled_from(ROLES),
       st.integers(1, 50), st.sampled_from([0, 4, 10**9]), st.data())
def test_search_equals_a_naive_scan_on_every_path(rows: list[tuple[str, str]], want: list[str], avoid: list[str],
                                                  role: Any, frequent: int, scan_cost: int, data: Any) -> None:
    """Every token kept as sets (frequent 1) down to none (50), each term answered from the index or by reading
    texts (SCAN_COST 0 reads them always, 10**9 never)."""
    chat = Chat("c", tuple(Message(i, r, t) for i, (r, t) in enumerate(rows)))  # type: ignore[arg-type]
    chat.index().frequent = frequent
    for _ in range(data.draw(st.integers(0, 2))):  # pieces of the texts' tokens: terms and phrases that occur
        tokens = data.draw(st.sampled_from(rows))[1].lower().split()
        if not tokens:
            continue
        j = data.draw(st.integers(0, len(tokens) - 1))
        first = tokens[j][data.draw(st.integers(0, len(tokens[j]) - 1)):]  # a suffix of a token
        middle = tokens[j + 1:j + 1 + data.draw(st.integers(0, 2))]
        rest = tokens[j + 1 + len(middle):]
        last = [rest[0][:data.draw(st.integers(1, len(rest[0])))]] if rest and data.draw(st.booleans()) else []
        piece = " ".join([first, *middle, *last])
        if '"' not in piece:
            (avoid if data.draw(st.booleans()) and avoid else want).append(piece)
    q = parse_query(" ".join(f'"{w}"' for w in want) + "".join(f' -"{w}"' for w in avoid))
    lo = data.draw(st.integers(0, len(rows) - 1))
    hi = data.draw(st.integers(lo, len(rows) - 1))
    limit = data.draw(st.integers(1, 8))
    saved = search_module.SCAN_COST
    search_module.SCAN_COST = scan_cost
    try:
        found = search(chat, q, lo, hi, role, limit)
    finally:
        search_module.SCAN_COST = saved
    hits, matched = naive(rows, q, lo, hi, role, limit)
    assert ([(h.score, h.index) for h in found.hits], found.matched) == (hits, matched)


def test_case_folding_examples() -> None:
    rows = [("user", "İstanbul İİ"), ("user", "STRASSE straße"), ("assistant", "ababab ab, AB."), ("user", "ẞ ß")]
    chat = Chat("c", tuple(Message(i, r, t) for i, (r, t) in enumerate(rows)))  # type: ignore[arg-type]
    for text in ("i", "i̇", "ss", "ß", "ab", "abab", '"ab, ab."', "ß -ss", "İ"):
        q = parse_query(text)
        found = search(chat, q, 0, len(rows) - 1, None, 10)
        assert ([(h.score, h.index) for h in found.hits], found.matched) == naive(rows, q, 0, len(rows) - 1, None, 10)
    assert [(h.index, h.score) for h in search(chat, parse_query("ab"), 0, 3, None, 5).hits] == [(2, 5)]


def test_a_phrase_spans_the_end_of_a_token_whole_tokens_and_the_start_of_one() -> None:
    rows = [("user", "xab b"), ("user", "xab bcd"), ("user", "ab b"), ("user", "zab mid endz"), ("user", "zab mi endz"),
            ("user", "zab xmid endz"), ("user", "ab  b"), ("user", "xab\tb")]
    chat = Chat("c", tuple(Message(i, r, t) for i, (r, t) in enumerate(rows)))  # type: ignore[arg-type]
    for text in ('"ab b"', '"ab bc"', '"b mid e"', '"ab mid end"', '"ab mi"', '"ab b" -"xab"', '"ab" -"ab b"'):
        q = parse_query(text)
        found = search(chat, q, 0, len(rows) - 1, None, 10)
        assert ([(h.score, h.index) for h in found.hits], found.matched) == naive(rows, q, 0, len(rows) - 1, None, 10)
    assert search(chat, parse_query('"ab b"'), 0, len(rows) - 1, None, 10).matched == 3



# Texts holding the characters `_read` would join them by, and terms holding them too (so the separator must
# be one the term lacks), read in chunks of 1-3 texts and whole.
_raw_piece = st.sampled_from(["a", "A", "b", "ab", "\x00", "\x01", "\x00a", "a\x01", " ", "\n", "İ"])


@THOROUGH
@given(st.lists(st.lists(_raw_piece, max_size=12).map("".join), min_size=1, max_size=30),
       st.lists(_raw_piece, min_size=1, max_size=4).map("".join), st.sampled_from([1, 2, 3, 4096]), st.data())
def test_reading_texts_in_one_blob_equals_counting_each(texts: list[str], term: str, chunk: int, data: Any) -> None:
    chat = Chat("c", tuple(Message(i, "user", t) for i, t in enumerate(texts)))
    term = term.lower()
    ids = sorted(data.draw(st.sets(st.integers(0, len(texts) - 1))))
    saved = search_module.READ_CHUNK
    search_module.READ_CHUNK = chunk
    try:
        found = search_module._read(chat, term, bitset.from_ids(ids, len(texts)))
    finally:
        search_module.READ_CHUNK = saved
    want = [(i, min(texts[i].lower().count(term), 5)) for i in ids if term in texts[i].lower()]
    assert list(zip(*found, strict=True)) == want



def test_no_match_spans_two_texts_read_together() -> None:
    texts = ["xa", "\x00a", "a", "b\x01", "\x00b"]
    chat = Chat("c", tuple(Message(i, "user", t) for i, t in enumerate(texts)))
    every = bitset.window(0, len(texts) - 1)
    for term in ("a\x00", "a\x00a", "a\x01", "\x01\x00", "\x01\x00b", "a\x01\x00\x01"):
        want = [(i, t.count(term)) for i, t in enumerate(texts) if term in t]
        assert list(zip(*search_module._read(chat, term, every), strict=True)) == want, term


_ids = st.lists(st.integers(0, 1999), max_size=400)


@FAST
@given(_ids)
def test_sets_from_and_to_ids(ids: list[int]) -> None:
    bits = bitset.from_ids(ids, 2000)
    assert bitset.to_ids(bits) == sorted(set(ids)) and bits.bit_count() == len(set(ids))
    wide = 8 * 10**5 + 3  # far from bit 0 and not on a byte boundary
    assert bitset.to_ids_sparse(bits) == sorted(set(ids)) == [i - wide for i in bitset.to_ids_sparse(bits << wide)]
    assert bitset.to_ids(bits << wide) == [i + wide for i in sorted(set(ids))]  # sparse in a wide set


@FAST
@given(_ids, _ids)
def test_levels_add_and_walk_like_counters(a: list[int], b: list[int]) -> None:
    ca, cb = Counter(a), Counter(b)
    la, lb = bitset.levels(sorted(a), 2000), bitset.levels(sorted(b), 2000)
    for s in range(1, 6):
        assert bitset.to_ids(la[s - 1]) == sorted(i for i, c in ca.items() if c >= s)
    summed = bitset.saturating_add(la, lb)
    for s in range(1, 6):
        assert bitset.to_ids(summed[s - 1]) == sorted(i for i in ca | cb if min(ca[i] + cb[i], 5) >= s)
    ids = sorted(cb)
    by_counts = bitset.counted_levels(ids, [min(cb[i], 5) for i in ids], 2000)
    assert by_counts == lb
    doubled = bitset.scaled(la, 2)
    assert [bitset.to_ids(x) for x in doubled] == [sorted(i for i in ca if min(2 * ca[i], 5) >= s) for s in range(1, 6)]
    planes = bitset.add_planes(bitset.planes(la), bitset.planes(lb))
    score = {i: min(ca[i], 5) + min(cb[i], 5) for i in ca | cb}
    for i, value in score.items():
        assert sum(1 << k for k, plane in enumerate(planes) if plane >> i & 1) == value
    members = bitset.from_ids(list(score), 2000)
    expected = sorted(((v, i) for i, v in score.items()), reverse=True)
    assert bitset.top(planes, members, 25) == expected[:25]


@FAST
@given(st.lists(_text, min_size=1, max_size=30))
def test_index_round_trip(texts: list[str]) -> None:
    lowered = [t.lower() for t in texts]
    built = TokenIndex.build(lowered)
    loaded = TokenIndex.decode(built.encode(), len(texts))
    assert (loaded.tokens, list(loaded.offsets), list(loaded.flat)) == (built.tokens, list(built.offsets),
                                                                       list(built.flat))
    for token in {tok for t in lowered for tok in t.split()}:
        [(k, _count)] = [(k, c) for k, c in loaded.holding(token) if loaded.tokens[k] == token]
        assert list(loaded.ids(k, 0, len(texts) - 1)) == sorted(i for i, t in enumerate(lowered)
                                                                 for tok in t.split() if tok == token)
    # Token order: each message's tokens in its own places, one empty place after it.
    assert loaded.places is not None and loaded.bases is not None
    at = {g: loaded.tokens[k] for k in range(len(loaded.tokens))
          for g in loaded.places[loaded.offsets[k]:loaded.offsets[k + 1]]}
    assert len(loaded.bases) == len(texts) + 1
    for i, t in enumerate(lowered):
        assert [at.get(g) for g in range(loaded.bases[i], loaded.bases[i + 1])] == [*t.split(), None]
        assert loaded.messages_at(sum(1 << g for g in range(loaded.bases[i], loaded.bases[i + 1] - 1))) == \
            ([i] if t.split() else [])


@FAST
@given(st.lists(st.tuples(st.sampled_from(ROLES), _text), min_size=1, max_size=30), st.lists(_term, min_size=1,
       max_size=2))
def test_an_index_kept_without_token_places_still_answers(rows: list[tuple[str, str]], want: list[str]) -> None:
    """Format 1 (kept before token places were): it loads, and a phrase reads the texts its words allow."""
    chat = Chat("c", tuple(Message(i, r, t) for i, (r, t) in enumerate(rows)))  # type: ignore[arg-type]
    built = TokenIndex.build(chat.lowered_texts())
    built.places = built.bases = None
    encoded = built.encode()
    assert encoded.startswith(b"TDCI1\n")
    chat.stored_index = lambda: TokenIndex.decode(encoded, len(rows))
    assert chat.index().places is None
    q = parse_query(" ".join(f'"{w}"' for w in want))
    found = search(chat, q, 0, len(rows) - 1, None, 5)
    assert ([(h.score, h.index) for h in found.hits], found.matched) == naive(rows, q, 0, len(rows) - 1, None, 5)


@FAST
@given(st.lists(_text, min_size=1, max_size=10), st.data())
def test_a_damaged_index_is_refused(texts: list[str], data: Any) -> None:
    encoded = bytearray(TokenIndex.build([t.lower() for t in texts]).encode())
    if data.draw(st.booleans()):
        del encoded[data.draw(st.integers(0, len(encoded) - 1)):]
    else:
        at = data.draw(st.integers(0, len(encoded) - 1))
        encoded[at] ^= data.draw(st.integers(1, 255))
    with pytest.raises(IndexDecodeError):
        TokenIndex.decode(bytes(encoded), len(texts))
    with pytest.raises(IndexDecodeError):
        TokenIndex.decode(TokenIndex.build([t.lower() for t in texts]).encode(), len(texts) + 1)


class ReadLog(Chat):
    """A chat that records every message whose text a search reads (`Chat.lowered_of`)."""

    read: list[int]

    def lowered_of(self, ids: Sequence[int]) -> list[str]:
        self.read.extend(ids)
        return super().lowered_of(ids)


def _logged(texts: list[str]) -> ReadLog:
    chat = ReadLog("c", tuple(Message(i, "user", t) for i, t in enumerate(texts)))
    chat.read = []
    return chat


def test_a_window_bounds_the_texts_a_search_reads() -> None:
    chat = _logged([f"the old mill {i} mill mill" for i in range(3000)])
    found = search(chat, parse_query('"old mill" -"mill 297"'), 2950, 2999, None, 10)
    assert found.matched == 40 and all(2950 <= h.index <= 2999 for h in found.hits)
    assert chat.read and min(chat.read) >= 2950 and max(chat.read) <= 2999  # the window only, not 3,000 texts
    chat.read.clear()
    found = search(chat, parse_query("mill"), 2990, 2999, None, 4)
    assert [(h.index, h.score) for h in found.hits] == [(2999, 3), (2998, 3), (2997, 3), (2996, 3)]
    assert sorted(chat.read) == [2996, 2997, 2998, 2999]  # a word is answered by the index: only the hits' snippets



def test_a_phrase_reads_only_the_texts_where_its_words_stand_in_a_row() -> None:
    """The bench's case in small: most messages hold both words, few in a row (issue 16's phrase at ~1x)."""
    texts = [f"beta {i} alpha x beta alpha" for i in range(3000)]
    adjacent = {17: "see alpha beta", 900: "alphabeta xalpha betaz", 2500: "alpha\tbeta", 2990: "Alpha  Beta"}
    for i, t in adjacent.items():
        texts[i] = t
    chat = _logged(texts)
    found = search(chat, parse_query('"alpha beta"'), 0, 2999, None, 10)
    assert sorted(h.index for h in found.hits) == [17, 900] and found.matched == 2
    assert set(chat.read) == set(adjacent)  # the words in consecutive tokens: 4 texts, not 3,000
    chat.read.clear()
    found = search(chat, parse_query('"a x b"'), 0, 2999, None, 3)  # words in the middle of tokens: all match
    assert found.matched == 2996 and len(set(chat.read)) == 2996


def test_scan_limit_keeps_older_better_matches_out(chat_runtime: Any) -> None:
    rt = chat_runtime({"chat": "log"})
    import_chat(rt.home, "log", ["ember ember ember"] * 90 + ["ember here", "nothing", "ember"] * 3 + ["x"])
    call = caller(rt)
    s = call("chat_search", query="ember", scan_limit=10).structured
    assert s["window"] == [90, 99] and s["scanned"] == 10 and s["matched"] == 6
    assert [(h["index"], h["score"]) for h in s["hits"]] == [(98, 1), (96, 1), (95, 1), (93, 1), (92, 1), (90, 1)]
    s = call("chat_search", query="ember", scan_limit=11, limit=1).structured
    assert [(h["index"], h["score"]) for h in s["hits"]] == [(89, 3)] and s["matched"] == 7


def _searched(chat: Chat) -> list[tuple[list[tuple[int, int]], int]]:
    out = []
    for text in ("ember", "mb", "ember -ash", '"ember ash"', "ash", "e"):
        found = search(chat, parse_query(text), 0, len(chat) - 1, None, 50)
        out.append(([(h.score, h.index) for h in found.hits], found.matched))
    return out


def _texts() -> list[str]:
    return [f"Ember{'!' if i % 3 else ''} ash {'ember ' * (i % 7)}w{i % 11}" for i in range(400)]


def test_the_index_is_kept_beside_an_imported_chat(tmp_path: Path) -> None:
    import_chat(tmp_path, "log", _texts())
    chat = ChatStore(tmp_path / "records.sqlite").load("log")  # another store: what a later process sees
    assert chat is not None and chat.stored_index is not None
    kept = chat.stored_index()
    built = TokenIndex.build(chat.lowered_texts())
    assert kept is not None and (kept.tokens, list(kept.flat), list(kept.offsets)) == (
        built.tokens, list(built.flat), list(built.offsets))
    loaded: list[TokenIndex | None] = []
    kept_loader = chat.stored_index
    chat.stored_index = lambda: loaded.append(kept_loader()) or loaded[-1]
    assert chat.index() is loaded[0] and chat.index() is loaded[0]  # loaded once, used as it is: not rebuilt
    expected = _searched(Chat("log", chat.messages))  # built from the texts
    assert _searched(chat) == expected

    import_chat(tmp_path, "log", _texts()[:150], replace=True)  # a new revision gets its own index
    again = ChatStore(tmp_path / "records.sqlite").load("log")
    assert again is not None and again.index().n == 150
    assert _searched(again) == _searched(Chat("log", again.messages))


def test_a_missing_or_damaged_kept_index_is_rebuilt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import_chat(tmp_path, "log", _texts())
    expected = _searched(Chat("log", ChatStore(tmp_path / "records.sqlite").load("log").messages))  # type: ignore[union-attr]
    conn = sqlite3.connect(tmp_path / "records.sqlite")
    conn.execute("UPDATE chat_index SET data = CAST(substr(data, 1, 100) || x'00' || substr(data, 102) AS BLOB)")
    conn.commit()
    chat = ChatStore(tmp_path / "records.sqlite").load("log")
    assert chat is not None
    with caplog.at_level(logging.WARNING, logger="tooldeck.conversation"):
        assert _searched(chat) == expected
    assert "kept token index of chat 'log' (revision 1) is unusable" in caplog.text
    conn.execute("DELETE FROM chat_index")  # a chat saved before the index was kept
    conn.commit()
    conn.close()
    caplog.clear()
    chat = ChatStore(tmp_path / "records.sqlite").load("log")
    assert chat is not None and chat.stored_index is not None and chat.stored_index() is None
    assert _searched(chat) == expected and not caplog.text
