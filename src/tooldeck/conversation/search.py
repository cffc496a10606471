"""Search one chat's messages `lo..hi` (inclusive) for a parsed query.

Every set of messages here is a `bitset` int. A term without whitespace can only occur inside one
whitespace-separated token of a message, so the chat's token index (index.py) gives exactly the
messages that hold it and how often, without reading a text: its capped count per message is the
saturating sum of the levels of the tokens that hold it. The query's members are the window ∩ the
role's messages ∩ each such term's messages, minus each excluded such term's; the score planes are
the terms' counts added bit-sliced. Only a term with whitespace (a phrase) reads texts
(`Chat.lowered_of`): those of the members that hold each of its words, narrowed (where the index keeps
token places) to those where the words' tokens stand in consecutive places; `str.count` decides.
Matching is exactly case-insensitive substring containment.

Score = occurrences of each required term in the message (each counted at most `TERM_CAP` times);
ties go to the newer message.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate, compress, count, repeat
from operator import add
from typing import Final

from tooldeck.conversation import bitset
from tooldeck.conversation.index import TokenIndex
from tooldeck.conversation.model import Chat
from tooldeck.conversation.query import Query

TERM_CAP: Final = bitset.LEVELS
SNIPPET_BEFORE: Final = 80
SNIPPET_AFTER: Final = 160


@dataclass(frozen=True, slots=True)
class Hit:
    index: int
    score: int
    snippet: str


@dataclass(frozen=True, slots=True)
class Found:
    hits: list[Hit]
    matched: int
    """Messages that matched (before `limit`)."""


def snippet(text: str, lowered: str, term: str) -> str:
    at = lowered.find(term)
    if len(lowered) != len(text):  # a character whose lower case is longer: cut the lowered text instead
        text = lowered
    at = max(at, 0)
    start = max(0, at - SNIPPET_BEFORE)
    end = min(len(text), at + len(term) + SNIPPET_AFTER)
    body = " ".join(text[start:end].split())
    return ("…" if start > 0 else "") + body + ("…" if end < len(text) else "")


SCAN_COST: Final = 4
"""What reading one message's text costs, in postings handled (the kept sets of a frequent token cost n/100
a search): a term whose tokens would cost more than reading the texts of the current members (a term held
by most of the vocabulary, such as one letter) reads the texts instead."""


def _levels(chat: Chat, index: TokenIndex, term: str, members: int, lo: int, hi: int, *,
            counted: bool, position: str = "", held: list[tuple[int, int]] | None = None) -> list[int]:
    """Levels of `term`'s capped count per message (only level 1, the messages holding it, unless
    `counted`), exact within `members` (a frequent token's sets cover the whole chat). `position`
    keeps only the tokens a phrase's word can be: `end` (its first word), `whole`, `start` (its last);
    `held` is `index.holding(term)` already filtered so."""
    budget = SCAN_COST * members.bit_count()
    cost = 0
    picked = []
    tokens = index.tokens
    for k, weight in index.holding(term) if held is None else held:
        if position and held is None and not _fits(tokens[k], term, position):
            continue
        size = index.size(k)
        frequent = size >= index.frequent
        cost += index.n // 100 if frequent else size * (2 if counted else 1)  # a frequent token's sets are kept
        if cost > budget:
            return _read_levels(chat, term, members, counted)
        picked.append((k, weight, frequent))
    total = [0] * TERM_CAP
    rare: list[int] = []
    for k, weight, frequent in picked:
        if frequent:
            own = index.levels(k)
            if counted:
                total = bitset.saturating_add(total, bitset.scaled(own, weight))
            else:
                total[0] |= own[0]
        else:
            ids = index.ids(k, lo, hi)
            for _ in range(min(weight, TERM_CAP) if counted else 1):
                rare.extend(ids)
    if rare:
        if counted:
            rare.sort()
        mine = bitset.levels(rare, index.n) if counted else [bitset.from_ids(rare, index.n)] + [0] * (TERM_CAP - 1)
        total = bitset.saturating_add(total, mine) if any(total) else mine
    return total


READ_CHUNK: Final = 4096
"""Texts joined into one blob per pass of `_read` (bounds the copy it makes)."""


def _separator(term: str) -> str:
    """A character `term` lacks: joined by it, no match of `term` spans two texts."""
    return next(c for c in map(chr, count()) if c not in term)


def _read(chat: Chat, term: str, members: int, tight: bool = False) -> tuple[list[int], list[int]]:
    """(members whose text holds `term`, their capped counts of it), reading those members' texts. `tight`
    (most of them hold it): one `count` per text. Else the texts are joined into a blob a chunk at a time,
    so the text is searched by `find` in C and Python works once per matching message (its count is one
    `count` over the rest of its text), not once per text read."""
    ids = bitset.to_ids(members)
    every = chat.lowered_of(ids)  # at once: it decides whether to lower each or all of the chat's texts
    if tight:
        counts = list(map(str.count, every, repeat(term)))
        return list(compress(ids, counts)), [min(c, TERM_CAP) for c in compress(counts, counts)]
    sep = _separator(term)
    found: list[int] = []
    counts: list[int] = []
    for at in range(0, len(ids), READ_CHUNK):
        chunk = ids[at:at + READ_CHUNK]
        texts = every[at:at + READ_CHUNK]
        blob = sep.join(texts)
        nexts = list(accumulate(map(add, map(len, texts), repeat(1))))  # where each text's successor starts
        pos = blob.find(term)
        while pos >= 0:
            j = bisect_right(nexts, pos)
            found.append(chunk[j])
            counts.append(min(blob.count(term, pos, nexts[j] - 1), TERM_CAP))
            pos = blob.find(term, nexts[j])
    return found, counts


def _read_levels(chat: Chat, term: str, members: int, counted: bool, tight: bool = False) -> list[int]:
    ids, counts = _read(chat, term, members, tight)
    n = len(chat)
    if not counted:
        return [bitset.from_ids(ids, n)] + [0] * (TERM_CAP - 1)
    return bitset.counted_levels(ids, counts, n)


def _with_words(chat: Chat, index: TokenIndex, phrase: str, members: int, lo: int, hi: int) -> tuple[int, bool]:
    """(The members that may hold a phrase, whether token places narrowed them): those holding its first
    word at the end of a token, its middle words as whole tokens and its last word at the start of a token,
    and (where the index keeps token places) those tokens in consecutive places."""
    words = phrase.split()
    held: list[list[tuple[int, int]]] = []
    for at, word in enumerate(words):
        position = _position(at, words)
        held.append([(k, w) for k, w in index.holding(word) if _fits(index.tokens[k], word, position)])
    for at, word in sorted(enumerate(words), key=lambda p: len(p[1]), reverse=True):
        if not members:
            break
        members &= _levels(chat, index, word, members, lo, hi, counted=False, position=_position(at, words),
                           held=held[at])[0]
    if members and len(words) > 1 and index.places is not None:
        placed = _in_a_row(index, held, SCAN_COST * members.bit_count())
        if placed is not None:
            return members & bitset.from_ids(placed, index.n), True
    return members, False


def _position(at: int, words: list[str]) -> str:
    return "end" if at == 0 else "start" if at == len(words) - 1 else "whole"


def _fits(token: str, word: str, position: str) -> bool:
    return token.endswith(word) if position == "end" else token.startswith(word) if position == "start" \
        else token == word


def _in_a_row(index: TokenIndex, held: list[list[tuple[int, int]]], budget: int) -> list[int] | None:
    """The messages where tokens fitting the phrase's words stand in consecutive places (a superset of
    those holding the phrase: the text between them may be other whitespace than one space), or None
    when gathering the words' places would cost more than `budget` (then the texts are read instead).
    `held`: the tokens fitting each word, in the phrase's order."""
    cost = 0
    row = -1
    for at, fitting in enumerate(held):
        spots = 0
        rare: list[int] = []
        for k, _weight in fitting:
            size = index.size(k)
            frequent = size >= index.frequent
            cost += index.n // 100 if frequent else size
            if cost > budget:
                return None
            if frequent:
                spots |= index.spots(k)
            else:
                rare.append(k)
        if rare:
            cost += index.n // 100  # one set as wide as the chat's places
            if cost > budget:
                return None
            spots |= index.spots_of(rare)
        row &= spots >> at  # place p holds word 0 and p + at word `at`
        if not row:
            return []
    return index.messages_at(row)


