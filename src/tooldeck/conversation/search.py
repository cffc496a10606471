"""Search one chat's messages `lo..hi` (inclusive) for a parsed query.

A term without whitespace can only occur inside one whitespace-separated token of a message, so the
chat's token index (`Chat.postings`, built once per chat) gives every message that may hold it: the
union of the postings of the tokens that contain the term. A phrase's candidates are the intersection
over its words. Only the candidates' texts are then checked (`in`, `str.count`), so a search costs
a scan of the chat's vocabulary plus work per candidate, not a scan of every message. Matching is
exactly case-insensitive substring containment (the index only narrows; the texts decide).

Score = occurrences of each required term in the message (each counted at most `TERM_CAP` times);
ties go to the newer message.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import add
from typing import Final

from tooldeck.conversation.model import Chat
from tooldeck.conversation.query import Query

TERM_CAP: Final = 5
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


def _token_lists(chat: Chat, word: str) -> list[tuple[str, list[int]]]:
    """(token, postings) of every token of the chat's vocabulary that holds `word`."""
    postings = chat.postings()
    blob, starts, tokens = chat.vocabulary()
    out = []
    pos = blob.find(word)
    while pos >= 0:  # one find per token that holds the word, then on from the next token
        k = bisect_right(starts, pos) - 1
        out.append((tokens[k], postings[tokens[k]]))
        pos = blob.find(word, starts[k + 1]) if k + 1 < len(starts) else -1
    return out


def candidates(chat: Chat, terms: tuple[str, ...]) -> set[int]:
    """The messages that may hold every term (a superset of those that do): those holding a token that
    holds the longest word of the rarest term (the one whose tokens have the fewest postings)."""
    best: list[list[int]] | None = None
    for term in terms:
        word = max(term.split(), key=len)
        lists = [ids for _token, ids in _token_lists(chat, word)]
        if best is None or sum(map(len, lists)) < sum(map(len, best)):
            best = lists
    return set(chain.from_iterable(best or ()))


def _window(ids: list[int], lo: int, hi: int) -> list[int]:
    return ids[bisect_left(ids, lo):bisect_right(ids, hi)]


def _one_word(chat: Chat, word: str, lo: int, hi: int, limit: int) -> tuple[list[tuple[int, int]], int]:
    """The fast path of a one-word query without filters: the term's count in each message comes from
    the postings alone (occurrences of the message in the postings of each token that holds the word,
    times the word's count in that token), so no message text is read. (top hits, matched)."""
    whole = lo == 0 and hi == len(chat) - 1
    lists: list[list[int]] = []
    for token, ids in _token_lists(chat, word):
        ids = ids if whole else _window(ids, lo, hi)
        lists.extend(repeat(ids, token.count(word)))
    counts = Counter(chain.from_iterable(lists))
    if not counts:
        return [], 0
    per_score = Counter(map(min, counts.values(), repeat(TERM_CAP)))  # score → how many messages have it
    wanted: dict[int, int] = {}
    left = limit
    for score in sorted(per_score, reverse=True):
        wanted[score] = min(left, per_score[score])
        left -= wanted[score]
        if not left:
            break
    picked: dict[int, list[int]] = {score: [] for score in wanted}
    remaining = sum(wanted.values())
    last = -1
    for i in heapq.merge(*(reversed(ids) for ids in lists), reverse=True):  # newest first, until each is full
        if i == last:
            continue
        last = i
        score = min(counts[i], TERM_CAP)
        if score in wanted and len(picked[score]) < wanted[score]:
            picked[score].append(i)
            remaining -= 1
            if not remaining:
                break
    top = [(score, i) for score in sorted(picked, reverse=True) for i in picked[score]]
    return top, len(counts)


def _filtered(chat: Chat, query: Query, lo: int, hi: int, role: str | None,
              limit: int) -> tuple[list[tuple[int, int]], int]:
    """Any other query: the candidates' texts decide, one list pass per filter and per term."""
    cand = sorted(candidates(chat, query.required))
    if lo > 0 or hi < len(chat) - 1:
        cand = cand[bisect_left(cand, lo):bisect_right(cand, hi)]
    if role is not None:
        messages = chat.messages
        cand = [i for i in cand if messages[i].role == role]
    lowered = chat.lowered_texts()
    texts = [lowered[i] for i in cand]
    for term in query.required:
        keep = [term in text for text in texts]
        cand, texts = list(compress(cand, keep)), list(compress(texts, keep))
    for term in query.excluded:
        keep = [term not in text for text in texts]
        cand, texts = list(compress(cand, keep)), list(compress(texts, keep))
    scores: list[int] = [0] * len(cand)
    for term in query.required:
        scores = list(map(add, scores, map(min, map(str.count, texts, repeat(term)), repeat(TERM_CAP))))
    return heapq.nlargest(limit, zip(scores, cand, strict=True)), len(cand)


def search(chat: Chat, query: Query, lo: int, hi: int, role: str | None, limit: int) -> Found:
    if hi < lo:
        return Found([], 0)
    required, excluded = query.required, query.excluded
    lowered = chat.lowered_texts()
    if len(required) == 1 and " " not in required[0] and role is None and not excluded:
        top, matched = _one_word(chat, required[0], lo, hi, limit)
    else:
        top, matched = _filtered(chat, query, lo, hi, role, limit)
    hits = [Hit(i, score, snippet(chat.messages[i].text, lowered[i], required[0])) for score, i in top]
    return Found(hits, matched)
