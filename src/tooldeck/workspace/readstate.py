"""Per-run read-state: what the model has seen of each file, so writes and patches can be checked.

A state is immutable and replaced whole under a lock; it records the sha256 of the bytes read,
whether the read was full, and the observed text (the whole text, or the lines a partial read
showed, merged across partial reads of the same bytes).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

_EMPTY: Mapping[int, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ReadState:
    sha256: str
    full_read: bool
    text: str = ""
    """The whole text when `full_read`."""
    lines: Mapping[int, str] = field(default_factory=lambda: _EMPTY)
    """Partial reads: the complete lines shown, by 1-based number."""
    fragments: tuple[str, ...] = ()
    """Partial reads: observed text not tied to line numbers (a cut line, patched or appended text)."""
    require_full_read: bool = False
    """Set by a failed patch after a partial read; only a full read clears it."""

    def observed_contains(self, needle: str) -> bool:
        if self.full_read:
            return needle in self.text
        if any(needle in f for f in self.fragments):
            return True
        return any(needle in run for run in self._runs())

    def observed_texts(self) -> list[str]:
        if self.full_read:
            return [self.text]
        return [*self._runs(), *self.fragments]

    def _runs(self) -> list[str]:
        runs: list[str] = []
        current: list[str] = []
        prev = None
        for n in sorted(self.lines):
            if prev is not None and n != prev + 1:
                runs.append("\n".join(current) + "\n")
                current = []
            current.append(self.lines[n])
            prev = n
        if current:
            runs.append("\n".join(current) + "\n")
        return runs

    def with_flag(self) -> ReadState:
        return self if self.full_read or self.require_full_read else replace(self, require_full_read=True)


class ReadStates:
    """The read-states of one run, keyed by the file's resolved location."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[str, ReadState] = {}

    def get(self, key: str) -> ReadState | None:
        return self._states.get(key)

    def put(self, key: str, state: ReadState) -> None:
        with self._lock:
            self._states[key] = state

    def drop(self, key: str) -> None:
        with self._lock:
            self._states.pop(key, None)

    def flag_full_read_required(self, key: str, seen: ReadState) -> None:
        """After a failed patch on a partial read; only if the state is still the one the patch saw."""
        with self._lock:
            if self._states.get(key) is seen:
                self._states[key] = seen.with_flag()

    def record_full(self, key: str, sha256: str, text: str) -> None:
        self.put(key, ReadState(sha256, True, text))

    def record_partial(self, key: str, sha256: str, lines: Mapping[int, str], fragments: tuple[str, ...] = ()) -> None:
        with self._lock:
            prev = self._states.get(key)
            if prev is not None and prev.sha256 == sha256:
                if prev.full_read:
                    return
                merged = {**prev.lines, **lines}
                self._states[key] = ReadState(sha256, False, "", MappingProxyType(merged),
                                              prev.fragments + fragments, prev.require_full_read)
                return
            flag = prev.require_full_read if prev is not None else False
            self._states[key] = ReadState(sha256, False, "", MappingProxyType(dict(lines)), fragments, flag)
