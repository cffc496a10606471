"""BM25 ranking of tools over name, description and parameter names (for `find_tools(query=...)`)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

_WORD = re.compile(r"[A-Za-z][a-z]*|[a-z]+|[0-9]+")
_SUFFIXES = ("ies", "ing", "es", "ed", "s")
STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "get", "in", "into", "is", "it", "of", "on",
    "or", "the", "this", "to", "with",
))
K1, B = 1.2, 0.75
NAME_WEIGHT = 3


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def tokens(text: str) -> list[str]:
    """Words split at case changes, `_`, `.`, `-` and spaces; lower-cased, lightly stemmed, stopwords out."""
    out = []
    for raw in _WORD.findall(text):
        word = raw.lower()
        if word not in STOPWORDS:
            out.append(_stem(word))
    return out


def _param_names(schema: Mapping[str, Any]) -> list[str]:
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return list(props) if isinstance(props, Mapping) else []


@dataclass(frozen=True, slots=True)
class ToolDoc:
    name: str
    description: str
    parameters: tuple[str, ...]


class ToolIndex:
    """An in-memory BM25 index, built once per snapshot."""

    def __init__(self, docs: Iterable[ToolDoc]) -> None:
        self.docs = list(docs)
        self._tf: list[Counter[str]] = []
        for doc in self.docs:
            terms = tokens(doc.name) * NAME_WEIGHT + tokens(doc.description) + tokens(" ".join(doc.parameters))
            self._tf.append(Counter(terms))
        self._len = [sum(tf.values()) for tf in self._tf]
        self._avg = (sum(self._len) / len(self._len)) if self._len else 0.0
        df: Counter[str] = Counter()
        for tf in self._tf:
            df.update(tf.keys())
        n = len(self.docs)
        self._idf = {term: math.log(1 + (n - f + 0.5) / (f + 0.5)) for term, f in df.items()}

    @classmethod
    def from_tools(cls, tools: Iterable[tuple[str, str, Mapping[str, Any]]]) -> ToolIndex:
        return cls(ToolDoc(name, description, tuple(_param_names(schema))) for name, description, schema in tools)

    def search(self, query: str, limit: int) -> list[tuple[str, float]]:
        terms = [t for t in tokens(query) if t in self._idf]
        if not terms:
            return []
        scored = []
        for i, tf in enumerate(self._tf):
            score = 0.0
            norm = K1 * (1 - B + B * self._len[i] / self._avg) if self._avg else K1
            for term in terms:
                f = tf.get(term)
                if f:
                    score += self._idf[term] * f * (K1 + 1) / (f + norm)
            if score > 0:
                scored.append((score, self.docs[i].name))
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [(name, score) for score, name in scored[:limit]]


@dataclass(frozen=True, slots=True)
class DeferredCatalog:
    """What `find_tools` searches: a snapshot's tools (not the meta-tools) by folded name, and a BM25 index."""

    by_folded_name: dict[str, Any]
    index: ToolIndex

    @classmethod
    def build(cls, snapshot: Any) -> DeferredCatalog:
        from tooldeck.snapshot.deferred import META_IDS

        bindings = [b for b in snapshot.bindings if b.tool_id not in META_IDS]
        index = ToolIndex.from_tools((b.call_name, b.descriptor.description, b.descriptor.input_schema)
                                     for b in bindings)
        return cls({b.call_name.casefold(): b for b in bindings}, index)