def search(chat: Chat, query: Query, lo: int, hi: int, role: str | None, limit: int) -> Found:
    if hi < lo:
        return Found([], 0)
    index = chat.index()
    n = index.n
    members = bitset.window(lo, hi)
    if role is not None:
        members &= chat.role_set(role)
    phrases = [t for t in query.required if " " in t]
    score: list[int] = []
    for term in query.required:
        if " " not in term and members:
            counts = _levels(chat, index, term, members, lo, hi, counted=True)
            members &= counts[0]
            score = bitset.add_planes(score, bitset.planes(counts))
    for term in query.excluded:
        if " " not in term and members:
            members &= ~_levels(chat, index, term, members, lo, hi, counted=False)[0]
    for term in phrases:
        if members:
            candidates, tight = _with_words(chat, index, term, members, lo, hi)
            counts = _read_levels(chat, term, candidates, True, tight)
            members &= counts[0]
            score = bitset.add_planes(score, bitset.planes(counts))
    for term in query.excluded:
        if " " in term and members:
            ids, _counts = _read(chat, term, *_with_words(chat, index, term, members, lo, hi))
            members &= ~bitset.from_ids(ids, n)
    top = bitset.top(score, members, limit)
    lowered = chat.lowered_of([i for _score, i in top])
    hits = [Hit(i, s, snippet(chat.messages[i].text, text, query.required[0]))
            for (s, i), text in zip(top, lowered, strict=True)]
    return Found(hits, members.bit_count())
