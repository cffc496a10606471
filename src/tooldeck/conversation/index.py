"""A chat's token index: each whitespace-separated token of the lowered texts → the messages of its
occurrences (ascending, a message once per occurrence).

A term without whitespace can only occur inside one token, so the tokens that hold it (found by
`str.find` in the newline-joined vocabulary) give every message that holds it, and how often:
the sum over those tokens of (its occurrences in the message × the term's count in the token).

Layout: the tokens in first-seen order, `blob` = them joined by newlines, and the postings of token k
at `flat[offsets[k]:offsets[k+1]]` (one int array, 4 bytes an occurrence). A frequent token's postings
(more than 1/64 of the messages: its set is smaller than its list) are also kept as sets of
`bitset.levels` once asked for. `encode` / `decode` persist it (chat_store.py keeps it beside an
imported chat, so a later process loads it instead of a pass over every message).

Token order: every occurrence also has a place, its ordinal in the chat's token stream with one empty
place after each message (`places`, parallel to `flat`; message i's tokens at `bases[i]..bases[i+1]-2`),
so the occurrences of a phrase's words in consecutive places are one shift and AND of place sets
(`spots`). An index kept by format 1 (no places) still loads, without them.
"""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterator
from itertools import accumulate, chain, repeat
from typing import Final

from tooldeck.conversation import bitset

MAGIC: Final = b"TDCI2\n"
_UNPLACED: Final = b"TDCI1\n"
_HEAD = struct.Struct("<6sIIII")  # magic, messages, tokens, blob bytes, CRC-32 of what follows


class IndexDecodeError(ValueError):
    """A stored index that is not one `encode` wrote (cut, another version): rebuild it."""


