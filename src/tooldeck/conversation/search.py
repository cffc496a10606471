"""Search one chat's messages `lo..hi` (inclusive) for a parsed query.

The scan finds the query's longest term in the chat's lowered text blob (one `str.find` per hit, so
a rare term costs little more than a memory scan), maps each hit to its message, and only then looks
at the other terms, the exclusions and the role. Score = occurrences of each required term in the
message (each counted at most `TERM_CAP` times); ties go to the newer message.
"""

from __future__ import annotations

from dataclasses import dataclass
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


def search(chat: Chat, query: Query, lo: int, hi: int, role: str | None, limit: int) -> Found:
    if hi < lo:
        return Found([], 0)
    blob, starts = chat.index()
    anchor, others = query.required[0], query.required[1:]
    excluded = query.excluded
    messages = chat.messages
    end = starts[hi + 1] - 1 if hi + 1 < len(starts) else len(blob)
    pos = blob.find(anchor, starts[lo], end)
    scored: list[tuple[int, int]] = []
    find = blob.find
    while pos >= 0:
        i = chat.message_at(pos)
        m_end = starts[i + 1] - 1 if i + 1 < len(starts) else len(blob)
        text = blob[starts[i]:m_end]
        if (role is None or messages[i].role == role) and all(t in text for t in others) \
                and not any(t in text for t in excluded):
            score = sum(min(text.count(t), TERM_CAP) for t in query.required)
            scored.append((score, i))
        pos = find(anchor, m_end, end)
    scored.sort(reverse=True)
    hits = [Hit(i, score, snippet(messages[i].text, chat.lowered(i), anchor)) for score, i in scored[:limit]]
    return Found(hits, len(scored))
