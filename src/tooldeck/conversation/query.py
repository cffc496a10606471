"""The search query language of `chat_search` and `chat_history`: words and `"quoted phrases"` that
must all appear (case-insensitive substrings), and `-word` / `-"phrase"` that must not. An unclosed
quote runs to the end of the query. Total: any string parses or raises `chat.invalid_query`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from tooldeck.conversation.model import INVALID_QUERY
from tooldeck.core.errors import ToolCallError

MAX_TERMS: Final = 16
MAX_QUERY_CHARS: Final = 500


@dataclass(frozen=True, slots=True)
class Query:
    required: tuple[str, ...]
    """Lowered terms that must all appear, longest first (the longest is the scan's anchor)."""
    excluded: tuple[str, ...]
    text: str


def _tokens(text: str) -> list[tuple[bool, str]]:
    """(negated, term) in order; quotes group a phrase, a leading `-` negates."""
    out: list[tuple[bool, str]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        negated = text[i] == "-" and i + 1 < n and not text[i + 1].isspace()
        if negated:
            i += 1
        if text[i] == '"':
            end = text.find('"', i + 1)
            end = n if end < 0 else end
            out.append((negated, text[i + 1:end]))
            i = end + 1
        else:
            j = i
            while j < n and not text[j].isspace():
                j += 1
            out.append((negated, text[i:j]))
            i = j
    return out


def parse_query(text: object) -> Query:
    if not isinstance(text, str) or not text.strip():
        raise ToolCallError(INVALID_QUERY, "query must be a non-empty string, e.g. `dragon` or `\"the old mill\"`.")
    if len(text) > MAX_QUERY_CHARS:
        raise ToolCallError(INVALID_QUERY, f"query has {len(text)} characters; at most {MAX_QUERY_CHARS} are allowed.")
    required: list[str] = []
    excluded: list[str] = []
    for negated, raw in _tokens(text):
        term = " ".join(raw.split()).lower()
        if not term:
            continue
        bucket = excluded if negated else required
        if term not in bucket:
            bucket.append(term)
    if not required:
        raise ToolCallError(INVALID_QUERY, f"query `{text}` has no word to look for (only exclusions or empty "
                                           "quotes); give at least one word or \"phrase\".")
    if len(required) + len(excluded) > MAX_TERMS:
        raise ToolCallError(INVALID_QUERY, f"query has {len(required) + len(excluded)} terms; at most {MAX_TERMS} "
                                           "are allowed.")
    required.sort(key=len, reverse=True)
    return Query(tuple(required), tuple(excluded), text)