class TokenIndex:
    __slots__ = ("_bases", "_levels", "_spots", "bases", "blob", "flat", "frequent", "n", "offsets", "places", "starts",
                 "tokens")

    def __init__(self, n: int, tokens: list[str], blob: str, offsets: array[int], flat: array[int],
                 places: array[int] | None = None, bases: array[int] | None = None) -> None:
        self.n = n
        self.tokens = tokens
        self.blob = blob
        self.offsets = offsets
        self.flat = flat
        self.starts = list(accumulate(chain((0,), (len(t) + 1 for t in tokens[:-1])))) if tokens else []
        self.frequent = max(1, n // 64)
        self._levels: dict[int, list[int]] = {}
        self.places = places
        self.bases = bases
        self._spots: dict[int, int] = {}
        self._bases: list[int] | None = None

    @classmethod
    def build(cls, lowered: list[str]) -> TokenIndex:
        postings: defaultdict[str, list[int]] = defaultdict(list)
        placed: defaultdict[str, list[int]] = defaultdict(list)
        bases = array("q", [0])
        at = 0
        for i, text in enumerate(lowered):
            words = text.split()
            for place, token in enumerate(words, at):
                postings[token].append(i)
                placed[token].append(place)
            at += len(words) + 1
            bases.append(at)
        tokens = list(postings)
        offsets = array("q", accumulate(chain((0,), map(len, postings.values()))))
        flat = array("i", chain.from_iterable(postings.values()))
        places = array("q", chain.from_iterable(placed.values()))
        return cls(len(lowered), tokens, "\n".join(tokens), offsets, flat, places, bases)

    def holding(self, word: str) -> Iterator[tuple[int, int]]:
        """(token slot, how many times the token holds `word`) of every token that holds it."""
        blob, starts, tokens = self.blob, self.starts, self.tokens
        pos = blob.find(word)
        while pos >= 0:  # one find per token that holds the word, then on from the next token
            k = bisect_right(starts, pos) - 1
            yield k, tokens[k].count(word)
            pos = blob.find(word, starts[k + 1]) if k + 1 < len(starts) else -1

    def size(self, k: int) -> int:
        return self.offsets[k + 1] - self.offsets[k]

    def ids(self, k: int, lo: int, hi: int) -> array[int]:
        """Token k's postings within messages lo..hi."""
        a, b = self.offsets[k], self.offsets[k + 1]
        flat = self.flat
        if lo > 0:
            a = bisect_left(flat, lo, a, b)
        if hi < self.n - 1:
            b = bisect_right(flat, hi, a, b)
        return flat[a:b]

    def levels(self, k: int) -> list[int]:
        """`bitset.levels` of a frequent token's postings (kept)."""
        found = self._levels.get(k)
        if found is None:
            found = self._levels[k] = bitset.levels(self.flat[self.offsets[k]:self.offsets[k + 1]], self.n)
        return found

    def spots(self, k: int) -> int:
        """The places of a frequent token's occurrences as a `bitset` (kept). Needs `places`."""
        found = self._spots.get(k)
        if found is None:
            found = self._spots[k] = self.spots_of([k])
        return found

    def spots_of(self, ks: list[int]) -> int:
        """The places of tokens `ks`' occurrences as a `bitset`. Needs `places`."""
        assert self.places is not None and self.bases is not None
        places, offsets = self.places, self.offsets
        return bitset.from_ids([g for k in ks for g in places[offsets[k]:offsets[k + 1]]], self.bases[-1])

    def messages_at(self, spots: int) -> list[int]:
        """The messages (ascending, once each) of the places in `spots`."""
        assert self.bases is not None
        bases = self._bases
        if bases is None:  # bisect on a list: on an array each probe makes an int
            bases = self._bases = self.bases.tolist()
        return sorted({bisect_right(bases, g) - 1 for g in bitset.to_ids_sparse(spots)})

    def encode(self) -> bytes:
        blob = self.blob.encode("utf-8")
        parts = [array("I", self.offsets), array("i", self.flat)]
        if self.places is not None and self.bases is not None:
            parts += [array("I", self.places), array("I", self.bases)]
        if sys.byteorder == "big":
            for part in parts:
                part.byteswap()
        body = b"".join((blob, *(part.tobytes() for part in parts)))
        magic = MAGIC if len(parts) > 2 else _UNPLACED
        return _HEAD.pack(magic, self.n, len(self.tokens), len(blob), zlib.crc32(body)) + body

    @classmethod
    def decode(cls, data: object, n: int) -> TokenIndex:
        """The index `encode` wrote for a chat of `n` messages; IndexDecodeError when it is not one."""
        if not isinstance(data, bytes):
            raise IndexDecodeError(f"a {type(data).__name__}, not bytes")
        if len(data) < _HEAD.size:
            raise IndexDecodeError("shorter than its header")
        magic, count, ntokens, nblob, crc = _HEAD.unpack_from(data)
        if magic not in (MAGIC, _UNPLACED) or count != n:
            raise IndexDecodeError(f"written for {count} messages by format {magic!r}, not {n} by {MAGIC!r}")
        at = _HEAD.size
        if zlib.crc32(memoryview(data)[at:]) != crc:
            raise IndexDecodeError("its checksum does not match (damaged)")
        try:
            blob = data[at:at + nblob].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise IndexDecodeError(f"its vocabulary is not UTF-8: {exc}") from None
        tokens = blob.split("\n") if ntokens else []
        at += nblob
        offsets = array("I")
        offsets.frombytes(data[at:at + 4 * (ntokens + 1)])
        at += 4 * (ntokens + 1)
        flat = array("i")
        if (len(data) - at) % 4 or len(tokens) != ntokens or len(offsets) != ntokens + 1:
            raise IndexDecodeError("its parts do not add up to its length")
        if sys.byteorder == "big":
            offsets.byteswap()
        places = bases = None
        if magic == _UNPLACED:
            flat.frombytes(data[at:])
        else:
            size = offsets[-1] if offsets else 0
            if len(data) - at != 4 * (2 * size + n + 1):
                raise IndexDecodeError("its parts do not add up to its length")
            flat.frombytes(data[at:at + 4 * size])
            places, bases = array("I"), array("I")
            places.frombytes(data[at + 4 * size:at + 8 * size])
            bases.frombytes(data[at + 8 * size:])
            if sys.byteorder == "big":
                places.byteswap()
                bases.byteswap()
        if sys.byteorder == "big":
            flat.byteswap()
        if offsets[0] != 0 or offsets[-1] != len(flat) or any(map(int.__ge__, offsets, offsets[1:])):
            raise IndexDecodeError("its postings do not add up")
        # Each token's postings ascend (as encoded; the checksum holds them): its first and last bound the rest.
        if flat and (min(map(flat.__getitem__, offsets[:-1])) < 0
                     or max(map(flat.__getitem__, map(int.__sub__, offsets[1:], repeat(1)))) >= n):
            raise IndexDecodeError("its postings are out of range")
        if places is not None and bases is not None:
            if bases[0] != 0 or any(map(int.__ge__, bases, bases[1:])):
                raise IndexDecodeError("its message places do not ascend")
            if places and max(map(places.__getitem__, map(int.__sub__, offsets[1:], repeat(1)))) >= bases[-1]:
                raise IndexDecodeError("its places are out of range")
        return cls(n, tokens, blob, array("q", offsets), flat, places, bases)
