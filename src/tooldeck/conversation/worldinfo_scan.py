"""The text a world-info pass scans, kept as separate parts (one per message, one per entry content
in the recursion buffer) so that no key matches across two of them (docs/conversation.md#activation).

Substring keys search one string of the parts joined by `SEPARATOR` (a key without it cannot match
across the joint); regular-expression keys search each part (a pattern such as `a[^z]*b` could
otherwise cross any separator).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from tooldeck.conversation.model import Message

SEPARATOR: Final = "\x01"
"""Between two parts of the joined text (SillyTavern puts the same character before each message)."""


def clean(text: str) -> str:
    """RE2 needs UTF-8: a lone surrogate (possible in JSON) becomes U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


@dataclass(frozen=True, slots=True)
class Scanned:
    parts: tuple[str, ...]
    joined: str = field(init=False)
    lowered: str = field(init=False)

    def __post_init__(self) -> None:
        joined = SEPARATOR.join(self.parts)
        object.__setattr__(self, "joined", joined)
        object.__setattr__(self, "lowered", joined.lower())


def scanned(*texts: str) -> Scanned:
    """Each text a part of its own (cleaned)."""
    return Scanned(tuple(clean(t) for t in texts))


class Texts:
    """The parts of a pass: the newest `depth` messages plus the first `size` entries of the recursion
    buffer, and the parts one such window adds to a smaller one (what the recursion fast path scans)."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = [clean(m.text) for m in messages]
        self.buffer: list[str] = []
        self._cache: dict[tuple[int, int, int, int], Scanned] = {}

    def _window(self, depth: int) -> int:
        """The index of the first message a scan of `depth` reads."""
        return max(0, len(self.messages) - depth) if depth > 0 else len(self.messages)

    def get(self, depth: int, size: int) -> Scanned:
        return self.added((0, 0), (depth, size))

    def added(self, seen: tuple[int, int], now: tuple[int, int]) -> Scanned:
        """The parts in window `now` that window `seen` (depth, size; a smaller or equal one) lacks."""
        key = (*seen, *now)
        found = self._cache.get(key)
        if found is None:
            start, end = self._window(now[0]), self._window(seen[0])
            found = self._cache[key] = Scanned((*self.messages[start:end], *self.buffer[seen[1]:now[1]]))
        return found
